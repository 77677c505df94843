#pragma once
/// \file
/// `sequence_feeder`: the sampling side of recurrent replay (R2D2). It cuts
/// the steps the inference batcher produces into the fixed-length sequences
/// of sequence.hpp and hands them on in sequence_blocks.
///
/// It is the batcher's step_consumer: consume() sees, for every row of the
/// batch, the outcome of the row's previous step (reward, terminated,
/// truncated, final observation) and the observation and action of the new
/// one (actors/messages.hpp). Each row is one stream; per row the feeder
/// keeps a ring of its last `length` steps and the recurrent states its open
/// sequences start from, allocated in the constructor.
///
/// Multi-agent rows (envs/env.hpp): a row is an agent slot, and its episode
/// is its agent's. Only the slot's acted steps (the row active as the
/// policy acted) are its episode's steps: an inactive row adds no slot to
/// any sequence (no padding for it) and its observation is never read.
/// The rewards that arrive while the slot waits (a turn-based game's other
/// player moves) are added to its last acted step, and an end that arrives
/// then (the game lost on the other's move) ends the slot's episode there,
/// as DQN's replay_feeder and PPO's rollout_assembler do. A terminated or
/// truncated row ends its slot's episode, and closes its sequences, even
/// while the env's episode goes on; the slot's next acted step starts a new
/// one (slot_first, a zero state). An agent truncated while it waited has
/// no final observation (the env writes only the rows that acted): the
/// observation of its last step stands in.
///
/// How an episode is cut (exactly sequence.hpp's rule): with stride
/// s = length − overlap, sequence k of an episode holds the episode's steps
/// [k·s − burn_in, k·s − burn_in + length); slots before step 0 are padding.
/// - A sequence is sent when the outcome of its last slot's step is known:
///   observation slot `length` then holds the next observation (o_L).
/// - At the episode's end (terminated or truncated) every open sequence
///   whose trained part [burn_in, length) holds a step is sent, padded after
///   the last step; one whose trained part would hold no step is not sent
///   (a sequence never has an empty trained part). A truncated episode's
///   final observation goes in the observation slot after its last step; a
///   terminated one's is not stored (that slot is padding: zeros).
/// - Flags: slot_valid on every step, slot_first on an episode's step 0,
///   slot_terminated or slot_truncated on its last step (a step both
///   terminated and truncated counts as terminated). Padding is zeros.
/// - The state stored with a sequence is the policy's state before the
///   sequence's first valid slot: zeros when that slot is the episode's
///   step 0 (whatever the policy reports there), else row r of the span
///   given to record_states_from() as it was when that step was consumed.
/// - Masks (layout mask_dim > 0): each step's slot holds the mask its
///   action was chosen under; the observation slot after a sequence's last
///   step holds that observation's mask (the row's, cut mid-episode; every
///   action after a truncated episode, whose final observation has none; the
///   last step's own where it stands in); padding holds zeros.
/// - A row whose env was reset after a failure (its `failed` column is set)
///   drops its open sequences unsent and starts a new episode: no sequence
///   spans the reset, and the interrupted episode is not reported.
///
/// Flushing: each consume() call sends one block at the end, holding the
/// sequences it completed (maybe none) and the env steps it accounts for
/// (one per row of the batch, acted or not: a multi-agent env's step is
/// its rows): the replay's rate limiter counts inserts in env steps, and a gate waiting
/// for the insert allowance must not wait for steps held back here (it
/// would, for up to a stride of steps per row, before the first sequence).
/// Every finished episode of a slot that acted in it goes to the episode
/// callback.
///
/// No allocation per step once the blocks in circulation have grown to the
/// largest batch of sequences (blocks keep their capacity; see
/// sequence_block::clear()).
///
/// Thread safety: consume() is called by the batcher, one call at a time;
/// the sink's functions and the episode callback run inside it, on the
/// batcher's executor. record_states_from() is called before the run starts.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "coral/actors/step_consumer.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/replay/sequence.hpp"

namespace coral::training {

/// Where a sequence_feeder's blocks come from and go to. The sequence replay
/// actor plugs in with two lambdas: take an emptied block from its free
/// blocks (nullptr when none is free), send a filled one to its inbox.
struct sequence_sink {
  /// An empty block to fill (the feeder clears it anyway), or nullptr when
  /// none is at hand: the feeder then allocates one.
  std::function<std::unique_ptr<replay::sequence_block>()> take_block;
  /// Takes a block holding at least one sequence. Must not fail silently:
  /// a sink that cannot take it throws.
  std::function<void(std::unique_ptr<replay::sequence_block>)> send;
};

/// The sampling side of recurrent replay.
class sequence_feeder final : public actors::step_consumer {
 public:
  /// Called for every finished episode with its return and length, on the
  /// batcher's executor.
  using episode_callback = std::function<void(double episode_return, double episode_length)>;

  /// Sequences of `layout` from the rows of `batch` (one stream per row).
  /// Throws config_error when the layout does not fit the batch (obs_dim,
  /// discrete_dim, no continuous action part, a mask_dim other than the
  /// batch's action_mask_dim()) or is not a valid layout
  /// (length ≥ 1, burn_in < length, overlap < length), or when the sink
  /// lacks its send function.
  sequence_feeder(envs::env_batch& batch, const replay::sequence_layout& layout, sequence_sink sink,
                  episode_callback on_episode);

  /// Reads the recurrent states from `rows` (row-major by batch row,
  /// layout.state_dim floats each): row r holds the policy's state before
  /// it acted on row r's latest acted step (a policy leaves an inactive
  /// row's state alone). consume() reads row r right after the
  /// policy acted on it, on the batcher's executor. Needed when state_dim
  /// > 0 (consume() throws usage_error without it); call before the run
  /// starts. Throws config_error when the span's size is not rows × state_dim.
  void record_states_from(std::span<const float> rows);

  /// Cuts the steps of the rows in `step` into sequences and sends the
  /// completed ones to the sink.
  void consume(const actors::step_batch& step) override;

  /// The layout of the sequences it makes.
  [[nodiscard]] const replay::sequence_layout& layout() const noexcept { return layout_; }

 private:
  /// Per row: where it stands in its episode.
  struct row_state {
    std::uint64_t step = 0;           ///< episode step index of the step awaiting its outcome
    std::uint64_t next_sequence = 0;  ///< the first sequence of the episode not yet sent
    bool has_previous = false;        ///< a step awaits its outcome
    bool waited = false;              ///< the slot sat out the env step whose outcome comes next
  };

  /// Appends sequence k of row r to the pending block: its slots up to
  /// episode step `last_step` (the ring holds them), padding after, and
  /// `next_obs` and `next_mask` in the observation slot after last_step
  /// (o_L of a sequence cut mid-episode, a truncated episode's final
  /// observation, or empty).
  void emit(std::uint32_t r, std::uint64_t k, std::uint64_t last_step, std::span<const float> next_obs,
            std::span<const std::uint8_t> next_mask);
  /// Records the step the policy just chose on row r as episode step `t`.
  void record_step(const envs::env_batch& b, std::uint32_t r, std::uint64_t t);
  /// Episode step where sequence k starts (may be negative: padding).
  [[nodiscard]] std::int64_t start_of(std::uint64_t k) const noexcept;
  /// The pending block, taken from the sink when there is none.
  replay::sequence_block& pending();

  envs::env_batch* batch_;
  replay::sequence_layout layout_;
  sequence_sink sink_;
  episode_callback on_episode_;
  std::span<const float> states_;
  std::size_t state_slots_;  // states kept per row: the most sequences open at once
  std::vector<row_state> rows_;
  // Per row, ring of the last `length` steps (index: episode step mod length).
  std::vector<float> ring_obs_;
  std::vector<std::int32_t> ring_actions_;
  std::vector<float> ring_rewards_;
  std::vector<std::uint8_t> ring_flags_;
  std::vector<std::uint8_t> ring_masks_;
  std::vector<std::uint8_t> all_legal_;  // the mask after a truncated episode's last step
  // Per row, state_slots_ states: sequence k's start state at slot k mod state_slots_.
  std::vector<float> start_states_;
  std::unique_ptr<replay::sequence_block> pending_;
};

}  // namespace coral::training
