#pragma once
/// \file
/// Rollout assembly: env steps collected per row into fixed-length segments
/// (horizon T) with the policy version of every step, handed to the learner.
/// The gate policy that bounds policy lag is policy_lag_gate.hpp.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "coral/actors/messages.hpp"
#include "coral/actors/step_consumer.hpp"
#include "coral/channels/channel.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/training/frame_stack.hpp"

namespace coral::training {

/// T steps of every batch row, as the learner trains on them. Arrays are
/// row-major by (row, step): element (r, t) is at r × horizon + t.
///
/// Multi-agent rows: step (r, t) is a step of slot r's agent that the
/// learner trains on only where `acted` is 1 (the row was active and the
/// learner's weights chose its action; see rollout_assembler). Every other
/// step is neither trained on nor part of an advantage: its action, log
/// probability, value and observation are stale, its reward and flags 0.
/// The reward and flags of a step that ended a slot's episode while the slot
/// waited (a turn-based game's other player, envs/env.hpp) are on the
/// slot's last acted step instead, so each slot's acted steps form its own
/// chain: step i's successor is the row's next acted step, or the bootstrap
/// observation after the last one.
struct rollout_segment {
  std::uint64_t index = 0;          ///< 0, 1, 2, ... per run
  std::size_t rows = 0;
  std::size_t horizon = 0;
  std::size_t obs_dim = 0;          ///< width of an (stacked) observation row
  std::size_t discrete_dim = 0;
  std::size_t continuous_dim = 0;
  /// rows × (horizon + 1) × obs_dim: the observation each action was chosen
  /// from; step `horizon` is the observation after the last step (bootstrap).
  std::vector<float> observations;
  std::vector<std::int32_t> discrete_actions;  ///< rows × horizon × discrete_dim
  std::vector<float> continuous_actions;       ///< rows × horizon × continuous_dim
  std::vector<float> log_probs;                ///< rows × horizon, of the acting policy
  std::vector<float> values;                   ///< rows × horizon, of the acting policy
  std::vector<float> rewards;                  ///< rows × horizon
  std::vector<std::uint8_t> terminated;        ///< rows × horizon
  std::vector<std::uint8_t> truncated;         ///< rows × horizon
  std::vector<std::uint64_t> policy_versions;  ///< rows × horizon: version that chose the action
  /// rows × horizon: 1 where the step is one to train on (see above); all 1
  /// as constructed (a single-agent segment: every step acted).
  std::vector<std::uint8_t> acted;
  /// Width of an action-mask row (envs::env_batch::action_mask_dim(); 0: the
  /// env does not mask) and, rows × horizon × mask_dim, the mask each acted
  /// step's action was drawn under (1 = legal). Empty when mask_dim is 0.
  std::size_t mask_dim = 0;
  std::vector<std::uint8_t> action_masks;
  /// Steps (r × horizon + t) that were truncated and not terminated, and
  /// their final observations (stacked), for bootstrapping V(final).
  std::vector<std::uint32_t> truncated_steps;
  std::vector<float> truncated_observations;
  /// With a recurrent policy: floats of state per row (0: none), and each
  /// row's state before its step 0 here (rows × state_dim; mlp_policy::
  /// recurrent_states()), where the learner's unroll starts.
  std::size_t state_dim = 0;
  std::vector<float> initial_states;

  /// Sized for rows × horizon steps.
  rollout_segment(std::uint64_t index, std::size_t rows, std::size_t horizon, std::size_t obs_dim,
                  std::size_t discrete_dim, std::size_t continuous_dim);
  /// An empty segment (for channel slots).
  rollout_segment() = default;
  /// Env steps it holds (every row's, acted or not).
  [[nodiscard]] std::uint64_t env_steps() const noexcept { return rows * horizon; }
  /// Sizes action_masks for masks of `width` bytes per step, filled with 1.
  void use_masks(std::size_t width);
};

/// Assembles segments. It sees every step twice:
///
/// - when the group announces ready for step n (arrived(), called by the
///   gate's policy_lag_gate on the gate's actor): it records what step n − 1
///   left in the group's rows (reward, flags, final observation, episode
///   totals) and observation n. This must happen before step n is let
///   through, because the segment that step n − 1 completes is what the
///   learner needs to publish the weights step n may wait for;
/// - when the batcher acted on step n (consume(), the step_consumer side): it
///   records the action, log probability, value and policy version.
///
/// When every row has T steps of segment k with their outcomes, the segment
/// goes to segments() (capacity options::segments_in_flight: the lag gate
/// makes sure it is never full, see policy_lag_gate.hpp). Every finished
/// episode of a slot that had a step to train on goes to the episode
/// callback (its return and length as env_slice counts them), on the gate's
/// actor.
///
/// Multi-agent rows (rollout_segment's comment): a row's step is one to
/// train on when the row was active as the policy acted and, with
/// record_acted_from(), the policy says its weights chose the action (a
/// self-play opponent's rows are not the learner's). Each slot keeps its own
/// chain: an outcome that arrives while the slot waits (its agent's episode
/// ended on another agent's move) goes to the slot's last acted step. A slot
/// whose chain is open at a segment's end and that does not act on the
/// next segment's first step (it waits for its turn) moves its last acted
/// step into that next segment, as the step at position 0 (a waiting row's
/// position 0 holds nothing else), and the segment it leaves bootstraps that
/// row from the moved step's observation: the outcome the slot waits for
/// then reaches the step it belongs to, whichever segment it arrives in.
/// Which rows are the learner's must change only where a slot's episode
/// starts.
///
/// Thread safety: arrived() is called by the gate, consume() by the
/// batcher, possibly on another thread: each row is written by one side at
/// a time (the ready/actions hand-over orders them) and the table of open
/// segments is guarded by a mutex. close() may be called from any thread.
class rollout_assembler final : public actors::step_consumer {
 public:
  /// Called for every finished episode with its return and length.
  using episode_callback = std::function<void(double episode_return, double episode_length)>;

  /// What the assembler is built with.
  struct options {
    std::size_t horizon = 128;            ///< steps per row per segment (T)
    std::size_t frames = 1;               ///< observations stacked into a segment's rows
    std::size_t segments_in_flight = 2;   ///< capacity of segments()
    std::size_t state_dim = 0;            ///< recurrent state per row (record_states_from())
  };

  /// `group_rows[g]` are the batch rows of group g (all groups the same size).
  rollout_assembler(envs::env_batch& batch, std::vector<actors::row_range> group_rows, episode_callback on_episode,
                    options opts);

  /// Completed segments, in order.
  [[nodiscard]] channel<std::unique_ptr<rollout_segment>>& segments() noexcept { return segments_; }

  /// Group g announced ready for its step n: records step n − 1's outcome
  /// and observation n, and sends the segments this completes. Throws
  /// usage_error if segments() is full (the gate let too much through).
  void arrived(std::uint32_t g, std::uint64_t n);

  /// Records the action, log probability, value and policy version of each
  /// row in `step` (the batcher calls it after acting).
  void consume(const actors::step_batch& step) override;

  /// Records the continuous actions from `rows` (row-major by batch row,
  /// continuous_action_dim() floats each) instead of the batch's action rows:
  /// the policy's unclipped samples (mlp_policy::sampled_actions()), while
  /// the envs get them clipped. consume() reads row r right after the policy
  /// acted on it, on the batcher's executor. Call before the run starts.
  void record_actions_from(std::span<const float> rows) noexcept { continuous_source_ = rows; }

  /// Records each row's recurrent state at its segment's first step from
  /// `rows` (row-major by batch row, options::state_dim floats each): the
  /// policy's state before acting (mlp_policy::recurrent_states()), read
  /// right after it acted, as record_actions_from(). Call before the run starts.
  void record_states_from(std::span<const float> rows) noexcept { state_source_ = rows; }

  /// Reads whether the learner's weights chose each row's action from
  /// `rows` (one byte per batch row, written by the policy as it acts, read
  /// by consume() right after, as record_actions_from()): a row's step is
  /// one to train on only when it is active and its byte is not 0. Without
  /// it, every active row's step is. Call before the run starts.
  void record_acted_from(std::span<const std::uint8_t> rows) noexcept { acted_source_ = rows; }

  /// Closes segments().
  void close() noexcept { segments_.close(); }

  [[nodiscard]] std::size_t horizon() const noexcept { return options_.horizon; }

 private:
  rollout_segment& segment(std::uint64_t k);  // creates it; caller holds mutex_
  /// Writes the outcome of row r's step (slot i of `seg`) from the batch
  /// onto the row's last acted step; records an ended episode. Caller holds mutex_.
  void record_outcome(rollout_segment& seg, std::uint32_t r);
  /// Moves row r's open step from `from` to position 0 of `to` (the next
  /// segment), `from` bootstrapping the row from its observation. Caller holds mutex_.
  void carry(rollout_segment& from, rollout_segment& to, std::uint32_t r);

  envs::env_batch* batch_;
  std::vector<actors::row_range> group_rows_;
  episode_callback on_episode_;
  options options_;
  std::size_t rows_per_group_;
  channel<std::unique_ptr<rollout_segment>> segments_;
  frame_stack frames_;                  // the arrival side's
  std::vector<std::uint64_t> acted_;    // per group: batches consumed
  std::mutex mutex_;                    // guards open_
  std::map<std::uint64_t, std::unique_ptr<rollout_segment>> open_;
  std::map<std::uint64_t, std::size_t> groups_done_;
  std::vector<std::unique_ptr<rollout_segment>> done_;  // completed by the current arrival
  std::vector<float> scratch_;
  std::span<const float> continuous_source_;  // empty: the batch's action rows
  std::span<const float> state_source_;       // empty: no recurrent state
  std::span<const std::uint8_t> acted_source_;  // empty: every active row is the learner's
  // Per row, guarded by mutex_: the row's last acted step whose chain is
  // open (its index in segment open_segment_[r]; no_step: none), and
  // whether the slot's current episode has a step to train on.
  static constexpr std::size_t no_step = static_cast<std::size_t>(-1);
  std::vector<std::size_t> open_step_;
  std::vector<std::uint64_t> open_segment_;
  std::vector<std::uint8_t> trained_episode_;
};

}  // namespace coral::training
