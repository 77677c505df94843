#pragma once
/// \file
/// The replay actor: the one owner of a replay_buffer and its rate limiter.
///
/// Everything that touches the buffer is a message to its inbox, so nothing
/// around the buffer is locked (Ape-X's Python implementations spend their
/// effort on exactly that lock):
///
/// - an `insert_block` from the sampling side (the replay_feeder) carries
///   n-step transitions and the env steps they account for;
/// - a `snapshot_request` asks for a copy of the actor's state (save()),
///   which the actor sends back on snapshots(): how a checkpoint gets the
///   replay while the run goes on. It is data, not code: nothing but the
///   actor's own state is touched on the actor's thread, and the copy goes
///   back by value (an earlier version ran a caller's closure here, and a
///   closure built inside a co_await expression is destroyed twice by
///   GCC 12, which freed the checkpoint it pointed to);
/// - a `sample_batch` from the learner is a request: "fill me". The learner
///   keeps `prefetch` of them in flight, so the next batches are sampled
///   while it trains on this one. When it is done with a batch it hands the
///   same object back with the TD errors written in: the actor applies the
///   priorities and refills it. Batches go round in a loop and are never
///   reallocated.
///
/// The rate limiter (Reverb's SampleToInsertRatio, counted in sampled
/// transitions per env step) is enforced on both sides without dropping
/// anything: a request waits in the actor until the limiter allows a batch,
/// and the rate-limit gate holds env groups back while insert_allowance() is
/// used up.
/// The actor raises the allowance after every batch it serves (and after
/// every insert while nothing is sampleable) and wakes the gate if it was
/// waiting. Why one side can always move is worked out in replay_actor.cpp,
/// above raise_allowance().
///
/// Thread safety: run() is one actor. inbox(), samples(), snapshots(), the
/// counters in stats() and insert_allowance() may be used from any thread.
/// buffer(), limiter() and the save/load functions only while the actor is
/// not running.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <variant>
#include <vector>

#include <asio/awaitable.hpp>

#include "coral/actors/messages.hpp"
#include "coral/channels/channel.hpp"
#include "coral/envs/rng.hpp"
#include "coral/replay/rate_limiter.hpp"
#include "coral/replay/replay_buffer.hpp"
#include "coral/replay/transition.hpp"

namespace coral::replay {

/// Transitions on their way from the sampling side to the replay actor, as
/// struct-of-arrays with the stream of each. Reused: clear() keeps capacity.
struct insert_block {
  std::size_t obs_dim = 0;
  std::size_t discrete_dim = 0;
  std::size_t continuous_dim = 0;
  std::uint64_t env_steps = 0;              ///< env steps this block accounts for (the limiter's unit)
  std::vector<std::uint32_t> streams;       ///< per transition
  std::vector<float> observations;          ///< per transition, obs_dim each
  std::vector<float> next_observations;     ///< per transition, obs_dim each
  std::vector<std::int32_t> discrete;       ///< per transition, discrete_dim each
  std::vector<float> continuous;            ///< per transition, continuous_dim each
  std::vector<float> returns;
  std::vector<float> discounts;
  std::vector<std::uint32_t> steps;
  std::vector<std::uint8_t> last_of_episode;
  /// Streams whose episode ended without a final observation (an env reset
  /// after a failure) before this block's transitions: the actor cuts them
  /// first (replay_buffer::cut).
  std::vector<std::uint32_t> cuts;

  insert_block(std::size_t obs, std::size_t disc, std::size_t cont)
      : obs_dim(obs), discrete_dim(disc), continuous_dim(cont) {}
  /// Transitions held.
  [[nodiscard]] std::size_t size() const noexcept { return returns.size(); }
  /// Empties it, keeping its memory.
  void clear() noexcept;
  /// Appends a copy of `t` for `stream`.
  void push(std::uint32_t stream, const transition& t);
};

/// A batch the learner trains on, gathered into contiguous rows, and the TD
/// errors it hands back. Row i of every array belongs to draw i.
struct sample_batch {
  std::size_t size = 0;  ///< draws; 0 while the batch is an unfilled request
  std::vector<float> observations;       ///< size × obs_dim
  std::vector<float> next_observations;  ///< size × obs_dim (o_{t+k})
  std::vector<std::int32_t> discrete;    ///< size × discrete_dim
  std::vector<float> continuous;         ///< size × continuous_dim
  std::vector<float> returns;            ///< n-step returns
  std::vector<float> discounts;          ///< γ^k, or 0 after a terminal
  std::vector<float> weights;            ///< importance weights (1 for uniform)
  std::vector<sample_key> keys;          ///< what was drawn, for the priority update
  /// Written by the learner: one |TD error| per draw. Empty: no update.
  std::vector<float> td_errors;
  std::uint64_t sequence = 0;            ///< 0, 1, 2, ... in the order served
};

/// Asks the replay actor for a copy of its state, taken between two
/// messages; the answer is a replay_snapshot on snapshots() with the same tag.
struct snapshot_request {
  std::uint64_t tag = 0;  ///< the caller's label (e.g. the env steps of the checkpoint), echoed back
};

/// The replay actor's state as save() writes it, at the moment it handled a snapshot_request.
struct replay_snapshot {
  std::uint64_t tag = 0;    ///< the request's tag
  std::vector<char> state;  ///< replay_actor::save(); replay_actor::load() takes it
};

/// What the replay actor's inbox takes.
using replay_msg = std::variant<std::unique_ptr<insert_block>, std::unique_ptr<sample_batch>, snapshot_request>;

/// Settings of a replay_actor.
struct replay_actor_config {
  replay_config buffer;               ///< the storage
  double samples_per_insert = 8.0;    ///< sampled transitions per inserted env step (the replay ratio)
  std::uint64_t min_size = 1000;      ///< env steps inserted before the first sample
  /// Slack of the ratio, in sampled transitions; 0: the smallest that lets
  /// both sides always move, batch_size + (max_group_steps + batcher_hold) ×
  /// samples_per_insert (see replay_actor.cpp).
  double error_buffer = 0;
  std::size_t max_group_steps = 1;    ///< the most env steps the gate lets through at once
  /// The most env steps the gate let through that the inference batcher
  /// may keep without acting, waiting for a full batch (batcher_hold());
  /// unset: the most it could ever be, every stream but one group.
  std::optional<std::size_t> batcher_hold;
  std::size_t batch_size = 128;       ///< draws per batch
  std::size_t prefetch = 4;           ///< batches the learner keeps in flight
  bool prioritized = true;            ///< false: uniform sampling, weights 1
  double beta_start = 0.4;            ///< importance exponent at the start...
  double beta_end = 1.0;              ///< ...annealed linearly to this...
  std::uint64_t beta_steps = 0;       ///< ...over this many env steps inserted (0: beta_end at once)
  std::uint64_t seed = 0;             ///< the sampling generator's seed
};

/// Counters the progress line reads; each is updated by the actor alone.
struct replay_stats {
  std::atomic<std::uint64_t> env_steps{0};      ///< env steps inserted
  std::atomic<std::uint64_t> transitions{0};    ///< transitions inserted
  std::atomic<std::uint64_t> sampled{0};        ///< transitions sampled
  std::atomic<std::uint64_t> batches{0};        ///< batches served
  std::atomic<std::uint64_t> priority_updates{0};  ///< priorities applied
  std::atomic<std::uint64_t> stale_updates{0};  ///< priorities ignored (slot overwritten)
  std::atomic<std::uint64_t> sample_ns{0};      ///< time sampling and gathering, all batches
  std::atomic<std::uint64_t> size{0};           ///< sampleable transitions now
  std::atomic<std::uint64_t> waiting_requests{0};  ///< requests the limiter holds now
  std::atomic<std::uint64_t> cuts{0};           ///< streams cut (envs reset after a failure)
};

/// The replay actor.
class replay_actor {
 public:
  /// Builds the buffer and the limiter; throws config_error for bad settings
  /// (the buffer's and the limiter's messages).
  explicit replay_actor(const replay_actor_config& config);

  /// Inserts and returned batches.
  [[nodiscard]] channel<replay_msg>& inbox() noexcept { return inbox_; }
  /// Filled batches for the learner (capacity: prefetch).
  [[nodiscard]] channel<std::unique_ptr<sample_batch>>& samples() noexcept { return samples_; }
  /// Answers to snapshot requests (capacity: one; ask again only after the
  /// answer came). Closed by close(), so a caller waiting here sees the stop.
  [[nodiscard]] channel<replay_snapshot>& snapshots() noexcept { return snapshots_; }
  /// Emptied insert blocks for the feeder to reuse.
  [[nodiscard]] channel<std::unique_ptr<insert_block>>& free_blocks() noexcept { return free_blocks_; }

  /// A new request of this actor's batch size (the learner sends `prefetch` of them at the start).
  [[nodiscard]] std::unique_ptr<sample_batch> make_request() const;

  /// The actor's body; ends when the inbox is closed and drained, or samples() is closed.
  [[nodiscard]] asio::awaitable<void> run();
  /// Closes every channel.
  void close() noexcept;
  /// After the run: applies the inserts and priority updates still buffered
  /// in the (closed) inbox, so that a final checkpoint holds them (snapshot
  /// requests are dropped: the run is over and nobody waits for them).
  void drain();

  /// The total env steps the sampling side may have inserted so far without
  /// breaking the ratio: min_size + (sampled + error_buffer) /
  /// samples_per_insert, and, while nothing is sampleable, at least the
  /// inserts plus max_group_steps + batcher_hold. Never decreases.
  [[nodiscard]] std::uint64_t insert_allowance() const noexcept { return allowance_.load(); }
  /// The env steps the sampling side may always have on the way on top of
  /// what was inserted: max_group_steps + batcher_hold.
  [[nodiscard]] std::uint64_t steps_in_flight() const noexcept { return in_flight_; }
  /// Makes the actor send actors::allowance_raised to `gate_inbox` when it
  /// raises the allowance to what a waiting gate needs (see
  /// wait_for_allowance and rate_limit_gate.hpp).
  void set_waker(channel<actors::gate_msg>* gate_inbox) noexcept { waker_ = gate_inbox; }
  /// Raises the allowance to `allowance` (if higher) and wakes a gate
  /// waiting for it: how a distributed run's sampler rank, whose actor never
  /// runs, gets its share of the learner's allowance. Any thread.
  void grant(std::uint64_t allowance) noexcept;
  /// The sampling side says it is waiting for the allowance to reach `needed`;
  /// returns true if it already has (then nothing will be sent).
  bool wait_for_allowance(std::uint64_t needed) noexcept;

  [[nodiscard]] const replay_stats& stats() const noexcept { return stats_; }
  [[nodiscard]] const replay_actor_config& config() const noexcept { return config_; }
  /// The importance exponent for the env steps inserted so far.
  [[nodiscard]] double beta() const noexcept;

  /// The storage (not while running).
  [[nodiscard]] replay_buffer& buffer() noexcept { return buffer_; }
  [[nodiscard]] const rate_limiter& limiter() const noexcept { return limiter_; }

  /// Appends the buffer, the limiter's counters and the generator to `out`.
  void save(std::vector<char>& out) const;
  /// save() into a new vector.
  [[nodiscard]] std::vector<char> save() const {
    std::vector<char> out;
    save(out);
    return out;
  }
  /// Restores what save() wrote, then cuts every stream (a resumed run starts
  /// fresh episodes, so the pending transitions of the old ones can never
  /// complete). Throws config_error for a malformed or mismatched state.
  void load(std::span<const char> in);

 private:
  void insert(insert_block& block);
  void handle(replay_msg& msg);
  void serve_waiting();
  void fill(sample_batch& b);
  void raise_allowance() noexcept;

  replay_actor_config config_;
  rate_limiter_config limiter_config_;
  replay_buffer buffer_;
  rate_limiter limiter_;
  envs::rng rng_;
  channel<replay_msg> inbox_;
  channel<std::unique_ptr<sample_batch>> samples_;
  channel<std::unique_ptr<insert_block>> free_blocks_;
  channel<replay_snapshot> snapshots_;
  std::deque<std::unique_ptr<sample_batch>> waiting_;
  sampled_batch scratch_;
  replay_stats stats_;
  std::atomic<std::uint64_t> allowance_{0};
  std::atomic<std::uint64_t> wanted_{0};  // the allowance the gate waits for; 0: not waiting
  channel<actors::gate_msg>* waker_ = nullptr;
  std::uint64_t served_ = 0;
  std::uint64_t in_flight_ = 0;  // max_group_steps + batcher_hold
};

}  // namespace coral::replay
