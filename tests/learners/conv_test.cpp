// Convolutional networks (`--conv`) end to end: the layers resolved from
// the flags and the observation, the refusals naming the flag, the acting
// policies against the learners' fused forward passes, and the checkpoint
// record that keeps the convolutions.

#include "coral/learners/network.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/core/errors.hpp"
#include "coral/core/rng.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/registry.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/fused/actor_critic.hpp"
#include "coral/learners/fused/q_network.hpp"
#include "coral/learners/mlp_policy.hpp"
#include "coral/learners/ppo.hpp"
#include "coral/learners/q_policy.hpp"
#include "coral/learners/r2d2.hpp"
#include "coral/learners/r2d2_learner.hpp"
#include "coral/learners/r2d2_policy.hpp"
#include "coral/learners/train.hpp"
#include "coral/training/checkpoint.hpp"
#include "coral/training/checkpoint_settings.hpp"
#include "coral/training/train_options.hpp"

using namespace coral::learners;
using coral::training::options_of;
using coral::training::train_options;
namespace envs = coral::envs;
namespace actors = coral::actors;

namespace {

/// The spec of env `name` with `conv` and `hidden` (empty: the defaults).
network_spec conv_spec_of(const char* name, std::vector<std::string> conv = {}, std::vector<std::size_t> hidden = {}) {
  const auto e = envs::registry::global().make(name, {}, 0, 0);
  return network_spec::from_spaces(e->observation_space(), e->action_space(), hidden, 1, conv);
}

/// `rows` MinAtar-like grids of `spec` per step: 0/1 cells, 15 % ones.
std::vector<float> grids(const network_spec& spec, std::size_t rows, std::uint64_t seed) {
  coral::rng gen(seed);
  std::vector<float> v(rows * spec.input_dim());
  for (auto& x : v) x = gen.uniform() < 0.15 ? 1.0f : 0.0f;
  return v;
}

/// Weights for `n` parameters, uniform in ±0.2 (large enough that every layer matters).
std::vector<float> conv_random_weights(std::size_t n, std::uint64_t seed) {
  coral::rng gen(seed);
  std::vector<float> w(n);
  for (auto& x : w) x = static_cast<float>(gen.uniform(-0.2, 0.2));
  return w;
}

/// Runs `policy` once on every row of `batch` with observations `obs`;
/// fills `log_probs` and `values`.
void act_all(actors::policy& policy, envs::env_batch& batch, const std::vector<float>& obs,
             std::vector<float>& log_probs, std::vector<float>& values) {
  std::copy(obs.begin(), obs.end(), batch.observations().row(0).data());
  const actors::row_range all{0, static_cast<std::uint32_t>(batch.rows())};
  policy.act({batch, std::span(&all, 1), log_probs, values});
}

/// Options for a run on `env` with `conv`, the rest at their defaults.
train_options conv_options(const std::string& algo, const std::string& env, std::vector<std::string> conv) {
  train_options o;
  o.algo = algo;
  o.sampler.env = env;
  o.conv = std::move(conv);
  o.total_steps = 100'000;
  return o;
}

}  // namespace

TEST_CASE("a grid observation gets MinAtar's network unless --conv says otherwise; a flat one keeps the MLP",
          "[learners][conv]") {
  const auto minatar = conv_spec_of("minatar/breakout");
  CHECK(minatar.conv == conv_spec{.height = 10, .width = 10, .channels = 4, .layers = {minatar_conv}});
  CHECK(minatar.hidden == std::vector<std::size_t>{128});
  CHECK(minatar.dense_input_dim() == 8 * 8 * 16);
  const auto none = conv_spec_of("minatar/breakout", {"none"});
  CHECK(none.conv.empty());
  CHECK(none.hidden == std::vector<std::size_t>{32, 32});
  CHECK(none.dense_input_dim() == 400);
  const auto two = conv_spec_of("minatar/seaquest", {"32:3:2", "8:2"}, {64, 64});
  CHECK(two.conv.channels == 10);
  CHECK(two.conv.layers == std::vector<conv_layer_spec>{{32, 3, 2}, {8, 2, 1}});
  CHECK(two.conv.output_grid(0) == std::array<std::size_t, 3>{4, 4, 32});
  CHECK(two.dense_input_dim() == 3 * 3 * 8);
  CHECK(two.hidden == std::vector<std::size_t>{64, 64});
  const auto flat = conv_spec_of("cartpole");
  CHECK(flat.conv.empty());
  CHECK(flat.hidden == std::vector<std::size_t>{32, 32});
  // The signature names the convolutions; without them it reads as before --conv.
  CHECK(network_signature(minatar).find(" conv=10x10x4 16:3:1") != std::string::npos);
  CHECK(network_signature(none).find("conv") == std::string::npos);
  CHECK(parameter_count(minatar) == 16 * 36 + 16 + 1024 * 128 + 128 + 128 * 6 + 6 + 128 + 1);
  CHECK(parameter_count(minatar) == fused::actor_critic::parameter_count(minatar));
  CHECK(parameter_count(two) == fused::actor_critic::parameter_count(two));
}

TEST_CASE("bad --conv values are refused before the run starts, naming the flag", "[learners][conv][errors]") {
  register_builtin_algorithms();
  auto refused = [](const train_options& o) {
    try {
      validate(o);
    } catch (const coral::config_error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  const auto malformed = [](std::string_view text) {
    return fmt::format(fmt::runtime(coral::errors::bad_value), "--conv", text, errors::conv_allowed);
  };
  for (const std::string text : {"16", "16:", "16:x", ":3", "0:3", "16:0", "16:3:0", "16:3:1:1", "16 3", "-16:3",
                                 "65537:3", "none:3"}) {
    CHECK(refused(conv_options("ppo", "minatar/breakout", {text})) == malformed(text));
  }
  CHECK(refused(conv_options("dqn", "minatar/breakout", {"none", "16:3"})) == malformed("none"));
  // A window larger than its layer's input grid, the first or a later layer.
  CHECK(refused(conv_options("ppo", "minatar/breakout", {"16:11"})) ==
        fmt::format(fmt::runtime(errors::conv_too_large), 1, "16:11", 11, 11, 10, 10,
                    "give smaller windows or fewer layers"));
  CHECK(refused(conv_options("r2d2", "minatar/breakout", {"16:3:3", "8:4"})) ==
        fmt::format(fmt::runtime(errors::conv_too_large), 2, "8:4", 4, 4, 3, 3, "give smaller windows or fewer layers"));
  // Layers on an observation that is no grid.
  CHECK(refused(conv_options("ppo", "cartpole", {"16:3"})) ==
        fmt::format(fmt::runtime(errors::conv_needs_grid), "16:3", "a Box of shape (4)"));
  CHECK(refused(conv_options("ppo", "cartpole", {"none"})) == "(accepted)");
  CHECK(refused(conv_options("dqn", "minatar/freeway", {"8:3", "8:3:2"})) == "(accepted)");
  // Stacked frames do not go through convolutions.
  auto frames = conv_options("ppo", "minatar/breakout", {});
  options_of<ppo_options>(frames).frames = 2;
  CHECK(refused(frames) ==
        fmt::format(fmt::runtime(errors::conv_no_frames), 2, "16:3, the default for a grid"));
  frames.conv = {"none"};
  CHECK(refused(frames) == "(accepted)");
}

TEST_CASE("PPO's acting policy computes the fused learner's values and log probabilities on grids",
          "[learners][conv]") {
  const auto spec = conv_spec_of("minatar/breakout", {"6:3", "5:2:2"}, {24, 16});
  constexpr std::size_t rows = 5;
  const auto w = conv_random_weights(parameter_count(spec), 3);
  mlp_policy policy(spec, rows, 7);
  policy.load_weights(w);
  const auto e = envs::registry::global().make("minatar/breakout", {}, 0, 0);
  envs::env_batch batch(rows, e->observation_space(), e->action_space());
  const auto obs = grids(spec, rows, 9);
  std::vector<float> log_probs(rows), values(rows);
  act_all(policy, batch, obs, log_probs, values);

  fused::actor_critic net(spec, rows);
  std::copy(w.begin(), w.end(), net.parameters().begin());
  net.forward(obs.data(), rows);
  std::vector<std::int32_t> actions(rows);
  for (std::size_t r = 0; r < rows; ++r) actions[r] = batch.discrete_actions().row(r)[0];
  net.log_prob_entropy(actions.data(), nullptr);
  for (std::size_t r = 0; r < rows; ++r) {
    CHECK(values[r] == Approx(net.values()[r]).epsilon(1e-5).margin(1e-6));
    CHECK(log_probs[r] == Approx(net.log_probs()[r]).epsilon(1e-5).margin(1e-6));
  }
  // The learner's own values() is that forward too.
  ppo_config config;
  ppo_learner learner(spec, config, 1, 1000);
  coral::training::learner_state st = learner.state();
  st.parameters = w;
  learner.restore(st);
  const auto v = learner.values(obs);
  for (std::size_t r = 0; r < rows; ++r) CHECK(v[r] == Approx(values[r]).epsilon(1e-5).margin(1e-6));
}

TEST_CASE("DQN's acting policy computes the fused Q-network's values on grids", "[learners][conv]") {
  const auto spec = conv_spec_of("minatar/asterix");  // MinAtar's network
  constexpr std::size_t rows = 4;
  const auto widths = q_network_widths(spec, "");
  const auto w = conv_random_weights(spec.conv.parameter_count() + (1024 * 128 + 128) + (128 * 6 + 6), 5);
  dqn_config config;
  config.epsilon_base = 1e-9;  // greedy
  config.exploration_steps = 0;
  q_policy policy(spec, rows, 7, config);
  policy.load_weights(w);
  const auto e = envs::registry::global().make("minatar/asterix", {}, 0, 0);
  envs::env_batch batch(rows, e->observation_space(), e->action_space());
  const auto obs = grids(spec, rows, 11);
  std::vector<float> log_probs(rows), values(rows);
  act_all(policy, batch, obs, log_probs, values);

  fused::q_network net(widths, rows, spec.conv);
  std::copy(w.begin(), w.end(), net.parameters().begin());
  const auto q = net.q_values(obs.data(), rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto row = q.subspan(r * 6, 6);
    const auto best = std::max_element(row.begin(), row.end());
    CHECK(values[r] == Approx(*best).epsilon(1e-5).margin(1e-6));
    CHECK(batch.discrete_actions().row(r)[0] == best - row.begin());
  }
}

TEST_CASE("R2D2's acting policy computes the learner's Q values on grids, state reset where an episode starts",
          "[learners][conv]") {
  auto spec = conv_spec_of("minatar/breakout", {"8:3"}, {32});
  spec.lstm = 16;
  constexpr std::size_t rows = 2, steps = 6, A = 6;
  dqn_config d;
  d.epsilon_base = 1e-9;
  d.exploration_steps = 0;
  r2d2_learner learner(spec, d, r2d2_config{}, 1);
  const auto w = conv_random_weights(r2d2_parameter_count(spec), 13);
  coral::training::learner_state st;
  st.parameters = w;
  st.adam_m.assign(w.size(), 0.0f);
  st.adam_v.assign(w.size(), 0.0f);
  learner.restore(st, w);
  r2d2_policy policy(spec, rows, 7, d, 0);
  policy.load_weights(learner.weights());
  const auto e = envs::registry::global().make("minatar/breakout", {}, 0, 0);
  envs::env_batch batch(rows, e->observation_space(), e->action_space());
  const auto obs = grids(spec, steps * rows, 17);
  std::vector<std::uint8_t> starts(steps * rows, 0);
  starts[3 * rows + 1] = 1;  // row 1 starts an episode at step 3
  std::vector<float> values(steps * rows), lp(rows), v(rows);
  const std::size_t D = spec.input_dim();
  for (std::size_t t = 0; t < steps; ++t) {
    for (std::size_t r = 0; r < rows; ++r) batch.terminated()[r] = starts[t * rows + r];
    act_all(policy, batch, {obs.begin() + static_cast<std::ptrdiff_t>(t * rows * D),
                            obs.begin() + static_cast<std::ptrdiff_t>((t + 1) * rows * D)},
            lp, v);
    for (std::size_t r = 0; r < rows; ++r) values[t * rows + r] = v[r];
  }
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<float> row_obs;
    std::vector<std::uint8_t> resets;
    for (std::size_t t = 0; t < steps; ++t) {
      row_obs.insert(row_obs.end(), obs.begin() + static_cast<std::ptrdiff_t>((t * rows + r) * D),
                     obs.begin() + static_cast<std::ptrdiff_t>((t * rows + r + 1) * D));
      resets.push_back(starts[t * rows + r]);
    }
    const auto q = learner.q_values(row_obs, resets);
    for (std::size_t t = 0; t < steps; ++t) {
      const float best = *std::max_element(q.begin() + static_cast<std::ptrdiff_t>(t * A),
                                           q.begin() + static_cast<std::ptrdiff_t>((t + 1) * A));
      CHECK(values[t * rows + r] == Approx(best).epsilon(1e-5).margin(1e-6));
    }
  }
}

TEST_CASE("a checkpoint keeps --conv; one written before the flag existed reads as none", "[learners][conv]") {
  register_builtin_algorithms();
  train_options o;
  o.algo = "dqn";
  o.sampler.env = "minatar/breakout";
  o.conv = {"32:3:2", "8:2"};
  coral::training::checkpoint c;
  c.env = o.sampler.env;
  c.algo = o.algo;
  c.set_record(std::string(coral::training::run_settings_record), coral::training::encode_run_settings(o));
  CHECK(coral::training::run_options_of(c, "f").conv == o.conv);
  o.conv.clear();  // the default
  c.set_record(std::string(coral::training::run_settings_record), coral::training::encode_run_settings(o));
  CHECK(coral::training::run_options_of(c, "f").conv.empty());
  // The record as a coral without --conv wrote it: env args, hidden, the algorithm's settings.
  std::vector<char> old;
  auto put = [&old](std::string_view s) {
    const auto n = static_cast<std::uint32_t>(s.size());
    old.insert(old.end(), reinterpret_cast<const char*>(&n), reinterpret_cast<const char*>(&n) + sizeof n);
    old.insert(old.end(), s.begin(), s.end());
  };
  put("hidden");
  put("32 32");
  c.set_record(std::string(coral::training::run_settings_record), old);
  const auto back = coral::training::run_options_of(c, "f");
  CHECK(back.conv == std::vector<std::string>{"none"});
  CHECK(back.hidden == std::vector<std::size_t>{32, 32});
}
