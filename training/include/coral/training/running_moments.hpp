#pragma once
/// \file
/// Running mean and variance of vectors, and the observation normalisation
/// PPO's learner and policy share (`--obs-norm`).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace coral::training {

/// Running per-element mean and (population) variance of vectors of `width`
/// elements, in double precision.
///
/// A batch of rows is folded in with the parallel update of Chan, Golub and
/// LeVeque: the batch's own mean and variance are merged with the running
/// ones, weighted by the counts. Merging batch by batch gives the moments of
/// all the rows seen (up to rounding), whatever the batch sizes. Before any
/// row, the mean is 0 and the variance 1 (an identity normalisation).
///
/// Thread safety: none; one owner.
class running_moments {
 public:
  /// Moments of `width`-element vectors, no rows seen.
  explicit running_moments(std::size_t width);

  /// Folds in `rows` (a multiple of width() floats, row after row).
  /// Throws usage_error if the size is not a multiple of width().
  void update(std::span<const float> rows);
  /// The same for rows of doubles.
  void update(std::span<const double> rows);
  /// Folds in the moments of another set of rows (count, mean, variance).
  /// Throws usage_error if the widths differ.
  void merge(const running_moments& other);

  [[nodiscard]] std::size_t width() const noexcept { return mean_.size(); }
  /// Rows seen (a double: merged counts stay exact far beyond any run).
  [[nodiscard]] double count() const noexcept { return count_; }
  [[nodiscard]] std::span<const double> mean() const noexcept { return mean_; }
  [[nodiscard]] std::span<const double> variance() const noexcept { return variance_; }

  /// The state as doubles: count, then width means, then width variances.
  [[nodiscard]] std::vector<double> save() const;
  /// Restores save()'s output. Throws usage_error if its size is not 1 + 2 × width().
  void load(std::span<const double> state);

 private:
  template <class T>
  void update_rows(std::span<const T> rows);
  void merge(double count, std::span<const double> mean, std::span<const double> variance);

  double count_ = 0;
  std::vector<double> mean_;
  std::vector<double> variance_;
  std::vector<double> batch_mean_;      // update()'s scratch
  std::vector<double> batch_variance_;
};

/// Observations are clipped to ±this after normalisation (as in the PPO
/// implementations MuJoCo results are published with).
inline constexpr float observation_clip = 10.0f;
/// Added to the variance before its square root.
inline constexpr double normalizer_epsilon = 1e-8;

/// The normalisation the policy applies: `width` means followed by `width`
/// inverse standard deviations, as the learner publishes them after the
/// network's weights. normalize_observation() with the same block gives the
/// same floats on both sides.
[[nodiscard]] std::vector<float> normalizer_block(const running_moments& m);

/// out[i] = clamp((in[i] − mean[i]) × inv_std[i], ±observation_clip) for the
/// `block.size() / 2` elements of one row; `block` is normalizer_block()'s.
inline void normalize_observation(std::span<const float> block, const float* in, float* out) noexcept {
  const std::size_t n = block.size() / 2;
  const float* mean = block.data();
  const float* inv_std = block.data() + n;
  for (std::size_t i = 0; i < n; ++i) {
    const float z = (in[i] - mean[i]) * inv_std[i];
    out[i] = z < -observation_clip ? -observation_clip : (z > observation_clip ? observation_clip : z);
  }
}

}  // namespace coral::training
