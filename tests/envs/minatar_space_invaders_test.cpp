#include "coral/envs/minatar_space_invaders.hpp"

#include <catch2/catch.hpp>

#include "minatar_fixture.hpp"

using namespace coral::envs;
using minatar::action;
using minatar::space_invaders;
using coral::envs::testing::harness;
using space_invaders_game = coral::envs::testing::minatar_fixture<minatar_space_invaders>;

namespace {

// Columns as a row's bits, left to right.
constexpr std::uint16_t cols(int first, int last) {
  std::uint16_t bits = 0;
  for (int x = first; x <= last; ++x) bits = static_cast<std::uint16_t>(bits | (1U << x));
  return bits;
}

}  // namespace

TEST_CASE("space invaders starts with a 4 by 6 block of aliens heading left", "[envs][minatar][space_invaders]") {
  space_invaders_game g;
  for (int y = 0; y < 4; ++y) CHECK(g.now().aliens[y] == cols(2, 7));
  CHECK(g.now().aliens[4] == 0);
  CHECK(g.now().alien_heading == -1);
  CHECK(g.cell(0, 2, 1) == 1.0F);
  CHECK(g.cell(0, 2, 2) == 1.0F);  // heading left
  CHECK(g.cell(0, 2, 3) == 0.0F);
  CHECK(g.cell(9, 5, 0) == 1.0F);  // the cannon
}

TEST_CASE("the alien block moves one column toward its heading when its countdown is at 0",
          "[envs][minatar][space_invaders]") {
  space_invaders_game g;
  auto s = g.now();
  s.alien_move_countdown = 0;
  g.rules().set_state(s);
  g.step(action::noop);
  for (int y = 0; y < 4; ++y) CHECK(g.now().aliens[y] == cols(1, 6));
  CHECK(g.now().alien_move_countdown == 11);  // restarted at min(24 aliens, 12), then one step passed
}

TEST_CASE("an alien wave at the edge descends a row and turns around", "[envs][minatar][space_invaders]") {
  space_invaders_game g;
  space_invaders::state s;
  for (int y = 0; y < 4; ++y) s.aliens[y] = cols(0, 5);
  s.alien_move_countdown = 0;
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.now().aliens[0] == 0);
  for (int y = 1; y < 5; ++y) CHECK(g.now().aliens[y] == cols(0, 5));
  CHECK(g.now().alien_heading == 1);
  CHECK(g.cell(1, 0, 3) == 1.0F);  // now heading right
  CHECK(g.cell(1, 0, 2) == 0.0F);
  // Next move: one column right.
  s = g.now();
  s.alien_move_countdown = 0;
  g.rules().set_state(s);
  g.step(action::noop);
  for (int y = 1; y < 5; ++y) CHECK(g.now().aliens[y] == cols(1, 6));
}

TEST_CASE("an alien reaching the cannon's row ends the game", "[envs][minatar][space_invaders]") {
  space_invaders_game g;
  space_invaders::state s;
  s.aliens[8] = cols(7, 9);
  s.alien_heading = 1;
  s.alien_move_countdown = 0;
  g.rules().set_state(s);
  g.step(action::noop);  // at the right edge: down a row, onto row 9; the cannon is at column 5
  CHECK_FALSE(g.h.done());
  s = g.now();
  s.alien_move_countdown = 0;
  s.cannon = 6;
  g.rules().set_state(s);
  g.step(action::noop);  // one column left, onto the cannon at (9, 6)
  CHECK(g.h.batch.terminated()[0] == 1);
}

TEST_CASE("a bullet that reaches an alien removes both for a point", "[envs][minatar][space_invaders]") {
  space_invaders_game g;
  space_invaders::state s;
  s.aliens = space_invaders::new_wave();
  s.bullets[5] = cols(4, 4);
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.now().bullets[4] == cols(4, 4));  // one row up, still below the block
  g.step(action::noop);
  CHECK(g.reward() == 1.0F);
  CHECK(g.now().aliens[3] == static_cast<std::uint16_t>(cols(2, 7) & ~cols(4, 4)));
  CHECK(g.now().bullets[3] == 0);
}

TEST_CASE("the cannon fires at most every 5 steps", "[envs][minatar][space_invaders]") {
  space_invaders_game g;
  int fired = 0;
  for (int t = 0; t < 10; ++t) {
    g.step(action::fire);
    if (g.now().bullets[8] != 0) ++fired;
  }
  CHECK(fired == 2);
}

TEST_CASE("the lowest alien of the column nearest the cannon fires, the left one on a tie",
          "[envs][minatar][space_invaders]") {
  space_invaders_game g;
  space_invaders::state s;
  s.aliens[0] = cols(2, 2) | cols(8, 8);
  s.aliens[3] = cols(2, 2);
  s.cannon = 5;
  s.alien_shot_countdown = 0;
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.now().alien_bullets[3] == cols(2, 2));  // columns 2 and 8 are both 3 away
  CHECK(g.now().alien_shot_countdown == 9);
}

TEST_CASE("an alien bullet on the cannon ends the game", "[envs][minatar][space_invaders]") {
  space_invaders_game g;
  space_invaders::state s;
  s.aliens = space_invaders::new_wave();
  s.alien_bullets[8] = cols(5, 5);
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.h.batch.terminated()[0] == 1);
}

TEST_CASE("a cleared wave is replaced by a faster one", "[envs][minatar][space_invaders][ramp]") {
  space_invaders_game g;
  space_invaders::state s;
  s.aliens[2] = cols(6, 6);
  s.bullets[3] = cols(6, 6);
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.reward() == 1.0F);
  CHECK(g.now().aliens == space_invaders::new_wave());
  CHECK(g.now().alien_move_interval == 11);
  CHECK(g.now().ramps == 1);
  s = g.now();
  s.alien_move_interval = 6;
  s.aliens = {};
  s.aliens[2] = cols(6, 6);
  s.bullets[3] = cols(6, 6);
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.now().alien_move_interval == 6);  // no faster than 6
}

TEST_CASE("without ramping every wave moves at the first one's speed", "[envs][minatar][space_invaders][ramp]") {
  space_invaders_game g(config_args{{"ramping", "false"}});
  space_invaders::state s;
  s.aliens[2] = cols(6, 6);
  s.bullets[3] = cols(6, 6);
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.now().aliens == space_invaders::new_wave());
  CHECK(g.now().alien_move_interval == 12);
  CHECK(g.now().ramps == 0);
}
