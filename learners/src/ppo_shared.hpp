#pragma once
// Private: the parts of a PPO update that are not the network's (torch-free),
// shared by both backends (ppo_torch.cpp, ppo_fused.cpp) so that they agree
// step for step: the policy lag, GAE, the annealed learning rate, the
// minibatch order and the state checks.

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "coral/core/error.hpp"
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

/// The mean and the largest lag of the segment's steps behind `version`.
inline void policy_lag(const training::rollout_segment& seg, std::uint64_t version, training::update_stats& out) {
  double sum = 0;
  for (auto pv : seg.policy_versions) {
    const std::uint64_t lag = version > pv ? version - pv : 0;
    sum += static_cast<double>(lag);
    out.max_policy_lag = std::max(out.max_policy_lag, lag);
  }
  out.mean_policy_lag = sum / static_cast<double>(seg.rows * seg.horizon);
}

/// GAE per row, from the acting policy's values, `rewards` (scaled, with the
/// truncated steps' bootstrap added) and the learner's `bootstrap` value of
/// each row's last observation; terminated and truncated steps end a chain.
inline void gae(const training::rollout_segment& seg, std::span<const float> rewards, std::span<const float> bootstrap,
                double gamma, double lambda, std::span<float> advantages, std::span<float> returns) {
  const std::size_t T = seg.horizon;
  for (std::size_t r = 0; r < seg.rows; ++r) {
    double acc = 0;
    for (std::size_t t = T; t-- > 0;) {
      const std::size_t i = r * T + t;
      const bool ended = seg.terminated[i] != 0 || seg.truncated[i] != 0;
      const double next_value = t == T - 1 ? bootstrap[r] : seg.values[i + 1];
      const double not_done = ended ? 0.0 : 1.0;
      const double delta = rewards[i] + gamma * next_value * not_done - seg.values[i];
      acc = delta + gamma * lambda * not_done * acc;
      advantages[i] = static_cast<float>(acc);
      returns[i] = static_cast<float>(acc + seg.values[i]);
    }
  }
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
