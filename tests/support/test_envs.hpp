#pragma once
/// \file
/// Test support: two one-step envs for the action spaces no built-in env
/// has, so that PPO's MultiDiscrete and Box heads are exercised.
///
/// - `test-match`: observation Box((2,)) = (d0 − 1, d1 − 1) for two digits
///   d in {0, 1, 2} drawn at reset; action MultiDiscrete([3, 3]); reward 0.5
///   per component equal to its digit. Optimal return 1.
/// - `test-target`: observation Box((1,)) = a target t uniform in [−1, 1];
///   action Box((1,), −2, 2); reward 1 − |a − t|. Optimal return 1.

#include <cmath>
#include <memory>

#include "coral/envs/env.hpp"
#include "coral/envs/registry.hpp"
#include "coral/core/rng.hpp"

namespace coral::test {

class match_env final : public envs::env {
 public:
  explicit match_env(coral::env_seed s)
      : obs_(envs::space::box({2}, -1.0f, 1.0f)), act_(envs::space::multi_discrete({3, 3})), rng_(s) {}
  void reset(const envs::env_rows& rows) override {
    d0_ = static_cast<int>(rng_.below(3));
    d1_ = static_cast<int>(rng_.below(3));
    rows.observation()[0] = static_cast<float>(d0_ - 1);
    rows.observation()[1] = static_cast<float>(d1_ - 1);
  }
  void step(const envs::env_rows& rows) override {
    const auto a = rows.discrete_action();
    rows.reward() = 0.5f * static_cast<float>(a[0] == d0_) + 0.5f * static_cast<float>(a[1] == d1_);
    rows.terminated() = 1;
  }
  [[nodiscard]] const envs::space& observation_space() const noexcept override { return obs_; }
  [[nodiscard]] const envs::space& action_space() const noexcept override { return act_; }
  [[nodiscard]] std::optional<double> solved_return() const noexcept override { return 0.95; }

 private:
  envs::space obs_;
  envs::space act_;
  coral::rng rng_;
  int d0_ = 0;
  int d1_ = 0;
};

class target_env final : public envs::env {
 public:
  explicit target_env(coral::env_seed s)
      : obs_(envs::space::box({1}, -1.0f, 1.0f)), act_(envs::space::box({1}, -2.0f, 2.0f)), rng_(s) {}
  void reset(const envs::env_rows& rows) override {
    target_ = static_cast<float>(rng_.uniform(-1.0, 1.0));
    rows.observation()[0] = target_;
  }
  void step(const envs::env_rows& rows) override {
    rows.reward() = 1.0f - std::abs(rows.continuous_action()[0] - target_);
    rows.terminated() = 1;
  }
  [[nodiscard]] const envs::space& observation_space() const noexcept override { return obs_; }
  [[nodiscard]] const envs::space& action_space() const noexcept override { return act_; }
  [[nodiscard]] std::optional<double> solved_return() const noexcept override { return 0.9; }

 private:
  envs::space obs_;
  envs::space act_;
  coral::rng rng_;
  float target_ = 0;
};

/// Registers test-match and test-target in the global registry (once).
inline void register_test_envs() {
  auto& r = envs::registry::global();
  if (r.contains("test-match")) return;
  r.add({.name = "test-match",
         .description = "test env: match two digits with a MultiDiscrete action",
         .keys = {},
         .factory = [](const envs::env_config&, coral::env_seed s) -> std::unique_ptr<envs::env> {
           return std::make_unique<match_env>(s);
         }});
  r.add({.name = "test-target",
         .description = "test env: output a target with a Box action",
         .keys = {},
         .factory = [](const envs::env_config&, coral::env_seed s) -> std::unique_ptr<envs::env> {
           return std::make_unique<target_env>(s);
         }});
}

}  // namespace coral::test
