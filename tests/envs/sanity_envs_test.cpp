#include "coral/envs/bandit.hpp"

#include <cstdlib>

#include <catch2/catch.hpp>

#include "coral/envs/memory.hpp"
#include "coral/envs/password.hpp"
#include "coral/envs/squared.hpp"
#include "coral/envs/stochastic.hpp"
#include "harness.hpp"

using namespace coral::envs;
using coral::envs::testing::harness;

TEST_CASE("bandit pays 1 for its solution arm only, in one-step episodes", "[envs][bandit]") {
  harness h("bandit", {{"arms", "5"}}, 1);
  const auto best = dynamic_cast<bandit&>(h.slice.at(0)).solution_arm();
  CHECK(best >= 0);
  CHECK(best < 5);
  h.slice.reset_all();
  for (std::int32_t arm = 0; arm < 5; ++arm) {
    h.act(arm);
    h.slice.step_all();
    CHECK(h.batch.rewards()[0] == (arm == best ? 1.0F : 0.0F));
    CHECK(h.batch.terminated()[0] == 1);
    CHECK(h.batch.episode_lengths()[0] == 1);
  }
  harness other_seed("bandit", {{"arms", "5"}}, 999);
  CHECK(dynamic_cast<bandit&>(other_seed.slice.at(0)).solution_arm() == best);  // fixed by solution_seed only
}

TEST_CASE("memory pays 1 for reciting its bits after the delay and 0.5 for guessing one bit right",
          "[envs][memory]") {
  harness h("memory", {{"length", "3"}, {"delay", "2"}}, 5);
  auto& m = dynamic_cast<memory&>(h.slice.at(0));
  h.slice.reset_all();
  std::vector<int> shown;
  for (int t = 0; t < 3; ++t) {  // showing phase
    const auto o = h.obs();
    CHECK(o[1] == 0.0F);
    shown.push_back(o[0] > 0 ? 1 : 0);
    CHECK(shown.back() == m.bit(static_cast<std::size_t>(t)));
    h.act(0);
    h.slice.step_all();
    CHECK(h.batch.rewards()[0] == 0.0F);
  }
  for (int t = 0; t < 2; ++t) {  // delay
    CHECK(h.obs() == std::vector<float>{0.0F, 0.0F});
    h.act(1);
    h.slice.step_all();
    CHECK(h.batch.rewards()[0] == 0.0F);
  }
  for (int j = 0; j < 3; ++j) {  // recite
    CHECK(h.obs() == std::vector<float>{0.0F, 1.0F});
    h.act(shown[static_cast<std::size_t>(j)]);
    h.slice.step_all();
    CHECK(h.batch.rewards()[0] == Approx(1.0 / 3.0));
    CHECK(h.batch.terminated()[0] == (j == 2 ? 1 : 0));
  }
  CHECK(h.batch.episode_returns()[0] == Approx(1.0));
  CHECK(h.batch.episode_lengths()[0] == 2 * 3 + 2);
}

TEST_CASE("stochastic pays 1 - (q - p)^2 / m^2 in expectation and its deterministic values exactly",
          "[envs][stochastic]") {
  // Always action 0 with p = 0.75, H = 20: every deviation is 0.25, S = 5, Q = 1.25,
  // (S^2 - Q) / (H (H - 1)) = 0.0625 and R = 1 - 0.0625 / 0.5625 = 8/9.
  harness h("stochastic", {}, 1);
  h.slice.reset_all();
  h.act(0);
  for (int t = 0; t < 20; ++t) {
    h.slice.step_all();
    CHECK(h.batch.terminated()[0] == (t == 19 ? 1 : 0));
  }
  CHECK(h.batch.episode_returns()[0] == Approx(8.0 / 9.0));
  // Always action 1: deviations −0.75, S = −15, Q = 11.25, R = 1 − 0.5625 / 0.5625 = 0.
  h.act(1);
  for (int t = 0; t < 20; ++t) h.slice.step_all();
  CHECK(h.batch.episode_returns()[0] == Approx(0.0).margin(1e-6));

  // The optimal mixed policy, q = p, earns 1 on average.
  rng policy(env_seed{77, 0});
  double total = 0;
  constexpr int episodes = 4000;
  for (int e = 0; e < episodes; ++e) {
    for (int t = 0; t < 20; ++t) {
      h.act(policy.bernoulli(0.75) ? 0 : 1);
      h.slice.step_all();
    }
    total += h.batch.episode_returns()[0];
  }
  CHECK(total / episodes == Approx(1.0).margin(0.02));
}

TEST_CASE("password pays 1 only when every bit is right, at the end of the episode", "[envs][password]") {
  harness h("password", {{"length", "4"}}, 3);
  auto& p = dynamic_cast<password&>(h.slice.at(0));
  h.slice.reset_all();
  CHECK(h.obs() == std::vector<float>{0, 0, 0, 0});
  for (std::size_t i = 0; i < 4; ++i) {
    h.act(p.bit(i));
    h.slice.step_all();
    if (i < 3) {
      CHECK(h.obs()[i] == (p.bit(i) != 0 ? 1.0F : -1.0F));
      CHECK(h.batch.rewards()[0] == 0.0F);
    }
  }
  CHECK(h.batch.terminated()[0] == 1);
  CHECK(h.batch.rewards()[0] == 1.0F);
  for (std::size_t i = 0; i < 4; ++i) {
    h.act(i == 2 ? 1 - p.bit(i) : p.bit(i));  // one wrong bit
    h.slice.step_all();
  }
  CHECK(h.batch.terminated()[0] == 1);
  CHECK(h.batch.episode_returns()[0] == 0.0F);
}

TEST_CASE("squared pays 1/targets for the first hit of each target and ends when all are hit", "[envs][squared]") {
  harness h("squared", {{"size", "5"}, {"targets", "2"}, {"max_steps", "100"}}, 6);
  auto& sq = dynamic_cast<squared&>(h.slice.at(0));
  h.slice.reset_all();
  CHECK(sq.agent() == squared::cell{2, 2});
  for (const auto& t : sq.targets()) CHECK((t.x == 0 || t.y == 0 || t.x == 4 || t.y == 4));
  const auto targets = sq.targets();
  float total = 0;
  int steps = 0;
  auto walk_to = [&](squared::cell goal) {
    // Stops on the step that reaches the goal (after an auto-reset the agent is back in the centre).
    for (bool arrived = false; !arrived;) {
      const auto a = sq.agent();
      arrived = std::abs(goal.x - a.x) + std::abs(goal.y - a.y) == 1;
      h.act(goal.x > a.x ? 4 : goal.x < a.x ? 3 : goal.y > a.y ? 1 : 2);
      h.slice.step_all();
      ++steps;
      total += h.batch.rewards()[0];
    }
  };
  walk_to(targets[0]);
  CHECK(total == 0.5F);
  CHECK(h.batch.rewards()[0] == 0.5F);
  h.act(0);  // stay on the target: no second reward
  h.slice.step_all();
  ++steps;
  CHECK(h.batch.rewards()[0] == 0.0F);
  walk_to(targets[1]);
  CHECK(total == 1.0F);
  CHECK(h.batch.terminated()[0] == 1);
  CHECK(h.batch.episode_returns()[0] == 1.0F);
  CHECK(h.batch.episode_lengths()[0] == steps);
  CHECK(h.final_obs()[0] == 2.0F * static_cast<float>(targets[1].x) / 4.0F - 1.0F);
}

TEST_CASE("squared truncates after max_steps", "[envs][squared]") {
  harness h("squared", {{"max_steps", "3"}}, 6);
  h.slice.reset_all();
  h.act(0);
  h.slice.step_all();
  h.slice.step_all();
  CHECK(h.batch.truncated()[0] == 0);
  h.slice.step_all();
  CHECK(h.batch.truncated()[0] == 1);
  CHECK(h.batch.terminated()[0] == 0);
}
