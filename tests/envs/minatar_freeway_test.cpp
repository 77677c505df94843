#include "coral/envs/minatar_freeway.hpp"

#include <cstdlib>

#include <catch2/catch.hpp>

#include "minatar_fixture.hpp"

using namespace coral::envs;
using minatar::action;
using minatar::freeway;
using coral::envs::testing::harness;
using freeway_game = coral::envs::testing::minatar_fixture<minatar_freeway>;

namespace {

// Every car parked far from the chicken's column, moving slowly.
freeway::state quiet_road() {
  freeway::state s;
  for (auto& c : s.cars) c = freeway::car{.x = 8, .countdown = 5, .velocity = 5};
  return s;
}

}  // namespace

TEST_CASE("freeway starts with the chicken at the bottom and every car in column 0", "[envs][minatar][freeway]") {
  freeway_game g;
  CHECK(g.now().chicken_y == 9);
  CHECK(g.now().move_countdown == 3);
  CHECK(g.now().time_left == 2500);
  for (const auto& c : g.now().cars) {
    CHECK(c.x == 0);
    CHECK(std::abs(c.velocity) >= 1);
    CHECK(std::abs(c.velocity) <= 5);
    CHECK(c.countdown == std::abs(c.velocity));
  }
}

TEST_CASE("a car that moves onto the chicken sends it back to the bottom", "[envs][minatar][freeway]") {
  freeway_game g;
  auto s = quiet_road();
  s.chicken_y = 5;
  s.cars[4] = freeway::car{.x = 3, .countdown = 0, .velocity = 2};  // row 5, about to move right
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.now().cars[4].x == 4);
  CHECK(g.now().cars[4].countdown == 2);
  CHECK(g.now().chicken_y == 9);
  CHECK(g.reward() == 0.0F);
  CHECK_FALSE(g.h.done());
}

TEST_CASE("a chicken that walks into a car goes back to the bottom", "[envs][minatar][freeway]") {
  freeway_game g;
  auto s = quiet_road();
  s.chicken_y = 6;
  s.move_countdown = 0;
  s.cars[4] = freeway::car{.x = 4, .countdown = 3, .velocity = -4};  // row 5, standing in column 4
  g.rules().set_state(s);
  g.step(action::up);
  CHECK(g.now().chicken_y == 9);
}

TEST_CASE("cars wrap around the edges", "[envs][minatar][freeway]") {
  freeway_game g;
  auto s = quiet_road();
  s.cars[0] = freeway::car{.x = 9, .countdown = 0, .velocity = 1};
  s.cars[1] = freeway::car{.x = 0, .countdown = 0, .velocity = -3};
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.now().cars[0].x == 0);
  CHECK(g.now().cars[1].x == 9);
}

TEST_CASE("the chicken moves at most once every 3 steps", "[envs][minatar][freeway]") {
  freeway_game g;
  auto s = quiet_road();
  s.move_countdown = 0;
  g.rules().set_state(s);
  std::vector<int> rows;
  for (int t = 0; t < 7; ++t) {
    g.step(action::up);
    rows.push_back(g.now().chicken_y);
  }
  CHECK(rows == std::vector<int>{8, 8, 8, 7, 7, 7, 6});
}

TEST_CASE("reaching the top scores 1 and puts the chicken back at the bottom", "[envs][minatar][freeway]") {
  freeway_game g;
  auto s = quiet_road();
  s.chicken_y = 1;
  s.move_countdown = 0;
  g.rules().set_state(s);
  g.step(action::up);
  CHECK(g.reward() == 1.0F);
  CHECK(g.now().chicken_y == 9);
  // Every car got a new speed; the positions are kept.
  for (const auto& c : g.now().cars) CHECK(c.x == 8);
}

TEST_CASE("freeway's time limit truncates the episode on the step after the countdown passes 0",
          "[envs][minatar][freeway][time_limit]") {
  freeway_game g(config_args{{"time_limit", "3"}});
  for (int t = 1; t <= 3; ++t) {
    g.step(action::noop);
    CHECK_FALSE(g.h.done());
  }
  g.step(action::noop);
  CHECK(g.h.batch.truncated()[0] == 1);
  CHECK(g.h.batch.terminated()[0] == 0);
  CHECK(g.h.batch.episode_lengths()[0] == 4);
  // The slice started the next episode with a full countdown.
  CHECK(g.now().time_left == 3);
}

TEST_CASE("freeway's default time limit ends every episode after 2,501 steps", "[envs][minatar][freeway][time_limit]") {
  harness h("minatar/freeway", {}, 7);
  h.slice.reset_all();
  coral::rng actions(coral::env_seed{7, 7});
  int steps = 0;
  do {
    h.act(static_cast<std::int32_t>(actions.below(6)));
    h.slice.step_all();
    ++steps;
  } while (!h.done());
  CHECK(steps == 2501);
  CHECK(h.batch.truncated()[0] == 1);
  CHECK(h.batch.terminated()[0] == 0);
}
