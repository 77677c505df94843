#pragma once
/// \file
/// The arithmetic of R2D2's loss, torch-free: the invertible value
/// rescaling, n-step double-Q targets over one padded sequence
/// (sequence.hpp's layout), and the sequence priority. The R2D2 learner
/// calls these per batch on CPU after computing its Q values; they are the
/// reference the tests check by hand.
///
/// All arithmetic is done in double; arrays are float as the batches hold
/// them.

#include <cstddef>
#include <cstdint>
#include <span>

namespace coral::learners {

/// The rescaling ε of the R2D2 paper.
inline constexpr double default_rescale_epsilon = 1e-3;
/// The priority mix η of the R2D2 paper.
inline constexpr double default_priority_eta = 0.9;

/// h(x) = sign(x)·(sqrt(|x| + 1) − 1) + ε·x: squashes returns so that one
/// network fits values of very different scales. Odd, strictly increasing
/// for ε > 0, h(0) = 0.
[[nodiscard]] double value_rescale(double x, double eps = default_rescale_epsilon) noexcept;

/// h⁻¹(y), the exact inverse of value_rescale() for ε > 0:
/// sign(y)·(((sqrt(1 + 4ε(|y| + 1 + ε)) − 1) / (2ε))² − 1), evaluated in a
/// form without cancellation, so that tiny |y| keep their relative precision.
[[nodiscard]] double value_unrescale(double y, double eps = default_rescale_epsilon) noexcept;

/// What the n-step targets of a sequence depend on besides its arrays.
struct nstep_target_options {
  double gamma = 0.997;                  ///< discount per step, in [0, 1]
  std::size_t n = 5;                     ///< steps summed at most (`--n-step`), ≥ 1
  double eps = default_rescale_epsilon;  ///< ε of h and h⁻¹
  std::size_t burn_in = 0;               ///< leading slots that get no target (mask 0)
};

/// n-step double-Q targets over one sequence of L = rewards.size() slots.
///
/// Inputs: the sequence's `rewards` [L] and `flags` [L] (sequence_flag bits),
/// and `bootstrap` [L + 1]: at observation slot j, the target network's Q of
/// the action the online network ranks best at slot j, in rescaled space
/// (as the networks output it).
///
/// Outputs: `mask` [L] is 1 where slot t is valid (slot_valid) and
/// t ≥ burn_in, else 0; `targets` [L] holds the target where the mask is 1
/// and 0 elsewhere. For such a t, the window is slots t, t+1, ...: it
/// stops after the first of these that happens:
/// - it holds n slots: k = n, bootstrap at observation slot t + n;
/// - it holds a step that ended its episode, at slot e: k = e + 1 − t; if
///   the step is terminated (slot_terminated, which wins when both flags
///   are set) there is no bootstrap; if truncated, bootstrap at observation
///   slot e + 1 (where a truncated episode's final observation is stored);
/// - it reaches the end of the sequence's steps at slot j (j = L, or a
///   padding slot not preceded by an end, which well-formed sequences do
///   not have) without the episode ending: k = j − t, bootstrap at
///   observation slot j.
///
/// Then R = Σ_{i<k} γ^i·r_{t+i} and
/// target = h(R + γ^k·h⁻¹(bootstrap[slot])), or h(R) without bootstrap.
///
/// Throws config_error when the sizes do not match (flags, targets and mask
/// L, bootstrap L + 1), n is 0 or γ is outside [0, 1].
void nstep_sequence_targets(std::span<const float> rewards, std::span<const std::uint8_t> flags,
                            std::span<const float> bootstrap, const nstep_target_options& options,
                            std::span<float> targets, std::span<float> mask);

/// nstep_sequence_targets() over `sequences` sequences of `length` slots
/// laid out one after another (as in sequence_batch: rewards, flags,
/// targets and mask sequences × length; bootstrap sequences × (length + 1)).
/// Throws config_error when a size does not match.
void nstep_batch_targets(std::size_t sequences, std::size_t length, std::span<const float> rewards,
                         std::span<const std::uint8_t> flags, std::span<const float> bootstrap,
                         const nstep_target_options& options, std::span<float> targets, std::span<float> mask);

/// The priority of a sequence from its TD errors: η·max|δ| + (1 − η)·mean|δ|
/// over the slots where mask > 0 (the sign of δ is ignored). A sequence
/// with no such slot (all masked) gets priority 0. Throws config_error when
/// the sizes differ or η is outside [0, 1].
[[nodiscard]] float sequence_priority(std::span<const float> td_errors, std::span<const float> mask,
                                      double eta = default_priority_eta);

}  // namespace coral::learners
