#pragma once
/// \file
/// `nstep_assembler`: turns one env stream's steps into n-step transitions
/// before they reach the replay buffer.
///
/// It keeps the last n steps of the stream (observation, action, reward).
/// Within an episode, each push after the first n − 1 emits the transition
/// that started n steps ago. When a step ends the episode, every held step is
/// emitted at once (oldest first) with the rewards that remain, k < n or = n,
/// bootstrapping from the final observation; the last one has
/// last_of_episode set. terminated sets discount 0; truncated keeps γ^k.
///
/// Thread safety: none; one assembler per env stream, used by one actor.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "coral/core/slab.hpp"
#include "coral/replay/transition.hpp"

namespace coral::replay {

/// Settings of an nstep_assembler.
struct nstep_config {
  std::size_t obs_dim = 0;                ///< floats per observation
  std::size_t discrete_action_dim = 1;    ///< int32 per action
  std::size_t continuous_action_dim = 0;  ///< floats per action
  std::size_t n_step = 1;                 ///< n, at least 1
  double gamma = 0.99;                    ///< discount, in [0, 1]
  std::size_t mask_dim = 0;               ///< bytes per action mask (0: the env does not mask)
};

/// Assembles n-step transitions for one env stream.
class nstep_assembler {
 public:
  /// Allocates its history; throws coral::config_error (errors::zero_n_step,
  /// errors::bad_gamma).
  explicit nstep_assembler(const nstep_config& config);

  /// Records step t: o_t and a_t, then r_t, whether the episode terminated or
  /// was truncated at this step, and o_{t+1} (the final observation when it
  /// ended). With a mask_dim, `action_mask` is the mask a_t was chosen under
  /// and `next_action_mask` the legal actions at o_{t+1}; the transitions
  /// carry them as the masks of their observation and bootstrap
  /// observation. Returns the transitions this step completes, oldest
  /// first; the views stay valid until the next push or clear. Span sizes
  /// are the config's widths (unchecked). Allocates nothing.
  std::span<const transition> push(std::span<const float> observation, std::span<const std::int32_t> discrete_action,
                                   std::span<const float> continuous_action, float reward, bool terminated,
                                   bool truncated, std::span<const float> next_observation,
                                   std::span<const std::uint8_t> action_mask = {},
                                   std::span<const std::uint8_t> next_action_mask = {});

  /// Drops the held steps without emitting them.
  void clear() noexcept { count_ = 0; }

  /// Steps held, waiting for later rewards.
  [[nodiscard]] std::size_t pending() const noexcept { return count_; }

 private:
  void emit(std::size_t index, std::size_t steps_left, bool terminated, bool last);

  nstep_config config_;
  slab<float> observations_;   // ring of n rows
  slab<std::int32_t> discrete_;
  slab<float> continuous_;
  slab<std::uint8_t> masks_;   // ring of n rows (mask_dim bytes; none without masks)
  std::vector<float> rewards_;
  slab<float> next_observation_;  // 1 row: the latest o_{t+1}
  slab<std::uint8_t> next_mask_;  // 1 row: its mask
  std::vector<double> gamma_powers_;  // γ^0 .. γ^n
  std::vector<transition> out_;
  std::size_t first_ = 0;  // ring index of the oldest held step
  std::size_t count_ = 0;
};

}  // namespace coral::replay
