#include "coral/envs/minatar_breakout.hpp"

#include <catch2/catch.hpp>

#include "minatar_fixture.hpp"

using namespace coral::envs;
using minatar::action;
using minatar::breakout;
using coral::envs::testing::harness;
using breakout_game = coral::envs::testing::minatar_fixture<minatar_breakout>;

namespace {

breakout::state full_wall() {
  breakout::state s;
  breakout::fill_bricks(s);
  return s;
}

// The ball at (row 8, column 3) heading down-right, about to reach the bottom row.
breakout::state ball_landing(int paddle, bool bricks) {
  breakout::state s;
  if (bricks) breakout::fill_bricks(s);
  s.ball_x = 3;
  s.ball_y = 8;
  s.ball_dx = 1;
  s.ball_dy = 1;
  s.paddle = paddle;
  return s;
}

}  // namespace

TEST_CASE("breakout starts with three rows of bricks and the ball heading down from a side",
          "[envs][minatar][breakout]") {
  breakout_game g;
  const auto& s = g.now();
  CHECK(s.bricks[0] == 0);
  CHECK(s.bricks[1] == 0x3FF);
  CHECK(s.bricks[3] == 0x3FF);
  CHECK(s.bricks[4] == 0);
  CHECK(s.paddle == 4);
  CHECK(s.ball_y == 3);
  CHECK(((s.ball_x == 0 && s.ball_dx == 1) || (s.ball_x == 9 && s.ball_dx == -1)));
  CHECK(s.ball_dy == 1);
}

TEST_CASE("a ball that hits a brick breaks it and bounces, then bounces off the wall", "[envs][minatar][breakout]") {
  breakout_game g;
  auto s = full_wall();
  s.ball_x = 1;
  s.ball_y = 4;
  s.ball_dx = -1;
  s.ball_dy = -1;
  g.rules().set_state(s);
  // Up-left into the brick at (row 3, column 0): it breaks (+1), the ball stays in row 4, now heading down.
  g.step(action::noop);
  CHECK(g.reward() == 1.0F);
  CHECK(g.now().bricks[3] == 0x3FE);
  CHECK(g.now().ball_x == 0);
  CHECK(g.now().ball_y == 4);
  CHECK(g.now().ball_dx == -1);
  CHECK(g.now().ball_dy == 1);
  CHECK(g.cell(4, 0, 1) == 1.0F);  // ball
  CHECK(g.cell(4, 1, 2) == 1.0F);  // trail: where it was
  CHECK(g.cell(3, 0, 3) == 0.0F);  // the brick is gone
  // Down-left into the left wall: it stays in column 0, now heading right, and goes down a row.
  g.step(action::noop);
  CHECK(g.reward() == 0.0F);
  CHECK(g.now().ball_x == 0);
  CHECK(g.now().ball_y == 5);
  CHECK(g.now().ball_dx == 1);
  CHECK(g.now().ball_dy == 1);
  g.step(action::noop);
  CHECK(g.now().ball_x == 1);
  CHECK(g.now().ball_y == 6);
}

TEST_CASE("a ball at the top wall bounces back down", "[envs][minatar][breakout]") {
  breakout_game g;
  breakout::state s;  // no bricks
  s.ball_x = 5;
  s.ball_y = 0;
  s.ball_dx = 1;
  s.ball_dy = -1;
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.now().ball_x == 6);
  CHECK(g.now().ball_y == 0);
  CHECK(g.now().ball_dy == 1);
}

TEST_CASE("a ball that broke a brick on the step before passes through the next one", "[envs][minatar][breakout]") {
  breakout_game g;
  auto s = full_wall();
  s.ball_x = 5;
  s.ball_y = 4;
  s.ball_dx = 1;
  s.ball_dy = -1;
  s.struck = true;
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.reward() == 0.0F);
  CHECK(g.now().bricks[3] == 0x3FF);  // still there
  CHECK(g.now().ball_x == 6);
  CHECK(g.now().ball_y == 3);  // inside the wall
  CHECK(g.now().ball_dy == -1);
  CHECK(g.now().struck);
}

TEST_CASE("the paddle sends the ball back up: straight back from above, reversed from the side",
          "[envs][minatar][breakout]") {
  breakout_game g;
  auto s = ball_landing(3, true);  // the paddle under the ball
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK_FALSE(g.h.done());
  CHECK(g.now().ball_x == 4);
  CHECK(g.now().ball_y == 8);
  CHECK(g.now().ball_dx == 1);
  CHECK(g.now().ball_dy == -1);

  s.paddle = 4;  // where the ball lands
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK_FALSE(g.h.done());
  CHECK(g.now().ball_x == 4);
  CHECK(g.now().ball_y == 8);
  CHECK(g.now().ball_dx == -1);
  CHECK(g.now().ball_dy == -1);
}

TEST_CASE("a ball that misses the paddle ends the game", "[envs][minatar][breakout]") {
  breakout_game g;
  const auto s = ball_landing(0, true);
  g.rules().set_state(s);
  g.step(action::right);  // to column 1: still too far
  CHECK(g.h.batch.terminated()[0] == 1);
  CHECK(g.h.batch.truncated()[0] == 0);
}

TEST_CASE("when every brick is gone, three rows come back as the ball reaches the bottom",
          "[envs][minatar][breakout]") {
  breakout_game g;
  const auto s = ball_landing(3, false);  // no bricks
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.now().bricks[1] == 0x3FF);
  CHECK(g.now().bricks[2] == 0x3FF);
  CHECK(g.now().bricks[3] == 0x3FF);
}
