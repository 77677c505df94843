#include "coral/training/running_moments.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/core/rng.hpp"
#include "coral/training/checkpoint.hpp"
#include "coral/learners/mlp_policy.hpp"
#include "coral/learners/network.hpp"
#include "coral/learners/ppo_learner.hpp"
#include "coral/training/reward_scaler.hpp"
#include "coral/training/rollout.hpp"
#include "coral/learners/ppo.hpp"
#include "coral/learners/r2d2.hpp"
#include "coral/learners/r2d2_learner.hpp"
#include "coral/learners/r2d2_policy.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/train.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/errors.hpp"

using namespace coral::learners;
using namespace coral::training;
namespace actors = coral::actors;
namespace envs = coral::envs;
namespace fs = std::filesystem;

namespace {

/// `rows` rows of `width` floats: element i of a row is offset[i] + scale[i] × U(-1, 1).
std::vector<float> random_rows(std::size_t rows, std::size_t width, std::uint64_t seed) {
  coral::rng rng(seed);
  std::vector<float> out(rows * width);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t i = 0; i < width; ++i) {
      out[r * width + i] = static_cast<float>(3.0 * static_cast<double>(i) - 2.0 + (1.0 + static_cast<double>(i)) * rng.uniform(-1.0, 1.0));
    }
  }
  return out;
}

/// Two-pass mean and population variance of column i.
std::pair<double, double> direct_moments(const std::vector<float>& rows, std::size_t width, std::size_t i) {
  const std::size_t n = rows.size() / width;
  double mean = 0;
  for (std::size_t r = 0; r < n; ++r) mean += rows[r * width + i];
  mean /= static_cast<double>(n);
  double var = 0;
  for (std::size_t r = 0; r < n; ++r) var += (rows[r * width + i] - mean) * (rows[r * width + i] - mean);
  return {mean, var / static_cast<double>(n)};
}

double population_std(const std::vector<double>& xs) {
  const double mean = std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
  double var = 0;
  for (double x : xs) var += (x - mean) * (x - mean);
  return std::sqrt(var / static_cast<double>(xs.size()) + normalizer_epsilon);
}

/// A Box-in, Box-out network: 3 observations, 2 actions in [-1, 1].
network_spec box_spec(bool obs_norm) {
  auto spec = network_spec::from_spaces(envs::space::box({3}, -100.0f, 100.0f), envs::space::box({2}, -1.0f, 1.0f),
                                        {16, 16}, 1);
  spec.normalize_observations = obs_norm;
  return spec;
}

/// A segment of `rows` × `horizon` steps whose observations are far from
/// zero mean and unit variance, with random actions and rewards.
rollout_segment far_segment(std::size_t rows, std::size_t horizon, std::uint64_t seed) {
  rollout_segment s(0, rows, horizon, 3, 0, 2);
  s.observations = random_rows(rows * (horizon + 1), 3, seed);
  coral::rng rng(seed + 1);
  for (auto& a : s.continuous_actions) a = static_cast<float>(rng.uniform(-1.0, 1.0));
  for (auto& l : s.log_probs) l = -2.0f;
  for (auto& r : s.rewards) r = static_cast<float>(rng.uniform(0.0, 5.0));
  for (std::size_t i = 0; i < s.terminated.size(); ++i) s.terminated[i] = (i % 17 == 16) ? 1 : 0;
  return s;
}

}  // namespace

TEST_CASE("running moments match a direct computation, whatever the batches", "[learners][normalization]") {
  constexpr std::size_t width = 4;
  const auto rows = random_rows(1000, width, 5);
  running_moments m(width);
  CHECK(m.mean()[0] == 0.0);  // before any row: the identity
  CHECK(m.variance()[0] == 1.0);
  std::size_t at = 0;
  for (std::size_t batch : {1u, 7u, 100u, 392u, 500u}) {
    m.update(std::span<const float>(rows).subspan(at * width, batch * width));
    at += batch;
  }
  REQUIRE(at == 1000);
  CHECK(m.count() == 1000.0);
  for (std::size_t i = 0; i < width; ++i) {
    const auto [mean, var] = direct_moments(rows, width, i);
    CHECK(m.mean()[i] == Approx(mean).epsilon(1e-12));
    CHECK(m.variance()[i] == Approx(var).epsilon(1e-12));
  }
  CHECK_THROWS_AS(m.update(std::span<const float>(rows).first(width + 1)), coral::usage_error);
}

TEST_CASE("merged running moments equal the moments of all the rows", "[learners][normalization]") {
  constexpr std::size_t width = 3;
  const auto rows = random_rows(300, width, 11);
  running_moments all(width), first(width), second(width);
  all.update(rows);
  first.update(std::span<const float>(rows).first(120 * width));
  second.update(std::span<const float>(rows).subspan(120 * width));
  first.merge(second);
  CHECK(first.count() == 300.0);
  for (std::size_t i = 0; i < width; ++i) {
    CHECK(first.mean()[i] == Approx(all.mean()[i]).epsilon(1e-12));
    CHECK(first.variance()[i] == Approx(all.variance()[i]).epsilon(1e-12));
  }
  running_moments empty(width);
  first.merge(empty);  // nothing seen: nothing changes
  CHECK(first.count() == 300.0);
  running_moments other_width(width + 1);
  CHECK_THROWS_AS(first.merge(other_width), coral::usage_error);

  running_moments restored(width);
  restored.load(first.save());
  CHECK(restored.save() == first.save());
  CHECK_THROWS_AS(restored.load(std::vector<double>(2 * width)), coral::usage_error);
}

TEST_CASE("an observation is normalised by the running moments and clipped to +-10", "[learners][normalization]") {
  running_moments m(3);
  const std::vector<float> rows = {0, 10, 5, 2, 10, -5};  // means 1, 10, 0; variances 1, 0, 25
  m.update(rows);
  const auto block = normalizer_block(m);
  REQUIRE(block.size() == 6);
  const float in[3] = {3.0f, 10.0f, -10.0f};
  float out[3] = {};
  normalize_observation(block, in, out);
  CHECK(out[0] == Approx(2.0).epsilon(1e-6));                    // (3 − 1) / 1
  CHECK(out[1] == 0.0f);                                         // at the mean of a constant element
  CHECK(out[2] == Approx(-2.0).epsilon(1e-6));                   // −10 / 5
  const float far[3] = {100.0f, 10.001f, 1000.0f};
  normalize_observation(block, far, out);
  CHECK(out[0] == observation_clip);
  CHECK(out[1] == observation_clip);  // a constant element: any change is far out (variance + 1e-8)
  CHECK(out[2] == observation_clip);
}

TEST_CASE("rewards are divided by the running std of each row's discounted return, reset at episode ends",
          "[learners][normalization][reward]") {
  // Two rows of three steps, γ = 0.5; row 0's episode ends (terminated) at
  // step 0 and row 1's (truncated) at step 1. Hand computation:
  //   step 0: G = (1, 4)                      -> std of {1, 4}
  //   step 1: G = (0·0.5 + 2, 4·0.5 + 0) = (2, 2)       -> std of {1, 4, 2, 2}
  //   step 2: G = (2·0.5 + 3, 0·0.5 + 2) = (4, 2)       -> std of {1, 4, 2, 2, 4, 2}
  reward_scaler scaler(0.5);
  std::vector<float> rewards = {1, 2, 3,   // row 0
                                4, 0, 2};  // row 1
  const std::vector<std::uint8_t> terminated = {1, 0, 0, 0, 0, 0};
  const std::vector<std::uint8_t> truncated = {0, 0, 0, 0, 1, 0};
  scaler.scale(rewards, terminated, truncated, 2, 3);
  const double s0 = population_std({1, 4});
  const double s1 = population_std({1, 4, 2, 2});
  const double s2 = population_std({1, 4, 2, 2, 4, 2});
  CHECK(rewards[0] == Approx(1 / s0));
  CHECK(rewards[3] == Approx(4 / s0));
  CHECK(rewards[1] == Approx(2 / s1));
  CHECK(rewards[4] == 0.0f);
  CHECK(rewards[2] == Approx(3 / s2));
  CHECK(rewards[5] == Approx(2 / s2));
  CHECK(scaler.returns()[0] == 4.0);  // carried into the next segment
  CHECK(scaler.returns()[1] == 2.0);
  CHECK(scaler.moments().count() == 6.0);

  // The next call continues each row's return: G = (4·0.5 + 1, 2·0.5 + 1).
  std::vector<float> more = {1, 1};
  const std::vector<std::uint8_t> none = {0, 0};
  scaler.scale(more, none, none, 2, 1);
  CHECK(more[0] == Approx(1 / population_std({1, 4, 2, 2, 4, 2, 3, 2})));
  CHECK(scaler.returns()[0] == 3.0);

  reward_scaler restored(0.5);
  restored.load(scaler.save());
  CHECK(restored.save() == scaler.save());
}

TEST_CASE("scaled rewards are clipped to +-10", "[learners][normalization][reward]") {
  reward_scaler scaler(0.99);
  std::vector<float> rewards = {1, 1};  // one row: the first step's returns have no spread
  const std::vector<std::uint8_t> flags = {0, 0};
  scaler.scale(rewards, flags, flags, 1, 2);
  CHECK(rewards[0] == reward_clip);
}

TEST_CASE("the env gets Box actions clipped to their bounds; the log probability is the unclipped sample's",
          "[learners][normalization][actions]") {
  const auto spec = box_spec(false);
  constexpr std::size_t rows = 4;
  mlp_policy policy(spec, rows, 3);
  // Zero weights: mean 0 everywhere; log std 1.5 (sd ≈ 4.5): most samples fall outside [-1, 1].
  std::vector<float> weights(parameter_count(spec), 0.0f);
  constexpr float log_std = 1.5f;
  weights[0] = weights[1] = log_std;  // the module's own parameter, log_std, comes before its children's
  policy.load_weights(weights);
  envs::env_batch batch(rows, envs::space::box({3}, -100.0f, 100.0f), envs::space::box({2}, -1.0f, 1.0f));
  std::vector<float> log_probs(rows), values(rows);
  const actors::row_range all{0, rows};
  std::size_t outside = 0;
  for (int step = 0; step < 25; ++step) {
    policy.act({batch, std::span(&all, 1), log_probs, values});
    const auto samples = policy.sampled_actions();
    REQUIRE(samples.size() == rows * 2);
    for (std::size_t r = 0; r < rows; ++r) {
      double logp = 0;
      for (std::size_t c = 0; c < 2; ++c) {
        const float x = samples[r * 2 + c];
        const float acted = batch.continuous_actions().row(r)[c];
        CHECK(acted == std::clamp(x, -1.0f, 1.0f));
        if (std::abs(x) > 1.0f) ++outside;
        const double z = x / std::exp(static_cast<double>(log_std));
        logp += -0.5 * z * z - log_std - 0.91893853320467274178;
      }
      CHECK(log_probs[r] == Approx(logp).epsilon(1e-5));
    }
  }
  CHECK(outside > 100);  // of 200 samples, about 83% lie outside
}

TEST_CASE("the rollout records the policy's unclipped samples, not the clipped actions the env got",
          "[learners][normalization][actions]") {
  envs::env_batch batch(2, envs::space::box({1}, -1.0f, 1.0f), envs::space::box({2}, -1.0f, 1.0f));
  rollout_assembler assembler(batch, {actors::row_range{0, 2}}, nullptr, rollout_assembler::options{.horizon = 1});
  const std::vector<float> samples = {-3.0f, 0.5f, 2.0f, -0.25f};
  assembler.record_actions_from(samples);
  assembler.arrived(0, 0);
  for (std::uint32_t r = 0; r < 2; ++r) {
    for (std::size_t c = 0; c < 2; ++c) batch.continuous_actions().row(r)[c] = std::clamp(samples[r * 2 + c], -1.0f, 1.0f);
  }
  const actors::row_range all{0, 2};
  assembler.consume(actors::step_batch{batch, std::span(&all, 1)});
  assembler.arrived(0, 1);  // completes segment 0
  auto seg = assembler.segments().try_receive();
  REQUIRE(seg);
  CHECK((*seg)->continuous_actions == samples);
}

TEST_CASE("the policy and the learner normalise observations identically", "[learners][normalization]") {
  const auto spec = box_spec(true);
  ppo_config config;
  ppo_learner learner(spec, config, 7, 100'000);
  CHECK(learner.weights().size() == published_weight_count(spec));
  CHECK(published_weight_count(spec) == parameter_count(spec) + 6);
  constexpr std::size_t rows = 5;
  mlp_policy policy(spec, rows, 1);
  envs::env_batch batch(rows, envs::space::box({3}, -100.0f, 100.0f), envs::space::box({2}, -1.0f, 1.0f));
  const auto obs = random_rows(rows, 3, 99);
  for (std::size_t r = 0; r < rows; ++r) {
    std::copy_n(obs.begin() + static_cast<std::ptrdiff_t>(r * 3), 3, batch.observations().row(r).begin());
  }
  std::vector<float> log_probs(rows), values(rows);
  const actors::row_range all{0, rows};
  for (int update = 0; update < 3; ++update) {
    INFO("after update " << update);
    policy.load_weights(learner.weights());
    policy.act({batch, std::span(&all, 1), log_probs, values});
    const auto expected = learner.values(obs);
    for (std::size_t r = 0; r < rows; ++r) CHECK(values[r] == Approx(expected[r]).margin(1e-5));
    (void)learner.update(far_segment(4, 32, static_cast<std::uint64_t>(update)), static_cast<std::uint64_t>(update));
  }
  // The block published after the updates holds the moments of the observations trained on.
  const auto w = learner.weights();
  const float mean0 = w[parameter_count(spec)];
  CHECK(mean0 == Approx(-2.0).margin(0.1));  // element 0 is −2 + U(−1, 1)
  CHECK(learner.state().observation_moments[0] == 3.0 * 4 * 32);  // count: every step's observation, no bootstrap
}

TEST_CASE("the normaliser and the reward scaler survive a checkpoint round trip", "[learners][normalization][checkpoint]") {
  const auto spec = box_spec(true);
  ppo_config config;
  config.scale_rewards = true;
  ppo_learner learner(spec, config, 3, 100'000);
  (void)learner.update(far_segment(2, 16, 1), 0);
  checkpoint c;
  c.env = "test";
  c.network = network_signature(spec);
  c.learner = learner.state();
  REQUIRE(c.learner.observation_moments.size() == 7);
  REQUIRE(c.learner.reward_scaling.size() == 3 + 2);  // count, mean, variance, a return per row
  const auto dir = fs::temp_directory_path() / "coral-normalization-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto file = dir / "checkpoint.ckpt";
  write_checkpoint(file, c);
  const auto back = read_checkpoint(file);
  CHECK(back.learner.observation_moments == c.learner.observation_moments);
  CHECK(back.learner.reward_scaling == c.learner.reward_scaling);

  ppo_learner resumed(spec, config, 99, 100'000);
  resumed.restore(back.learner);
  CHECK(resumed.weights() == learner.weights());  // parameters and the published normaliser block
  CHECK(resumed.state().reward_scaling == learner.state().reward_scaling);

  // A state without them (a run without the flags, a format 1 or 2 file) is refused.
  auto without = back.learner;
  without.observation_moments.clear();
  CHECK_THROWS_MATCHES(
      resumed.restore(without), coral::usage_error,
      Catch::Message("ppo_learner: the checkpoint has no observation normaliser (it was written without --obs-norm)"));
  without = back.learner;
  without.reward_scaling.clear();
  CHECK_THROWS_MATCHES(
      resumed.restore(without), coral::usage_error,
      Catch::Message("ppo_learner: the checkpoint has no reward scaler (it was written without --reward-scale)"));
  fs::remove_all(dir);
}

TEST_CASE("a format 2 checkpoint is still read, without normaliser state", "[learners][normalization][checkpoint]") {
  checkpoint c;
  c.env = "cartpole";
  c.network = "mlp obs=4 frames=1 nvec=[2] box=0 hidden=[64,64] params=3";
  c.learner.parameters = {1.0f, 2.0f, 3.0f};
  c.learner.adam_m = c.learner.adam_v = {0.0f, 0.0f, 0.0f};
  const auto dir = fs::temp_directory_path() / "coral-normalization-v2-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto file = dir / "checkpoint.ckpt";
  write_checkpoint(file, c);
  // Rewrite it as format 2 wrote it: without the last two (empty) records.
  std::vector<char> bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  constexpr std::size_t header = 28;
  const std::size_t dropped = (4 + std::strlen("observation_moments") + 8) + (4 + std::strlen("reward_scaling") + 8);
  bytes.resize(bytes.size() - dropped);
  const std::uint32_t version = 2;
  const std::uint64_t size = bytes.size() - header;
  const std::uint64_t sum = fnv1a64(bytes.data() + header, size);
  std::memcpy(bytes.data() + 8, &version, 4);
  std::memcpy(bytes.data() + 12, &size, 8);
  std::memcpy(bytes.data() + 20, &sum, 8);
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const auto back = read_checkpoint(file);
  CHECK(back.learner.parameters == c.learner.parameters);
  CHECK(back.learner.observation_moments.empty());
  CHECK(back.learner.reward_scaling.empty());
  fs::remove_all(dir);
}
