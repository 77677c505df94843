// The PPO, DQN and R2D2 learners on their two backends: the fused engine's and
// the torch twin's, loaded with the same weights and Adam state, make the
// same updates on the same batches (stats, TD errors or priorities, weights,
// target syncs) to 1e-5 relative; their states are alike, so a checkpoint
// written on one resumes on the other.

#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/r2d2_learner.hpp"
#include "coral/learners/ppo_learner.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "coral/core/rng.hpp"
#include "coral/learners/network.hpp"
#include "coral/learners/r2d2.hpp"
#include "coral/learners/train.hpp"
#include "coral/replay/replay_actor.hpp"
#include "coral/replay/sequence.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/checkpoint.hpp"
#include "coral/training/rollout.hpp"
#include "../support/scratch_dir.hpp"
#include "sequence_batches.hpp"

using namespace coral::learners;
namespace replay = coral::replay;
namespace training = coral::training;

namespace backends_test {

// |a − b| ≤ 1e-5 max(|a|, |b|) + 1e-5 × the largest |want|, elementwise
// (fused_oracle_support.hpp's tolerance, which says why the floor).
void require_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  REQUIRE(got.size() == want.size());
  double scale = 0;
  for (const float w : want) scale = std::max(scale, static_cast<double>(std::fabs(w)));
  std::size_t worst = 0;
  double worst_excess = -1e300;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], b = want[i];
    const double excess = std::fabs(a - b) - (1e-5 * std::max(std::fabs(a), std::fabs(b)) + 1e-5 * scale);
    if (excess > worst_excess || std::isnan(excess)) {
      worst_excess = std::isnan(excess) ? 1e300 : excess;
      worst = i;
    }
  }
  INFO(what << ": element " << worst << " of " << got.size() << ": fused " << got[worst] << ", torch " << want[worst]
            << " (scale " << scale << ")");
  CHECK(worst_excess <= 0);
}

/// A statistic of both backends: equal to 1e-5 relative (and 1e-7 absolute, for a mean near 0).
void check_close(double fused, double torch, const char* what) {
  INFO(what << ": fused " << fused << ", torch " << torch);
  CHECK(std::fabs(fused - torch) <= 1e-5 * std::max(std::fabs(fused), std::fabs(torch)) + 1e-7);
}

/// `w` with normal noise of `scale` from `gen` added.
std::vector<float> jittered(std::vector<float> w, double scale, coral::rng& gen) {
  for (auto& x : w) x += static_cast<float>(scale * gen.normal());
  return w;
}

/// A checkpoint state of `weights` with Adam moments as after `steps` steps
/// (random, v positive), so that both backends start mid-run.
training::learner_state mid_run_state(const std::vector<float>& weights, std::uint64_t steps, coral::rng& gen) {
  training::learner_state st;
  st.parameters = weights;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    st.adam_m.push_back(static_cast<float>(1e-3 * gen.normal()));
    st.adam_v.push_back(static_cast<float>(1e-6 * (0.1 + gen.uniform())));
  }
  st.adam_steps = steps;
  st.updates = steps;
  st.env_steps = 1000 * steps;
  return st;
}

/// A batch of `rows` random n-step transitions of cartpole's shape.
replay::sample_batch transitions(std::size_t rows, std::size_t obs_dim, std::size_t actions, coral::rng& gen) {
  replay::sample_batch b;
  b.size = rows;
  for (std::size_t i = 0; i < rows * obs_dim; ++i) {
    b.observations.push_back(static_cast<float>(gen.normal()));
    b.next_observations.push_back(static_cast<float>(gen.normal()));
  }
  for (std::size_t i = 0; i < rows; ++i) {
    b.discrete.push_back(static_cast<std::int32_t>(gen.below(actions)));
    b.returns.push_back(static_cast<float>(2.0 * gen.normal()));
    b.discounts.push_back(gen.uniform() < 0.2 ? 0.0f : 0.97f);
    b.weights.push_back(static_cast<float>(0.1 + gen.uniform()));
  }
  b.keys.resize(rows);
  return b;
}

network_spec cartpole_shape(std::vector<std::size_t> hidden, std::size_t lstm) {
  network_spec spec;
  spec.raw_obs_dim = 4;
  spec.nvec = {2};
  spec.hidden = std::move(hidden);
  spec.lstm = lstm;
  return spec;
}

/// Restores both learners to one mid-run state (4 updates done, Adam's
/// moments random) with a target apart from the online weights.
template <class Learner>
void start_alike(Learner& fused, Learner& torch, coral::rng& gen) {
  const auto weights = jittered(fused.weights(), 0.05, gen);
  const auto start = mid_run_state(weights, 4, gen);
  const auto target = jittered(weights, 0.05, gen);
  fused.restore(start, target);
  torch.restore(start, target);
  REQUIRE(fused.weights() == torch.weights());
  REQUIRE(fused.target_weights() == torch.target_weights());
}

/// After an update of each: the same weights, target weights and Adam
/// state, and on each side the target a copy of the online weights exactly
/// when `synced`.
template <class Learner>
void check_same_after_update(const Learner& fused, const Learner& torch, bool synced) {
  require_close(fused.weights(), torch.weights(), "weights");
  require_close(fused.target_weights(), torch.target_weights(), "target weights");
  CHECK((fused.target_weights() == fused.weights()) == synced);
  CHECK((torch.target_weights() == torch.weights()) == synced);
  const auto fs = fused.state(), ts = torch.state();
  CHECK(fs.adam_steps == ts.adam_steps);
  CHECK(fs.updates == ts.updates);
  require_close(fs.adam_m, ts.adam_m, "Adam's first moments");
  require_close(fs.adam_v, ts.adam_v, "Adam's second moments");
}

/// Restores a mid-run state into `from`, then `from`'s state and target
/// into `to` (a learner of the other backend): `to` holds them unchanged.
template <class Learner>
void check_state_moves(Learner& from, Learner& to) {
  coral::rng gen(17);
  const auto st = mid_run_state(jittered(from.weights(), 0.1, gen), 4, gen);
  const auto target = jittered(st.parameters, 0.1, gen);
  from.restore(st, target);
  to.restore(from.state(), from.target_weights());
  const auto moved = to.state();
  CHECK(moved.parameters == st.parameters);
  CHECK(moved.adam_m == st.adam_m);
  CHECK(moved.adam_v == st.adam_v);
  CHECK(moved.adam_steps == st.adam_steps);
  CHECK(moved.updates == st.updates);
  CHECK(moved.env_steps == st.env_steps);
  CHECK(to.target_weights() == target);
}

/// A short run of `algo` on cartpole under --executor single, checkpointing into `dir`.
training::train_options short_run(const std::string& algo, const std::filesystem::path& dir) {
  training::train_options o;
  o.algo = algo;
  o.sampler.env = "cartpole";
  o.sampler.num_envs = 8;
  o.sampler.topo = coral::actors::topology::sync;
  o.sampler.executor = coral::executor_mode::single;
  o.sampler.seed = 7;
  o.total_steps = 2000;
  o.progress_seconds = 0;
  o.checkpoint_dir = dir.string();
  if (algo == "dqn") {
    auto& d = training::options_of<dqn_config>(o);
    d.learning_starts = 500;
    d.replay_capacity = 4096;
    d.batch_size = 32;
    d.replay_ratio = 4;
    d.target_update = 20;
  } else {
    o.hidden = {16};
    auto& r = training::options_of<r2d2_options>(o);
    r.lstm = 16;
    r.sequences.seq_len = 8;
    r.sequences.burn_in = 2;
    r.sequences.overlap = 2;
    r.q.n_step = 3;
    r.q.learning_starts = 500;
    r.q.replay_capacity = 1024;
    r.q.batch_size = 8;
    r.q.replay_ratio = 4;
    r.q.target_update = 20;
  }
  return o;
}

}  // namespace backends_test

TEST_CASE("the fused and torch DQN learners make the same updates from the same state, target syncs included",
          "[learners][dqn][backend]") {
  using namespace backends_test;
  const bool double_dqn = GENERATE(true, false);
  const bool masked = GENERATE(false, true);  // each next observation's legal actions: one or both
  CAPTURE(double_dqn, masked);
  const auto spec = cartpole_shape({64, 64}, 0);
  dqn_config config;
  config.double_dqn = double_dqn;
  config.batch_size = 64;
  config.learning_rate = 1e-3;
  config.max_grad_norm = 1.0;  // clipping on: the gradients here are larger
  config.target_update = 2;
  auto on_torch = config;
  on_torch.backend = network_backend::torch;
  dqn_learner fused(spec, config, 3);
  dqn_learner torch(spec, on_torch, 3);
  coral::rng gen(11);
  start_alike(fused, torch, gen);

  for (int step = 1; step <= 4; ++step) {
    INFO("update " << step << " (the target is copied after every second)");
    auto a = transitions(config.batch_size, 4, 2, gen);
    if (masked) {
      for (std::size_t i = 0; i < a.size; ++i) {
        const auto legal = 1 + gen.below(3);  // 0b01, 0b10 or 0b11
        a.next_masks.push_back(static_cast<std::uint8_t>(legal & 1U));
        a.next_masks.push_back(static_cast<std::uint8_t>((legal >> 1) & 1U));
      }
    }
    auto b = a;
    const auto sa = fused.update(a);
    const auto sb = torch.update(b);
    check_close(sa.td_loss, sb.td_loss, "td_loss");
    check_close(sa.mean_q, sb.mean_q, "mean_q");
    check_close(sa.mean_abs_td, sb.mean_abs_td, "mean_abs_td");
    CHECK(sa.learning_rate == sb.learning_rate);
    require_close(a.td_errors, b.td_errors, "TD errors");
    check_same_after_update(fused, torch, step % 2 == 0);
  }
  CHECK(fused.updates() == 8);
}

TEST_CASE("the fused and torch R2D2 learners make the same updates from the same state, target syncs and masks included",
          "[learners][r2d2][backend]") {
  using namespace backends_test;
  // cartpole-r2d2.toml's network; sequences with burn-in, and without.
  const std::size_t burn_in = GENERATE(4, 0);
  const bool masked = GENERATE(false, true);  // each observation slot's legal actions: one or both, none in padding
  CAPTURE(burn_in, masked);
  const auto spec = cartpole_shape({32, 32}, 64);
  dqn_config dqn = r2d2_q_defaults();
  dqn.batch_size = 8;
  dqn.max_grad_norm = 1.0;
  dqn.target_update = 2;
  r2d2_config config;
  config.seq_len = 12;
  config.burn_in = burn_in;
  auto on_torch = dqn;
  on_torch.backend = network_backend::torch;
  r2d2_learner fused(spec, dqn, config, 3);
  r2d2_learner torch(spec, on_torch, config, 3);
  coral::rng gen(13);
  start_alike(fused, torch, gen);

  for (int step = 1; step <= 4; ++step) {
    INFO("update " << step << " (the target is copied after every second)");
    auto a = coral::test::random_sequences(spec, dqn.batch_size, config.seq_len, burn_in, gen, masked);
    auto b = a;
    const auto sa = fused.update(a);
    const auto sb = torch.update(b);
    check_close(sa.base.td_loss, sb.base.td_loss, "td_loss");
    check_close(sa.base.mean_q, sb.base.mean_q, "mean_q");
    check_close(sa.base.mean_abs_td, sb.base.mean_abs_td, "mean_abs_td");
    check_close(sa.q_max, sb.q_max, "q_max");
    check_close(sa.grad_norm, sb.grad_norm, "grad_norm");
    require_close(a.priorities, b.priorities, "priorities");
    check_same_after_update(fused, torch, step % 2 == 0);
  }

  // The acting side's questions: Q values and the state after some steps,
  // an episode starting in the middle.
  std::vector<float> obs(10 * 4);
  for (auto& x : obs) x = static_cast<float>(gen.normal());
  std::vector<std::uint8_t> resets(10, 0);
  resets[0] = resets[6] = 1;
  require_close(fused.q_values(obs, resets), torch.q_values(obs, resets), "Q values");
  std::vector<float> initial(spec.state_dim());
  for (auto& x : initial) x = static_cast<float>(0.5 * gen.normal());
  resets[0] = 0;
  require_close(fused.state_after(obs, resets, initial), torch.state_after(obs, resets, initial), "state after");
}

TEST_CASE("a Q learner's state moves between the backends unchanged", "[learners][backend][checkpoint]") {
  using namespace backends_test;
  auto torch_config = [](dqn_config c) {
    c.backend = network_backend::torch;
    return c;
  };
  SECTION("DQN, torch to fused") {
    const auto spec = cartpole_shape({64, 64}, 0);
    dqn_learner torch(spec, torch_config(dqn_config{}), 1);
    dqn_learner fused(spec, dqn_config{}, 1);
    check_state_moves(torch, fused);
  }
  SECTION("R2D2, fused to torch") {
    const auto spec = cartpole_shape({16}, 8);
    r2d2_learner fused(spec, r2d2_q_defaults(), r2d2_config{}, 1);
    r2d2_learner torch(spec, torch_config(r2d2_q_defaults()), r2d2_config{}, 1);
    check_state_moves(fused, torch);
  }
}

TEST_CASE("a DQN or R2D2 run checkpointed on one backend resumes on the other", "[learners][backend][checkpoint]") {
  using namespace backends_test;
  const std::string algo = GENERATE("dqn", "r2d2");
  const std::string first_backend = GENERATE("torch", "fused");
  const std::string second_backend = first_backend == "torch" ? "fused" : "torch";
  CAPTURE(algo, first_backend);
  const auto dir = coral::test::fresh_path("backend-resume-" + algo + "-" + first_backend);
  auto o = short_run(algo, dir);
  o.backend = first_backend;
  std::ostringstream first;
  const auto r1 = train(o, first);
  CHECK(first.str().find("on the " + first_backend + " backend") != std::string::npos);
  REQUIRE(!r1.checkpoint.empty());
  REQUIRE(r1.updates > 0);
  const auto saved = training::read_checkpoint(r1.checkpoint);

  o.backend = second_backend;
  o.resume = true;
  o.total_steps = 3000;
  std::ostringstream second;
  const auto r2 = train(o, second);
  CHECK(second.str().find("on the " + second_backend + " backend") != std::string::npos);
  CHECK(second.str().find("resumed from " + r1.checkpoint) != std::string::npos);
  CHECK(r2.env_steps >= 3000);
  CHECK(r2.updates > r1.updates);
  // The second backend went on from the first's weights: its checkpoint's
  // Adam took r2.updates steps in all.
  const auto resumed = training::read_checkpoint(r2.checkpoint);
  CHECK(resumed.learner.adam_steps == saved.learner.adam_steps + (r2.updates - r1.updates));
  CHECK(resumed.learner.parameters.size() == saved.learner.parameters.size());
}

namespace backends_test {

/// A segment of `rows` × `steps` random cartpole steps for `spec`: episode
/// ends (terminated and truncated) mid-row, random initial states where
/// the network is recurrent.
coral::training::rollout_segment random_segment(const network_spec& spec, std::size_t rows, std::size_t steps,
                                                coral::rng& gen) {
  const std::size_t D = spec.input_dim();
  coral::training::rollout_segment seg(0, rows, steps, D, 1, 0);
  for (auto& x : seg.observations) x = static_cast<float>(gen.normal());
  for (std::size_t i = 0; i < rows * steps; ++i) {
    seg.discrete_actions[i] = static_cast<std::int32_t>(gen.below(2));
    seg.log_probs[i] = static_cast<float>(std::log(0.5) + 0.2 * gen.normal());
    seg.values[i] = static_cast<float>(gen.normal());
    seg.rewards[i] = static_cast<float>(gen.uniform());
    const double end = gen.uniform();
    if (end < 0.05) {
      seg.terminated[i] = 1;
    } else if (end < 0.1) {
      seg.truncated[i] = 1;
      seg.truncated_steps.push_back(static_cast<std::uint32_t>(i));
      for (std::size_t k = 0; k < D; ++k) seg.truncated_observations.push_back(static_cast<float>(gen.normal()));
    }
  }
  seg.state_dim = spec.state_dim();
  for (std::size_t k = 0; k < rows * seg.state_dim; ++k) seg.initial_states.push_back(static_cast<float>(0.5 * gen.normal()));
  return seg;
}

}  // namespace backends_test

TEST_CASE("the fused and torch PPO learners make the same updates from the same state, recurrent or not",
          "[learners][ppo][backend]") {
  using namespace backends_test;
  // With an LSTM: minibatches of 2 whole rows of 8 steps, observations
  // normalised and rewards scaled; without: minibatches of 16 steps.
  const std::size_t lstm = GENERATE(16, 0);
  CAPTURE(lstm);
  auto spec = cartpole_shape({16}, lstm);
  spec.normalize_observations = lstm > 0;
  ppo_config config;
  config.minibatch_size = 16;
  config.epochs = 2;
  config.scale_rewards = lstm > 0;
  auto on_torch = config;
  on_torch.backend = network_backend::torch;
  ppo_learner fused(spec, config, 3, 100'000);
  ppo_learner torch(spec, on_torch, 3, 100'000);
  coral::rng gen(19);
  // One mid-run state in both: moved weights, random Adam moments.
  auto start = fused.state();
  const auto moved = mid_run_state(jittered(start.parameters, 0.05, gen), 4, gen);
  start.parameters = moved.parameters;
  start.adam_m = moved.adam_m;
  start.adam_v = moved.adam_v;
  start.adam_steps = moved.adam_steps;
  fused.restore(start);
  torch.restore(start);
  REQUIRE(fused.weights() == torch.weights());

  for (std::uint64_t update = 1; update <= 2; ++update) {
    INFO("update " << update);
    const auto seg = random_segment(spec, 4, 8, gen);
    const auto a = fused.update(seg, update);
    const auto b = torch.update(seg, update);
    check_close(a.policy_loss, b.policy_loss, "policy loss");
    check_close(a.value_loss, b.value_loss, "value loss");
    check_close(a.entropy, b.entropy, "entropy");
    check_close(a.approx_kl, b.approx_kl, "approx kl");
    CHECK(a.clip_fraction == b.clip_fraction);
    CHECK(a.learning_rate == b.learning_rate);
    require_close(fused.weights(), torch.weights(), "weights (and the normaliser's block)");
    const auto fs = fused.state(), ts = torch.state();
    CHECK(fs.adam_steps == ts.adam_steps);
    CHECK(fs.rng == ts.rng);
    require_close(fs.adam_m, ts.adam_m, "Adam's first moments");
    require_close(fs.adam_v, ts.adam_v, "Adam's second moments");
  }
  CHECK(fused.updates() == 2);
  std::vector<float> obs(6 * 4);
  for (auto& x : obs) x = static_cast<float>(gen.normal());
  require_close(fused.values(obs), torch.values(obs), "values (from a zero state, with an LSTM)");
}
