#pragma once
/// \file
/// `repeat_previous`: name the suit of the card shown k steps earlier (a
/// diagnostic memory task after POPGym's RepeatPrevious, written from its
/// description). Catches a recurrent state that cannot hold a short queue of
/// recent inputs, or that lets them run together.
///
/// An episode has `length` steps (default 16, 2 to 2^20); `k` (default 4,
/// as POPGym's easy setting) is at least 1 and less than `length`. With
/// observation o_t shown before action a_t (o_0 comes from reset):
/// - o_t shows card t, drawn uniformly from `suits` suits (default 4, 2 to
///   1024), independently of every other card: Box((suits + 1,), 0, 1), the
///   suit one-hot in elements 0..suits−1, and element `suits` = 1 on o_0
///   (the episode's first card), 0 after; the layout of `repeat_first`. The
///   observation after the last step shows no card (all zeros).
/// - Action Discrete(suits): a suit.
/// - a_t with t < k earns 0. For t ≥ k, a_t earns +1/(length−k) if it is the
///   suit of card t − k, −1/(length−k) if not. The step that takes
///   a_{length−1} ends the episode, terminated. The cards are drawn from the
///   env's rng, card 0 at reset and card t + 1 in the step that takes a_t.
///
/// Optimal return per episode: 1 (always name the card k steps back). A
/// policy without memory sees only the current card, which is independent
/// of card t − k: each scored answer is right with probability 1/suits
/// whatever it does, so it gets 2/suits − 1 in expectation (−0.5 with 4
/// suits). Solved at a mean return of 0.95.

#include <cstdint>
#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/core/rng.hpp"

namespace coral::envs {

/// Recall the card shown k steps earlier.
class repeat_previous final : public env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "repeat_previous";
  /// One-line description.
  static constexpr std::string_view description =
      "name the suit of the card shown k steps earlier (POPGym's RepeatPrevious; tests recurrent memory)";
  /// Config keys: suits, length, k.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed. Throws config_error if k is
  /// not less than length.
  repeat_previous(const env_config& config, env_seed seed);

  void reset(const env_rows& rows) override;
  void step(const env_rows& rows) override;
  [[nodiscard]] const space& observation_space() const noexcept override { return observation_space_; }
  [[nodiscard]] const space& action_space() const noexcept override { return action_space_; }
  [[nodiscard]] std::optional<double> optimal_return() const noexcept override { return 1.0; }
  [[nodiscard]] std::optional<double> solved_return() const noexcept override { return 0.95; }

  /// The suit the next action is scored against (card t − k's), or −1 if
  /// the next action is not scored (t < k).
  [[nodiscard]] std::int32_t answer() const noexcept {
    return t_ >= k_ ? recent_[static_cast<std::size_t>((t_ - k_) % (k_ + 1))] : -1;
  }

 private:
  space observation_space_;
  space action_space_;
  rng rng_;
  std::int64_t suits_;
  std::int64_t length_;
  std::int64_t k_;
  std::vector<std::int32_t> recent_;  // card i's suit at i mod (k + 1): cards t − k .. t
  std::int64_t t_ = 0;                // index of the next action
};

}  // namespace coral::envs
