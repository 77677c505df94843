#include "coral/envs/minatar_asterix.hpp"

#include <catch2/catch.hpp>

#include "minatar_fixture.hpp"

using namespace coral::envs;
using minatar::action;
using minatar::asterix;
using coral::envs::testing::harness;
using asterix_game = coral::envs::testing::minatar_fixture<minatar_asterix>;

TEST_CASE("the player picks up gold it moves onto for a point", "[envs][minatar][asterix]") {
  asterix_game g;
  asterix::state s;
  s.lane[3] = {.present = true, .x = 6, .heading_right = true, .gold = true};  // row 4
  s.player_x = 6;
  g.rules().set_state(s);
  g.step(action::up);
  CHECK(g.reward() == 1.0F);
  CHECK_FALSE(g.now().lane[3].present);
  CHECK_FALSE(g.h.done());
}

TEST_CASE("an enemy that moves onto the player ends the game", "[envs][minatar][asterix]") {
  asterix_game g;
  asterix::state s;
  s.lane[4] = {.present = true, .x = 6, .heading_right = false, .gold = false};  // row 5, next to the player
  s.move_countdown = 0;
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.h.batch.terminated()[0] == 1);
}

TEST_CASE("objects show their trail behind them and leave at the far edge", "[envs][minatar][asterix]") {
  asterix_game g;
  asterix::state s;
  s.lane[0] = {.present = true, .x = 3, .heading_right = true, .gold = false};
  s.lane[7] = {.present = true, .x = 0, .heading_right = false, .gold = true};
  s.move_countdown = 0;
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.cell(1, 4, 1) == 1.0F);  // the enemy, one cell right
  CHECK(g.cell(1, 3, 2) == 1.0F);  // its trail
  CHECK_FALSE(g.now().lane[7].present);  // the gold left on the left
  CHECK(g.now().move_countdown == 4);
}

TEST_CASE("a spawn fills a free lane at a side when its countdown is at 0", "[envs][minatar][asterix]") {
  asterix_game g;
  asterix::state s;
  for (int i = 0; i < asterix::lanes; ++i) {
    if (i != 2) s.lane[i] = {.present = true, .x = 5, .heading_right = true, .gold = true};
  }
  s.player_y = 1;
  s.player_x = 0;
  s.spawn_countdown = 0;
  g.rules().set_state(s);
  g.step(action::noop);
  REQUIRE(g.now().lane[2].present);
  CHECK((g.now().lane[2].x == 0 || g.now().lane[2].x == 9));
  CHECK(g.now().lane[2].heading_right == (g.now().lane[2].x == 0));
  CHECK(g.now().spawn_countdown == 9);
}

TEST_CASE("asterix ramps its spawn interval every 102 steps and its move interval every other ramp",
          "[envs][minatar][asterix][ramp]") {
  asterix_game g;
  asterix::state s;
  s.spawn_countdown = 1000;  // nothing spawns: the player stays safe
  s.move_countdown = 1000;
  g.rules().set_state(s);
  for (int t = 0; t < 101; ++t) g.step(action::noop);
  CHECK(g.now().ramp_countdown == -1);
  CHECK(g.now().ramps == 0);
  g.step(action::noop);
  CHECK(g.now().ramps == 1);
  CHECK(g.now().spawn_interval == 9);
  CHECK(g.now().move_interval == 5);
  CHECK(g.now().ramp_countdown == 100);
  for (int t = 0; t < 102; ++t) g.step(action::noop);
  CHECK(g.now().ramps == 2);
  CHECK(g.now().spawn_interval == 8);
  CHECK(g.now().move_interval == 4);
}

TEST_CASE("without ramping asterix keeps its first speeds", "[envs][minatar][asterix][ramp]") {
  asterix_game g(config_args{{"ramping", "false"}});
  asterix::state s;
  s.spawn_countdown = 1000;
  s.move_countdown = 1000;
  g.rules().set_state(s);
  for (int t = 0; t < 300; ++t) g.step(action::noop);
  CHECK(g.now().ramps == 0);
  CHECK(g.now().spawn_interval == 10);
}
