#include "coral/learners/mlp_policy.hpp"
#include "coral/learners/network.hpp"

#include <cmath>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"
#include "coral/learners/errors.hpp"
#include "../support/test_envs.hpp"
#include "coral/learners/ppo.hpp"
#include "coral/learners/r2d2.hpp"
#include "coral/learners/r2d2_learner.hpp"
#include "coral/learners/r2d2_policy.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/train.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/errors.hpp"
#include "../../learners/src/learner_backends.hpp"

using namespace coral::learners;
using namespace coral::training;
namespace actors = coral::actors;
namespace envs = coral::envs;

namespace {

constexpr std::size_t rows = 8;

struct fixture {
  explicit fixture(const char* env_name) {
    coral::test::register_test_envs();
    auto e = envs::registry::global().make(env_name, {}, 0, 0);
    spec = network_spec::from_spaces(e->observation_space(), e->action_space(), {16, 16}, 1);
    batch = std::make_unique<envs::env_batch>(rows, e->observation_space(), e->action_space());
    coral::rng rng(42);
    for (std::size_t r = 0; r < rows; ++r) {
      for (auto& x : batch->observations().row(r)) x = static_cast<float>(rng.uniform(-1.0, 1.0));
    }
  }
  network_spec spec;
  std::unique_ptr<envs::env_batch> batch;
  std::vector<float> log_probs = std::vector<float>(rows);
  std::vector<float> values = std::vector<float>(rows);
};

}  // namespace

TEST_CASE("the policy acts within the action space: Discrete, MultiDiscrete and Box", "[learners][network]") {
  for (const char* env : {"cartpole", "test-match", "test-target"}) {
    INFO("env " << env);
    fixture f(env);
    mlp_policy policy(f.spec, rows, 1);
    const actors::row_range all{0, rows};
    for (int step = 0; step < 50; ++step) {
      policy.act({*f.batch, std::span(&all, 1), f.log_probs, f.values});
      for (std::size_t r = 0; r < rows; ++r) {
        const auto d = f.batch->discrete_actions().row(r);
        for (std::size_t h = 0; h < f.spec.nvec.size(); ++h) {
          CHECK(d[h] >= 0);
          CHECK(d[h] < f.spec.nvec[h]);
        }
        const auto c = f.batch->continuous_actions().row(r);
        for (std::size_t i = 0; i < f.spec.continuous_dim(); ++i) {
          CHECK(c[i] >= f.spec.low[i]);
          CHECK(c[i] <= f.spec.high[i]);
        }
        CHECK(std::isfinite(f.log_probs[r]));
        CHECK(std::isfinite(f.values[r]));
        if (f.spec.continuous_dim() == 0) CHECK(f.log_probs[r] <= 0.0f);
      }
    }
  }
}

TEST_CASE("a row's actions do not depend on which rows share its batch", "[learners][network]") {
  fixture a("test-match");
  fixture b("test-match");
  mlp_policy pa(a.spec, rows, 9);
  mlp_policy pb(b.spec, rows, 9);
  const std::vector<float> weights(parameter_count(a.spec), 0.01f);
  pa.load_weights(weights);
  pb.load_weights(weights);
  const actors::row_range all{0, rows};
  const actors::row_range halves[] = {{4, 4}, {0, 4}};
  for (int step = 0; step < 20; ++step) {
    pa.act({*a.batch, std::span(&all, 1), a.log_probs, a.values});
    pb.act({*b.batch, std::span(&halves[0], 1), b.log_probs, b.values});  // the halves in separate batches
    pb.act({*b.batch, std::span(&halves[1], 1), b.log_probs, b.values});
    for (std::size_t r = 0; r < rows; ++r) {
      const auto da = a.batch->discrete_actions().row(r);
      const auto db = b.batch->discrete_actions().row(r);
      CHECK(std::vector<std::int32_t>(da.begin(), da.end()) == std::vector<std::int32_t>(db.begin(), db.end()));
      CHECK(a.log_probs[r] == b.log_probs[r]);
      CHECK(a.values[r] == b.values[r]);
    }
  }
}

TEST_CASE("the policy refuses weights of the wrong size", "[learners][network]") {
  fixture f("cartpole");
  mlp_policy policy(f.spec, rows, 1);
  const std::vector<float> weights(parameter_count(f.spec) + 1, 0.0f);
  CHECK_THROWS_AS(policy.load_weights(weights), coral::usage_error);
}

TEST_CASE("a network is refused for an action space with nothing to act in", "[learners][network][errors]") {
  const auto empty = envs::space::tuple({});
  CHECK_THROWS_MATCHES(
      network_spec::from_spaces(envs::space::box({2}, -1.0F, 1.0F), empty, {16}, 1), coral::config_error,
      Catch::Message(fmt::format(fmt::runtime(coral::learners::errors::unsupported_action_space), empty.to_string())));
}

TEST_CASE("the policy's samples are independent of what the envs drew", "[learners][network]") {
  // Envs draw from (seed, env index); a policy stream equal to its env's
  // would match test-match's digits without any learning.
  coral::test::register_test_envs();
  auto made = envs::registry::global().make_many("test-match", {}, 1, 0, rows);
  const auto obs = made.front()->observation_space();
  const auto act = made.front()->action_space();
  envs::env_batch batch(rows, obs, act);
  envs::env_slice slice(batch, 0, std::move(made));
  const auto spec = network_spec::from_spaces(obs, act, {16, 16}, 1);
  mlp_policy policy(spec, rows, 1);
  policy.load_weights(std::vector<float>(parameter_count(spec), 0.0f));  // uniform over 3 x 3
  std::vector<float> log_probs(rows), values(rows);
  const actors::row_range all{0, rows};
  slice.reset_all();
  double total = 0;
  constexpr int steps = 500;
  for (int t = 0; t < steps; ++t) {
    policy.act({batch, std::span(&all, 1), log_probs, values});
    slice.step_all();
    for (std::size_t r = 0; r < rows; ++r) total += batch.rewards()[r];
  }
  const double mean = total / (steps * rows);
  CHECK(mean > 0.30);  // 1/3 expected; 4000 episodes: standard error about 0.006
  CHECK(mean < 0.37);
}

TEST_CASE("a learner made where the torch learners are not linked names what needs them", "[learners][network][errors]") {
  // The `coral` command links no torch and hands such runs on before they
  // start; a program that makes a torch learner anyway gets this, not a crash.
  const auto* linked = torch_backend();
  REQUIRE(linked != nullptr);  // this test program links coral::learners_torch
  REQUIRE(torch_linked());
  provide_torch_backend(nullptr);
  network_spec spec;
  spec.raw_obs_dim = 4;
  spec.nvec = {2};
  CHECK_FALSE(torch_linked());
  ppo_config on_torch;
  on_torch.backend = network_backend::torch;
  CHECK_THROWS_WITH(ppo_learner(spec, on_torch, 1, 1000),
                    fmt::format(fmt::runtime(coral::learners::errors::torch_not_linked), "ppo_learner"));
  CHECK_NOTHROW(ppo_learner(spec, ppo_config{}, 1, 1000));  // the fused engine has this network
  dqn_config q_on_torch;
  q_on_torch.backend = network_backend::torch;
  CHECK_THROWS_WITH(dqn_learner(spec, q_on_torch, 1),
                    fmt::format(fmt::runtime(coral::learners::errors::torch_not_linked), "dqn_learner"));
  CHECK_NOTHROW(dqn_learner(spec, dqn_config{}, 1));  // the fused engine has every Q-network
  spec.lstm = 8;
  CHECK_THROWS_WITH(r2d2_learner(spec, q_on_torch, r2d2_config{}, 1),
                    fmt::format(fmt::runtime(coral::learners::errors::torch_not_linked), "r2d2_learner"));
  CHECK_NOTHROW(r2d2_learner(spec, dqn_config{}, r2d2_config{}, 1));  // and the recurrent one
  CHECK_THROWS_WITH(ppo_learner(spec, on_torch, 1, 1000),
                    fmt::format(fmt::runtime(coral::learners::errors::torch_not_linked), "ppo_learner"));
  CHECK_NOTHROW(ppo_learner(spec, ppo_config{}, 1, 1000));  // the recurrent actor-critic too
  provide_torch_backend(linked);
  CHECK(torch_linked());
  CHECK_NOTHROW(ppo_learner(spec, on_torch, 1, 1000));
}

TEST_CASE("the policy never draws a masked value and scores the legal ones alone", "[learners][network][masks]") {
  // MultiDiscrete(3, 4) with small random weights: no value is near certain.
  network_spec spec;
  spec.raw_obs_dim = 2;
  spec.nvec = {3, 4};
  spec.hidden = {8};
  coral::rng gen(5);
  std::vector<float> weights(parameter_count(spec));
  for (auto& w : weights) w = static_cast<float>(0.3 * gen.normal());
  envs::env_batch batch(rows, 2, 2, 0, 7);
  batch.declare_action_masks();
  // Row r allows value r mod 3 of the first head and values {r mod 4, (r + 1) mod 4} of the second.
  for (std::size_t r = 0; r < rows; ++r) {
    auto m = batch.action_masks().row(r);
    std::fill(m.begin(), m.end(), std::uint8_t{0});
    m[r % 3] = 1;
    m[3 + r % 4] = 1;
    m[3 + (r + 1) % 4] = 1;
    batch.observations().row(r)[0] = static_cast<float>(r);
  }
  std::vector<float> log_probs(rows), values(rows);
  const actors::row_range all{0, rows};
  for (const bool deterministic : {false, true}) {
    mlp_policy policy(spec, rows, 9);
    policy.load_weights(weights);
    policy.set_deterministic(deterministic);
    std::vector<int> seen(4, 0);
    for (int step = 0; step < 200; ++step) {
      policy.act({batch, std::span(&all, 1), log_probs, values});
      for (std::size_t r = 0; r < rows; ++r) {
        const auto d = batch.discrete_actions().row(r);
        CHECK(d[0] == static_cast<std::int32_t>(r % 3));
        const bool legal = d[1] == static_cast<std::int32_t>(r % 4) || d[1] == static_cast<std::int32_t>((r + 1) % 4);
        CHECK(legal);
        if (r == 0) ++seen[static_cast<std::size_t>(d[1])];
        // The first head has one legal value: probability 1, log 0; the
        // second's log probability is that of two values only (≥ log 1/2
        // for the likelier of the two).
        CHECK(log_probs[r] <= 0.0f);
        CHECK(std::isfinite(log_probs[r]));
      }
    }
    // Sampling draws both legal values of row 0's second head; greedy always one.
    CHECK(seen[2] + seen[3] == 0);
    if (deterministic) CHECK((seen[0] == 0 || seen[1] == 0));
    if (!deterministic) CHECK((seen[0] > 0 && seen[1] > 0));
  }
  // With masks off the policy acts as if every value were legal.
  mlp_policy blind(spec, rows, 9);
  blind.load_weights(weights);
  blind.set_use_masks(false);
  bool illegal = false;
  for (int step = 0; step < 200 && !illegal; ++step) {
    blind.act({batch, std::span(&all, 1), log_probs, values});
    for (std::size_t r = 0; r < rows; ++r) illegal = illegal || batch.discrete_actions().row(r)[0] != static_cast<std::int32_t>(r % 3);
  }
  CHECK(illegal);
}

TEST_CASE("the policy acts for active rows only", "[learners][network][multi-agent]") {
  fixture f("cartpole");
  mlp_policy policy(f.spec, rows, 1);
  auto active = f.batch->active();
  for (std::size_t r = 0; r < rows; ++r) {
    active[r] = r % 2 == 0 ? 1 : 0;
    f.batch->discrete_actions().row(r)[0] = 7;  // no action of cartpole's
    f.log_probs[r] = 1.0f;
  }
  const actors::row_range all{0, rows};
  policy.act({*f.batch, std::span(&all, 1), f.log_probs, f.values});
  for (std::size_t r = 0; r < rows; ++r) {
    INFO("row " << r);
    CHECK((f.batch->discrete_actions().row(r)[0] == 7) == (r % 2 == 1));
    CHECK((f.log_probs[r] == 1.0f) == (r % 2 == 1));
  }
}
