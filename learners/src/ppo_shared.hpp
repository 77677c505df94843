#pragma once
// Private: the parts of a PPO update that are not the network's (torch-free),
// shared by both backends (ppo_torch.cpp, ppo_fused.cpp) so that they agree
// step for step: the policy lag, GAE, the annealed learning rate, the
// minibatch order and the state checks.

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "coral/core/error.hpp"
#include "coral/learners/network.hpp"
#include "coral/learners/ppo_learner.hpp"
#include "coral/training/learner_state.hpp"
#include "coral/training/rollout.hpp"
#include "coral/training/training_stats.hpp"

namespace coral::learners::detail {

/// splitmix64: one word of state, so a checkpoint holds it exactly.
inline std::uint64_t next_random(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// `order` = 0, 1, ..., size − 1 shuffled (Fisher-Yates) by `state`.
template <class Index>
void shuffle(std::vector<Index>& order, std::uint64_t& state) noexcept {
  std::iota(order.begin(), order.end(), Index{0});
  for (std::size_t i = order.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(next_random(state) % i);
    std::swap(order[i - 1], order[j]);
  }
}

/// The mean and the largest lag of the segment's acted steps behind `version`.
inline void policy_lag(const training::rollout_segment& seg, std::uint64_t version, training::update_stats& out) {
  double sum = 0;
  std::size_t steps = 0;
  for (std::size_t i = 0; i < seg.policy_versions.size(); ++i) {
    if (seg.acted[i] == 0) continue;
    const auto pv = seg.policy_versions[i];
    const std::uint64_t lag = version > pv ? version - pv : 0;
    sum += static_cast<double>(lag);
    out.max_policy_lag = std::max(out.max_policy_lag, lag);
    ++steps;
  }
  out.mean_policy_lag = steps == 0 ? 0.0 : sum / static_cast<double>(steps);
}

/// The indices (r × horizon + t) of the segment's acted steps, in order:
/// what an update trains on (every step of a single-agent segment).
inline std::vector<std::size_t> acted_steps(const training::rollout_segment& seg) {
  std::vector<std::size_t> steps;
  steps.reserve(seg.acted.size());
  for (std::size_t i = 0; i < seg.acted.size(); ++i) {
    if (seg.acted[i] != 0) steps.push_back(i);
  }
  return steps;
}

/// Calls `fold(first, count)` for each run of consecutive acted steps of a
/// row, row by row (observations r × (horizon + 1) + first onwards): the
/// observations an update folds into the normaliser's moments (a whole row
/// at a time for a single-agent segment).
template <class Fold>
void for_each_acted_run(const training::rollout_segment& seg, Fold&& fold) {
  const std::size_t T = seg.horizon;
  for (std::size_t r = 0; r < seg.rows; ++r) {
    std::size_t t = 0;
    while (t < T) {
      if (seg.acted[r * T + t] == 0) {
        ++t;
        continue;
      }
      const std::size_t first = t;
      while (t < T && seg.acted[r * T + t] != 0) ++t;
      fold(r * (T + 1) + first, t - first);
    }
  }
}

/// GAE per row over its acted steps, from the acting policy's values,
/// `rewards` (scaled, with the truncated steps' bootstrap added) and the
/// learner's `bootstrap` value of each row's last observation: an acted
/// step's successor is the row's next acted step (steps between, not acted,
/// are skipped: a waiting slot's or an empty one's), or the bootstrap after
/// the last one; terminated and truncated steps end a chain. Steps not
/// acted get 0.
inline void gae(const training::rollout_segment& seg, std::span<const float> rewards, std::span<const float> bootstrap,
                double gamma, double lambda, std::span<float> advantages, std::span<float> returns) {
  const std::size_t T = seg.horizon;
  for (std::size_t r = 0; r < seg.rows; ++r) {
    double acc = 0;
    double next_value = bootstrap[r];
    for (std::size_t t = T; t-- > 0;) {
      const std::size_t i = r * T + t;
      if (seg.acted[i] == 0) {
        advantages[i] = 0.0f;
        returns[i] = 0.0f;
        continue;
      }
      // An ended step reads nothing after it (not even as 0 × a NaN: a row
      // whose slot is empty at the end bootstraps from a meaningless row).
      const bool ended = seg.terminated[i] != 0 || seg.truncated[i] != 0;
      const double delta = rewards[i] + (ended ? 0.0 : gamma * next_value) - seg.values[i];
      acc = delta + (ended ? 0.0 : gamma * lambda * acc);
      advantages[i] = static_cast<float>(acc);
      returns[i] = static_cast<float>(acc + seg.values[i]);
      next_value = seg.values[i];
    }
  }
}

/// `raw` (rows of frames × raw_obs_dim floats: a segment's observations) as
/// the network's input rows (input_dim() floats each): `raw` itself where
/// the spec feeds nothing one-hot, else each row encoded
/// (encode_observation()) into `storage`. Throws usage_error when `raw` is
/// not whole rows.
inline std::span<const float> network_inputs(const network_spec& spec, std::span<const float> raw,
                                             std::vector<float>& storage) {
  const std::size_t width = spec.frames * spec.raw_obs_dim, in = spec.input_dim();
  if (width == 0 || raw.size() % width != 0) {
    throw usage_error("ppo_learner: " + std::to_string(raw.size()) + " floats are not observations of " +
                      std::to_string(width));
  }
  if (spec.one_hot.empty()) return raw;
  const std::size_t rows = raw.size() / width;
  storage.resize(rows * in);
  for (std::size_t r = 0; r < rows; ++r) {
    encode_observation(spec, raw.subspan(r * width, width), std::span<float>(storage).subspan(r * in, in));
  }
  return storage;
}

/// The learning rate after `env_steps` of `total_steps` (linear to 0 with anneal_lr).
inline double annealed_rate(const ppo_config& c, std::uint64_t env_steps, std::uint64_t total_steps) noexcept {
  if (!c.anneal_lr || total_steps == 0) return c.learning_rate;
  const double done = static_cast<double>(env_steps) / static_cast<double>(total_steps);
  return c.learning_rate * std::max(0.0, 1.0 - done);
}

/// Refuses a state without the normaliser or scaler state this learner keeps.
inline void check_ppo_state(const training::learner_state& st, bool obs_norm, bool reward_scale) {
  if (obs_norm && st.observation_moments.empty()) {
    throw usage_error("ppo_learner: the checkpoint has no observation normaliser (it was written without --obs-norm)");
  }
  if (reward_scale && st.reward_scaling.empty()) {
    throw usage_error("ppo_learner: the checkpoint has no reward scaler (it was written without --reward-scale)");
  }
}

/// The fused backend (ppo_fused.cpp).
[[nodiscard]] std::unique_ptr<ppo_learner::backend> make_fused_ppo(const network_spec& spec, const ppo_config& config,
                                                                   std::uint64_t seed, std::uint64_t total_steps);

}  // namespace coral::learners::detail
