#include "coral/replay/replay_feeder.hpp"

#include <algorithm>
#include <deque>
#include <string>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/errors.hpp"

namespace coral::replay {

std::size_t batcher_hold(const actors::wiring& wiring, const actors::inference_batcher::options& options,
                         std::size_t envs_per_group) {
  const std::size_t per_group = std::max<std::size_t>(envs_per_group, 1);
  const std::size_t channels = std::max<std::size_t>(wiring.ready_channels, 1);
  const std::size_t groups_wanted = std::max<std::size_t>(options.batch_size / per_group, 1);
  // As inference_batcher::collect counts: the groups that let it act.
  std::size_t groups_needed = groups_wanted;
  if (options.min_batch_size > 0) {
    groups_needed = std::min(groups_wanted, std::max<std::size_t>((options.min_batch_size + per_group - 1) / per_group, 1));
  }
  const std::size_t groups_per_channel = wiring.groups / channels;
  return per_group * ((groups_needed - 1) + (channels - 1) * groups_per_channel);
}

replay_feeder::replay_feeder(envs::env_batch& batch, std::vector<actors::row_range> group_rows, replay_actor& replay,
                             episode_callback on_episode, options opts)
    : batch_(&batch),
      group_rows_(std::move(group_rows)),
      replay_(&replay),
      on_episode_(std::move(on_episode)),
      options_(opts),
      // Every group has at most one announcement in flight; the replay's
      // notes are sent only while none is queued (see replay_actor).
      ready_(group_rows_.size() + 8),
      previous_obs_(batch.rows() * batch.obs_dim()),
      previous_discrete_(batch.rows() * batch.discrete_action_dim()),
      previous_continuous_(batch.rows() * batch.continuous_action_dim()),
      has_previous_(batch.rows(), 0),
      env_steps_(opts.env_steps),
      forwarded_(replay.limiter().inserts()) {
  if (replay.config().buffer.num_streams != batch.rows()) {
    throw config_error(
        fmt::format(fmt::runtime(messages::feeder_streams), replay.config().buffer.num_streams, batch.rows()));
  }
  const nstep_config nc{.obs_dim = batch.obs_dim(),
                        .discrete_action_dim = batch.discrete_action_dim(),
                        .continuous_action_dim = batch.continuous_action_dim(),
                        .n_step = opts.n_step,
                        .gamma = opts.gamma};
  assemblers_.reserve(batch.rows());
  for (std::size_t r = 0; r < batch.rows(); ++r) assemblers_.emplace_back(nc);
  replay.set_waker(&ready_, wake_note);
}

std::unique_ptr<insert_block> replay_feeder::take_block() {
  if (auto b = replay_->free_blocks().try_receive()) return std::move(*b);
  return std::make_unique<insert_block>(batch_->obs_dim(), batch_->discrete_action_dim(),
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
        if (ended && on_episode_ && on_episode_(b.episode_returns()[r], b.episode_lengths()[r])) stop_.store(true);
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
  if (!inbox.try_send(replay_msg(std::move(block))) && !inbox.is_closed()) {
    throw usage_error(fmt::format(fmt::runtime(messages::inbox_full), inbox.size()));
  }
}

asio::awaitable<void> replay_feeder::run(std::vector<channel<actors::ready_msg>*> batcher_ready,
                                         std::function<void(feed_end)> on_finish) {
  std::deque<std::uint32_t> held;  // groups in arrival order
  for (;;) {
    auto msg = co_await ready_.async_receive();
    if (!msg) break;
    if (msg->group != wake_note) held.push_back(msg->group);
    if (stop_.load()) {
      on_finish(feed_end::stop_requested);
      co_return;
    }
    while (!held.empty()) {
      const std::uint32_t g = held.front();
      const std::uint32_t rows = group_rows_[g].count;
      if (options_.max_env_steps != 0 && env_steps_.load(std::memory_order_relaxed) >= options_.max_env_steps) {
        on_finish(feed_end::step_limit);
        co_return;
      }
      // Not yet allowed: the replay actor sends wake_note once it is.
      if (!replay_->wait_for_allowance(forwarded_ + rows)) break;
      forwarded_ += rows;
      env_steps_.fetch_add(rows, std::memory_order_relaxed);
      held.pop_front();
      if (!batcher_ready[g % batcher_ready.size()]->try_send(actors::ready_msg{g})) co_return;
    }
    held_count_.store(held.size(), std::memory_order_relaxed);
  }
}

}  // namespace coral::replay
