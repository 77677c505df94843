// Structured spaces in PPO's network: a Dict/Tuple observation's
// categorical elements enter one-hot, its Box elements as they are; Dict
// and Tuple actions get a head per component; a one-step env with a Dict
// observation and a Dict action is learnt.

#include "coral/learners/network.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <vector>

#include <catch2/catch.hpp>

#include "coral/actors/policy.hpp"
#include "coral/envs/env.hpp"
#include "coral/envs/registry.hpp"
#include "coral/learners/mlp_policy.hpp"
#include "coral/learners/ppo.hpp"
#include "coral/learners/train.hpp"
#include "coral/training/algorithm_descriptor.hpp"

using namespace coral::learners;
namespace envs = coral::envs;

namespace structured_test {

/// Dict(noise: Box((2,)), cue: Discrete(3), more: Tuple(MultiDiscrete(2, 4), Box((1,)))):
/// flat row [noise0, noise1, cue, md0, md1, x].
envs::space nested_observation() {
  return envs::space::dict(
      {{"noise", envs::space::box({2}, -1.0F, 1.0F)},
       {"cue", envs::space::discrete(3)},
       {"more", envs::space::tuple({envs::space::multi_discrete({2, 4}), envs::space::box({1}, -10.0F, 10.0F)})}});
}

/// `test-dict`: one step. Observation Dict(cue: Discrete(4), noise: Box((2,)))
/// (the noise uniform, meaningless); action Dict(pick: Discrete(4), dial:
/// Box((1,), -1, 1)). Reward 0.5 if pick == cue, plus 0.5 (1 − |dial − 0.5|).
/// Optimal return 1.
class dict_env final : public envs::env {
 public:
  explicit dict_env(coral::env_seed s) : rng_(s) {}
  void reset(const envs::env_rows& rows) override {
    cue_ = static_cast<int>(rng_.below(4));
    auto obs = rows.observation();
    obs[0] = static_cast<float>(cue_);
    obs[1] = static_cast<float>(rng_.uniform(-1.0, 1.0));
    obs[2] = static_cast<float>(rng_.uniform(-1.0, 1.0));
  }
  void step(const envs::env_rows& rows) override {
    const float dial = rows.continuous_action()[0];
    rows.reward() = 0.5F * static_cast<float>(rows.discrete_action()[0] == cue_) + 0.5F * (1.0F - std::abs(dial - 0.5F));
    rows.terminated() = 1;
  }
  [[nodiscard]] const envs::space& observation_space() const noexcept override { return obs_; }
  [[nodiscard]] const envs::space& action_space() const noexcept override { return act_; }
  [[nodiscard]] std::optional<double> solved_return() const noexcept override { return 0.9; }

  static void register_once() {
    auto& r = envs::registry::global();
    if (r.contains("test-dict")) return;
    r.add(envs::env_spec{.name = "test-dict",
                         .description = "test env: a Dict observation with a categorical cue, a Dict action",
                         .keys = {},
                         .factory = [](const envs::env_config&, coral::env_seed s) -> std::unique_ptr<envs::env> {
                           return std::make_unique<dict_env>(s);
                         }});
  }

 private:
  coral::rng rng_;
  int cue_ = 0;
  envs::space obs_ = envs::space::dict({{"cue", envs::space::discrete(4)}, {"noise", envs::space::box({2}, -1.0F, 1.0F)}});
  envs::space act_ = envs::space::dict({{"pick", envs::space::discrete(4)}, {"dial", envs::space::box({1}, -1.0F, 1.0F)}});
};

}  // namespace structured_test

using namespace structured_test;

TEST_CASE("a Dict/Tuple observation's categorical elements enter the network one-hot, Box elements as they are",
          "[learners][network][structured]") {
  const auto obs = nested_observation();
  REQUIRE(obs.flat_size() == 6);
  const auto one_hot = categorical_elements(obs);
  CHECK(one_hot == std::vector<std::pair<std::size_t, std::int32_t>>{{2, 3}, {3, 2}, {4, 4}});
  // A Box observation has none.
  CHECK(categorical_elements(envs::space::box({4}, -1.0F, 1.0F)).empty());

  auto spec = network_spec::from_spaces(obs, envs::space::discrete(2), {8}, 2);
  spec.one_hot = one_hot;
  CHECK(spec.obs_width() == 6 + 2 + 1 + 3);
  CHECK(spec.input_dim() == 2 * 12);
  // Two frames; the second's categories are out of range (an empty slot's
  // meaningless row): all zeros.
  const std::vector<float> raw = {0.5F, -1.0F, 2.0F, 1.0F, 3.0F, 7.0F,  //
                                  0.25F, 0.0F, 3.0F, -1.0F, std::numeric_limits<float>::quiet_NaN(), -7.0F};
  std::vector<float> out(spec.input_dim(), 9.0F);
  encode_observation(spec, raw, out);
  CHECK(out == std::vector<float>{0.5F, -1.0F, 0, 0, 1, 0, 1, 0, 0, 0, 1, 7.0F,  //
                                  0.25F, 0.0F, 0, 0, 0, 0, 0, 0, 0, 0, 0, -7.0F});
  // The layout is part of the network's signature: a checkpoint of one does
  // not load into the other.
  auto plain = spec;
  plain.one_hot.clear();
  CHECK(network_signature(spec) != network_signature(plain));
  CHECK(parameter_count(spec) > parameter_count(plain));
}

TEST_CASE("Dict and Tuple actions get one head per component, and the policy acts within them",
          "[learners][network][structured]") {
  const auto action = envs::space::dict({{"move", envs::space::discrete(3)},
                                         {"aim", envs::space::box({2}, -1.0F, 1.0F)},
                                         {"more", envs::space::tuple({envs::space::multi_discrete({2, 5})})}});
  const auto obs = nested_observation();
  auto spec = network_spec::from_spaces(obs, action, {8}, 1);
  spec.one_hot = categorical_elements(obs);
  CHECK(spec.nvec == std::vector<std::int32_t>{3, 2, 5});
  CHECK(spec.continuous_dim() == 2);
  mlp_policy policy(spec, 4, 1);
  envs::env_batch batch(4, obs, action);
  coral::rng gen(3);
  std::vector<float> log_probs(4), values(4);
  const coral::actors::row_range all{0, 4};
  for (int step = 0; step < 20; ++step) {
    for (std::size_t r = 0; r < 4; ++r) {
      auto o = batch.observations().row(r);
      o[0] = static_cast<float>(gen.uniform(-1.0, 1.0));
      o[2] = static_cast<float>(gen.below(3));
      o[3] = static_cast<float>(gen.below(2));
      o[4] = static_cast<float>(gen.below(4));
    }
    policy.act({batch, std::span(&all, 1), log_probs, values});
    for (std::size_t r = 0; r < 4; ++r) {
      CHECK(envs::contains_action(action, batch.discrete_actions().row(r), batch.continuous_actions().row(r)));
      CHECK(std::isfinite(log_probs[r]));
    }
  }
}

TEST_CASE("PPO learns an env with a Dict observation and a Dict action", "[learners][train][structured]") {
  dict_env::register_once();
  coral::training::train_options o;
  o.sampler.env = "test-dict";
  o.sampler.num_envs = 8;
  o.sampler.topo = coral::actors::topology::sync;
  o.sampler.executor = coral::executor_mode::single;
  o.sampler.seed = 2;
  o.total_steps = 60'000;
  o.progress_seconds = 0;
  coral::training::options_of<ppo_options>(o).horizon = 32;
  std::ostringstream progress;
  const auto r = train(o, progress);
  INFO(progress.str());
  CHECK(r.solved);  // a mean return of 0.9 over 100 episodes: the cue read and the dial near 0.5
}
