#include "coral/learners/trained_policy.hpp"

#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/errors.hpp"
#include "coral/envs/registry.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/mlp_policy.hpp"
#include "coral/learners/network.hpp"
#include "coral/learners/ppo.hpp"
#include "coral/learners/ppo_learner.hpp"
#include "coral/learners/q_policy.hpp"
#include "coral/learners/r2d2.hpp"
#include "coral/learners/r2d2_learner.hpp"
#include "coral/learners/r2d2_policy.hpp"
#include "coral/learners/train.hpp"
#include "coral/training/checkpoint.hpp"
#include "coral/training/checkpoint_dir.hpp"
#include "coral/training/checkpoint_settings.hpp"
#include "coral/training/errors.hpp"
#include "../support/scratch_dir.hpp"
#include "../support/short_run.hpp"
#include "../support/test_envs.hpp"

namespace fs = std::filesystem;
using namespace coral::learners;
using coral::training::options_of;
using coral::training::train_options;
namespace te = coral::training::errors;
namespace lm = coral::learners::errors;

namespace {

using coral::test::short_run;
using coral::test::train_quietly;

/// Options for `n` rows, the rest at their defaults.
policy_options with_rows(std::size_t n) {
  policy_options o;
  o.rows = n;
  return o;
}

/// Steps `rows` envs `env` (seed 21) for `steps` steps; before each step
/// `act` writes the actions into the batch; returns every action taken and
/// the returns of the episodes that ended.
struct trace {
  std::vector<std::int32_t> actions;
  std::vector<float> continuous;
  std::vector<float> returns;
};
trace drive(const std::string& env, std::size_t rows, std::size_t steps,
            const std::function<void(coral::envs::env_batch&)>& act) {
  auto envs = coral::envs::registry::global().make_many(env, {}, 21, 0, rows);
  coral::envs::env_batch batch(rows, envs.front()->observation_space(), envs.front()->action_space());
  coral::envs::env_slice slice(batch, 0, std::move(envs));
  slice.reset_all();
  trace t;
  for (std::size_t s = 0; s < steps; ++s) {
    act(batch);
    const auto discrete = batch.discrete_actions().row(0);
    const auto continuous = batch.continuous_actions().row(0);
    t.actions.insert(t.actions.end(), discrete.begin(), discrete.begin() + static_cast<std::ptrdiff_t>(rows * batch.discrete_action_dim()));
    t.continuous.insert(t.continuous.end(), continuous.begin(),
                        continuous.begin() + static_cast<std::ptrdiff_t>(rows * batch.continuous_action_dim()));
    slice.step_all();
    for (std::size_t r = 0; r < rows; ++r) {
      if (batch.terminated()[r] != 0 || batch.truncated()[r] != 0) t.returns.push_back(batch.episode_returns()[r]);
    }
  }
  return t;
}

/// The same with a loaded policy: its actions, and reset(row) where an episode ended.
trace drive_loaded(trained_policy& p, std::size_t steps) {
  return drive(p.run_options().sampler.env, p.rows(), steps, [&p](coral::envs::env_batch& b) {
    for (std::size_t r = 0; r < b.rows(); ++r) {
      if (b.terminated()[r] != 0 || b.truncated()[r] != 0) p.reset(r);
    }
    const auto a = p.act({b.observations().row(0).data(), b.rows() * b.obs_dim()});
    std::copy(a.discrete.begin(), a.discrete.end(), b.discrete_actions().row(0).data());
    std::copy(a.continuous.begin(), a.continuous.end(), b.continuous_actions().row(0).data());
  });
}

/// The same with the training process's own acting policy.
trace drive_direct(const std::string& env, coral::actors::policy& p, std::size_t rows, std::size_t steps) {
  return drive(env, rows, steps, [&p](coral::envs::env_batch& b) {
    const coral::actors::row_range all{0, static_cast<std::uint32_t>(b.rows())};
    p.act({.batch = b, .ranges = std::span(&all, 1), .log_probs = {}, .values = {}});
  });
}

/// Checks that `loaded` and `direct` (for the same number of rows) take the
/// same actions on the same 600 steps and so get the same returns.
void check_same_actions(trained_policy& loaded, coral::actors::policy& direct) {
  const auto a = drive_loaded(loaded, 600);
  const auto b = drive_direct(loaded.run_options().sampler.env, direct, loaded.rows(), 600);
  CHECK(a.actions == b.actions);
  CHECK(a.continuous == b.continuous);
  CHECK(a.returns == b.returns);
  CHECK_FALSE(a.returns.empty());
}

/// The network_spec of `o`'s env (without obs norm or an LSTM).
network_spec spec_of_env(const train_options& o, std::size_t frames) {
  const auto env = coral::envs::registry::global().make(o.sampler.env, {}, 0, 0);
  return network_spec::from_spaces(env->observation_space(), env->action_space(), o.hidden, frames, o.conv);
}

/// `o` on MinAtar's Breakout with a small convolution (the grid networks).
void on_grids(train_options& o) {
  o.sampler.env = "minatar/breakout";
  o.conv = {"4:3", "4:2:2"};
}

/// The training process's PPO policy of a run of `o` for `rows` rows: an
/// mlp_policy of `spec` with the weights the learner publishes after
/// restoring `file`, deterministic.
std::unique_ptr<mlp_policy> ppo_as_trained(const train_options& o, const network_spec& spec, const fs::path& file,
                                           std::size_t rows) {
  const auto c = coral::training::read_checkpoint(file);
  ppo_learner learner(spec, options_of<ppo_options>(o).ppo, o.sampler.seed, o.total_steps);
  learner.restore(c.learner);
  auto p = std::make_unique<mlp_policy>(spec, rows, 99);
  p->load_weights(learner.weights());
  p->set_deterministic(true);
  return p;
}

}  // namespace

TEST_CASE("a loaded PPO policy acts as the training process's mlp_policy, deterministic, bit for bit",
          "[learners][trained_policy]") {
  // An MLP, an LSTM over stacked frames with observation normalisation,
  // and convolutions over MinAtar's grids, without an LSTM and with one.
  for (const std::string variant : {"mlp", "lstm", "conv", "conv-lstm"}) {
    const bool recurrent = variant == "lstm";
    const auto dir = coral::test::fresh_dir("trained-ppo-" + variant);
    auto o = short_run("ppo", dir, 2048);
    options_of<ppo_options>(o).horizon = 64;
    if (variant.starts_with("conv")) on_grids(o);
    if (variant == "conv-lstm") options_of<ppo_options>(o).lstm = 8;
    if (recurrent) {
      options_of<ppo_options>(o).lstm = 8;
      options_of<ppo_options>(o).frames = 2;
      options_of<ppo_options>(o).normalize_observations = true;
    }
    train_quietly(o);
    auto loaded = load_policy(dir, with_rows(3));
    CHECK(loaded.run_options().algo == "ppo");
    CHECK(loaded.file() == *coral::training::newest_checkpoint(dir));

    auto spec = spec_of_env(o, options_of<ppo_options>(o).frames);
    spec.lstm = options_of<ppo_options>(o).lstm;
    spec.normalize_observations = options_of<ppo_options>(o).normalize_observations;
    check_same_actions(loaded, *ppo_as_trained(o, spec, loaded.file(), 3));
  }
}

TEST_CASE("a loaded PPO policy with a Box action takes the Gaussian's mean, clipped, as mlp_policy does",
          "[learners][trained_policy]") {
  coral::test::register_test_envs();
  const auto dir = coral::test::fresh_dir("trained-ppo-box");
  auto o = short_run("ppo", dir, 1024);
  o.sampler.env = "test-target";
  options_of<ppo_options>(o).horizon = 64;
  train_quietly(o);
  auto loaded = load_policy(dir, with_rows(3));
  CHECK(loaded.continuous_size() == 1);
  CHECK(loaded.discrete_size() == 0);
  check_same_actions(loaded, *ppo_as_trained(o, spec_of_env(o, 1), loaded.file(), 3));
}

TEST_CASE("a loaded DQN policy acts greedily as the training process's q_policy, bit for bit",
          "[learners][trained_policy]") {
  for (const bool grids : {false, true}) {
    const auto dir = coral::test::fresh_dir(grids ? "trained-dqn-conv" : "trained-dqn");
    auto o = short_run("dqn", dir, 1500);
    if (grids) on_grids(o);
    options_of<dqn_config>(o).learning_starts = 500;
    options_of<dqn_config>(o).replay_capacity = 2048;
    options_of<dqn_config>(o).batch_size = 32;
    train_quietly(o);
    auto loaded = load_policy(dir, with_rows(2));
    const auto c = coral::training::read_checkpoint(loaded.file());
    const auto spec = spec_of_env(o, 1);
    dqn_learner learner(spec, options_of<dqn_config>(o), o.sampler.seed);
    learner.restore(c.learner, c.floats("target_parameters"));
    q_policy direct(spec, 2, 99, options_of<dqn_config>(o));
    direct.load_weights(learner.weights());
    direct.set_deterministic(true);
    check_same_actions(loaded, direct);
  }
}

TEST_CASE("a loaded R2D2 policy acts greedily as the training process's r2d2_policy, state per row, bit for bit",
          "[learners][trained_policy]") {
  for (const bool grids : {false, true}) {
    const auto dir = coral::test::fresh_dir(grids ? "trained-r2d2-conv" : "trained-r2d2");
    auto o = short_run("r2d2", dir, 1500);
    if (grids) on_grids(o);
    auto& r = options_of<r2d2_options>(o);
    r.lstm = 8;
    r.sequences.seq_len = 8;
    r.sequences.burn_in = 2;
    r.sequences.overlap = 2;
    r.q.learning_starts = 500;
    r.q.replay_capacity = 512;
    r.q.batch_size = 8;
    train_quietly(o);
    auto loaded = load_policy(dir, with_rows(2));
    const auto c = coral::training::read_checkpoint(loaded.file());
    auto spec = spec_of_env(o, 1);
    spec.lstm = r.lstm;
    r2d2_learner learner(spec, r.q, r.sequences, o.sampler.seed);
    learner.restore(c.learner, c.floats("target_parameters"));
    r2d2_policy direct(spec, 2, 99, r.q, 0);
    direct.load_weights(learner.weights());
    direct.set_deterministic(true);
    check_same_actions(loaded, direct);
  }
}

TEST_CASE("load_policy refuses what is not a usable checkpoint, naming it", "[learners][trained_policy]") {
  const auto dir = coral::test::fresh_dir("trained-refusals");
  auto o = short_run("ppo", dir / "run", 512);
  options_of<ppo_options>(o).horizon = 64;
  train_quietly(o);
  const auto good = *coral::training::newest_checkpoint(dir / "run");
  auto refusal = [](const fs::path& p, const policy_options& po = {}) -> std::string {
    try {
      (void)load_policy(p, po);
    } catch (const coral::error& e) {
      return e.what();
    }
    return "(loaded)";
  };

  SECTION("a directory without checkpoints") {
    fs::create_directories(dir / "empty");
    CHECK(refusal(dir / "empty") == fmt::format(fmt::runtime(lm::no_checkpoint_in_dir), (dir / "empty").string()));
  }
  SECTION("a truncated file") {
    const auto bytes = coral::test::read_bytes(good);
    const auto cut = dir / "cut.ckpt";
    std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
    CHECK(refusal(cut).starts_with(fmt::format("checkpoint '{}' is truncated", cut.string())));
  }
  SECTION("a file that is not a coral checkpoint") {
    const auto foreign = dir / "foreign.ckpt";
    std::ofstream(foreign) << "PK\x03\x04 a zip file, say, long enough to hold a header of a checkpoint";
    CHECK(refusal(foreign) == fmt::format(fmt::runtime(te::checkpoint_not_coral), foreign.string()));
  }
  SECTION("a missing file") {
    CHECK(refusal(dir / "missing.ckpt").starts_with(fmt::format("checkpoint '{}'", (dir / "missing.ckpt").string())));
  }
  SECTION("a checkpoint of an older coral, without the run's settings") {
    auto c = coral::training::read_checkpoint(good);
    std::erase_if(c.records, [](const auto& r) { return r.first == coral::training::run_settings_record; });
    const auto old = dir / "old.ckpt";
    coral::training::write_checkpoint(old, c);
    CHECK(refusal(old) == fmt::format(fmt::runtime(te::checkpoint_no_settings), old.string()));
  }
  SECTION("a malformed settings record") {
    auto c = coral::training::read_checkpoint(good);
    c.set_record(std::string(coral::training::run_settings_record), {'\x09', '\0'});
    const auto bad = dir / "bad.ckpt";
    coral::training::write_checkpoint(bad, c);
    CHECK(refusal(bad) == fmt::format(fmt::runtime(te::checkpoint_bad_record), bad.string(), "run_settings"));
  }
  SECTION("an env arg the env refuses") {
    policy_options po;
    po.env_args = {{"no_such_key", "1"}};
    CHECK(refusal(good, po) == fmt::format(fmt::runtime(coral::envs::errors::unknown_key), "cartpole", "no_such_key",
                                           "max_steps, velocities"));
  }
  SECTION("an algorithm that cannot act outside a run") {
    auto c = coral::training::read_checkpoint(good);
    c.algo = "no-acting";
    coral::training::algorithm_descriptor d;
    d.name = "no-acting";
    d.defaults = [] { return std::any(std::monostate{}); };
    d.make = [](const train_options&, coral::actors::sampler&) -> std::unique_ptr<coral::training::algorithm> {
      return nullptr;
    };
    coral::training::register_algorithm(std::move(d));
    const auto other = dir / "other.ckpt";
    coral::training::write_checkpoint(other, c);
    CHECK(refusal(other) == fmt::format(fmt::runtime(lm::algo_cannot_act), other.string(), "no-acting"));
    coral::training::unregister_algorithm("no-acting");
  }
  SECTION("a network that does not fit the checkpoint's") {
    auto c = coral::training::read_checkpoint(good);
    c.network = "mlp of another run";
    const auto other = dir / "network.ckpt";
    coral::training::write_checkpoint(other, c);
    CHECK(refusal(other).starts_with(fmt::format("checkpoint '{}' does not match this run: network is mlp of another run",
                                                 other.string())));
  }
  SECTION("observations of the wrong size, a row past the end") {
    auto p = load_policy(good, with_rows(2));
    const std::vector<float> three(3, 0.0f);
    CHECK_THROWS_WITH(p.act(three), fmt::format(fmt::runtime(lm::policy_observation_size), 3, 2, 4));
    CHECK_THROWS_WITH(p.reset(2), fmt::format(fmt::runtime(lm::policy_row_out_of_range), 2, 2));
  }
}

TEST_CASE("a checkpoint keeps the run's settings: env args, hidden widths, the algorithm's options",
          "[learners][trained_policy]") {
  register_builtin_algorithms();
  train_options o;
  o.algo = "ppo";
  o.sampler.env = "cartpole";
  o.sampler.env_args = {{"max_steps", "77"}};
  o.sampler.seed = 4;
  o.hidden = {8, 5};
  options_of<ppo_options>(o).frames = 3;
  options_of<ppo_options>(o).lstm = 6;
  options_of<ppo_options>(o).ppo.learning_rate = 0.00123;
  coral::training::checkpoint c;
  c.env = "cartpole";
  c.algo = "ppo";
  c.seed = 4;
  c.set_record(std::string(coral::training::run_settings_record), coral::training::encode_run_settings(o));
  const auto back = coral::training::run_options_of(c, "f");
  CHECK(back.sampler.env_args == o.sampler.env_args);
  CHECK(back.hidden == o.hidden);
  CHECK(back.sampler.seed == 4);
  CHECK(options_of<ppo_options>(back).frames == 3);
  CHECK(options_of<ppo_options>(back).lstm == 6);
  CHECK(options_of<ppo_options>(back).ppo.learning_rate == 0.00123);
}

TEST_CASE("a loaded policy never takes an action the env's mask rules out, and refuses a mask of another size "
          "or with no legal action",
          "[learners][trained_policy][masks]") {
  const auto dir = coral::test::fresh_dir("trained-ppo-masks");
  auto o = short_run("ppo", dir, 512);
  o.sampler.env = "tictactoe";
  o.sampler.env_args = {{"opponent", "random"}};
  train_quietly(o);
  auto policy = load_policy(dir);
  REQUIRE(policy.action_mask_size() == 9);
  std::vector<float> empty(9, 0.0f);
  // Each cell in turn the only legal one: the policy takes it.
  for (std::uint8_t cell = 0; cell < 9; ++cell) {
    std::vector<std::uint8_t> mask(9, 0);
    mask[cell] = 1;
    CHECK(policy.act(empty, mask).discrete[0] == cell);
  }
  // Without a mask every cell may be chosen; a mask of another size is refused.
  CHECK_NOTHROW(policy.act(empty));
  const std::vector<std::uint8_t> short_mask(8, 1);
  CHECK_THROWS_MATCHES(policy.act(empty, short_mask), coral::usage_error,
                       Catch::Message(fmt::format(fmt::runtime(lm::policy_mask_size), 8, 1, 9)));
  // A mask that rules out every cell is refused naming the row; any nonzero
  // byte is legal.
  CHECK_THROWS_MATCHES(policy.act(empty, std::vector<std::uint8_t>(9, 0)), coral::usage_error,
                       Catch::Message(fmt::format(fmt::runtime(lm::policy_mask_empty), 0, 0)));
  std::vector<std::uint8_t> wide(9, 0);
  wide[6] = 255;
  CHECK(policy.act(empty, wide).discrete[0] == 6);
  fs::remove_all(dir);
}
