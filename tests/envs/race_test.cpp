#include "coral/envs/race.hpp"

#include <catch2/catch.hpp>

#include "harness.hpp"

using namespace coral::envs;
using coral::envs::testing::harness;

namespace {

race& the_race(harness& h, std::size_t i = 0) { return dynamic_cast<race&>(h.slice.at(i)); }

}  // namespace

TEST_CASE("race owns one row per agent slot, with inactive slots masked", "[envs][race][multiagent]") {
  harness h("race", {{"agents", "6"}, {"min_agents", "2"}}, 1, 3);
  CHECK(h.batch.rows() == 18);
  CHECK(h.slice.first_row_of(2) == 12);
  bool some_inactive = false;
  for (int episode = 0; episode < 20; ++episode) {
    h.slice.reset_all();
    for (std::size_t e = 0; e < 3; ++e) {
      int active = 0;
      for (std::size_t slot = 0; slot < 6; ++slot) {
        const std::size_t row = h.slice.first_row_of(e) + slot;
        if (h.batch.active()[row] != 0) {
          ++active;
          CHECK(h.obs(row) == std::vector<float>{0.0F, slot % 2 == 0 ? 1.0F : -1.0F});  // slot order is row order
        } else {
          some_inactive = true;
          CHECK(h.obs(row) == std::vector<float>{0.0F, 0.0F});
        }
      }
      CHECK(active >= 2);
      CHECK(active <= 6);
    }
  }
  CHECK(some_inactive);
}

TEST_CASE("race agents finish one by one and the episode ends when the last does", "[envs][race][multiagent]") {
  harness h("race", {{"agents", "4"}, {"min_agents", "4"}, {"length", "2"}}, 2);
  h.slice.reset_all();
  // Slot 0 advances every step, slot 1 on the second step only, slots 2 and 3 never... until later.
  auto act = [&](std::vector<bool> advance) {
    for (std::size_t slot = 0; slot < 4; ++slot) {
      const auto a = race::advancing_action(slot);
      h.batch.discrete_actions()(slot, 0) = advance[slot] ? a : 1 - a;
    }
    h.slice.step_all();
  };
  act({true, false, false, false});
  CHECK(h.batch.rewards()[0] == 0.0F);
  CHECK(h.obs(0)[0] == 0.5F);
  CHECK(h.obs(1)[0] == 0.0F);
  act({true, true, false, false});
  CHECK(h.batch.terminated()[0] == 1);  // slot 0 finished
  CHECK(h.batch.rewards()[0] == 1.0F);
  CHECK(h.batch.episode_returns()[0] == 1.0F);
  CHECK(h.batch.episode_lengths()[0] == 2);
  CHECK(h.final_obs(0)[0] == 1.0F);
  CHECK(h.batch.active()[0] == 0);  // ... and leaves the race
  CHECK(h.batch.active()[1] == 1);
  act({true, true, true, true});  // slot 0's action is ignored now
  CHECK(h.batch.rewards()[0] == 0.0F);
  CHECK(h.batch.terminated()[0] == 0);
  CHECK(h.batch.episode_lengths()[0] == 0);  // an inactive slot's totals stay at 0
  CHECK(h.batch.terminated()[1] == 1);
  CHECK(h.batch.episode_lengths()[1] == 3);
  CHECK(the_race(h).position(2) == 1);
  act({false, false, true, true});  // the last two finish: the env's episode is over and resets at once
  CHECK(h.batch.terminated()[2] == 1);
  CHECK(h.batch.terminated()[3] == 1);
  CHECK(h.final_obs(3) == std::vector<float>{1.0F, -1.0F});
  CHECK(h.batch.episode_lengths()[3] == 4);
  for (std::size_t slot = 0; slot < 4; ++slot) {
    CHECK(h.batch.active()[slot] == 1);  // all four race again
    CHECK(h.obs(slot)[0] == 0.0F);
  }
  act({true, false, false, false});
  CHECK(h.batch.episode_lengths()[0] == 1);  // every slot's totals restarted
  CHECK(h.batch.episode_lengths()[3] == 1);
  CHECK(h.batch.episode_returns()[3] == 0.0F);
}

TEST_CASE("race truncates every running agent at max_steps", "[envs][race][multiagent]") {
  harness h("race", {{"agents", "3"}, {"min_agents", "3"}, {"length", "5"}, {"max_steps", "2"}}, 2);
  h.slice.reset_all();
  for (std::size_t slot = 0; slot < 3; ++slot) {
    h.batch.discrete_actions()(slot, 0) = race::advancing_action(slot);
  }
  h.slice.step_all();
  h.slice.step_all();
  for (std::size_t slot = 0; slot < 3; ++slot) {
    CHECK(h.batch.truncated()[slot] == 1);
    CHECK(h.batch.terminated()[slot] == 0);
    CHECK(h.final_obs(slot)[0] == 2.0F / 5.0F);
    CHECK(h.batch.episode_lengths()[slot] == 2);
    CHECK(h.obs(slot)[0] == 0.0F);  // reset
  }
}
