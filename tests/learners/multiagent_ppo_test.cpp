// PPO on multi-agent segments: advantages run along each slot's own acted
// steps, and steps a segment does not mark acted (an empty slot's, a
// waiting player's) reach no loss, advantage or normaliser, on both
// backends.

#include "coral/learners/ppo_learner.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "../../learners/src/ppo_shared.hpp"
#include "coral/core/rng.hpp"
#include "coral/learners/network.hpp"
#include "coral/training/rollout.hpp"

using namespace coral::learners;
using coral::training::rollout_segment;

namespace multiagent_ppo_test {

constexpr float poison_nan = std::numeric_limits<float>::quiet_NaN();

/// A segment of `rows` × `horizon` random steps (observations of 3 floats,
/// actions Discrete(4)), every step acted, from `seed`.
rollout_segment random_segment(std::size_t rows, std::size_t horizon, std::uint64_t seed) {
  coral::rng gen(seed);
  rollout_segment s(0, rows, horizon, 3, 1, 0);
  for (auto& x : s.observations) x = static_cast<float>(gen.normal());
  for (auto& a : s.discrete_actions) a = static_cast<std::int32_t>(gen.below(4));
  for (auto& x : s.log_probs) x = static_cast<float>(-1.4 + 0.3 * gen.normal());
  for (auto& x : s.values) x = static_cast<float>(gen.normal());
  for (auto& x : s.rewards) x = static_cast<float>(gen.normal());
  for (auto& f : s.terminated) f = gen.uniform() < 0.1 ? 1 : 0;
  for (auto& v : s.policy_versions) v = 1;
  return s;
}

/// Marks step (r, t) of `s` not acted and fills it with `poison`: its
/// observation, log probability, value and reward, and flags that would
/// cut a chain.
void poison(rollout_segment& s, std::size_t r, std::size_t t, float value, std::int32_t action) {
  const std::size_t i = r * s.horizon + t;
  s.acted[i] = 0;
  for (std::size_t k = 0; k < s.obs_dim; ++k) s.observations[(r * (s.horizon + 1) + t) * s.obs_dim + k] = value;
  s.discrete_actions[i] = action;
  s.log_probs[i] = value;
  s.values[i] = value;
  s.rewards[i] = value;
  s.terminated[i] = 1;
  s.truncated[i] = 1;
  s.policy_versions[i] = 0;
}

network_spec small_spec(bool obs_norm) {
  network_spec spec;
  spec.raw_obs_dim = 3;
  spec.nvec = {4};
  spec.hidden = {8, 8};
  spec.normalize_observations = obs_norm;
  return spec;
}

ppo_config small_config(network_backend backend) {
  ppo_config c;
  c.minibatch_size = 8;
  c.epochs = 2;
  c.backend = backend;
  return c;
}

/// The weights after one update of a fresh learner on `s`.
std::vector<float> after_update(const rollout_segment& s, network_backend backend, bool obs_norm,
                                coral::training::update_stats* stats = nullptr) {
  ppo_learner learner(small_spec(obs_norm), small_config(backend), 7, 1'000'000);
  const auto st = learner.update(s, 1);
  if (stats != nullptr) *stats = st;
  return learner.weights();
}

bool all_finite(const std::vector<float>& w) {
  for (const float x : w) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

}  // namespace multiagent_ppo_test

using namespace multiagent_ppo_test;

TEST_CASE("GAE follows each slot's acted steps and cuts where its agent ends", "[learners][ppo][multi-agent]") {
  // Row 0: acts at t = 0, 1, 3 (waits at 2 and 4), its chain open at the end.
  // Row 1: its agent acts at t = 0 and leaves (truncated); a new one acts at
  // 2 and 3 (terminated there); another joins at 4, open at the end.
  rollout_segment s(0, 2, 5, 1, 1, 0);
  s.acted = {1, 1, 0, 1, 0, /**/ 1, 0, 1, 1, 1};
  s.values = {0.5F, -0.25F, 9, 1.5F, 9, /**/ 2.0F, 9, 0.75F, -1.0F, 0.25F};
  const std::vector<float> rewards = {1.0F, 0.5F, 9, -2.0F, 9, /**/ 0.25F, 9, 1.0F, 3.0F, -0.5F};
  s.truncated = {0, 0, 1, 0, 1, /**/ 1, 1, 0, 0, 0};
  s.terminated = {0, 0, 1, 0, 1, /**/ 0, 1, 0, 1, 0};
  const std::vector<float> bootstrap = {0.8F, -0.6F};
  const double g = 0.9, l = 0.8;
  std::vector<float> adv(10), ret(10);
  detail::gae(s, rewards, bootstrap, g, l, adv, ret);

  // Worked out by hand, step by step along each slot's chain.
  const double d3 = -2.0 + g * 0.8 - 1.5;       // row 0, t = 3: bootstraps from the row's next observation
  const double d1 = 0.5 + g * 1.5 - (-0.25);    // t = 1: its successor is t = 3, not the waiting t = 2
  const double d0 = 1.0 + g * -0.25 - 0.5;
  const double a3 = d3, a1 = d1 + g * l * a3, a0 = d0 + g * l * a1;
  const double e4 = -0.5 + g * -0.6 - 0.25;     // row 1, t = 4: the new agent, open
  const double e3 = 3.0 - (-1.0);               // t = 3: terminated, no successor
  const double e2 = 1.0 + g * -1.0 - 0.75;
  const double e0 = 0.25 - 2.0;                 // t = 0: its agent left; the chain ends there
  const double b4 = e4, b3 = e3, b2 = e2 + g * l * b3, b0 = e0;
  const std::vector<double> want = {a0, a1, 0, a3, 0, b0, 0, b2, b3, b4};
  for (std::size_t i = 0; i < 10; ++i) {
    INFO("step " << i);
    CHECK(adv[i] == Approx(want[i]).margin(1e-6));
    CHECK(ret[i] == Approx(s.acted[i] != 0 ? want[i] + s.values[i] : 0.0).margin(1e-6));
  }
}

TEST_CASE("steps not acted reach no loss, advantage or normaliser, on either backend", "[learners][ppo][multi-agent]") {
  const auto backend = GENERATE(network_backend::fused, network_backend::torch);
  const bool obs_norm = GENERATE(false, true);
  INFO((backend == network_backend::fused ? "fused" : "torch") << (obs_norm ? ", obs norm" : ""));
  // Three rows of 12 steps: row 1 is an empty slot throughout, row 2's agent
  // waits every third step and leaves for the last four.
  auto with_poison = [](float value, std::int32_t action) {
    auto s = random_segment(3, 12, 11);
    for (std::size_t t = 0; t < 12; ++t) poison(s, 1, t, value, action);
    for (std::size_t t = 0; t < 12; ++t) {
      if (t % 3 == 2 || t >= 8) poison(s, 2, t, value, action);
    }
    // Neither row's chain is open at the end: their bootstrap observations
    // are meaningless (an empty slot's) and must not count either.
    for (const std::size_t r : {1, 2}) {
      for (std::size_t k = 0; k < 3; ++k) s.observations[(r * 13 + 12) * 3 + k] = value;
    }
    s.terminated[2 * 12 + 7] = 0;
    s.truncated[2 * 12 + 7] = 1;  // the agent's last step before it left
    s.truncated_steps = {2 * 12 + 7};
    s.truncated_observations = {0.5F, -0.5F, 1.0F};
    return s;
  };
  coral::training::update_stats nan_stats;
  const auto a = after_update(with_poison(poison_nan, 3), backend, obs_norm, &nan_stats);
  const auto b = after_update(with_poison(1e6F, 0), backend, obs_norm);
  CHECK(all_finite(a));
  CHECK(a == b);  // bit for bit: nothing of the poisoned steps took part
  CHECK(std::isfinite(nan_stats.policy_loss));
  CHECK(std::isfinite(nan_stats.value_loss));
  CHECK(nan_stats.mean_policy_lag == 0.0);  // the poisoned steps' version 0 is not a lag

  // The empty slot's row taken out altogether: the same update, so the
  // loss's means are over acted steps only (no padding in a denominator).
  auto full = with_poison(poison_nan, 3);
  rollout_segment two(0, 2, 12, 3, 1, 0);
  auto take_row = [&](std::size_t from, std::size_t to) {
    std::copy_n(full.observations.begin() + static_cast<std::ptrdiff_t>(from * 13 * 3), 13 * 3,
                two.observations.begin() + static_cast<std::ptrdiff_t>(to * 13 * 3));
    for (std::size_t t = 0; t < 12; ++t) {
      const auto i = from * 12 + t, j = to * 12 + t;
      two.discrete_actions[j] = full.discrete_actions[i];
      two.log_probs[j] = full.log_probs[i];
      two.values[j] = full.values[i];
      two.rewards[j] = full.rewards[i];
      two.terminated[j] = full.terminated[i];
      two.truncated[j] = full.truncated[i];
      two.policy_versions[j] = full.policy_versions[i];
      two.acted[j] = full.acted[i];
    }
  };
  take_row(0, 0);
  take_row(2, 1);
  two.truncated_steps = {1 * 12 + 7};
  two.truncated_observations = full.truncated_observations;
  // (To rounding: the bootstrap values come from a pass over 2 rows, not 3.)
  const auto c = after_update(two, backend, obs_norm);
  REQUIRE(c.size() == a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("weight " << i);
    CHECK(c[i] == Approx(a[i]).epsilon(1e-5).margin(1e-6));
  }
}

TEST_CASE("a segment with fewer than two acted steps trains nothing and counts its steps",
          "[learners][ppo][multi-agent]") {
  const auto backend = GENERATE(network_backend::fused, network_backend::torch);
  auto s = random_segment(2, 4, 3);
  for (std::size_t r = 0; r < 2; ++r) {
    for (std::size_t t = 0; t < 4; ++t) {
      if (r != 0 || t != 2) poison(s, r, t, poison_nan, 0);
    }
  }
  ppo_learner learner(small_spec(false), small_config(backend), 7, 1'000'000);
  const auto before = learner.weights();
  (void)learner.update(s, 1);
  CHECK(learner.weights() == before);
  CHECK(learner.updates() == 1);
  CHECK(learner.env_steps() == 8);
}
