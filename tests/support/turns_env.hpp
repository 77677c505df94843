#pragma once
/// \file
/// Test support: `test-turns`, a multi-agent env whose every step follows a
/// fixed schedule of the env's step count n, so that a test can say which
/// slot acts when, what each acted step must earn, and which rows are
/// inactive — and whose inactive rows carry poison (NaN observations) that
/// would show in any loss or advantage they entered.
///
/// Three slots, actions Discrete(3), observation Box((4,)) = (slot, n, what
/// the slot sees of its schedule, 1) for an active row; NaN in every element
/// of an inactive row (the final observation of an agent that leaves is
/// written, as env.hpp asks).
///
/// - Slots 0 and 1 play "games" of `game` moves (config key, default 3):
///   move m = n mod game is slot (m mod 2)'s, the other waits (inactive).
///   A move that does not end the game earns 0.01 × (action + 1); the last
///   move earns +1 and ends the game for both slots (terminated), the
///   waiting slot getting −1. A new game starts on the next step (the same
///   rows play on: a respawn).
/// - Slot 2 holds an agent at n mod 5 ∈ {0, 1, 2}: each step earns 0.1,
///   except the third, which earns 0.5 and makes the agent leave
///   (truncated); the slot is empty (inactive) at n mod 5 ∈ {3, 4}, and a new
///   agent joins after that.
///
/// The env's episode never ends by itself (some agent is always in play or
/// ending); a reset (a new env, or the caller's after a failure) continues
/// the schedule from the env's step count.
///
/// Action masks: the mover of an even move may take 0 or 1, of an odd move 1
/// or 2; slot 2 may take 0 or 2. An illegal action from an active row
/// throws (errors the run), so a run that finishes took none.
///
/// Teams (config key `teams`, 1 or 2): all slots in team 0, or slot i in
/// team i mod 2 (slots 0 and 2 against slot 1, for self-play).

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "coral/envs/env.hpp"
#include "coral/envs/registry.hpp"

namespace coral::test {

class turns_env final : public envs::env {
 public:
  explicit turns_env(std::int64_t game = 3, std::size_t teams = 1) : game_(game), teams_(teams) {}

  /// Whether slot `slot` holds an agent in play after `n` steps.
  [[nodiscard]] bool active_at(std::size_t slot, std::int64_t n) const noexcept {
    if (slot == 2) return n % 5 < 3;
    return static_cast<std::size_t>((n % game_) % 2) == slot;
  }
  /// The legal actions of slot `slot` after `n` steps (bit a: action a).
  [[nodiscard]] unsigned legal_at(std::size_t slot, std::int64_t n) const noexcept {
    if (slot == 2) return 0b101;
    return (n % game_) % 2 == 0 ? 0b011 : 0b110;
  }
  /// Whether slot 0 or 1's move after `n` steps ends its game.
  [[nodiscard]] bool game_ends_at(std::int64_t n) const noexcept { return n % game_ == game_ - 1; }

  void reset(const envs::env_rows& rows) override { write(rows); }

  void step(const envs::env_rows& rows) override {
    const std::int64_t n = steps_;
    for (std::size_t s = 0; s < 3; ++s) {
      if (!active_at(s, n)) continue;
      const auto a = rows.action(s);
      if (a < 0 || a > 2 || ((legal_at(s, n) >> a) & 1U) == 0) {
        throw std::runtime_error("test-turns: slot " + std::to_string(s) + " took illegal action " +
                                 std::to_string(a) + " at step " + std::to_string(n));
      }
      rows.reward(s) = 0.0F;  // an active row's outcome is the env's to write, flags included
      rows.terminated(s) = 0;
      rows.truncated(s) = 0;
    }
    const std::size_t mover = static_cast<std::size_t>((n % game_) % 2);
    if (game_ends_at(n)) {
      rows.reward(mover) = 1.0F;
      rows.reward(1 - mover) = -1.0F;
      rows.terminated(mover) = 1;
      rows.terminated(1 - mover) = 1;
    } else {
      rows.reward(mover) = 0.01F * static_cast<float>(rows.action(mover) + 1);
    }
    if (active_at(2, n)) {
      const bool leaves = n % 5 == 2;
      rows.reward(2) = leaves ? 0.5F : 0.1F;
      rows.truncated(2) = leaves ? 1 : 0;
    }
    ++steps_;
    write(rows);
    if (active_at(2, n) && n % 5 == 2) observe(rows, 2);  // the leaving agent's final observation
  }

  [[nodiscard]] const envs::space& observation_space() const noexcept override { return obs_; }
  [[nodiscard]] const envs::space& action_space() const noexcept override { return act_; }
  [[nodiscard]] std::size_t max_agents() const noexcept override { return 3; }
  [[nodiscard]] std::size_t action_mask_size() const noexcept override { return 3; }
  [[nodiscard]] std::size_t team_count() const noexcept override { return teams_; }
  [[nodiscard]] std::size_t team_of(std::size_t slot) const noexcept override { return slot % teams_; }

  static void register_once() {
    auto& r = envs::registry::global();
    if (r.contains("test-turns")) return;
    r.add(envs::env_spec{
        .name = "test-turns",
        .description = "test env: two slots take turns, a third joins and leaves, inactive rows hold NaN",
        .keys = {{.name = "game", .default_value = "3", .description = "moves per game", .min = 2},
                 {.name = "teams", .default_value = "1", .description = "teams (1 or 2)", .min = 1, .max = 2}},
        .factory = [](const envs::env_config& c, coral::env_seed) -> std::unique_ptr<envs::env> {
          return std::make_unique<turns_env>(c.get_int("game"), static_cast<std::size_t>(c.get_int("teams")));
        }});
  }

 private:
  void observe(const envs::env_rows& rows, std::size_t s) const {
    auto obs = rows.observation(s);
    obs[0] = static_cast<float>(s);
    obs[1] = static_cast<float>(steps_);
    obs[2] = static_cast<float>(s == 2 ? steps_ % 5 : steps_ % game_);
    obs[3] = 1.0F;
  }
  void write(const envs::env_rows& rows) const {
    for (std::size_t s = 0; s < 3; ++s) {
      const bool on = active_at(s, steps_);
      rows.active(s) = on ? 1 : 0;
      if (on) {
        observe(rows, s);
        const unsigned legal = legal_at(s, steps_);
        auto m = rows.action_mask(s);
        for (std::size_t a = 0; a < 3; ++a) m[a] = static_cast<std::uint8_t>((legal >> a) & 1U);
      } else {
        for (auto& x : rows.observation(s)) x = std::numeric_limits<float>::quiet_NaN();
      }
    }
  }

  std::int64_t game_;
  std::size_t teams_;
  std::int64_t steps_ = 0;
  envs::space obs_ = envs::space::box({4}, -1e9F, 1e9F);
  envs::space act_ = envs::space::discrete(3);
};

}  // namespace coral::test
