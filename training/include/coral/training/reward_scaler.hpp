#pragma once
/// \file
/// Reward scaling by a running standard deviation of the discounted return
/// (`--reward-scale`), as PPO's MuJoCo results are published with.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "coral/training/running_moments.hpp"

namespace coral::training {

/// Scaled rewards are clipped to ±this.
inline constexpr float reward_clip = 10.0f;

/// Divides rewards by the running standard deviation of each row's
/// discounted return.
///
/// Per batch row it keeps G ← γ·G + r, step by step; after each step it
/// folds that step's G of every row into running moments (one batch per
/// step, as a vector env's wrapper does) and divides the step's rewards by
/// √(variance + ε), clipped to ±reward_clip. A row's G restarts at 0 after
/// a step that ended its episode (terminated or truncated). The mean is not
/// subtracted: the sign of a reward is kept. It changes only the rewards the
/// learner trains on; episode returns are reported unscaled.
///
/// Thread safety: none; one owner (the learner).
class reward_scaler {
 public:
  /// A scaler for discount `gamma`.
  explicit reward_scaler(double gamma);

  /// Scales `rewards` of a segment in place: `rows` rows of `horizon` steps,
  /// element (r, t) at r × horizon + t, with the step's episode-end flags
  /// (the same layout). Rows carry their return over from the last call;
  /// a call with another row count starts every row's return at 0.
  void scale(std::span<float> rewards, std::span<const std::uint8_t> terminated,
             std::span<const std::uint8_t> truncated, std::size_t rows, std::size_t horizon);

  /// Moments of the discounted returns seen.
  [[nodiscard]] const running_moments& moments() const noexcept { return moments_; }
  /// Each row's discounted return so far.
  [[nodiscard]] std::span<const double> returns() const noexcept { return returns_; }

  /// The state as doubles: the moments' save(), then each row's return.
  [[nodiscard]] std::vector<double> save() const;
  /// Restores save()'s output. Throws usage_error if it is shorter than the moments' state.
  void load(std::span<const double> state);

 private:
  double gamma_;
  running_moments moments_{1};
  std::vector<double> returns_;
  std::vector<double> step_returns_;  // scratch: one step's returns
};

}  // namespace coral::training
