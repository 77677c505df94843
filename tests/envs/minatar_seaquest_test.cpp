#include "coral/envs/minatar_seaquest.hpp"

#include <catch2/catch.hpp>

#include "minatar_fixture.hpp"

using namespace coral::envs;
using minatar::action;
using minatar::seaquest;
using coral::envs::testing::harness;
using seaquest_game = coral::envs::testing::minatar_fixture<minatar_seaquest>;

namespace {

// The submarine below the surface at (row 3, column 5), nothing about to spawn.
seaquest::state diving() {
  seaquest::state s;
  s.sub_y = 3;
  s.surfaced = false;
  s.enemy_spawn_countdown = 50;
  s.diver_spawn_countdown = 50;
  return s;
}

}  // namespace

TEST_CASE("a diver swimming onto the submarine is picked up", "[envs][minatar][seaquest]") {
  seaquest_game g;
  auto s = diving();
  s.divers.push_back({.x = 6, .y = 3, .heading_right = false, .move_countdown = 0});
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.now().divers.empty());
  CHECK(g.now().divers_aboard == 1);
  CHECK(g.reward() == 0.0F);
  CHECK(g.cell(9, 8, 8) == 1.0F);  // the diver gauge's first cell
  CHECK(g.cell(9, 7, 8) == 0.0F);
}

TEST_CASE("the submarine picks up a diver it moves onto, and no more than 6", "[envs][minatar][seaquest]") {
  seaquest_game g;
  auto s = diving();
  s.divers.push_back({.x = 4, .y = 3, .heading_right = true, .move_countdown = 3});
  g.rules().set_state(s);
  g.step(action::left);
  CHECK(g.now().divers_aboard == 1);
  s = diving();
  s.divers_aboard = 6;
  s.divers.push_back({.x = 4, .y = 3, .heading_right = true, .move_countdown = 3});
  g.rules().set_state(s);
  g.step(action::left);
  CHECK(g.now().divers_aboard == 6);
  CHECK(g.now().divers.size() == 1);
}

TEST_CASE("the oxygen running out ends the game one step after it reaches 0", "[envs][minatar][seaquest]") {
  seaquest_game g;
  auto s = diving();
  s.oxygen = 1;
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.now().oxygen == 0);
  CHECK_FALSE(g.h.done());
  CHECK(g.cell(9, 0, 7) == 0.0F);  // the gauge is empty
  g.step(action::noop);
  CHECK(g.h.batch.terminated()[0] == 1);
}

TEST_CASE("the oxygen gauge shows a cell per 20 units", "[envs][minatar][seaquest]") {
  seaquest_game g;
  auto s = diving();
  s.oxygen = 61;  // 60 after the step: 3 cells
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.cell(9, 2, 7) == 1.0F);
  CHECK(g.cell(9, 3, 7) == 0.0F);
}

TEST_CASE("surfacing without a diver ends the game", "[envs][minatar][seaquest]") {
  seaquest_game g;
  auto s = diving();
  s.sub_y = 1;
  g.rules().set_state(s);
  g.step(action::up);
  CHECK(g.h.batch.terminated()[0] == 1);
}

TEST_CASE("surfacing with a diver refills the oxygen, drops a diver and ramps up", "[envs][minatar][seaquest]") {
  seaquest_game g;
  auto s = diving();
  s.sub_y = 1;
  s.oxygen = 77;
  s.divers_aboard = 2;
  g.rules().set_state(s);
  g.step(action::up);
  CHECK_FALSE(g.h.done());
  CHECK(g.reward() == 0.0F);
  CHECK(g.now().oxygen == 200);
  CHECK(g.now().divers_aboard == 1);
  CHECK(g.now().enemy_spawn_interval == 19);
  CHECK(g.now().move_interval == 5);  // the move interval drops on the 2nd, 4th, ... surfacing
  CHECK(g.now().ramps == 1);
}

TEST_CASE("surfacing with 6 divers scores the oxygen left, a point per 20 units", "[envs][minatar][seaquest]") {
  seaquest_game g;
  auto s = diving();
  s.sub_y = 1;
  s.oxygen = 150;
  s.divers_aboard = 6;
  g.rules().set_state(s);
  g.step(action::up);
  CHECK(g.reward() == 7.0F);
  CHECK(g.now().divers_aboard == -1);  // MinAtar's count after a full load
  CHECK(g.now().oxygen == 200);
}

TEST_CASE("a bullet that reaches a fish sinks it for a point", "[envs][minatar][seaquest]") {
  seaquest_game g;
  auto s = diving();
  s.sub_heading_right = true;
  s.fish.push_back({.x = 6, .y = 3, .heading_right = false, .move_countdown = 4});
  g.rules().set_state(s);
  g.step(action::fire);
  CHECK(g.reward() == 1.0F);
  CHECK(g.now().fish.empty());
  CHECK(g.now().bullets.empty());
  CHECK(g.now().shot_cooldown == 4);
}

TEST_CASE("an enemy submarine moving onto the player ends the game, and it fires every 11 steps",
          "[envs][minatar][seaquest]") {
  seaquest_game g;
  auto s = diving();
  s.subs.push_back({.x = 7, .y = 3, .heading_right = false, .move_countdown = 0, .shot_countdown = 5});
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK_FALSE(g.h.done());
  CHECK(g.now().subs[0].x == 6);
  s.subs[0].x = 6;
  g.rules().set_state(s);
  g.step(action::noop);
  CHECK(g.h.batch.terminated()[0] == 1);

  s = diving();
  s.subs.push_back({.x = 0, .y = 6, .heading_right = true, .move_countdown = 9, .shot_countdown = 0});
  g.rules().set_state(s);
  g.step(action::noop);
  REQUIRE(g.now().enemy_bullets.size() == 1);
  CHECK(g.now().enemy_bullets[0].x == 1);  // fired from the sub's cell, then moved once
  CHECK(g.now().subs[0].shot_countdown == 10);
}

TEST_CASE("an enemy spawns on a side row unless that row has an enemy heading the other way",
          "[envs][minatar][seaquest]") {
  seaquest_game g;
  auto s = diving();
  s.enemy_spawn_countdown = 0;
  for (int y = 1; y <= 8; ++y) s.fish.push_back({.x = 8, .y = y, .heading_right = true, .move_countdown = 9});
  for (int trial = 0; trial < 50; ++trial) {
    g.rules().set_state(s);
    g.step(action::noop);
    const auto n = g.now().fish.size() + g.now().subs.size();
    CHECK((n == 8 || n == 9));
    for (const auto& f : g.now().fish) CHECK(f.heading_right);
    for (const auto& e : g.now().subs) CHECK(e.heading_right);
  }
}
