// The recurrent policy core (`--lstm`): the acting kernels against the
// learner's torch unroll, the unroll's values and gradients against torch's
// LSTMCell, each row's own state whatever the batch order, resets at
// episode starts, and recurrent PPO's update.

#include "../../learners/src/actor_critic.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <sstream>
#include <vector>

// Torch first: its logging header defines a CHECK macro of its own (a fatal
// assertion), which must give way to Catch2's.
#undef CHECK
#include <catch2/catch.hpp>

#include "coral/envs/env_batch.hpp"
#include "coral/envs/registry.hpp"
#include "coral/core/rng.hpp"
#include "coral/learners/mlp_policy.hpp"
#include "coral/learners/network.hpp"
#include "coral/learners/ppo_learner.hpp"
#include "coral/training/rollout.hpp"
#include "coral/training/checkpoint.hpp"
#include "coral/learners/train.hpp"
#include "../support/test_envs.hpp"
#include "coral/learners/ppo.hpp"
#include "coral/learners/r2d2.hpp"
#include "coral/learners/r2d2_learner.hpp"
#include "coral/learners/r2d2_policy.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/errors.hpp"

using namespace coral::learners;
using namespace coral::training;
namespace actors = coral::actors;
namespace envs = coral::envs;

namespace {

constexpr std::size_t rows = 4;
constexpr std::size_t steps = 12;

/// A spec for env `name` with an LSTM of 8 after one hidden layer of 16.
network_spec recurrent_spec(const char* name) {
  coral::test::register_test_envs();
  auto e = envs::registry::global().make(name, {}, 0, 0);
  auto spec = network_spec::from_spaces(e->observation_space(), e->action_space(), {16}, 1);
  spec.lstm = 8;
  return spec;
}

/// Random flat weights for `spec` (large enough that the state matters).
std::vector<float> random_weights(const network_spec& spec, std::uint64_t seed) {
  coral::rng rng(seed);
  std::vector<float> w(published_weight_count(spec));
  for (auto& x : w) x = static_cast<float>(rng.uniform(-0.6, 0.6));
  return w;
}

/// Observations per (step, row), and which (step, row) starts an episode.
struct script {
  std::vector<float> obs;                 // steps × rows × obs_dim
  std::vector<std::uint8_t> starts;       // steps × rows: the observation starts an episode
  std::size_t obs_dim = 0;
};

script make_script(std::size_t obs_dim, std::uint64_t seed) {
  script s;
  s.obs_dim = obs_dim;
  coral::rng rng(seed);
  s.obs.resize(steps * rows * obs_dim);
  for (auto& x : s.obs) x = static_cast<float>(rng.uniform(-1.0, 1.0));
  s.starts.assign(steps * rows, 0);
  s.starts[5 * rows + 1] = 1;  // row 1 starts an episode at step 5, row 2 at 3 and 9
  s.starts[3 * rows + 2] = 1;
  s.starts[9 * rows + 2] = 1;
  return s;
}

/// Writes step `t` of the script into the batch: observations, and the
/// terminated flag that marks an episode's start for the policy.
void load_step(envs::env_batch& batch, const script& s, std::size_t t) {
  for (std::size_t r = 0; r < rows; ++r) {
    auto o = batch.observations().row(r);
    std::copy_n(s.obs.begin() + static_cast<std::ptrdiff_t>((t * rows + r) * s.obs_dim), s.obs_dim, o.begin());
    batch.terminated()[r] = s.starts[t * rows + r];
    batch.truncated()[r] = 0;
  }
}

/// What a policy did over the script: values, log probabilities, and the
/// state each act started from, per (step, row); actions per (step, row).
struct acted {
  std::vector<float> values, log_probs, states;
  std::vector<std::int32_t> actions;
  std::vector<float> continuous;
};

/// Runs `policy` over the script, acting on the rows of each step in `order`
/// one row at a time (a pool batch brings rows in any order) or all at once.
acted run_script(mlp_policy& policy, const network_spec& spec, envs::env_batch& batch, const script& s,
                 const std::vector<std::uint32_t>& order, bool one_at_a_time) {
  acted out;
  std::vector<float> lp(rows), v(rows);
  const auto sd = spec.state_dim();
  const auto cd = spec.continuous_dim();
  out.values.resize(steps * rows);
  out.log_probs.resize(steps * rows);
  out.states.resize(steps * rows * sd);
  out.actions.resize(steps * rows);
  out.continuous.resize(steps * rows * cd);
  for (std::size_t t = 0; t < steps; ++t) {
    load_step(batch, s, t);
    if (one_at_a_time) {
      for (auto r : order) {
        const actors::row_range one{r, 1};
        policy.act({batch, std::span(&one, 1), lp, v});
      }
    } else {
      const actors::row_range all{0, static_cast<std::uint32_t>(rows)};
      policy.act({batch, std::span(&all, 1), lp, v});
    }
    for (std::size_t r = 0; r < rows; ++r) {
      out.values[t * rows + r] = v[r];
      out.log_probs[t * rows + r] = lp[r];
      const auto st = policy.recurrent_states().subspan(r * sd, sd);
      std::copy(st.begin(), st.end(), out.states.begin() + static_cast<std::ptrdiff_t>((t * rows + r) * sd));
      if (!spec.nvec.empty()) out.actions[t * rows + r] = batch.discrete_actions().row(r)[0];
      const auto sampled = policy.sampled_actions().subspan(r * cd, cd);
      std::copy(sampled.begin(), sampled.end(), out.continuous.begin() + static_cast<std::ptrdiff_t>((t * rows + r) * cd));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the LSTM policy's kernels compute what the learner's torch unroll does", "[learners][recurrent]") {
  for (const char* name : {"cartpole", "test-target"}) {
    INFO("env " << name);
    const auto spec = recurrent_spec(name);
    const auto weights = random_weights(spec, 7);
    mlp_policy policy(spec, rows, 3);
    policy.load_weights(weights);
    auto e = envs::registry::global().make(name, {}, 0, 0);
    envs::env_batch batch(rows, e->observation_space(), e->action_space());
    const auto s = make_script(spec.raw_obs_dim, 11);
    std::vector<std::uint32_t> order(rows);
    std::iota(order.begin(), order.end(), 0U);
    const auto got = run_script(policy, spec, batch, s, order, false);

    // The same weights in the torch module, unrolled over the script per row.
    torch::NoGradGuard no_grad;
    coral::learners::detail::actor_critic net(spec);
    coral::learners::detail::load(*net, weights);
    const auto R = static_cast<std::int64_t>(rows), T = static_cast<std::int64_t>(steps);
    const auto D = static_cast<std::int64_t>(spec.raw_obs_dim), H = static_cast<std::int64_t>(spec.lstm);
    auto obs = torch::empty({R, T, D});
    auto resets = torch::zeros({R, T});
    for (std::int64_t r = 0; r < R; ++r) {
      for (std::int64_t t = 0; t < T; ++t) {
        for (std::int64_t d = 0; d < D; ++d) obs[r][t][d] = s.obs[static_cast<std::size_t>((t * R + r) * D + d)];
        resets[r][t] = static_cast<float>(s.starts[static_cast<std::size_t>(t * R + r)]);
      }
    }
    const auto zeros = torch::zeros({R, H});
    const auto [feats, cells] = net->unroll(obs, resets, zeros, zeros);
    const auto flat = feats.reshape({R * T, H});
    const auto values = net->value(flat);
    auto discrete = torch::zeros({R * T, static_cast<std::int64_t>(spec.nvec.size())}, torch::kInt64);
    auto continuous = torch::zeros({R * T, static_cast<std::int64_t>(spec.continuous_dim())});
    for (std::int64_t r = 0; r < R; ++r) {
      for (std::int64_t t = 0; t < T; ++t) {
        const auto i = static_cast<std::size_t>(t * R + r);
        if (!spec.nvec.empty()) discrete[r * T + t][0] = got.actions[i];
        for (std::size_t c = 0; c < spec.continuous_dim(); ++c) {
          continuous[r * T + t][static_cast<std::int64_t>(c)] = got.continuous[i * spec.continuous_dim() + c];
        }
      }
    }
    const auto logp = net->log_prob_entropy(net->actor_out(flat), discrete, continuous).first;
    double state_norm = 0;
    for (std::int64_t r = 0; r < R; ++r) {
      for (std::int64_t t = 0; t < T; ++t) {
        const auto i = static_cast<std::size_t>(t * R + r);
        CHECK(got.values[i] == Approx(values[r * T + t].item<float>()).margin(1e-5));
        CHECK(got.log_probs[i] == Approx(logp[r * T + t].item<float>()).margin(1e-4));
        // The state act() started from: the unroll's after step t − 1, or zeros at an episode's start.
        for (std::int64_t j = 0; j < H; ++j) {
          const bool zero = t == 0 || s.starts[i] != 0;
          const float h = zero ? 0.0f : feats[r][t - 1][j].item<float>();
          const float c = zero ? 0.0f : cells[r][t - 1][j].item<float>();
          CHECK(got.states[i * 2 * H + static_cast<std::size_t>(j)] == Approx(h).margin(1e-5));
          CHECK(got.states[i * 2 * H + static_cast<std::size_t>(H + j)] == Approx(c).margin(1e-5));
          state_norm += std::abs(h);
        }
      }
    }
    CHECK(state_norm > 1.0);  // the state is not trivially zero
  }
}

TEST_CASE("each row of a pool batch gets its own state, whatever order the rows come in", "[learners][recurrent]") {
  const auto spec = recurrent_spec("cartpole");
  const auto weights = random_weights(spec, 5);
  auto e = envs::registry::global().make("cartpole", {}, 0, 0);
  const auto s = make_script(spec.raw_obs_dim, 13);
  envs::env_batch batch_a(rows, e->observation_space(), e->action_space());
  envs::env_batch batch_b(rows, e->observation_space(), e->action_space());
  mlp_policy in_order(spec, rows, 9);
  mlp_policy shuffled(spec, rows, 9);
  in_order.load_weights(weights);
  shuffled.load_weights(weights);
  const std::vector<std::uint32_t> order{0, 1, 2, 3};
  const std::vector<std::uint32_t> reversed{3, 1, 0, 2};
  const auto a = run_script(in_order, spec, batch_a, s, order, false);
  const auto b = run_script(shuffled, spec, batch_b, s, reversed, true);
  CHECK(a.values == b.values);
  CHECK(a.log_probs == b.log_probs);
  CHECK(a.states == b.states);
  CHECK(a.actions == b.actions);
}

TEST_CASE("the recurrent state is zeroed when a row's episode starts, and only that row's", "[learners][recurrent]") {
  const auto spec = recurrent_spec("cartpole");
  mlp_policy policy(spec, rows, 1);
  policy.load_weights(random_weights(spec, 3));
  auto e = envs::registry::global().make("cartpole", {}, 0, 0);
  envs::env_batch batch(rows, e->observation_space(), e->action_space());
  const auto s = make_script(spec.raw_obs_dim, 17);
  std::vector<std::uint32_t> order(rows);
  std::iota(order.begin(), order.end(), 0U);
  const auto got = run_script(policy, spec, batch, s, order, false);
  const auto sd = spec.state_dim();
  auto state_is_zero = [&](std::size_t t, std::size_t r) {
    const auto* p = got.states.data() + (t * rows + r) * sd;
    return std::all_of(p, p + sd, [](float x) { return x == 0.0f; });
  };
  for (std::size_t r = 0; r < rows; ++r) CHECK(state_is_zero(0, r));
  CHECK(state_is_zero(5, 1));
  CHECK(state_is_zero(3, 2));
  CHECK(state_is_zero(9, 2));
  CHECK_FALSE(state_is_zero(5, 0));
  CHECK_FALSE(state_is_zero(6, 1));
  CHECK_FALSE(state_is_zero(9, 3));
  // An env reset after a failure starts an episode too.
  load_step(batch, s, 0);
  batch.failed()[3] = 1;
  const actors::row_range all{0, static_cast<std::uint32_t>(rows)};
  std::vector<float> lp(rows), v(rows);
  policy.act({batch, std::span(&all, 1), lp, v});
  const auto st = policy.recurrent_states();
  CHECK(std::all_of(st.begin() + static_cast<std::ptrdiff_t>(3 * sd), st.begin() + static_cast<std::ptrdiff_t>(4 * sd),
                    [](float x) { return x == 0.0f; }));
  CHECK_FALSE(std::all_of(st.begin(), st.begin() + static_cast<std::ptrdiff_t>(sd), [](float x) { return x == 0.0f; }));
}

TEST_CASE("the trunk's unroll computes LSTMCell step by step, values and gradients", "[learners][recurrent]") {
  // unroll() forms the input's part of the gates for all steps at once and
  // the gates by hand; the reference steps torch::nn::LSTMCell over the same
  // parameters. Resets at the first step of some rows and in the middle of
  // others, none at most steps.
  torch::manual_seed(3);
  const std::int64_t B = 5, T = 9, D = 3, H = 6;
  coral::learners::detail::recurrent_trunk trunk(static_cast<std::size_t>(D), std::vector<std::size_t>{7}, static_cast<std::size_t>(H));
  {
    torch::NoGradGuard no_grad;
    for (auto& p : trunk->parameters()) p.uniform_(-0.7, 0.7);  // biases too: the zero ones would hide their sum
  }
  const auto obs = torch::randn({B, T, D});
  auto resets = torch::zeros({B, T});
  resets[0][0] = 1;
  resets[2][4] = 1;
  resets[3][4] = 1;
  resets[4][8] = 1;
  const auto h0 = torch::randn({B, H}), c0 = torch::randn({B, H});
  const auto loss_of = [&](const torch::Tensor& hs, const torch::Tensor& cs) {
    // Weights that differ per element, so that no gradient cancels.
    const auto w = torch::linspace(-1.0, 2.0, B * T * H).reshape({B, T, H});
    return (hs * w).sum() + (cs * cs * w).sum();
  };
  const auto gradients = [&] {
    std::vector<torch::Tensor> g;
    for (auto& p : trunk->parameters()) {
      g.push_back(p.grad().clone());
      p.mutable_grad().zero_();
    }
    return g;
  };

  const auto [hs, cs] = trunk->unroll(obs, resets, h0, c0);
  loss_of(hs, cs).backward();
  const auto got = gradients();

  const auto x = trunk->encoder->forward(obs.reshape({B * T, D})).reshape({B, T, -1});
  auto h = h0, c = c0;
  std::vector<torch::Tensor> ref_h, ref_c;
  for (std::int64_t t = 0; t < T; ++t) {
    const auto keep = (1.0 - resets.select(1, t)).unsqueeze(1);
    std::tie(h, c) = trunk->lstm->forward(x.select(1, t), std::make_tuple(h * keep, c * keep));
    ref_h.push_back(h);
    ref_c.push_back(c);
  }
  const auto want_h = torch::stack(ref_h, 1), want_c = torch::stack(ref_c, 1);
  loss_of(want_h, want_c).backward();
  const auto want = gradients();

  REQUIRE(hs.sizes() == want_h.sizes());
  REQUIRE(cs.sizes() == want_c.sizes());
  CHECK(torch::allclose(hs, want_h, 1e-5, 1e-5));
  CHECK(torch::allclose(cs, want_c, 1e-5, 1e-5));
  // A reset zeroes the state: row 2's step 4 is the cell run from zeros.
  CHECK(torch::allclose(hs[2][4], trunk->step(obs[2][4].unsqueeze(0), torch::zeros({1, H}), torch::zeros({1, H})).first[0],
                        1e-5, 1e-5));
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("parameter " << i);
    CHECK(got[i].abs().sum().item<float>() > 0.0f);
    CHECK(torch::allclose(got[i], want[i], 1e-4, 1e-4));
  }
}

TEST_CASE("the LSTM network has its own signature and parameter count", "[learners][recurrent]") {
  auto spec = recurrent_spec("cartpole");
  auto plain = spec;
  plain.lstm = 0;
  CHECK(network_signature(spec) != network_signature(plain));
  CHECK(network_signature(spec).find("lstm=8") != std::string::npos);
  // Encoder 4→16, cell 16→8 (4 gates over input and h, two biases), heads 8→2 and 8→1.
  CHECK(parameter_count(spec) == (4 * 16 + 16) + (4 * 8 * (16 + 8) + 2 * 4 * 8) + (8 * 2 + 2) + (8 + 1));
}

TEST_CASE("recurrent PPO's update trains from the segment's initial states and changes the weights",
          "[learners][recurrent][ppo]") {
  const auto spec = recurrent_spec("cartpole");
  ppo_config cfg;
  cfg.minibatch_size = 16;  // 2 rows of 8 steps per minibatch
  ppo_learner learner(spec, cfg, 1, 10'000);
  const std::size_t R = 4, T = 8;
  rollout_segment seg(0, R, T, spec.input_dim(), 1, 0);
  seg.state_dim = spec.state_dim();
  seg.initial_states.assign(R * spec.state_dim(), 0.25f);
  coral::rng rng(3);
  for (auto& x : seg.observations) x = static_cast<float>(rng.uniform(-1.0, 1.0));
  for (std::size_t i = 0; i < R * T; ++i) {
    seg.discrete_actions[i] = static_cast<std::int32_t>(rng.below(2));
    seg.log_probs[i] = std::log(0.5f);
    seg.rewards[i] = static_cast<float>(rng.uniform(0.0, 1.0));
  }
  seg.terminated[5] = 1;
  seg.truncated[T + 3] = 1;
  seg.truncated_steps.push_back(static_cast<std::uint32_t>(T + 3));
  seg.truncated_observations.assign(spec.input_dim(), 0.5f);
  const auto before = learner.weights();
  const auto st = learner.update(seg, 0);
  CHECK(std::isfinite(st.policy_loss));
  CHECK(std::isfinite(st.value_loss));
  CHECK(learner.weights() != before);
  // A segment without the network's state is refused, not trained on from garbage.
  rollout_segment stateless(1, R, T, spec.input_dim(), 1, 0);
  CHECK_THROWS_AS(learner.update(stateless, 1), coral::usage_error);
}

namespace {

/// A short recurrent PPO run on cartpole: 8 envs, an LSTM of 16, segments of 32.
train_options small_recurrent(std::uint64_t total_steps) {
  train_options o;
  o.sampler.env = "cartpole";
  o.sampler.num_envs = 8;
  o.sampler.executor = coral::executor_mode::single;
  o.sampler.seed = 3;
  o.hidden = {16};
  options_of<ppo_options>(o).lstm = 16;
  options_of<ppo_options>(o).horizon = 32;
  options_of<ppo_options>(o).ppo.minibatch_size = 64;
  o.total_steps = total_steps;
  o.progress_seconds = 0;
  return o;
}

}  // namespace

TEST_CASE("recurrent PPO runs on every topology and executor", "[learners][recurrent][ppo]") {
  auto t = GENERATE(actors::topology::sync, actors::topology::double_buffer, actors::topology::pool);
  auto mode = GENERATE(coral::executor_mode::single, coral::executor_mode::threads);
  CAPTURE(actors::to_string(t), coral::to_string(mode));
  auto o = small_recurrent(4096);
  o.sampler.topo = t;
  o.sampler.executor = mode;
  o.sampler.threads = 2;
  std::ostringstream progress;
  const auto r = train(o, progress);
  CHECK(r.env_steps >= 4096);
  CHECK(r.updates == 4096 / (8 * 32));
  CHECK(progress.str().find("lstm 16") != std::string::npos);
}

TEST_CASE("two recurrent PPO runs of a seed under --executor single are identical bit for bit",
          "[learners][recurrent][ppo][determinism]") {
  const auto dir = std::filesystem::temp_directory_path() / "coral-recurrent-test-repeat";
  std::filesystem::remove_all(dir);
  std::vector<train_result> results;
  std::vector<checkpoint> saved;
  for (const char* run : {"a", "b"}) {
    auto o = small_recurrent(4096);
    o.sampler.topo = actors::topology::pool;
    o.checkpoint_dir = (dir / run).string();
    std::ostringstream progress;
    results.push_back(train(o, progress));
    saved.push_back(read_checkpoint(results.back().checkpoint));
  }
  CHECK(results[0].episodes == results[1].episodes);
  CHECK(results[0].mean_return == results[1].mean_return);
  CHECK(saved[0].learner.parameters == saved[1].learner.parameters);
  CHECK(saved[0].learner.adam_m == saved[1].learner.adam_m);
  // And it resumes: the signature names the LSTM, which a plain network's run refuses.
  auto o = small_recurrent(6000);
  o.sampler.topo = actors::topology::pool;
  o.checkpoint_dir = (dir / "a").string();
  o.resume = true;
  std::ostringstream resumed;
  CHECK(train(o, resumed).updates > results[0].updates);
  options_of<ppo_options>(o).lstm = 0;
  o.total_steps = 8000;
  std::ostringstream refused;
  CHECK_THROWS_WITH(train(o, refused), Catch::Contains("does not match this run"));
}
