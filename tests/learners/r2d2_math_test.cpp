#include "coral/learners/r2d2_math.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/errors.hpp"
#include "coral/replay/sequence.hpp"

using coral::learners::nstep_target_options;
using coral::learners::value_rescale;
using coral::learners::value_unrescale;
namespace replay = coral::replay;

namespace {

constexpr std::uint8_t V = replay::slot_valid;
constexpr std::uint8_t F = replay::slot_first;
constexpr std::uint8_t T = replay::slot_terminated;
constexpr std::uint8_t U = replay::slot_truncated;

/// The bootstrap row whose observation slot j holds h(v_j), so that the
/// targets below read h⁻¹(bootstrap[j]) = v_j: v_j = 10·(j + 1).
std::vector<float> bootstrap_of(std::size_t length) {
  std::vector<float> b(length + 1);
  for (std::size_t j = 0; j <= length; ++j) b[j] = static_cast<float>(value_rescale(10.0 * static_cast<double>(j + 1)));
  return b;
}

struct targets_out {
  std::vector<float> targets;
  std::vector<float> mask;
};

targets_out targets_of(const std::vector<float>& rewards, const std::vector<std::uint8_t>& flags,
                       const nstep_target_options& options) {
  targets_out out{std::vector<float>(rewards.size(), -1.0f), std::vector<float>(rewards.size(), -1.0f)};
  coral::learners::nstep_sequence_targets(rewards, flags, bootstrap_of(rewards.size()), options, out.targets, out.mask);
  return out;
}

/// h(x) as a float target, for comparing.
Approx h(double x) { return Approx(value_rescale(x)).epsilon(1e-5); }

}  // namespace

TEST_CASE("value rescaling matches its formula at hand-computed points", "[replay][r2d2_math]") {
  // With ε = 0, h(x) = sqrt(x + 1) − 1 on x ≥ 0: h(3) = 1, h(8) = 2, h(24) = 4.
  CHECK(value_rescale(3.0, 0.0) == 1.0);
  CHECK(value_rescale(8.0, 0.0) == 2.0);
  CHECK(value_rescale(-24.0, 0.0) == -4.0);
  CHECK(value_unrescale(2.0, 0.0) == 8.0);
  CHECK(value_unrescale(-4.0, 0.0) == -24.0);
  // ε = 1e-3 adds εx: h(3) = 1.003, h(−8) = −2.008.
  CHECK(value_rescale(3.0) == Approx(1.003).epsilon(1e-12));
  CHECK(value_rescale(-8.0) == Approx(-2.008).epsilon(1e-12));
  CHECK(value_rescale(0.0) == 0.0);
  CHECK(value_unrescale(0.0) == 0.0);
  CHECK(value_unrescale(1.003) == Approx(3.0).epsilon(1e-12));
}

TEST_CASE("value unrescaling inverts value rescaling to 1e-6 from tiny to large values", "[replay][r2d2_math]") {
  std::vector<double> xs{0.0};
  for (double m = 1e-12; m <= 1e4; m *= 1.37) {
    xs.push_back(m);
    xs.push_back(-m);
  }
  xs.push_back(1e4);
  xs.push_back(-1e4);
  for (const double eps : {1e-3, 1e-2, 0.0}) {
    for (const double x : xs) {
      INFO("x = " << x << ", eps = " << eps);
      const double y = value_rescale(x, eps);
      CHECK(std::abs(value_unrescale(y, eps) - x) <= 1e-6 * std::abs(x));
      CHECK(std::abs(value_rescale(value_unrescale(x, eps), eps) - x) <= 1e-6 * std::abs(x));
    }
  }
}

TEST_CASE("value rescaling and its inverse are strictly increasing", "[replay][r2d2_math]") {
  double previous_h = value_rescale(-1e4);
  double previous_inverse = value_unrescale(-1e4);
  for (double x = -1e4 + 0.5; x <= 1e4; x += 0.5 + std::abs(x) * 0.01) {
    const double hx = value_rescale(x);
    const double inverse = value_unrescale(x);
    CHECK(hx > previous_h);
    CHECK(inverse > previous_inverse);
    previous_h = hx;
    previous_inverse = inverse;
  }
}

TEST_CASE("n-step targets stop at a terminated end with no bootstrap and mask burn-in and padding",
          "[replay][r2d2_math]") {
  const auto out = targets_of({1, 2, 4, 8, 0, 0}, {V | F, V, V, V | T, 0, 0}, {.gamma = 0.5, .n = 3, .burn_in = 1});
  CHECK(out.mask == std::vector<float>{0, 1, 1, 1, 0, 0});
  CHECK(out.targets[0] == 0.0f);  // burn-in: no target
  CHECK(out.targets[1] == h(2 + 0.5 * 4 + 0.25 * 8));
  CHECK(out.targets[2] == h(4 + 0.5 * 8));
  CHECK(out.targets[3] == h(8));
  CHECK(out.targets[4] == 0.0f);  // padding after the end
  CHECK(out.targets[5] == 0.0f);
}

TEST_CASE("n-step targets at a truncated end bootstrap from the observation after it", "[replay][r2d2_math]") {
  // Slot 3 is truncated: its final observation is slot 4, v_4 = 50.
  const auto out = targets_of({1, 2, 4, 8, 0, 0}, {V | F, V, V, V | U, 0, 0}, {.gamma = 0.5, .n = 3, .burn_in = 1});
  CHECK(out.mask == std::vector<float>{0, 1, 1, 1, 0, 0});
  CHECK(out.targets[1] == h(2 + 0.5 * 4 + 0.25 * 8 + 0.125 * 50));
  CHECK(out.targets[2] == h(4 + 0.5 * 8 + 0.25 * 50));
  CHECK(out.targets[3] == h(8 + 0.5 * 50));
  SECTION("a step both terminated and truncated counts as terminated") {
    const auto both =
        targets_of({1, 2, 4, 8, 0, 0}, {V | F, V, V, V | T | U, 0, 0}, {.gamma = 0.5, .n = 3, .burn_in = 1});
    CHECK(both.targets[3] == h(8));
  }
}

TEST_CASE("n-step targets of a sequence cut mid-episode bootstrap at slot t + n, then at slot L",
          "[replay][r2d2_math]") {
  const std::vector<float> rewards{1, 2, 4, 8, 16, 32};
  const std::vector<std::uint8_t> flags{V | F, V, V, V, V, V};
  const auto out = targets_of(rewards, flags, {.gamma = 0.5, .n = 3, .burn_in = 2});
  CHECK(out.mask == std::vector<float>{0, 0, 1, 1, 1, 1});
  CHECK(out.targets[2] == h(4 + 0.5 * 8 + 0.25 * 16 + 0.125 * 60));   // slot 5
  CHECK(out.targets[3] == h(8 + 0.5 * 16 + 0.25 * 32 + 0.125 * 70));  // slot 6 = L
  CHECK(out.targets[4] == h(16 + 0.5 * 32 + 0.25 * 70));              // 2 steps left: γ² at slot L
  CHECK(out.targets[5] == h(32 + 0.5 * 70));
  SECTION("n larger than the steps left sums what is left") {
    const auto longer = targets_of(rewards, flags, {.gamma = 0.5, .n = 10, .burn_in = 2});
    CHECK(longer.targets[2] == h(4 + 0.5 * 8 + 0.25 * 16 + 0.125 * 32 + 0.0625 * 70));
    const auto ended = targets_of({1, 2, 4, 8, 0, 0}, {V | F, V, V, V | T, 0, 0}, {.gamma = 0.5, .n = 10});
    CHECK(ended.targets[0] == h(1 + 0.5 * 2 + 0.25 * 4 + 0.125 * 8));
  }
  SECTION("gamma 1 sums undiscounted") {
    const auto flat = targets_of(rewards, flags, {.gamma = 1.0, .n = 3, .burn_in = 2});
    CHECK(flat.targets[2] == h(4 + 8 + 16 + 60));
    CHECK(flat.targets[5] == h(32 + 70));
  }
  SECTION("n = 1 is the one-step target") {
    const auto one = targets_of(rewards, flags, {.gamma = 0.5, .n = 1, .burn_in = 0});
    CHECK(one.targets[0] == h(1 + 0.5 * 20));
    CHECK(one.targets[5] == h(32 + 0.5 * 70));
  }
}

TEST_CASE("n-step targets skip the padding before an episode's first step", "[replay][r2d2_math]") {
  // The first sequence of an episode: two padding slots, then steps 0..3.
  const auto out = targets_of({0, 0, 1, 2, 4, 8}, {0, 0, V | F, V, V, V}, {.gamma = 0.5, .n = 3, .burn_in = 1});
  CHECK(out.mask == std::vector<float>{0, 0, 1, 1, 1, 1});  // slot 1 is past burn-in but padding
  CHECK(out.targets[1] == 0.0f);
  CHECK(out.targets[2] == h(1 + 0.5 * 2 + 0.25 * 4 + 0.125 * 60));
  CHECK(out.targets[3] == h(2 + 0.5 * 4 + 0.25 * 8 + 0.125 * 70));
  CHECK(out.targets[4] == h(4 + 0.5 * 8 + 0.25 * 70));
  CHECK(out.targets[5] == h(8 + 0.5 * 70));
  SECTION("an episode that starts and ends inside the sequence") {
    const auto short_one =
        targets_of({0, 0, 1, 2, 0, 0}, {0, 0, V | F, V | U, 0, 0}, {.gamma = 0.5, .n = 3, .burn_in = 2});
    CHECK(short_one.mask == std::vector<float>{0, 0, 1, 1, 0, 0});
    CHECK(short_one.targets[2] == h(1 + 0.5 * 2 + 0.25 * 50));
    CHECK(short_one.targets[3] == h(2 + 0.5 * 50));
  }
}

TEST_CASE("n-step targets of a batch are those of its sequences", "[replay][r2d2_math]") {
  const nstep_target_options options{.gamma = 0.9, .n = 2, .burn_in = 1};
  const std::vector<float> rewards{1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<std::uint8_t> flags{V | F, V, V | T, 0, 0, V | F, V, V};
  std::vector<float> bootstrap = bootstrap_of(4);
  const std::vector<float> second = bootstrap_of(4);
  bootstrap.insert(bootstrap.end(), second.begin(), second.end());
  std::vector<float> targets(8);
  std::vector<float> mask(8);
  coral::learners::nstep_batch_targets(2, 4, rewards, flags, bootstrap, options, targets, mask);
  for (std::size_t s = 0; s < 2; ++s) {
    const auto one = targets_of({rewards.begin() + 4 * s, rewards.begin() + 4 * s + 4},
                                {flags.begin() + 4 * s, flags.begin() + 4 * s + 4}, options);
    CHECK(std::vector<float>(targets.begin() + 4 * s, targets.begin() + 4 * s + 4) == one.targets);
    CHECK(std::vector<float>(mask.begin() + 4 * s, mask.begin() + 4 * s + 4) == one.mask);
  }
  CHECK(mask == std::vector<float>{0, 1, 1, 0, 0, 1, 1, 1});
}

TEST_CASE("n-step targets refuse arrays of the wrong size, n = 0 and gamma outside [0, 1]",
          "[replay][r2d2_math][errors]") {
  std::vector<float> rewards(4);
  std::vector<std::uint8_t> flags(4);
  std::vector<float> bootstrap(5);
  std::vector<float> targets(4);
  std::vector<float> mask(4);
  const auto size = [](const char* what, std::size_t got, std::size_t want) {
    return Catch::Message(fmt::format(fmt::runtime(replay::errors::r2d2_size_mismatch), what, got, want));
  };
  CHECK_THROWS_MATCHES(coral::learners::nstep_sequence_targets(rewards, flags, std::span(bootstrap).first(4), {}, targets, mask),
                       coral::config_error, size("bootstrap", 4, 5));
  CHECK_THROWS_MATCHES(coral::learners::nstep_sequence_targets(rewards, std::span(flags).first(3), bootstrap, {}, targets, mask),
                       coral::config_error, size("flags", 3, 4));
  CHECK_THROWS_MATCHES(coral::learners::nstep_sequence_targets(rewards, flags, bootstrap, {.n = 0}, targets, mask),
                       coral::config_error, Catch::Message(std::string(replay::errors::zero_n_step)));
  CHECK_THROWS_MATCHES(coral::learners::nstep_sequence_targets(rewards, flags, bootstrap, {.gamma = 1.5}, targets, mask),
                       coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(replay::errors::bad_gamma), 1.5)));
  CHECK_THROWS_MATCHES(coral::learners::nstep_batch_targets(2, 2, rewards, flags, bootstrap, {}, targets, mask),
                       coral::config_error, size("bootstrap", 5, 6));
}

TEST_CASE("a sequence's priority mixes the max and the mean of its masked TD errors", "[replay][r2d2_math]") {
  const std::vector<float> td{1, -3, 2, 10};
  const std::vector<float> mask{1, 1, 1, 0};  // the 10 is masked out
  // max |δ| = 3, mean |δ| = 2.
  CHECK(coral::learners::sequence_priority(td, mask) == Approx(0.9 * 3 + 0.1 * 2));
  CHECK(coral::learners::sequence_priority(td, mask, 1.0) == Approx(3));
  CHECK(coral::learners::sequence_priority(td, mask, 0.0) == Approx(2));
  CHECK(coral::learners::sequence_priority(td, std::vector<float>(4, 1.0f), 0.5) == Approx(0.5 * 10 + 0.5 * 4));
  // No slot trained: priority 0.
  CHECK(coral::learners::sequence_priority(td, std::vector<float>(4, 0.0f)) == 0.0f);
  CHECK(coral::learners::sequence_priority({}, {}) == 0.0f);
  CHECK_THROWS_MATCHES(coral::learners::sequence_priority(td, std::vector<float>(3, 1.0f)), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(replay::errors::r2d2_size_mismatch), "mask", 3, 4)));
  CHECK_THROWS_MATCHES(coral::learners::sequence_priority(td, mask, 1.5), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(replay::errors::bad_priority_eta), 1.5)));
}
