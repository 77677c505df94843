// Loads the newest checkpoint in a directory (or a checkpoint file) and
// plays one episode of its env with it: `deploy ckpt`.
#include <algorithm>
#include <cstdio>

#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"
#include "coral/learners/trained_policy.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: deploy CHECKPOINT\n"), 1;
  auto policy = coral::learners::load_policy(argv[1]);  // deterministic, one row
  const auto& run = policy.run_options();               // the env and its args, as trained
  std::vector<std::unique_ptr<coral::envs::env>> one;
  one.push_back(coral::envs::registry::global().make(run.sampler.env, run.sampler.env_args, 1, 0));
  coral::envs::env_batch batch(1, policy.observation_space(), policy.action_space());
  coral::envs::env_slice env(batch, 0, std::move(one));
  env.reset_all();
  while (batch.terminated()[0] == 0 && batch.truncated()[0] == 0) {
    const auto action = policy.act(batch.observations().row(0));
    std::ranges::copy(action.discrete, batch.discrete_actions().row(0).begin());
    std::ranges::copy(action.continuous, batch.continuous_actions().row(0).begin());
    env.step_all();
  }
  std::printf("deploy: %s, one episode of %d steps, return %g\n", run.sampler.env.c_str(),
              batch.episode_lengths()[0], batch.episode_returns()[0]);
}
