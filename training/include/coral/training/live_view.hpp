#pragma once
/// \file
/// The live view's state: what a run looks like now (its actors, their
/// channels and how busy each actor is, its rates and its learning curve),
/// collected from the runtime's actor list and an actor_graph, and written
/// as JSON (GET /state.json) or in Prometheus's text format (GET /metrics).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coral/core/actor_graph.hpp"

namespace coral::training {

/// The run's counters at one moment, as its owner reads them.
struct live_counters {
  std::uint64_t env_steps = 0;
  std::uint64_t updates = 0;
  std::uint64_t episodes = 0;
  /// Mean return of the recent episodes (none before the first).
  std::optional<double> mean_return;
};

/// Where a live view reads a run from. Every function is called on the
/// view's thread while the run goes on: each must be safe to call from any
/// thread then (runtime::actor_names() and finished() are).
struct live_source {
  /// What the run is, one line (the first line it printed, say).
  std::string title;
  /// The actors spawned so far, in spawn order (runtime::actor_names()).
  std::function<std::vector<std::string>()> actors;
  /// Whether an actor has ended (runtime::finished()).
  std::function<bool(const std::string&)> finished;
  /// The counters now.
  std::function<live_counters()> counters;
  /// The channels and probes; must outlive the view.
  const actor_graph* graph = nullptr;
};

/// Collects a run's state for the live view.
///
/// sample() reads every sampled busy probe once (call it often: the busy
/// fraction of an actor is the share of samples that found it busy); tick()
/// closes a window (call it about once a second): busy fractions, rates
/// and a point of the learning curve for the window since the last tick.
/// state_json() and prometheus() write what the last tick found, with the
/// channels' depths and the figures read at the moment of the call.
///
/// Thread safety: every member may be called from any thread (one mutex);
/// the dashboard calls them all from its server's thread.
class live_view {
 public:
  /// Curve points kept: past this, every other point is dropped (the curve
  /// keeps its shape over the whole run at half the resolution).
  static constexpr std::size_t max_curve_points = 2048;

  explicit live_view(live_source source);

  /// Reads each sampled busy probe once.
  void sample();
  /// Closes the window that began at the previous tick (or construction).
  void tick();

  /// The state as one JSON object: title, seconds, counters, rates, actors
  /// (name, running, busy or null; the actor list as it is now), channels (name, senders, receivers,
  /// depth, capacity), figures and the curve ([env_steps, mean_return]
  /// pairs).
  [[nodiscard]] std::string state_json() const;
  /// The state in Prometheus's text exposition format (version 0.0.4):
  /// `# HELP` and `# TYPE` lines, then one sample per line.
  [[nodiscard]] std::string prometheus() const;

 private:
  using clock = std::chrono::steady_clock;
  struct actor_state {
    std::string name;
    bool running = true;
    std::optional<double> busy;
  };

  live_source source_;
  mutable std::mutex mutex_;
  clock::time_point started_;
  clock::time_point window_start_;
  std::vector<std::uint64_t> busy_samples_;   // per graph activity, this window
  std::uint64_t samples_ = 0;                 // sample() calls this window
  std::vector<std::int64_t> waited_at_start_; // per graph busy_time, at the window's start
  live_counters at_window_start_;
  live_counters last_;
  double seconds_ = 0;
  double steps_per_second_ = 0;
  double updates_per_second_ = 0;
  /// The actors now (outside the lock: the run's own locks), with the last window's busy fractions.
  [[nodiscard]] std::vector<actor_state> actors_now() const;

  std::map<std::string, double> busy_;  // per actor with a probe, the last window's
  std::vector<std::pair<std::uint64_t, double>> curve_;
  std::uint64_t curve_episodes_ = 0;  // episodes at the last curve point
};

/// `s` as a Prometheus label value, quotes included (\\, \" and \n escaped).
[[nodiscard]] std::string prometheus_label(std::string_view s);

}  // namespace coral::training
