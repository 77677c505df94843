#pragma once
/// \file
/// Test support: what each slot of `test-turns` (turns_env.hpp) must have
/// acted on and earned, worked out from its schedule alone, for the tests
/// of what assembles a slot's chain (PPO's segments, DQN's replay feeder,
/// R2D2's sequence feeder).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "coral/actors/step_consumer.hpp"
#include "coral/envs/env_slice.hpp"
#include "turns_env.hpp"

namespace coral::test {

/// One step a slot acted on, with the reward and flags it earned.
struct slot_step {
  std::int64_t n = 0;  // the env's step count when the slot acted (its observation's element 1)
  float reward = 0;
  int terminated = 0;
  int truncated = 0;
  int action = 0;
  unsigned mask = 0;  // the mask it acted under, bit a for action a
  friend bool operator==(const slot_step&, const slot_step&) = default;
};

/// The steps, one per parenthesis, for a failing check's message.
inline std::string show(const std::vector<slot_step>& steps) {
  std::string out;
  for (const auto& s : steps) {
    out += fmt::format("(n {} r {:.2f} term {} trunc {} a {} mask {}) ", s.n, s.reward, s.terminated, s.truncated,
                       s.action, s.mask);
  }
  return out;
}

/// The action the test's policy takes for slot `slot` at env step `n`: the
/// first legal one from (n + slot) mod 3 on.
inline int action_of(const test::turns_env& env, std::size_t slot, std::int64_t n) {
  const unsigned legal = env.legal_at(slot, n);
  for (int k = 0; k < 3; ++k) {
    const int a = static_cast<int>((static_cast<std::size_t>(n) + slot + static_cast<std::size_t>(k)) % 3);
    if (((legal >> a) & 1U) != 0) return a;
  }
  return -1;
}

/// Hands `consumer` env steps 0 to `steps` of the test-turns env `slice`
/// binds to rows 0-2 of `batch`, one call each, as a batcher would: before
/// each, every active row gets the test's action (action_of, from
/// `schedule`) and every inactive row the illegal action 7 (stored, it
/// would show), and `also(n)` writes whatever else the consumer reads.
inline void play_turns(envs::env_slice& slice, envs::env_batch& batch, const test::turns_env& schedule,
                       std::int64_t steps, actors::step_consumer& consumer,
                       const std::function<void(std::int64_t)>& also = {}) {
  slice.reset_all();
  const std::vector<actors::row_range> ranges{{0, 3}};
  for (std::int64_t n = 0; n <= steps; ++n) {
    for (std::size_t s = 0; s < 3; ++s) {
      const bool on = batch.active()[s] != 0;
      batch.discrete_actions().row(s)[0] = on ? action_of(schedule, s, n) : 7;
    }
    if (also) also(n);
    consumer.consume({.batch = batch, .ranges = ranges});
    if (n < steps) slice.step_all();
  }
}

/// What each slot's chain must hold after `steps` env steps, worked out from
/// the schedule alone: every step the slot acted on, with the reward and
/// flags it earned, a waiting slot's game end on its last move.
inline std::vector<std::vector<slot_step>> expected_chains(const test::turns_env& env, std::int64_t steps) {
  std::vector<std::vector<slot_step>> chains(3);
  for (std::int64_t n = 0; n < steps; ++n) {
    for (std::size_t s = 0; s < 3; ++s) {
      if (!env.active_at(s, n)) continue;
      slot_step st;
      st.n = n;
      st.action = action_of(env, s, n);
      st.mask = env.legal_at(s, n);
      if (s == 2) {
        const bool leaves = n % 5 == 2;
        st.reward = leaves ? 0.5F : 0.1F;
        st.truncated = leaves ? 1 : 0;
      } else if (env.game_ends_at(n)) {
        st.reward = 1.0F;
        st.terminated = 1;
      } else {
        st.reward = 0.01F * static_cast<float>(st.action + 1);
      }
      chains[s].push_back(st);
    }
    // The waiting slot's loss lands on its last move.
    if (env.game_ends_at(n)) {
      const std::size_t waiting = env.active_at(0, n) ? 1 : 0;
      auto& last = chains[waiting].back();
      last.reward += -1.0F;
      last.terminated = 1;
    }
  }
  return chains;
}

}  // namespace coral::test
