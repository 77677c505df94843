#include "coral/envs/faulty.hpp"

#include <chrono>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include <fmt/format.h>

namespace coral::envs {
namespace {

config_key counter_key(std::string name, std::string description) {
  return {.name = std::move(name), .type = config_type::integer, .default_value = "0",
          .description = std::move(description), .min = 0};
}

env_config inner_config(const env_config& config) {
  return env_config(cartpole::name, cartpole::config_keys(),
                    {{"max_steps", std::to_string(config.get_int("max_steps"))}});
}

}  // namespace

std::vector<config_key> faulty::config_keys() {
  auto keys = cartpole::config_keys();
  // The faults write into cartpole's full observation (inf_obs: element 2),
  // so faulty always shows the velocities and does not offer the key.
  std::erase_if(keys, [](const config_key& k) { return k.name == "velocities"; });
  keys.push_back({.name = "env", .type = config_type::integer, .default_value = "0",
                  .description = "index of the env the faults are for (-1: every env)", .min = -1});
  keys.push_back(counter_key("throw_step", "step N throws (0: never)"));
  keys.push_back(counter_key("throw_reset", "reset N throws; reset 1 is the first (0: never)"));
  keys.push_back(counter_key("nan_reward", "step N returns a NaN reward (0: never)"));
  keys.push_back(counter_key("nan_obs", "step N writes NaN into observation[0] (0: never)"));
  keys.push_back(counter_key("inf_obs", "step N writes +inf into observation[2] (0: never)"));
  keys.push_back(counter_key("stall_step", "step N blocks for stall_ms (0: never)"));
  keys.push_back({.name = "stall_ms", .type = config_type::integer, .default_value = "1000",
                  .description = "how long a stalled step blocks, milliseconds", .min = 0, .max = 86'400'000});
  keys.push_back(counter_key("alloc_step", "step N allocates alloc_mb MiB and keeps it (0: never)"));
  keys.push_back({.name = "alloc_mb", .type = config_type::integer, .default_value = "64",
                  .description = "MiB an allocating step takes", .min = 0, .max = 1 << 20});
  keys.push_back({.name = "reward_scale", .type = config_type::real, .default_value = "1",
                  .description = "every reward times this: huge values overflow a learner's losses (finite rewards, "
                                 "non-finite losses)",
                  .min = 0, .max = 3e38});
  keys.push_back({.name = "repeat", .type = config_type::boolean, .default_value = "false",
                  .description = "a fault fires again every N steps (resets) after the first"});
  return keys;
}

faulty::faulty(const env_config& config, env_seed seed)
    : inner_(inner_config(config), seed),
      mine_(config.get_int("env") < 0 || static_cast<std::uint64_t>(config.get_int("env")) == seed.env_index),
      throw_step_(config.get_int("throw_step")),
      throw_reset_(config.get_int("throw_reset")),
      nan_reward_(config.get_int("nan_reward")),
      nan_obs_(config.get_int("nan_obs")),
      inf_obs_(config.get_int("inf_obs")),
      stall_step_(config.get_int("stall_step")),
      stall_ms_(config.get_int("stall_ms")),
      alloc_step_(config.get_int("alloc_step")),
      alloc_mb_(config.get_int("alloc_mb")),
      reward_scale_(static_cast<float>(config.get_float("reward_scale"))),
      repeat_(config.get_bool("repeat")) {}

bool faulty::fires(std::int64_t at, std::int64_t n) const noexcept {
  if (!mine_ || at <= 0) return false;
  return repeat_ ? n % at == 0 : n == at;
}

void faulty::reset(const env_rows& rows) {
  ++resets_;
  if (fires(throw_reset_, resets_)) throw std::runtime_error(fmt::format("injected fault: reset {}", resets_));
  inner_.reset(rows);
}

void faulty::step(const env_rows& rows) {
  ++steps_;
  if (fires(throw_step_, steps_)) throw std::runtime_error(fmt::format("injected fault: step {}", steps_));
  if (fires(stall_step_, steps_)) std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms_));
  if (fires(alloc_step_, steps_)) {
    const auto bytes = static_cast<std::size_t>(alloc_mb_) << 20;
    auto block = std::make_unique<char[]>(bytes);
    std::memset(block.get(), 1, bytes);  // touch every page: the memory is really used
    held_.push_back(std::move(block));
  }
  inner_.step(rows);
  float* obs = rows.observation().data();
  if (mine_) rows.reward() *= reward_scale_;
  if (fires(nan_reward_, steps_)) rows.reward() = std::numeric_limits<float>::quiet_NaN();
  if (fires(nan_obs_, steps_)) obs[0] = std::numeric_limits<float>::quiet_NaN();
  if (fires(inf_obs_, steps_)) obs[2] = std::numeric_limits<float>::infinity();
}

}  // namespace coral::envs
