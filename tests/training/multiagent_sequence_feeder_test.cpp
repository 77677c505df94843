// The sequence feeder on a multi-agent env: `test-turns` (two slots taking
// turns in games of nine moves, a third that joins for three steps and
// leaves, NaN in every inactive row) through an env_slice, every sequence it
// sends checked, slot by slot, against the sequences of that slot's own
// acted steps worked out from the env's schedule alone (turns_chains.hpp).

#include "coral/training/sequence_feeder.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/turns_chains.hpp"
#include "../support/turns_env.hpp"
#include "coral/core/error.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/replay/errors.hpp"

using namespace coral;

namespace {

constexpr std::int64_t ma_game = 9;  // moves per game: slot 0 makes five, slot 1 four
constexpr std::size_t ma_state_dim = 2;

/// The state the test's policy reports before it acts for slot `s` at env step `n`.
std::vector<float> ma_policy_state(std::size_t s, std::int64_t n) {
  return {static_cast<float>(s) + 0.5f, static_cast<float>(n)};
}

/// What test-turns writes as slot `s`'s observation after `n` env steps.
std::vector<float> ma_observation(std::size_t s, std::int64_t n) {
  return {static_cast<float>(s), static_cast<float>(n), static_cast<float>(s == 2 ? n % 5 : n % ma_game), 1.0f};
}

std::vector<std::uint8_t> ma_mask(unsigned bits) {
  return {static_cast<std::uint8_t>(bits & 1U), static_cast<std::uint8_t>((bits >> 1) & 1U),
          static_cast<std::uint8_t>((bits >> 2) & 1U)};
}

/// One sequence as the feeder sent it, or as it must be.
struct ma_sequence {
  std::vector<float> observations;  // (length + 1) × 4
  std::vector<std::int32_t> actions;
  std::vector<float> rewards;
  std::vector<std::uint8_t> flags;
  std::vector<float> state;
  std::vector<std::uint8_t> masks;  // (length + 1) × 3
};

/// A slot's chain cut into its agents' episodes: after every step that ended one.
std::vector<std::vector<test::slot_step>> ma_episodes(const std::vector<test::slot_step>& chain) {
  std::vector<std::vector<test::slot_step>> out(1);
  for (const auto& st : chain) {
    out.back().push_back(st);
    if (st.terminated != 0 || st.truncated != 0) out.emplace_back();
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

/// Sequence k of `episode` (sequence.hpp's rule over the slot's own acted
/// steps), as the feeder must send it.
ma_sequence ma_expected(std::size_t s, const std::vector<test::slot_step>& episode, const replay::sequence_layout& l,
                        std::size_t k) {
  const auto length = static_cast<std::int64_t>(l.length);
  const auto steps = static_cast<std::int64_t>(episode.size());
  const std::int64_t start = static_cast<std::int64_t>(k * l.stride()) - static_cast<std::int64_t>(l.burn_in);
  ma_sequence q;
  q.observations.assign((l.length + 1) * 4, 0.0f);
  q.actions.assign(l.length, 0);
  q.rewards.assign(l.length, 0.0f);
  q.flags.assign(l.length, 0);
  q.state.assign(ma_state_dim, 0.0f);
  q.masks.assign((l.length + 1) * 3, 0);
  std::int64_t first = -1, last = -1;
  for (std::int64_t i = 0; i < length; ++i) {
    const std::int64_t t = start + i;
    if (t < 0 || t >= steps) continue;
    const auto& st = episode[static_cast<std::size_t>(t)];
    if (first < 0) first = t;
    last = t;
    const auto at = static_cast<std::size_t>(i);
    std::ranges::copy(ma_observation(s, st.n), q.observations.begin() + static_cast<std::ptrdiff_t>(at * 4));
    std::ranges::copy(ma_mask(st.mask), q.masks.begin() + static_cast<std::ptrdiff_t>(at * 3));
    q.actions[at] = st.action;
    q.rewards[at] = st.reward;
    std::uint8_t f = replay::slot_valid;
    if (t == 0) f |= replay::slot_first;
    if (st.terminated != 0) {
      f |= replay::slot_terminated;
    } else if (st.truncated != 0) {
      f |= replay::slot_truncated;
    }
    q.flags[at] = f;
  }
  REQUIRE(first >= 0);
  const auto after = static_cast<std::size_t>(last - start + 1);
  const auto& end = episode[static_cast<std::size_t>(last)];
  if (last + 1 < steps) {
    // Cut mid-episode: the slot's next acted step bootstraps it, however
    // many env steps it waited for it.
    const auto& next = episode[static_cast<std::size_t>(last + 1)];
    std::ranges::copy(ma_observation(s, next.n), q.observations.begin() + static_cast<std::ptrdiff_t>(after * 4));
    std::ranges::copy(ma_mask(next.mask), q.masks.begin() + static_cast<std::ptrdiff_t>(after * 3));
  } else if (end.truncated != 0 && end.terminated == 0) {
    // Slot 2's agent leaves on its own step: the env's final observation, every action legal.
    std::ranges::copy(ma_observation(s, end.n + 1), q.observations.begin() + static_cast<std::ptrdiff_t>(after * 4));
    std::ranges::copy(ma_mask(0b111U), q.masks.begin() + static_cast<std::ptrdiff_t>(after * 3));
  }
  if (first > 0) q.state = ma_policy_state(s, episode[static_cast<std::size_t>(first)].n);
  return q;
}

}  // namespace

TEST_CASE("the sequence feeder cuts each slot's own acted steps into sequences: a leaving agent's end, a waiting "
          "slot's outcome on its last move, masks, and the slot's own states",
          "[training][sequence_feeder][multi-agent]") {
  constexpr std::int64_t steps = 200;
  const replay::sequence_layout layout{.length = 3, .burn_in = 1, .overlap = 1, .obs_dim = 4, .discrete_dim = 1,
                                       .state_dim = ma_state_dim, .mask_dim = 3};
  std::vector<std::unique_ptr<envs::env>> made;
  made.push_back(std::make_unique<test::turns_env>(ma_game));
  const test::turns_env schedule(ma_game);  // the same schedule, for the expectations
  envs::env_batch batch(3, made.front()->observation_space(), made.front()->action_space());
  envs::env_slice slice(batch, 0, std::move(made));
  REQUIRE(batch.has_action_masks());

  std::vector<std::vector<ma_sequence>> got(3);
  std::uint64_t env_steps = 0;
  training::sequence_sink sink{
      .take_block = [] { return std::unique_ptr<replay::sequence_block>(); },
      .send =
          [&](std::unique_ptr<replay::sequence_block> b) {
            env_steps += b->env_steps;
            const auto& l = b->layout;
            REQUIRE(b->masks.size() == b->size() * l.mask_bytes());
            for (std::size_t i = 0; i < b->size(); ++i) {
              const auto part = [i](const auto& v, std::size_t width) {
                return std::vector(v.begin() + static_cast<std::ptrdiff_t>(i * width),
                                   v.begin() + static_cast<std::ptrdiff_t>((i + 1) * width));
              };
              got[b->streams[i]].push_back({.observations = part(b->observations, l.observation_floats()),
                                            .actions = part(b->actions, l.length),
                                            .rewards = part(b->rewards, l.length),
                                            .flags = part(b->flags, l.length),
                                            .state = part(b->states, l.state_dim),
                                            .masks = part(b->masks, l.mask_bytes())});
            }
          }};
  std::size_t episodes = 0;
  training::sequence_feeder feeder(batch, layout, std::move(sink), [&](double, double) { ++episodes; });
  std::vector<float> states(3 * ma_state_dim, 0.0f);
  feeder.record_states_from(states);

  test::play_turns(slice, batch, schedule, steps, feeder, [&](std::int64_t n) {
    // As a policy acts: the state an active row's act started from. An
    // inactive row gets a NaN state: read, it would show.
    for (std::size_t s = 0; s < 3; ++s) {
      const auto st = batch.active()[s] != 0
                          ? ma_policy_state(s, n)
                          : std::vector<float>(ma_state_dim, std::numeric_limits<float>::quiet_NaN());
      std::ranges::copy(st, states.begin() + static_cast<std::ptrdiff_t>(s * ma_state_dim));
    }
  });
  CHECK(env_steps == 3 * static_cast<std::uint64_t>(steps + 1));  // every row's step counts, acted or not

  // The outcomes of the steps before the last are in: so many agents' episodes ended.
  std::size_t ended = 0;
  for (const auto& chain : test::expected_chains(schedule, steps)) {
    for (const auto& st : chain) ended += (st.terminated != 0 || st.truncated != 0) ? 1 : 0;
  }
  CHECK(episodes == ended);

  const auto chains = test::expected_chains(schedule, steps + 1);
  for (std::size_t s = 0; s < 3; ++s) {
    INFO("slot " << s << " chain " << test::show(chains[s]));
    std::vector<ma_sequence> expected;
    for (const auto& episode : ma_episodes(chains[s])) {
      for (std::size_t k = 0; k * layout.stride() <= episode.size() - 1; ++k) {
        expected.push_back(ma_expected(s, episode, layout, k));
      }
    }
    // What waits for its successor's step at the end is the last episode's.
    REQUIRE(got[s].size() <= expected.size());
    REQUIRE(got[s].size() + 3 >= expected.size());
    REQUIRE(got[s].size() > 20);
    for (std::size_t j = 0; j < got[s].size(); ++j) {
      INFO("sequence " << j);
      for (const float x : got[s][j].observations) REQUIRE(std::isfinite(x));  // never an inactive row's NaN
      CHECK(got[s][j].observations == expected[j].observations);
      CHECK(got[s][j].actions == expected[j].actions);
      CHECK(got[s][j].rewards == expected[j].rewards);
      CHECK(got[s][j].flags == expected[j].flags);
      CHECK(got[s][j].masks == expected[j].masks);
      CHECK(got[s][j].state == expected[j].state);
    }
  }
  // Slot 2's agent leaves (truncated) on its third step and the slot stays
  // empty for two: no sequence holds a step after it left, and the one that
  // holds its last step ends there.
  for (const auto& q : got[2]) {
    bool over = false;
    for (std::size_t i = 0; i < layout.length; ++i) {
      if ((q.flags[i] & replay::slot_valid) == 0) continue;
      REQUIRE_FALSE(over);
      const auto n = static_cast<std::int64_t>(q.observations[i * 4 + 1]);
      CHECK(n % 5 < 3);
      CHECK(((q.flags[i] & replay::slot_truncated) != 0) == (n % 5 == 2));
      over = (q.flags[i] & replay::slot_truncated) != 0;
    }
  }
  // Slot 1 loses every game on slot 0's move, while it waits: the loss is
  // on its last move.
  std::size_t losses = 0;
  for (const auto& q : got[1]) {
    for (std::size_t i = 0; i < layout.length; ++i) {
      if ((q.flags[i] & replay::slot_terminated) == 0) continue;
      CHECK(q.rewards[i] < -0.9f);
      ++losses;
    }
  }
  CHECK(losses > 5);
}

TEST_CASE("a sequence feeder refuses masks of another width than the env's", "[training][sequence_feeder][multi-agent]") {
  std::vector<std::unique_ptr<envs::env>> made;
  made.push_back(std::make_unique<test::turns_env>());
  envs::env_batch batch(3, made.front()->observation_space(), made.front()->action_space());
  envs::env_slice slice(batch, 0, std::move(made));
  const replay::sequence_layout layout{.length = 3, .burn_in = 1, .overlap = 1, .obs_dim = 4, .discrete_dim = 1,
                                       .state_dim = 0, .mask_dim = 2};
  training::sequence_sink sink{.take_block = {}, .send = [](std::unique_ptr<replay::sequence_block>) {}};
  CHECK_THROWS_MATCHES(training::sequence_feeder(batch, layout, sink, {}), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(replay::errors::sequence_feeder_shape), "mask_dim", 2, 3)));
}
