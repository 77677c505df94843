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
      has_previous_(batch.rows(), 0) {
  if (replay.config().buffer.num_streams != batch.rows()) {
    throw config_error(
        fmt::format(fmt::runtime(replay::errors::feeder_streams), replay.config().buffer.num_streams, batch.rows()));
  }
  const replay::nstep_config nc{.obs_dim = batch.obs_dim(),
                        .discrete_action_dim = batch.discrete_action_dim(),
                        .continuous_action_dim = batch.continuous_action_dim(),
                        .n_step = opts.n_step,
                        .gamma = opts.gamma};
  assemblers_.reserve(batch.rows());
  for (std::size_t r = 0; r < batch.rows(); ++r) assemblers_.emplace_back(nc);
}

std::unique_ptr<replay::insert_block> replay_feeder::take_block() {
  if (auto b = replay_->free_blocks().try_receive()) return std::move(*b);
  return std::make_unique<replay::insert_block>(batch_->obs_dim(), batch_->discrete_action_dim(),
                                        batch_->continuous_action_dim());
}

void replay_feeder::consume(const actors::step_batch& step) {
  const auto& b = step.batch;
  const std::size_t od = b.obs_dim();
  const std::size_t dd = b.discrete_action_dim();
  const std::size_t cd = b.continuous_action_dim();
  auto block = take_block();
  for (const auto& range : step.ranges) {
    for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
      const std::span<float> prev_obs(previous_obs_.data() + r * od, od);
      const std::span<std::int32_t> prev_disc(previous_discrete_.data() + r * dd, dd);
      const std::span<float> prev_cont(previous_continuous_.data() + r * cd, cd);
      if (has_previous_[r] != 0 && b.failed()[r] != 0) {
        // This row's env failed and was reset (--on-env-error reset): its
        // episode ended with no outcome to record; drop the steps waiting
        // for one.
        assemblers_[r].clear();
        block->cuts.push_back(r);
        has_previous_[r] = 0;
      }
      if (has_previous_[r] != 0) {
        // The outcome of the row's previous step is in the row now.
        const bool terminated = b.terminated()[r] != 0;
        const bool truncated = b.truncated()[r] != 0;
        const bool ended = terminated || truncated;
        const auto next = ended ? b.final_observations().row(r) : b.observations().row(r);
        for (const auto& t : assemblers_[r].push(prev_obs, prev_disc, prev_cont, b.rewards()[r], terminated,
                                                 truncated, next)) {
          block->push(r, t);
        }
        if (ended && on_episode_) on_episode_(b.episode_returns()[r], b.episode_lengths()[r]);
      }
      // The step just chosen waits for its outcome.
      std::ranges::copy(b.observations().row(r), prev_obs.begin());
      if (dd > 0) std::ranges::copy(b.discrete_actions().row(r), prev_disc.begin());
      if (cd > 0) std::ranges::copy(b.continuous_actions().row(r), prev_cont.begin());
      has_previous_[r] = 1;
      ++block->env_steps;
    }
  }
  auto& inbox = replay_->inbox();
  if (!inbox.try_send(replay::replay_msg(std::move(block))) && !inbox.is_closed()) {
    throw usage_error(fmt::format(fmt::runtime(replay::errors::inbox_full), inbox.size()));
  }
}

}  // namespace coral::training
