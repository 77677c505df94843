#pragma once
/// \file
/// `password`: guess a fixed binary sequence. An exploration check: the only
/// reward comes from entering the whole password right, which a uniform
/// policy does with probability 2^−length.
///
/// The password (`length` bits) is fixed by `password_seed`, the same for
/// every env, episode and run seed. Observation Box((length,), -1, 1): entry i
/// is +1 or −1 once bit i has been guessed (1 or 0), 0 before. Actions are
/// Discrete(2), one guessed bit per step. After `length` steps the episode
/// ends, terminated, with reward 1 if every guess was right and 0 otherwise;
/// earlier steps pay 0.
///
/// Optimal return per episode: 1. Solved at 0.95.

#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/core/rng.hpp"

namespace coral::envs {

/// Enter a fixed password bit by bit.
class password final : public env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "password";
  /// One-line description.
  static constexpr std::string_view description =
      "guess a fixed binary password; reward only for all bits right (tests exploration)";
  /// Config keys: length, password_seed.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed.
  password(const env_config& config, env_seed seed);

  void reset(const env_rows& rows) override;
  void step(const env_rows& rows) override;
  [[nodiscard]] const space& observation_space() const noexcept override { return observation_space_; }
  [[nodiscard]] const space& action_space() const noexcept override { return action_space_; }
  [[nodiscard]] std::optional<double> optimal_return() const noexcept override { return 1.0; }
  [[nodiscard]] std::optional<double> solved_return() const noexcept override { return 0.95; }

  /// Bit i of the password (0 or 1).
  [[nodiscard]] int bit(std::size_t i) const noexcept { return static_cast<int>((password_ >> i) & 1U); }

 private:
  void write_observation(const env_rows& rows) const noexcept;

  space observation_space_;
  space action_space_;
  std::int64_t length_;
  std::uint64_t password_;
  std::int64_t t_ = 0;
  std::uint64_t guesses_ = 0;
  bool correct_ = true;
};

}  // namespace coral::envs
