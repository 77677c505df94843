#include "coral/replay/replay_actor.hpp"

#include "basic_replay_actor_impl.hpp"

namespace coral::replay {

void insert_block::clear() noexcept {
  env_steps = 0;
  streams.clear();
  observations.clear();
  next_observations.clear();
  discrete.clear();
  continuous.clear();
  returns.clear();
  discounts.clear();
  steps.clear();
  last_of_episode.clear();
  masks.clear();
  next_masks.clear();
  cuts.clear();
}

void insert_block::push(std::uint32_t stream, const transition& t) {
  streams.push_back(stream);
  observations.insert(observations.end(), t.observation.begin(), t.observation.end());
  next_observations.insert(next_observations.end(), t.next_observation.begin(), t.next_observation.end());
  discrete.insert(discrete.end(), t.discrete_action.begin(), t.discrete_action.end());
  continuous.insert(continuous.end(), t.continuous_action.begin(), t.continuous_action.end());
  returns.push_back(t.n_step_return);
  discounts.push_back(t.discount);
  steps.push_back(t.steps);
  last_of_episode.push_back(t.last_of_episode ? 1 : 0);
  masks.insert(masks.end(), t.action_mask.begin(), t.action_mask.end());
  next_masks.insert(next_masks.end(), t.next_action_mask.begin(), t.next_action_mask.end());
}

void transition_storage::reserve(sample_batch& b, std::size_t n) const {
  const replay_config& c = config_;
  b.observations.reserve(n * c.obs_dim);
  b.next_observations.reserve(n * c.obs_dim);
  b.discrete.reserve(n * c.discrete_action_dim);
  b.continuous.reserve(n * c.continuous_action_dim);
  b.returns.reserve(n);
  b.discounts.reserve(n);
  b.weights.reserve(n);
  b.next_masks.reserve(n * c.mask_dim);
  b.keys.reserve(n);
  b.td_errors.reserve(n);
}

void transition_storage::insert(insert_block& block, replay_stats& stats) {
  for (const auto stream : block.cuts) buffer_.cut(stream);
  stats.cuts.fetch_add(block.cuts.size(), std::memory_order_relaxed);
  // The feeder writes each row's transitions one after the other: insert
  // them as runs, so the buffer refreshes its tree once per run.
  const std::size_t n = block.size();
  const std::size_t od = block.obs_dim;
  const std::size_t dd = block.discrete_dim;
  const std::size_t cd = block.continuous_dim;
  const std::size_t md = block.mask_dim;
  for (std::size_t first = 0; first < n;) {
    const std::uint32_t stream = block.streams[first];
    std::size_t end = first + 1;
    while (end < n && block.streams[end] == stream) ++end;
    const std::size_t k = end - first;
    transition_batch run;
    run.count = k;
    run.observations = std::span<const float>(block.observations).subspan(first * od, k * od);
    run.next_observations = std::span<const float>(block.next_observations).subspan(first * od, k * od);
    run.discrete_actions = std::span<const std::int32_t>(block.discrete).subspan(first * dd, k * dd);
    run.continuous_actions = std::span<const float>(block.continuous).subspan(first * cd, k * cd);
    run.n_step_returns = std::span<const float>(block.returns).subspan(first, k);
    run.discounts = std::span<const float>(block.discounts).subspan(first, k);
    run.steps = std::span<const std::uint32_t>(block.steps).subspan(first, k);
    run.last_of_episode = std::span<const std::uint8_t>(block.last_of_episode).subspan(first, k);
    run.action_masks = std::span<const std::uint8_t>(block.masks).subspan(first * md, k * md);
    run.next_action_masks = std::span<const std::uint8_t>(block.next_masks).subspan(first * md, k * md);
    buffer_.insert(stream, run);
    first = end;
  }
  stats.transitions.fetch_add(n, std::memory_order_relaxed);
}

void transition_storage::fill(sample_batch& b, std::size_t n, bool prioritized, double beta, coral::rng& rng) {
  if (prioritized) {
    buffer_.sample_prioritized(rng, n, beta, scratch_);
  } else {
    buffer_.sample_uniform(rng, n, scratch_);
  }
  const replay_config& c = config_;
  const std::size_t od = c.obs_dim;
  const std::size_t dd = c.discrete_action_dim;
  const std::size_t cd = c.continuous_action_dim;
  const std::size_t md = c.mask_dim;
  b.size = n;
  b.observations.resize(n * od);
  b.next_observations.resize(n * od);
  b.discrete.resize(n * dd);
  b.continuous.resize(n * cd);
  b.returns.resize(n);
  b.discounts.resize(n);
  b.next_masks.resize(n * md);
  b.weights.assign(scratch_.weights.begin(), scratch_.weights.end());
  b.keys.assign(scratch_.keys.begin(), scratch_.keys.end());
  b.td_errors.clear();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t slot = scratch_.keys[i].slot;
    std::ranges::copy(buffer_.observation(slot), b.observations.begin() + static_cast<std::ptrdiff_t>(i * od));
    std::ranges::copy(buffer_.next_observation(slot), b.next_observations.begin() + static_cast<std::ptrdiff_t>(i * od));
    std::ranges::copy(buffer_.discrete_action(slot), b.discrete.begin() + static_cast<std::ptrdiff_t>(i * dd));
    std::ranges::copy(buffer_.continuous_action(slot), b.continuous.begin() + static_cast<std::ptrdiff_t>(i * cd));
    if (md > 0) std::ranges::copy(buffer_.next_action_mask(slot), b.next_masks.begin() + static_cast<std::ptrdiff_t>(i * md));
    b.returns[i] = buffer_.n_step_return(slot);
    b.discounts[i] = buffer_.discount(slot);
  }
}

update_result transition_storage::apply_update(sample_batch& b, bool prioritized) {
  if (!prioritized) b.td_errors.clear();
  if (b.td_errors.empty()) return {};
  const std::size_t applied = buffer_.update_priorities(b.keys, b.td_errors);
  b.td_errors.clear();
  return {.applied = applied, .stale = b.keys.size() - applied};
}

void transition_storage::resumed() {
  for (std::size_t s = 0; s < config_.num_streams; ++s) buffer_.cut(s);
}

template class basic_replay_actor<transition_storage>;

}  // namespace coral::replay
