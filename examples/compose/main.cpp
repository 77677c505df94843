// Composing a sampler by hand: a custom env, env groups on ready channels,
// a batcher and a consumer of steps. Usage: compose [sync|double-buffer|pool]
#include <coral/actors/env_group.hpp>
#include <coral/actors/inference_batcher.hpp>
#include <coral/actors/random_policy.hpp>
#include <coral/core/runtime.hpp>
#include <coral/envs/registry.hpp>
#include <cstdio>
#include <deque>
#include <string>

namespace ce = coral::envs;
using namespace coral::actors;

// Guess a coin flip: reward 1 when the action matches it; one step per episode.
struct coin final : ce::env {
  explicit coin(ce::env_seed s) : rng_(s) {}
  void reset(const ce::env_rows& r) override { r.observation()[0] = 0; }
  void step(const ce::env_rows& r) override {
    r.reward() = r.action() == static_cast<std::int32_t>(rng_() & 1) ? 1.0F : 0.0F;
    r.terminated() = 1;
  }
  const ce::space& observation_space() const noexcept override { return obs_; }
  const ce::space& action_space() const noexcept override { return act_; }
  ce::rng rng_;
  ce::space obs_ = ce::space::box({1}, 0, 1), act_ = ce::space::discrete(2);
};

struct reward_counter final : step_consumer {  // rewards of the steps just taken
  double sum = 0;
  long steps = 0;
  void consume(const step_batch& s) override {
    for (auto r : s.ranges)
      for (auto i = r.first; i < r.first + r.count; ++i, ++steps) sum += s.batch.rewards()[i];
  }
};

int main(int argc, char** argv) {
  const std::string topo = argc > 1 ? argv[1] : "double-buffer";
  auto& reg = ce::registry::global();
  reg.add({.name = "coin", .description = "guess a coin flip", .keys = {},
           .factory = [](const ce::env_config&, ce::env_seed s) { return std::make_unique<coin>(s); }});
  const std::size_t envs = 16, per_group = 4, channels = topo == "double-buffer" ? 2 : 1;
  ce::env_batch batch(envs, ce::space::box({1}, 0, 1), ce::space::discrete(2));
  std::deque<coral::channel<ready_msg>> ready;  // deques: channels and groups never move
  std::vector<coral::channel<ready_msg>*> ready_ptrs;
  for (std::size_t c = 0; c < channels; ++c) ready_ptrs.push_back(&ready.emplace_back(envs));
  std::deque<env_group> groups;
  std::vector<env_group*> group_ptrs;
  for (std::uint32_t g = 0; g < envs / per_group; ++g) {
    group_ptrs.push_back(&groups.emplace_back(
        "env-group-" + std::to_string(g), g, g * per_group,
        ce::env_slice(batch, g * per_group, reg.make_many("coin", {}, 1, g * per_group, per_group)),
        *ready_ptrs[g % channels], env_error_policy::fail));
  }
  random_policy policy(ce::space::discrete(2), envs, 1);
  reward_counter counter;
  inference_batcher batcher(ready_ptrs, group_ptrs, policy, batch,
                            {.batch_size = topo == "sync" ? envs : envs / 2, .max_env_steps = 100000}, &counter);
  coral::runtime rt;
  auto ex = rt.pool("sampling", 2);
  for (auto& g : groups) rt.spawn(g.name(), ex, g.run());
  rt.spawn("inference-batcher", ex, batcher.run());
  rt.run();
  const double mean = counter.sum / static_cast<double>(counter.steps);
  std::printf("topology %s: %ld steps, mean reward %.3f\n", topo.c_str(), counter.steps, mean);
  return mean > 0.4 && mean < 0.6 ? 0 : 1;  // a random guess is right half the time
}
