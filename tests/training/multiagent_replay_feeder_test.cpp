// The replay feeder on a multi-agent env: `test-turns` (two slots taking
// turns, a third that joins and leaves, NaN in every inactive row) through
// an env_slice, its transitions read from the replay actor's inbox and
// checked, return by return, against n-step transitions worked out from
// the env's schedule alone.

#include "coral/training/replay_feeder.hpp"

#include <cmath>
#include <map>
#include <memory>
#include <variant>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/turns_chains.hpp"
#include "../support/turns_env.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/replay/replay_actor.hpp"

using namespace coral;

namespace {

/// One n-step transition as the feeder sent it, or as it must be.
struct stored_transition {
  std::int64_t n = 0;       // the env step its observation is from (element 1)
  int action = 0;
  float n_step_return = 0;
  float discount = 0;
  std::uint32_t steps = 0;
  std::int64_t next_n = -1;  // the step of its bootstrap observation; -1 where it does not bootstrap
  unsigned mask = 0;         // legal actions at the observation, bit a for action a
  unsigned next_mask = 0;    // ... at the bootstrap observation
};

unsigned mask_bits(const std::uint8_t* m) {
  unsigned bits = 0;
  for (unsigned a = 0; a < 3; ++a) bits |= static_cast<unsigned>(m[a] != 0) << a;
  return bits;
}

/// The n-step transitions of one slot's chain (test::expected_chains), in
/// the order an nstep_assembler emits them: each runs over the slot's own
/// next n acted steps, or to the end of its agent's episode.
std::vector<stored_transition> nstep_of(const test::turns_env& env, std::size_t slot,
                                        const std::vector<test::slot_step>& chain, std::size_t n, float gamma) {
  std::vector<stored_transition> out;
  for (std::size_t j = 0; j < chain.size(); ++j) {
    stored_transition t;
    t.n = chain[j].n;
    t.action = chain[j].action;
    t.mask = chain[j].mask;
    float scale = 1.0F;
    std::size_t k = 0;
    bool ended = false;
    bool terminated = false;
    while (k < n && j + k < chain.size()) {
      const auto& st = chain[j + k];
      t.n_step_return += scale * st.reward;
      scale *= gamma;
      ++k;
      if (st.terminated != 0 || st.truncated != 0) {
        ended = true;
        terminated = st.terminated != 0;
        break;
      }
    }
    if (!ended && j + k >= chain.size()) break;  // its successor had not acted when sampling stopped
    t.steps = static_cast<std::uint32_t>(k);
    t.discount = terminated ? 0.0F : scale;
    // A leaving agent's final observation is of the step after its last.
    t.next_n = terminated ? -1 : ended ? chain[j + k - 1].n + 1 : chain[j + k].n;
    // Slot 1's games end on slot 0's move, while it waits: its last
    // observation and mask stand in for a final one the env does not write.
    // Every other end comes from the agent's own move, whose final
    // observation has no mask: every action.
    const bool waited = slot == 1;
    t.next_mask = !ended ? env.legal_at(slot, chain[j + k].n) : waited ? chain[j + k - 1].mask : 0b111U;
    out.push_back(t);
  }
  return out;
}

}  // namespace

TEST_CASE("the replay feeder stores each slot's own acted steps as n-step chains, a waiting slot's outcome on its "
          "last move",
          "[training][feeder][multi-agent]") {
  constexpr std::size_t n_step = 2;
  constexpr float gamma = 0.5F;
  constexpr std::int64_t steps = 60;
  std::vector<std::unique_ptr<envs::env>> made;
  made.push_back(std::make_unique<test::turns_env>());
  const test::turns_env schedule;  // the same schedule, for the expectations
  envs::env_batch batch(3, made.front()->observation_space(), made.front()->action_space());
  envs::env_slice slice(batch, 0, std::move(made));
  REQUIRE(batch.has_action_masks());
  replay::replay_actor_config rc;
  rc.buffer = {.capacity = 3 * 64, .num_streams = 3, .obs_dim = 4, .discrete_action_dim = 1, .n_step = n_step,
               .mask_dim = 3};
  rc.min_size = 1000;  // room in the inbox for every block: nothing runs the actor here
  replay::replay_actor replay(rc);
  std::vector<std::pair<double, double>> episodes;
  training::replay_feeder feeder(batch, replay, [&](double r, double l) { episodes.emplace_back(r, l); },
                                 {.n_step = n_step, .gamma = gamma, .mask_dim = 3});
  test::play_turns(slice, batch, schedule, steps, feeder);

  std::vector<std::vector<stored_transition>> got(3);
  std::uint64_t env_steps = 0;
  while (auto msg = replay.inbox().try_receive()) {
    auto* block = std::get_if<std::unique_ptr<replay::insert_block>>(&*msg);
    REQUIRE(block != nullptr);
    const auto& b = **block;
    env_steps += b.env_steps;
    CHECK(b.cuts.empty());
    REQUIRE(b.mask_dim == 3);
    for (std::size_t i = 0; i < b.size(); ++i) {
      const std::size_t s = b.streams[i];
      const float* obs = b.observations.data() + i * 4;
      // Only an active row's step: never the NaN of a waiting or empty slot.
      REQUIRE(std::isfinite(obs[1]));
      CHECK(obs[0] == static_cast<float>(s));
      stored_transition t;
      t.n = static_cast<std::int64_t>(obs[1]);
      t.action = b.discrete[i];
      t.n_step_return = b.returns[i];
      t.discount = b.discounts[i];
      t.steps = b.steps[i];
      t.next_n = b.discounts[i] == 0.0F ? -1 : static_cast<std::int64_t>(b.next_observations[i * 4 + 1]);
      t.mask = mask_bits(b.masks.data() + i * 3);
      t.next_mask = mask_bits(b.next_masks.data() + i * 3);
      got[s].push_back(t);
    }
  }
  CHECK(env_steps == 3 * static_cast<std::uint64_t>(steps + 1));  // every row's step counts, acted or not

  // Through the step acted on last: a successor that acted completes what comes before it.
  const auto chains = test::expected_chains(schedule, steps + 1);
  for (std::size_t s = 0; s < 3; ++s) {
    const auto expected = nstep_of(schedule, s, chains[s], n_step, gamma);
    INFO("slot " << s << " chain " << test::show(chains[s]));
    // What was still waiting for a successor at the end is the last step or two.
    REQUIRE(got[s].size() <= expected.size());
    REQUIRE(got[s].size() + n_step >= expected.size());
    REQUIRE(got[s].size() > 10);
    for (std::size_t j = 0; j < got[s].size(); ++j) {
      INFO("transition " << j << " from step " << expected[j].n);
      CHECK(got[s][j].n == expected[j].n);
      CHECK(got[s][j].action == expected[j].action);
      CHECK(got[s][j].n_step_return == Approx(expected[j].n_step_return));
      CHECK(got[s][j].discount == Approx(expected[j].discount));
      CHECK(got[s][j].steps == expected[j].steps);
      CHECK(got[s][j].next_n == expected[j].next_n);
      CHECK(got[s][j].mask == expected[j].mask);
      CHECK(got[s][j].next_mask == expected[j].next_mask);
    }
  }
  // Slot 2's agent leaves (truncated) on its third step and the slot is
  // empty for two: no transition starts there, and none runs across the gap.
  for (const auto& t : got[2]) {
    CHECK(t.n % 5 < 3);
    CHECK(t.steps <= static_cast<std::uint32_t>(3 - t.n % 5));
  }
  // Slot 1 moves once a game and loses it on slot 0's move: each of its
  // transitions is that one move, with the loss, and does not bootstrap.
  for (const auto& t : got[1]) {
    CHECK(t.steps == 1);
    CHECK(t.discount == 0.0F);
    CHECK(t.n_step_return < -0.95F);
  }
  // Episodes per agent: a game of slot 0 (two moves, +1 and a little), of
  // slot 1 (one move, -1 and a little), a visit of slot 2 (three steps, 0.7).
  std::map<std::pair<long, long>, int> kinds;
  for (const auto& [ret, len] : episodes) ++kinds[{std::lround(ret * 100), std::lround(len)}];
  for (const auto& [kind, count] : kinds) {
    INFO("return x100 " << kind.first << " length " << kind.second);
    const bool slot0 = kind.second == 2 && kind.first > 100 && kind.first <= 103;
    const bool slot1 = kind.second == 1 && kind.first >= -99 && kind.first < -96;
    const bool slot2 = kind.second == 3 && kind.first == 70;
    CHECK((slot0 || slot1 || slot2));
  }
  CHECK(kinds[{70, 3}] == static_cast<int>(steps / 5));
}
