#include "coral/envs/cartpole.hpp"

#include <cmath>

#include <catch2/catch.hpp>

#include "harness.hpp"

using namespace coral::envs;
using coral::envs::testing::harness;

namespace {

cartpole& pole(harness& h) { return dynamic_cast<cartpole&>(h.slice.at(0)); }

}  // namespace

TEST_CASE("cartpole's spaces are Gymnasium CartPole-v1's", "[envs][cartpole]") {
  auto e = registry::global().make("cartpole", {}, 0, 0);
  CHECK(e->action_space() == space::discrete(2));
  CHECK(e->observation_space().to_string() == "Box([-4.8, -inf, -0.41887903, -inf], [4.8, inf, 0.41887903, inf], (4,))");
}

TEST_CASE("cartpole's Euler steps from rest match the hand-computed values", "[envs][cartpole][dynamics]") {
  // From rest, push right (force +10 N): sin 0 = 0, cos 0 = 1, so
  //   temp      = 10 / 1.1                                   = 100/11
  //   theta_acc = (0 − 100/11) / (0.5 (4/3 − 0.1/1.1))       = −600/41
  //   x_acc     = 100/11 − 0.05 (−600/41) / 1.1              = 4400/451
  // and one Euler step of 0.02 s gives x = 0, x_dot = 88/451, θ = 0, θ_dot = −12/41.
  const auto s1 = cartpole::advance({}, 1);
  CHECK(s1.x == 0.0);
  CHECK(s1.x_dot == Approx(88.0 / 451.0).epsilon(1e-12));
  CHECK(s1.theta == 0.0);
  CHECK(s1.theta_dot == Approx(-12.0 / 41.0).epsilon(1e-12));
  // Then push left: θ is still 0, so the accelerations are the same with the sign flipped;
  // the velocities return to 0 and the positions advance by 0.02 × the old velocities.
  const auto s2 = cartpole::advance(s1, 0);
  CHECK(s2.x == Approx(0.02 * 88.0 / 451.0).epsilon(1e-12));
  CHECK(s2.x_dot == Approx(0.0).margin(1e-15));
  CHECK(s2.theta == Approx(0.02 * -12.0 / 41.0).epsilon(1e-12));
  CHECK(s2.theta_dot == Approx(0.0).margin(1e-15));
}

TEST_CASE("cartpole's steps from a tilted state match Gymnasium's formula", "[envs][cartpole][dynamics]") {
  // Values from Gymnasium's step() formula evaluated in Python (float64).
  const auto s1 = cartpole::advance({.x = 0.01, .x_dot = -0.02, .theta = 0.03, .theta_dot = 0.04}, 0);
  CHECK(s1.x == Approx(0.009600000000000001).epsilon(1e-12));
  CHECK(s1.x_dot == Approx(-0.21553901710278936).epsilon(1e-12));
  CHECK(s1.theta == Approx(0.030799999999999998).epsilon(1e-12));
  CHECK(s1.theta_dot == Approx(0.3419952237760392).epsilon(1e-12));
  const auto s2 = cartpole::advance(s1, 1);
  CHECK(s2.x == Approx(0.005289219657944213).epsilon(1e-12));
  CHECK(s2.x_dot == Approx(-0.020868498014729647).epsilon(1e-12));
  CHECK(s2.theta == Approx(0.037639904475520784).epsilon(1e-12));
  CHECK(s2.theta_dot == Approx(0.05918170675641765).epsilon(1e-12));
}

TEST_CASE("cartpole writes its state as the observation and pays 1 per step", "[envs][cartpole]") {
  harness h("cartpole", {}, 4);
  h.slice.reset_all();
  pole(h).set_state({.x = 0.01, .x_dot = -0.02, .theta = 0.03, .theta_dot = 0.04});
  h.act(0);
  h.slice.step_all();
  CHECK(h.obs() == std::vector<float>{0.009600000000000001F, -0.21553901710278936F, 0.030799999999999998F,
                                      0.3419952237760392F});
  CHECK(h.batch.rewards()[0] == 1.0F);
  CHECK(h.batch.terminated()[0] == 0);
  CHECK(h.batch.truncated()[0] == 0);
}

TEST_CASE("cartpole starts each episode uniformly in [-0.05, 0.05]^4", "[envs][cartpole]") {
  harness h("cartpole", {}, 8, 64);
  h.slice.reset_all();
  float lowest = 1, highest = -1;
  for (std::size_t r = 0; r < h.batch.rows(); ++r) {
    for (float x : h.batch.observations().row(r)) {
      CHECK(std::abs(x) <= 0.05F);
      lowest = std::min(lowest, x);
      highest = std::max(highest, x);
    }
  }
  CHECK(lowest < -0.04F);  // 256 draws cover the range
  CHECK(highest > 0.04F);
}

TEST_CASE("cartpole terminates past 12 degrees, with reward 1 on the terminating step", "[envs][cartpole]") {
  harness h("cartpole", {}, 4);
  h.slice.reset_all();
  pole(h).set_state({.theta = 0.2094, .theta_dot = 0.5});  // just under 12° (0.20944 rad), falling
  h.act(0);
  h.slice.step_all();
  CHECK(h.batch.terminated()[0] == 1);
  CHECK(h.batch.truncated()[0] == 0);
  CHECK(h.batch.rewards()[0] == 1.0F);
  CHECK(h.final_obs()[2] > 0.20944F);
  CHECK(h.batch.episode_lengths()[0] == 1);
  CHECK(std::abs(h.obs()[2]) <= 0.05F);  // auto-reset into a fresh episode
}

TEST_CASE("cartpole terminates when the cart leaves [-2.4, 2.4]", "[envs][cartpole]") {
  harness h("cartpole", {}, 4);
  h.slice.reset_all();
  pole(h).set_state({.x = -2.39, .x_dot = -1.0});
  h.act(0);
  h.slice.step_all();
  CHECK(h.batch.terminated()[0] == 1);
  CHECK(h.final_obs()[0] < -2.4F);
}

TEST_CASE("a balancing controller keeps cartpole up until it is truncated at 500 steps", "[envs][cartpole]") {
  harness h("cartpole", {}, 21);
  h.slice.reset_all();
  int steps = 0;
  while (!h.done()) {
    const auto o = h.obs();
    h.act(o[2] + 0.5F * o[3] + 0.01F * o[0] + 0.1F * o[1] > 0 ? 1 : 0);
    h.slice.step_all();
    ++steps;
    REQUIRE(steps <= 500);
  }
  CHECK(steps == 500);
  CHECK(h.batch.truncated()[0] == 1);
  CHECK(h.batch.terminated()[0] == 0);
  CHECK(h.batch.episode_returns()[0] == 500.0F);
  CHECK(h.batch.episode_lengths()[0] == 500);
}

TEST_CASE("cartpole's time limit is the max_steps key", "[envs][cartpole]") {
  harness h("cartpole", {{"max_steps", "3"}}, 4);
  h.slice.reset_all();
  h.act(1);
  h.slice.step_all();
  h.act(0);
  h.slice.step_all();
  h.act(1);
  h.slice.step_all();
  CHECK(h.batch.truncated()[0] == 1);
  CHECK(h.batch.episode_lengths()[0] == 3);
  CHECK(pole(h).optimal_return() == 3.0);
}
