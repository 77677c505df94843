#include "coral/replay/replay_buffer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/errors.hpp"

namespace coral::replay {

namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();

void check_exponent(const char* name, double value) {
  if (!(value >= 0.0 && value <= 1.0)) {
    throw config_error(fmt::format(fmt::runtime(messages::bad_exponent), name, value));
  }
}

void check_size(const char* name, std::size_t actual, std::size_t expected) {
  if (actual != expected) throw config_error(fmt::format(fmt::runtime(messages::size_mismatch), name, actual, expected));
}

const replay_config& checked(const replay_config& c) {
  if (c.num_streams == 0) throw config_error(std::string(messages::zero_streams));
  if (c.capacity == 0 || c.capacity % c.num_streams != 0) {
    throw config_error(fmt::format(fmt::runtime(messages::bad_capacity), c.capacity, c.num_streams));
  }
  if (c.n_step == 0) throw config_error(std::string(messages::zero_n_step));
  if (c.capacity / c.num_streams < c.n_step + 2) {
    throw config_error(fmt::format(fmt::runtime(messages::stream_too_small), c.n_step + 2, c.capacity / c.num_streams));
  }
  check_exponent("alpha", c.alpha);
  if (!(c.epsilon > 0.0)) throw config_error(fmt::format(fmt::runtime(messages::bad_epsilon), c.epsilon));
  return c;
}

}  // namespace

replay_buffer::replay_buffer(const replay_config& config)
    : config_(checked(config)),
      stream_capacity_(config.capacity / config.num_streams),
      observations_(config.capacity, config.obs_dim),
      discrete_(config.capacity, config.discrete_action_dim),
      continuous_(config.capacity, config.continuous_action_dim),
      returns_(config.capacity),
      discounts_(config.capacity),
      steps_(config.capacity),
      states_(config.capacity, state_empty),
      priorities_(config.capacity),
      generations_(config.capacity),
      heads_(config.num_streams),
      sum_(config.capacity),
      min_(config.capacity) {}

std::size_t replay_buffer::claim(std::size_t stream) {
  const std::uint64_t pos = heads_[stream]++;
  const std::size_t slot = stream * stream_capacity_ + static_cast<std::size_t>(pos % stream_capacity_);
  if (states_[slot] == state_complete) --complete_;
  sum_.leaf_data()[slot] = 0.0;
  min_.leaf_data()[slot] = infinity;
  generations_[slot] = ++inserts_;
  return slot;
}

void replay_buffer::validate(std::size_t stream, const transition_batch& b) const {
  if (stream >= config_.num_streams) {
    throw config_error(fmt::format(fmt::runtime(messages::bad_stream), stream, config_.num_streams));
  }
  check_size("observations", b.observations.size(), b.count * config_.obs_dim);
  check_size("discrete_actions", b.discrete_actions.size(), b.count * config_.discrete_action_dim);
  check_size("continuous_actions", b.continuous_actions.size(), b.count * config_.continuous_action_dim);
  check_size("n_step_returns", b.n_step_returns.size(), b.count);
  check_size("discounts", b.discounts.size(), b.count);
  check_size("steps", b.steps.size(), b.count);
  check_size("last_of_episode", b.last_of_episode.size(), b.count);
  check_size("next_observations", b.next_observations.size(), b.count * config_.obs_dim);
  for (std::size_t i = 0; i < b.count; ++i) {
    const std::size_t limit = b.last_of_episode[i] ? 1 : config_.n_step;
    if (b.steps[i] < 1 || b.steps[i] > limit) {
      throw config_error(fmt::format(fmt::runtime(messages::bad_steps), b.steps[i], limit));
    }
  }
}

void replay_buffer::insert(std::size_t stream, const transition& t) {
  const std::uint8_t last = t.last_of_episode ? 1 : 0;
  transition_batch b;
  b.count = 1;
  b.observations = t.observation;
  b.discrete_actions = t.discrete_action;
  b.continuous_actions = t.continuous_action;
  b.n_step_returns = {&t.n_step_return, 1};
  b.discounts = {&t.discount, 1};
  b.steps = {&t.steps, 1};
  b.last_of_episode = {&last, 1};
  b.next_observations = t.next_observation;
  insert(stream, b);
}

void replay_buffer::insert(std::size_t stream, const transition_batch& b) {
  validate(stream, b);
  const std::uint64_t old_head = heads_[stream];
  const std::size_t obs_dim = config_.obs_dim;
  const std::size_t ddim = config_.discrete_action_dim;
  const std::size_t cdim = config_.continuous_action_dim;
  for (std::size_t i = 0; i < b.count; ++i) {
    std::size_t slot = claim(stream);
    std::copy_n(b.observations.data() + i * obs_dim, obs_dim, observations_.data() + slot * obs_dim);
    std::copy_n(b.discrete_actions.data() + i * ddim, ddim, discrete_.data() + slot * ddim);
    std::copy_n(b.continuous_actions.data() + i * cdim, cdim, continuous_.data() + slot * cdim);
    returns_[slot] = b.n_step_returns[i];
    discounts_[slot] = b.discounts[i];
    steps_[slot] = static_cast<std::uint16_t>(b.steps[i]);
    priorities_[slot] = max_leaf_;
    states_[slot] = state_pending;
    if (b.last_of_episode[i]) {
      slot = claim(stream);
      std::copy_n(b.next_observations.data() + i * obs_dim, obs_dim, observations_.data() + slot * obs_dim);
      steps_[slot] = 0;
      states_[slot] = state_frame;
    }
  }
  complete_and_refresh(stream, old_head);
}

void replay_buffer::complete_and_refresh(std::size_t stream, std::uint64_t old_head) {
  const std::uint64_t head = heads_[stream];
  const std::size_t cap = stream_capacity_;
  const std::size_t base = stream * cap;
  // A pending transition at p bootstraps from p + k, k <= n, and p + k >= the
  // head before this insert; so only positions from old_head - n can change.
  std::uint64_t first = old_head >= config_.n_step ? old_head - config_.n_step : 0;
  if (head - first > cap) first = head - cap;  // older positions were overwritten in this call
  double* sum_leaves = sum_.leaf_data();
  double* min_leaves = min_.leaf_data();
  for (std::uint64_t p = first; p < head; ++p) {
    const std::size_t slot = base + static_cast<std::size_t>(p % cap);
    if (states_[slot] == state_pending && p + steps_[slot] < head) {
      states_[slot] = state_complete;
      ++complete_;
      sum_leaves[slot] = priorities_[slot];
      min_leaves[slot] = priorities_[slot];
    }
  }
  // Recompute the ancestors of the touched positions [first, head), split
  // where they wrap around the stream's ring.
  const std::size_t lo = static_cast<std::size_t>(first % cap);
  const std::size_t count = static_cast<std::size_t>(head - first);
  if (lo + count <= cap) {
    sum_.refresh(base + lo, base + lo + count);
    min_.refresh(base + lo, base + lo + count);
  } else {
    sum_.refresh(base + lo, base + cap);
    min_.refresh(base + lo, base + cap);
    sum_.refresh(base, base + (lo + count - cap));
    min_.refresh(base, base + (lo + count - cap));
  }
}

void replay_buffer::sample_uniform(envs::rng& rng, std::size_t batch, sampled_batch& out) const {
  if (complete_ == 0) throw config_error(std::string(messages::empty_buffer));
  out.keys.resize(batch);
  out.probabilities.resize(batch);
  out.weights.resize(batch);
  const double probability = 1.0 / static_cast<double>(complete_);
  for (std::size_t i = 0; i < batch; ++i) {
    // Rejection over all slots: frames, pending and empty slots are redrawn.
    // Every complete transition is equally likely.
    std::size_t slot = 0;
    do {
      slot = static_cast<std::size_t>(rng.below(config_.capacity));
    } while (states_[slot] != state_complete);
    out.keys[i] = {slot, generations_[slot]};
    out.probabilities[i] = probability;
    out.weights[i] = 1.0f;
  }
}

void replay_buffer::sample_prioritized(envs::rng& rng, std::size_t batch, double beta, sampled_batch& out) const {
  if (complete_ == 0) throw config_error(std::string(messages::empty_buffer));
  check_exponent("beta", beta);
  out.keys.resize(batch);
  out.probabilities.resize(batch);
  out.weights.resize(batch);
  const double total = sum_.total();
  const double stratum = total / static_cast<double>(batch);
  // w_i = (N P(i))^-beta / (N P_min)^-beta = (p_i / p_min)^-beta.
  const double min_leaf = min_.total();
  const auto neg_beta = static_cast<float>(-beta);
  for (std::size_t i = 0; i < batch; ++i) out.probabilities[i] = (static_cast<double>(i) + rng.uniform()) * stratum;
  scratch_slots_.resize(batch);
  sum_.find_prefix_many(out.probabilities, scratch_slots_);
  constexpr std::size_t ahead = sum_tree::prefetch_distance;
  for (std::size_t i = 0; i < batch; ++i) {
    // generations_ is 8 MB at a million slots: fetch ahead, as the descent does.
    if (i + ahead < batch) __builtin_prefetch(generations_.data() + scratch_slots_[i + ahead]);
    const std::size_t slot = scratch_slots_[i];
    const double leaf = sum_.get(slot);
    out.keys[i] = {slot, generations_[slot]};
    out.probabilities[i] = leaf / total;
    // Single precision: weights are floats anyway, and powf costs half of pow.
    out.weights[i] = std::pow(static_cast<float>(leaf / min_leaf), neg_beta);
  }
}

std::size_t replay_buffer::update_priorities(std::span<const sample_key> keys, std::span<const float> td_errors) {
  check_size("td_errors", td_errors.size(), keys.size());
  scratch_slots_.clear();
  scratch_values_.clear();
  scratch_slots_.reserve(keys.size());
  scratch_values_.reserve(keys.size());
  const auto alpha = static_cast<float>(config_.alpha);
  constexpr std::size_t ahead = sum_tree::prefetch_distance;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i + ahead < keys.size() && keys[i + ahead].slot < config_.capacity) {
      // Random slots of a large buffer: their state and priority are cache misses.
      __builtin_prefetch(states_.data() + keys[i + ahead].slot);
    }
    const sample_key key = keys[i];
    if (key.slot >= config_.capacity || generations_[key.slot] != key.generation ||
        states_[key.slot] != state_complete) {
      continue;
    }
    const double priority = std::abs(static_cast<double>(td_errors[i])) + config_.epsilon;
    // Single precision is ample for a sampling weight and powf costs half of pow.
    // Kept at least FLT_MIN: a zero leaf would make a complete transition
    // unsampleable and the importance-weight normaliser zero.
    const double leaf = std::max(std::pow(static_cast<float>(priority), alpha), std::numeric_limits<float>::min());
    if (priority > max_priority_) {
      max_priority_ = priority;
      max_leaf_ = leaf;
    }
    // priorities_ is read only when a pending transition completes; a complete
    // one's priority lives in its sum-tree leaf, and skipping the write saves
    // a cache miss per update.
    scratch_slots_.push_back(key.slot);
    scratch_values_.push_back(leaf);
  }
  sum_.set_many(scratch_slots_, scratch_values_);
  min_.set_many(scratch_slots_, scratch_values_);
  return scratch_slots_.size();
}

}  // namespace coral::replay
