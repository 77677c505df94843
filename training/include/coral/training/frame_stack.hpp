#pragma once
/// \file
/// Frame stacking: the last F observations of each row, oldest first, as one
/// input row. The policy and the rollout assembler each keep one over the
/// same rows and feed it the same observations, so the stacked inputs the
/// learner trains on are those the policy acted on.

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

namespace coral::training {

/// Per-row history of the last `frames` observations.
///
/// push(row, obs) shifts the row's history by one observation and appends
/// `obs`; restart(row) clears it to zeros (a new episode). With frames = 1
/// the stacked row is the observation itself.
///
/// Thread safety: none; one owner.
class frame_stack {
 public:
  frame_stack(std::size_t rows, std::size_t obs_dim, std::size_t frames)
      : obs_dim_(obs_dim), frames_(frames), data_(rows * obs_dim * frames, 0.0f) {}

  /// Forgets row `row`'s history (zeros).
  void restart(std::size_t row) noexcept {
    auto h = mutable_row(row);
    std::fill(h.begin(), h.end(), 0.0f);
  }
  /// Appends `obs` (obs_dim floats) to row `row`'s history.
  void push(std::size_t row, std::span<const float> obs) noexcept {
    auto h = mutable_row(row);
    if (frames_ > 1) std::copy(h.begin() + static_cast<std::ptrdiff_t>(obs_dim_), h.end(), h.begin());
    std::copy(obs.begin(), obs.end(), h.end() - static_cast<std::ptrdiff_t>(obs_dim_));
  }
  /// Row `row`'s stacked input: frames × obs_dim floats, oldest first.
  [[nodiscard]] std::span<const float> row(std::size_t row) const noexcept {
    return {data_.data() + row * width(), width()};
  }
  /// The stacked row that `obs` would make, written to `out` without changing the history.
  void peek(std::size_t row, std::span<const float> obs, std::span<float> out) const noexcept {
    auto h = this->row(row);
    if (frames_ > 1) std::copy(h.begin() + static_cast<std::ptrdiff_t>(obs_dim_), h.end(), out.begin());
    std::copy(obs.begin(), obs.end(), out.end() - static_cast<std::ptrdiff_t>(obs_dim_));
  }
  /// frames × obs_dim.
  [[nodiscard]] std::size_t width() const noexcept { return obs_dim_ * frames_; }

 private:
  std::span<float> mutable_row(std::size_t row) noexcept { return {data_.data() + row * width(), width()}; }

  std::size_t obs_dim_;
  std::size_t frames_;
  std::vector<float> data_;
};

}  // namespace coral::training
