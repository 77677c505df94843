#include "coral/training/replay_feeder.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/errors.hpp"

namespace coral::training {

replay_feeder::replay_feeder(envs::env_batch& batch, replay::replay_actor& replay, episode_callback on_episode, options opts)
    : batch_(&batch),
      replay_(&replay),
      on_episode_(std::move(on_episode)),
      options_(opts),
      previous_obs_(batch.rows() * batch.obs_dim()),
      previous_discrete_(batch.rows() * batch.discrete_action_dim()),
      previous_continuous_(batch.rows() * batch.continuous_action_dim()),
      previous_mask_(batch.rows() * opts.mask_dim),
      previous_reward_(batch.rows(), 0.0f),
      has_previous_(batch.rows(), 0),
      waited_(batch.rows(), 0),
      all_legal_(opts.mask_dim, 1) {
  if (replay.config().buffer.num_streams != batch.rows()) {
    throw config_error(
        fmt::format(fmt::runtime(replay::errors::feeder_streams), replay.config().buffer.num_streams, batch.rows()));
  }
  const replay::nstep_config nc{.obs_dim = batch.obs_dim(),
                        .discrete_action_dim = batch.discrete_action_dim(),
                        .continuous_action_dim = batch.continuous_action_dim(),
                        .n_step = opts.n_step,
                        .gamma = opts.gamma,
                        .mask_dim = opts.mask_dim};
  assemblers_.reserve(batch.rows());
  for (std::size_t r = 0; r < batch.rows(); ++r) assemblers_.emplace_back(nc);
}

std::unique_ptr<replay::insert_block> replay_feeder::take_block() {
  if (auto b = replay_->free_blocks().try_receive()) return std::move(*b);
  return std::make_unique<replay::insert_block>(batch_->obs_dim(), batch_->discrete_action_dim(),
                                                batch_->continuous_action_dim(), options_.mask_dim);
}

void replay_feeder::consume(const actors::step_batch& step) {
  const auto& b = step.batch;
  const std::size_t od = b.obs_dim();
  const std::size_t dd = b.discrete_action_dim();
  const std::size_t cd = b.continuous_action_dim();
  const std::size_t md = options_.mask_dim;
  const auto active = b.active();
  auto block = take_block();
  for (const auto& range : step.ranges) {
    for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
      const std::span<float> prev_obs(previous_obs_.data() + r * od, od);
      const std::span<std::int32_t> prev_disc(previous_discrete_.data() + r * dd, dd);
      const std::span<float> prev_cont(previous_continuous_.data() + r * cd, cd);
      const std::span<std::uint8_t> prev_mask(previous_mask_.data() + r * md, md);
      ++block->env_steps;
      if (has_previous_[r] != 0 && b.failed()[r] != 0) {
        // This row's env failed and was reset (--on-env-error reset): its
        // episode ended with no outcome to record; drop the steps waiting
        // for one.
        assemblers_[r].clear();
        block->cuts.push_back(r);
        has_previous_[r] = 0;
      }
      const bool acts = active[r] != 0;
      if (has_previous_[r] != 0) {
        // The outcome of the slot's open step, or of a step it sat out since.
        previous_reward_[r] += b.rewards()[r];
        const bool terminated = b.terminated()[r] != 0;
        const bool truncated = b.truncated()[r] != 0;
        const bool ended = terminated || truncated;
        if (ended || acts) {
          // Its chain goes on from this observation, or ends at the final
          // one. An agent that ended while it waited has no final
          // observation (the env writes only the rows that acted): the
          // state it last saw stands in.
          const bool own = ended && waited_[r] != 0;
          const auto next = own     ? std::span<const float>(prev_obs)
                            : ended ? b.final_observations().row(r)
                                    : b.observations().row(r);
          const auto next_mask = md == 0 ? std::span<const std::uint8_t>{}
                                 : own   ? std::span<const std::uint8_t>(prev_mask)
                                 : ended ? std::span<const std::uint8_t>(all_legal_)
                                         : b.action_masks().row(r);
          for (const auto& t : assemblers_[r].push(prev_obs, prev_disc, prev_cont, previous_reward_[r], terminated,
                                                   truncated, next, prev_mask, next_mask)) {
            block->push(r, t);
          }
          has_previous_[r] = 0;
          if (ended && on_episode_) on_episode_(b.episode_returns()[r], b.episode_lengths()[r]);
        }
      }
      waited_[r] = has_previous_[r] != 0 && !acts ? 1 : 0;
      if (!acts) continue;  // no agent acted in this slot: nothing to store
      // The step just chosen waits for its outcome.
      std::ranges::copy(b.observations().row(r), prev_obs.begin());
      if (dd > 0) std::ranges::copy(b.discrete_actions().row(r), prev_disc.begin());
      if (cd > 0) std::ranges::copy(b.continuous_actions().row(r), prev_cont.begin());
      if (md > 0) std::ranges::copy(b.action_masks().row(r), prev_mask.begin());
      previous_reward_[r] = 0.0f;
      has_previous_[r] = 1;
    }
  }
  auto& inbox = replay_->inbox();
  if (!inbox.try_send(replay::replay_msg(std::move(block))) && !inbox.is_closed()) {
    throw usage_error(fmt::format(fmt::runtime(replay::errors::inbox_full), inbox.size()));
  }
}

}  // namespace coral::training
