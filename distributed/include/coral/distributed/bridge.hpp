#pragma once
// The bridge actor of a distributed run: moves what crosses between ranks
// (docs/distributed.md) between the transport and the run's local parts, so
// that on either side a remote peer looks like a local one:
//
// - on a sampler rank it sends the algorithm's items (take()), the finished
//   episodes and the rank's counters to the learner, and publishes the
//   weights the learner sends into the run's weights cell (with the
//   learner's version numbers, so the policy-lag gate works unchanged);
// - on the learner it hands each sampler's items to the algorithm
//   (accept()), records their episodes, sends every sampler the newest
//   weights (at most one weights message in flight per sampler: newer
//   weights replace the unsent ones) and the algorithm's control messages.
//
// It is the composition's training::remote_link (coral/training/remote_link.hpp);
// over() gives a run the ranks of a transport. Before the runtime runs,
// handshake() checks that every rank runs the same
// thing and gives the samplers the learner's start; after it, close() sends
// this rank's stop and waits for its peers' (bounded), so that no message is
// left in flight when the process ends.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <asio/awaitable.hpp>

#include "coral/channels/latest.hpp"
#include "coral/core/runtime.hpp"
#include "coral/training/algorithm.hpp"
#include "coral/training/remote_link.hpp"
#include "coral/training/train_options.hpp"
#include "coral/distributed/transport.hpp"

namespace coral::distributed {

using training::fingerprint;
using training::run_start;
using training::stop_reason;

class bridge final : public training::remote_link {
 public:
  bridge(transport& t, const training::train_options& options, training::distribution_part& algo,
         training::training_run& run);

  /// On the learner: waits for every sampler's hello, checks it against
  /// `mine` (config_error naming the rank and what differs, sent to the
  /// samplers too) and sends each `start`.
  void handshake_learner(const fingerprint& mine, const run_start& start) override;
  /// On a sampler: sends `mine`, waits for the learner's start (config_error
  /// with the learner's text if it refused, error if it stays silent).
  [[nodiscard]] run_start handshake_sampler(const fingerprint& mine) override;

  /// The actor: runs until the runtime stops.
  [[nodiscard]] asio::awaitable<void> run(runtime& rt) override;

  /// After the runtime: sends this rank's stop and waits for the peers'
  /// (their other messages are dropped). Returns the peers that stayed
  /// silent past the limit, named (empty when all stopped).
  std::string close(stop_reason why, const std::string& text) override;

  /// On the learner: new weights were published (the learner's thread).
  void published() override { published_ns_.store(now_ns(), std::memory_order_release); }
  /// On a sampler: a finished episode, sent to the learner (any thread).
  void episode(double episode_return, double episode_length) override;

  /// On the learner: env steps the samplers reported, in all.
  [[nodiscard]] std::uint64_t env_steps() const override;
  [[nodiscard]] std::uint64_t learner_steps() const override { return learner_steps_.load(std::memory_order_relaxed); }
  /// On the learner: the first failure a sampler reported ("rank 2 failed: ..."), or empty.
  [[nodiscard]] std::string failure() const override;
  /// On the learner: whether a sampler was interrupted; on a sampler: whether the learner said so.
  [[nodiscard]] bool interrupted() const noexcept override { return interrupted_.load(); }
  /// On a sampler, after the runtime: whether the learner's stop ended the run.
  [[nodiscard]] bool stopped_by_peer() const noexcept override { return !learner_ && stopped_during_run_; }
  /// How long a rank waits for a peer that sends nothing: at the handshake
  /// and at the end (--stall-seconds, at least 10 s).
  [[nodiscard]] static double silence_limit(const training::train_options& o);
  [[nodiscard]] double silence_limit() const override { return silence_limit(*options_); }
  /// The part of a progress line: per rank steps/s and lag, bytes on the wire.
  [[nodiscard]] std::string row(double seconds) override;
  /// Per-rank lines for a stall report.
  void describe(std::string& out) const override;

 private:
  struct peer {
    std::atomic<std::uint64_t> env_steps{0};
    std::uint64_t steps_at_row = 0;
    std::atomic<std::int64_t> heard_ns{0};  // steady clock of the last message
    std::optional<stop_reason> stopped;
    std::deque<std::vector<std::byte>> pending;  // data the algorithm could not take yet
    std::uint64_t weights_sent = 0;              // newest version sent
  };
  using clock = std::chrono::steady_clock;

  bool step_learner(runtime& rt);
  void on_message(wire_message& m, runtime* rt);
  void on_stop(std::size_t from, std::span<const std::byte> in, runtime* rt);
  void send(std::size_t to, wire_tag tag, std::vector<std::byte> bytes);
  void send_episodes();
  [[nodiscard]] std::size_t samplers() const { return t_->size() - 1; }
  [[nodiscard]] peer& peer_of(std::size_t rank) { return peers_[rank - 1]; }
  static std::int64_t now_ns();

  transport* t_;
  const training::train_options* options_;
  training::distribution_part* algo_;
  training::training_run* run_;
  bool learner_;
  std::vector<peer> peers_;  // learner: one per sampler; sampler: one, the learner

  // Sampler side.
  std::mutex episodes_mutex_;
  std::vector<double> returns_, lengths_;
  bool weights_arrived_ = false;
  std::atomic<std::int64_t> latency_ns_sum_{0};
  std::atomic<std::uint64_t> latency_count_{0};
  std::int64_t last_episodes_ns_ = 0;
  std::int64_t last_progress_ns_ = 0;            // the learner's last progress message
  std::atomic<std::uint64_t> learner_steps_{0};  // a sampler's: the learner's steps, as heard
  std::vector<std::byte> scratch_;

  std::atomic<std::uint64_t> bytes_out_{0}, bytes_in_{0}, messages_out_{0}, messages_in_{0};
  std::uint64_t bytes_at_row_ = 0;     // the progress actor's
  std::uint64_t messages_at_row_ = 0;
  std::atomic<bool> interrupted_{false};
  std::atomic<std::int64_t> published_ns_{0};  // learner: when the newest weights were published
  bool stopped_during_run_ = false;  // sampler: the learner's stop came while the runtime ran
  mutable std::mutex failure_mutex_;
  std::string failure_;
  std::atomic<std::int64_t> remote_latency_ns_{0};  // learner: weights latency the samplers reported
  std::atomic<std::uint64_t> remote_latency_count_{0};
};

/// The ranks of `t` for a run (train_options::remote): each run over them
/// gets a bridge as its link.
[[nodiscard]] std::shared_ptr<training::remote_ranks> over(std::shared_ptr<transport> t);

}  // namespace coral::distributed
