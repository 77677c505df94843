#pragma once
/// \file
/// The replay actor: the one owner of a replay_buffer of n-step transitions
/// and its rate limiter (DQN's replay). It is basic_replay_actor (see
/// basic_replay_actor.hpp for the protocol: inserts, returned batches and
/// snapshot requests in one inbox, `prefetch` batches in flight, the rate
/// limiter on both sides) over transition_storage, below:
///
/// - an `insert_block` from the sampling side (the replay_feeder) carries
///   n-step transitions and the env steps they account for, and the
///   streams to cut before them;
/// - a `sample_batch` is the learner's request, handed back with the TD
///   errors written in.
///
/// The rate limiter counts sampled transitions per env step (Reverb's
/// SampleToInsertRatio).
///
/// Thread safety: as basic_replay_actor's.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include <asio/awaitable.hpp>

#include "coral/actors/messages.hpp"
#include "coral/channels/channel.hpp"
#include "coral/core/rng.hpp"
#include "coral/replay/basic_replay_actor.hpp"
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
  std::size_t mask_dim = 0;                 ///< bytes per action mask (0: the env does not mask)
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
  std::vector<std::uint8_t> masks;          ///< per transition, mask_dim each: legal actions at the observation
  std::vector<std::uint8_t> next_masks;     ///< per transition, mask_dim each: legal actions at the next one
  /// Streams whose episode ended without a final observation (an env reset
  /// after a failure) before this block's transitions: the actor cuts them
  /// first (replay_buffer::cut).
  std::vector<std::uint32_t> cuts;

  insert_block(std::size_t obs, std::size_t disc, std::size_t cont, std::size_t mask = 0)
      : obs_dim(obs), discrete_dim(disc), continuous_dim(cont), mask_dim(mask) {}
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
  /// size × mask_dim where the env masks (else empty): the legal actions at
  /// each next observation, over which the target's max runs.
  std::vector<std::uint8_t> next_masks;
  std::vector<sample_key> keys;          ///< what was drawn, for the priority update
  /// Written by the learner: one |TD error| per draw. Empty: no update.
  std::vector<float> td_errors;
  std::uint64_t sequence = 0;            ///< 0, 1, 2, ... in the order served
};

/// Counters the progress line reads; each is updated by the actor alone.
struct replay_stats : replay_counters {
  std::atomic<std::uint64_t> transitions{0};    ///< transitions inserted
  std::atomic<std::uint64_t> cuts{0};           ///< streams cut (envs reset after a failure)
};

/// The replay actor's storage: a replay_buffer of n-step transitions (see
/// basic_replay_actor.hpp for what a storage provides).
class transition_storage {
 public:
  using config_type = replay_config;
  using buffer_type = replay_buffer;
  using block_type = insert_block;
  using batch_type = sample_batch;
  using stats_type = replay_stats;
  /// The first bytes of a saved replay_actor state.
  static constexpr char state_magic[8] = {'C', 'R', 'L', 'R', 'A', 'C', 'T', '1'};
  /// Why a state that does not start with them is refused.
  static constexpr std::string_view state_name = "not a replay actor state";

  /// The env streams.
  [[nodiscard]] static std::size_t streams(const replay_config& c) noexcept { return c.num_streams; }
  /// One transition trains one step.
  [[nodiscard]] static std::uint64_t trained_steps_per_draw(const replay_config&) noexcept { return 1; }

  /// Builds the buffer (its config_errors).
  explicit transition_storage(const replay_config& config) : config_(config), buffer_(config) {}
  [[nodiscard]] replay_buffer& buffer() noexcept { return buffer_; }
  [[nodiscard]] const replay_buffer& buffer() const noexcept { return buffer_; }
  /// Transitions that can be sampled.
  [[nodiscard]] std::size_t size() const noexcept { return buffer_.size(); }
  /// Reserves a request's arrays for `n` draws.
  void reserve(sample_batch& b, std::size_t n) const;
  /// Cuts the block's streams, then inserts its transitions; counts them and the cuts.
  void insert(insert_block& block, replay_stats& stats);
  /// Draws `n` transitions into `b` (all but its sequence number).
  void fill(sample_batch& b, std::size_t n, bool prioritized, double beta, coral::rng& rng);
  /// Applies the TD errors handed back in `b`, if any and if `prioritized`
  /// (a uniform replay reads no priority, so it neither stores nor checks
  /// them), and empties them.
  update_result apply_update(sample_batch& b, bool prioritized);
  /// Nothing beyond the common counters.
  void publish(replay_stats&) const noexcept {}
  /// The buffer's blob.
  void save(std::vector<char>& out) const { buffer_.save(out); }
  /// Replaces the buffer with a blob save() wrote.
  void load(std::span<const char> in) { buffer_.load(in); }
  /// Cuts every stream: the pending transitions of the saved run's episodes can never complete.
  void resumed();

 private:
  replay_config config_;
  replay_buffer buffer_;
  sampled_batch scratch_;
};

/// Settings of a replay_actor. samples_per_insert is in sampled
/// transitions per inserted env step (either ratio_counts).
using replay_actor_config = basic_replay_actor_config<replay_config>;

/// The replay actor of transitions.
using replay_actor = basic_replay_actor<transition_storage>;

extern template class basic_replay_actor<transition_storage>;

/// What the replay actor's inbox takes: an insert_block, a sample_batch
/// (a request, or one handed back) or a snapshot_request.
using replay_msg = replay_actor::message;

}  // namespace coral::replay
