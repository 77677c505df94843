#pragma once
/// \file
/// Test support: `test-counter`, an env whose observation says exactly what
/// happened to it, so a consumer can check every step of every env.
///
/// observation = [env index, steps taken in total, steps in this episode,
///                last action applied (-1 after a reset)]
/// action      = Discrete(4); reward = 1 per step
/// episode     = terminated after `episode_length` steps
/// failure     = env `fail_env` throws "boom" on its `fail_step`-th step.
/// slowness    = env `slow_env` sleeps `slow_us` microseconds in each step.

#include <chrono>
#include <stdexcept>
#include <thread>

#include "coral/envs/registry.hpp"

namespace coral::test {

class counter_env final : public envs::env {
 public:
  counter_env(const envs::env_config& c, coral::env_seed s)
      : obs_space_(envs::space::box({4}, -1e9F, 1e9F)),
        act_space_(envs::space::discrete(4)),
        index_(static_cast<std::int64_t>(s.env_index)),
        episode_length_(c.get_int("episode_length")),
        fail_env_(c.get_int("fail_env")),
        fail_step_(c.get_int("fail_step")),
        slow_env_(c.get_int("slow_env")),
        slow_us_(c.get_int("slow_us")) {}

  void reset(const envs::env_rows& rows) override {
    in_episode_ = 0;
    write(rows, -1);
  }
  void step(const envs::env_rows& rows) override {
    ++total_;
    if (index_ == fail_env_ && total_ == fail_step_) throw std::runtime_error("boom");
    if (index_ == slow_env_) std::this_thread::sleep_for(std::chrono::microseconds(slow_us_));
    ++in_episode_;
    write(rows, rows.action());
    rows.reward() = 1.0F;
    rows.terminated() = static_cast<std::uint8_t>(in_episode_ >= episode_length_);
    rows.truncated() = 0;
  }
  [[nodiscard]] const envs::space& observation_space() const noexcept override { return obs_space_; }
  [[nodiscard]] const envs::space& action_space() const noexcept override { return act_space_; }

  static void register_once() {
    auto& r = envs::registry::global();
    if (r.contains("test-counter")) return;
    r.add(envs::env_spec{
        .name = "test-counter",
        .description = "test env: reports its own step counts",
        .keys = {{.name = "episode_length", .default_value = "5", .description = "steps per episode", .min = 1},
                 {.name = "fail_env", .default_value = "-1", .description = "env that throws"},
                 {.name = "fail_step", .default_value = "-1", .description = "its step that throws"},
                 {.name = "slow_env", .default_value = "-1", .description = "env that sleeps in each step"},
                 {.name = "slow_us", .default_value = "0", .description = "how long it sleeps", .min = 0}},
        .factory = [](const envs::env_config& c, coral::env_seed s) -> std::unique_ptr<envs::env> {
          return std::make_unique<counter_env>(c, s);
        }});
  }

 private:
  void write(const envs::env_rows& rows, std::int32_t action) {
    auto obs = rows.observation();
    obs[0] = static_cast<float>(index_);
    obs[1] = static_cast<float>(total_);
    obs[2] = static_cast<float>(in_episode_);
    obs[3] = static_cast<float>(action);
  }

  envs::space obs_space_;
  envs::space act_space_;
  std::int64_t index_;
  std::int64_t episode_length_;
  std::int64_t fail_env_;
  std::int64_t fail_step_;
  std::int64_t slow_env_;
  std::int64_t slow_us_;
  std::int64_t total_ = 0;
  std::int64_t in_episode_ = 0;
};

}  // namespace coral::test
