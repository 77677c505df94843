#pragma once
/// \file
/// Test support: what each slot of `test-turns` (turns_env.hpp) must have
/// acted on and earned, worked out from its schedule alone, for the tests
/// of what assembles a slot's chain (PPO's segments, DQN's replay feeder).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

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
      const std::size_t waiting = 1 - static_cast<std::size_t>((n % 3) % 2);
      auto& last = chains[waiting].back();
      last.reward += -1.0F;
      last.terminated = 1;
    }
  }
  return chains;
}

}  // namespace coral::test
