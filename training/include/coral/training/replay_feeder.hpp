#pragma once
/// \file
/// `replay_feeder`: the sampling side of replay. It turns the steps the
/// inference batcher produces into n-step transitions for the replay actor.
///
/// It is the batcher's step_consumer: consume() sees, for every row of the
/// batch, the outcome of the row's previous step (reward, terminated,
/// truncated, final observation) and the observation and action of the new
/// one. It completes the row's open step (o, a, r, o') through the row's
/// nstep_assembler (one replay stream per row) and sends what that emits to
/// the replay actor as one insert_block per batch, together with the number
/// of env steps the batch accounts for (every row's). A row whose env was
/// reset after a failure (its `failed` column is set) has its pending steps
/// dropped and its stream cut, so no transition spans the reset. Every
/// finished episode of a slot that acted in it goes to the episode callback.
///
/// Multi-agent rows (envs/env.hpp): a row is a slot, and only its active
/// steps (the policy acted for it) are stored; an inactive row adds nothing
/// to replay. Each slot's chain runs along its own acted steps: an open
/// step's successor is the slot's next acted step, and the rewards that
/// arrive while the slot waits (a turn-based game's other player) are added
/// to it, so a waiting agent's outcome (its episode ending on another's
/// move) lands on the step where it last chose, as rollout_assembler does
/// for PPO. A terminated or truncated row ends its slot's chain (and its
/// n-step returns) even while the env's episode goes on.
///
/// Action masks (options::mask_dim > 0): each transition carries the mask
/// its action was chosen under and the mask of its next observation, which
/// the learner's target maximises over. The mask of a final observation is
/// not the env's to give (the row is reset or leaves), so a truncated
/// episode's last transitions bootstrap over every action.
///
/// An agent whose episode ends while it waits has no final observation:
/// the env writes only the rows that acted (envs/env.hpp), so the
/// waiting row's is meaningless (test-turns writes NaN). Its transition
/// takes the slot's last observation and mask as its final ones: a
/// terminated one never reads them, a truncated one bootstraps from the
/// state the agent last saw.
///
/// The env groups are held back for the rate limiter by a gate in front of
/// the batcher (rate_limit_gate.hpp), not by the feeder.
///
/// Thread safety: consume() is called by the batcher, one call at a time.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "coral/actors/step_consumer.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/replay/nstep_assembler.hpp"
#include "coral/replay/replay_actor.hpp"

namespace coral::training {

/// The sampling side of replay.
class replay_feeder final : public actors::step_consumer {
 public:
  /// Called for every finished episode with its return and length, on the
  /// batcher's executor.
  using episode_callback = std::function<void(double episode_return, double episode_length)>;

  /// What the feeder is built with.
  struct options {
    std::size_t n_step = 3;            ///< steps summed into one transition
    double gamma = 0.99;               ///< discount of the n-step return
    /// Bytes of action mask per row to store with each transition
    /// (envs::env_batch::action_mask_dim(); 0: none, the learner's target
    /// then maximises over every action).
    std::size_t mask_dim = 0;
  };

  /// The replay's streams are the batch rows (its num_streams must be
  /// batch.rows()).
  replay_feeder(envs::env_batch& batch, replay::replay_actor& replay, episode_callback on_episode, options opts);

  /// Builds the transitions of the rows in `step` and sends them to the replay actor.
  void consume(const actors::step_batch& step) override;

 private:
  std::unique_ptr<replay::insert_block> take_block();

  envs::env_batch* batch_;
  replay::replay_actor* replay_;
  episode_callback on_episode_;
  options options_;
  // Per row: the assembler and the slot's open step (its last acted step,
  // waiting for its outcome and successor), with the rewards gathered for it.
  std::vector<replay::nstep_assembler> assemblers_;
  std::vector<float> previous_obs_;
  std::vector<std::int32_t> previous_discrete_;
  std::vector<float> previous_continuous_;
  std::vector<std::uint8_t> previous_mask_;
  std::vector<float> previous_reward_;
  std::vector<std::uint8_t> has_previous_;
  std::vector<std::uint8_t> waited_;     // the slot sat out the step whose outcome comes next
  std::vector<std::uint8_t> all_legal_;  // the mask of a final observation
};

}  // namespace coral::training
