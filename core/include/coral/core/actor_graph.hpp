#pragma once
/// \file
/// What the live view draws of a running pipeline beyond the runtime's own
/// actor list: the channels between its actors, how full each is, how busy
/// each actor is, and a few named figures. The parts of a run (the sampler,
/// the gate, an algorithm) each add what they own; nothing here names an
/// actor of its own.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace coral {

/// A description of a run's channels and probes, read while the run goes on.
///
/// Protocol: the owners of channels and actors add to it before the run
/// starts (add_channel(), add_activity(), add_busy_time(), add_figure());
/// then it is only read.
///
/// Thread safety: the add_* calls from one thread, before anything reads
/// it. Afterwards the lists may be read from any thread, and every probe
/// (depth, busy, figure) is called from the reader's thread while the run
/// goes on: a probe must be safe to call from any thread at any time during
/// the run (an atomic load, a channel's size()), and must not block.
class actor_graph {
 public:
  /// A bounded channel: who sends on it, who receives from it (actor names
  /// as the runtime has them), and its depth.
  struct channel_entry {
    std::string name;
    std::vector<std::string> senders;
    std::vector<std::string> receivers;
    std::function<std::size_t()> depth;  ///< messages buffered now
    std::size_t capacity = 0;
  };
  /// A sampled probe: is `actor` working right now (not parked waiting)?
  struct activity_entry {
    std::string actor;
    std::function<bool()> busy_now;
  };
  /// An exact probe: nanoseconds `actor` spent waiting so far (a counter
  /// that only grows); its busy fraction over a window is 1 − Δwait / Δwall.
  struct busy_time_entry {
    std::string actor;
    std::function<std::int64_t()> waited_ns;
  };
  /// A named figure of the run (a gauge): `name` is a metric name
  /// (snake_case, no prefix), `help` one line on what it is.
  struct figure_entry {
    std::string name;
    std::string help;
    std::function<double()> read;
  };

  /// Adds channel `name` that `c` is (anything with size() and capacity()).
  /// `c` must outlive every read.
  template <class Channel>
  void add_channel(std::string name, std::vector<std::string> senders, std::vector<std::string> receivers,
                   const Channel& c) {
    channels_.push_back({std::move(name), std::move(senders), std::move(receivers),
                         [&c] { return static_cast<std::size_t>(c.size()); }, static_cast<std::size_t>(c.capacity())});
  }
  /// Adds a sampled busy probe for `actor` (see activity_entry).
  void add_activity(std::string actor, std::function<bool()> busy_now) {
    activities_.push_back({std::move(actor), std::move(busy_now)});
  }
  /// Adds an exact wait counter for `actor` (see busy_time_entry).
  void add_busy_time(std::string actor, std::function<std::int64_t()> waited_ns) {
    busy_times_.push_back({std::move(actor), std::move(waited_ns)});
  }
  /// Adds a figure (see figure_entry).
  void add_figure(std::string name, std::string help, std::function<double()> read) {
    figures_.push_back({std::move(name), std::move(help), std::move(read)});
  }

  [[nodiscard]] const std::vector<channel_entry>& channels() const noexcept { return channels_; }
  [[nodiscard]] const std::vector<activity_entry>& activities() const noexcept { return activities_; }
  [[nodiscard]] const std::vector<busy_time_entry>& busy_times() const noexcept { return busy_times_; }
  [[nodiscard]] const std::vector<figure_entry>& figures() const noexcept { return figures_; }

 private:
  std::vector<channel_entry> channels_;
  std::vector<activity_entry> activities_;
  std::vector<busy_time_entry> busy_times_;
  std::vector<figure_entry> figures_;
};

}  // namespace coral
