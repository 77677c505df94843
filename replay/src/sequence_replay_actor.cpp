#include "coral/replay/sequence_replay_actor.hpp"

#include "basic_replay_actor_impl.hpp"

namespace coral::replay {

void sequence_storage::reserve(sequence_batch& b, std::size_t n) const {
  const sequence_layout& l = buffer_.config().layout;
  b.layout = l;
  b.observations.reserve(n * l.observation_floats());
  b.actions.reserve(n * l.length * l.discrete_dim);
  b.rewards.reserve(n * l.length);
  b.flags.reserve(n * l.length);
  b.states.reserve(n * l.state_dim);
  b.masks.reserve(n * l.mask_bytes());
  b.weights.reserve(n);
  b.keys.reserve(n);
  b.priorities.reserve(n);
}

void sequence_storage::insert(sequence_block& block, sequence_replay_stats& stats) {
  buffer_.insert(block);
  stats.sequences.fetch_add(block.size(), std::memory_order_relaxed);
}

void sequence_storage::fill(sequence_batch& b, std::size_t n, bool prioritized, double beta, coral::rng& rng) {
  if (prioritized) {
    buffer_.sample(n, beta, rng, b);
  } else {
    buffer_.sample_uniform(n, rng, b);
  }
}

update_result sequence_storage::apply_update(sequence_batch& b, bool prioritized) {
  if (!prioritized) b.priorities.clear();
  if (b.priorities.empty()) return {};
  const std::size_t applied = buffer_.update_priorities(b.keys, b.priorities);
  b.priorities.clear();
  return {.applied = applied, .stale = b.keys.size() - applied};
}

void sequence_storage::publish(sequence_replay_stats& stats) const noexcept {
  stats.priority_min.store(buffer_.min_priority(), std::memory_order_relaxed);
  stats.priority_max.store(buffer_.max_priority(), std::memory_order_relaxed);
  stats.priority_mean.store(buffer_.mean_priority(), std::memory_order_relaxed);
}

template class basic_replay_actor<sequence_storage>;

}  // namespace coral::replay
