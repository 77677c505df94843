#include "coral/training/running_moments.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/training/reward_scaler.hpp"

namespace coral::training {

running_moments::running_moments(std::size_t width)
    : mean_(width, 0.0), variance_(width, 1.0), batch_mean_(width), batch_variance_(width) {}

template <class T>
void running_moments::update_rows(std::span<const T> rows) {
  const std::size_t w = width();
  if (w == 0 || rows.size() % w != 0) {
    throw usage_error(fmt::format("running_moments: {} values are not rows of {}", rows.size(), w));
  }
  const std::size_t n = rows.size() / w;
  if (n == 0) return;
  std::fill(batch_mean_.begin(), batch_mean_.end(), 0.0);
  std::fill(batch_variance_.begin(), batch_variance_.end(), 0.0);
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < w; ++i) batch_mean_[i] += static_cast<double>(rows[r * w + i]);
  }
  for (auto& m : batch_mean_) m /= static_cast<double>(n);
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < w; ++i) {
      const double d = static_cast<double>(rows[r * w + i]) - batch_mean_[i];
      batch_variance_[i] += d * d;
    }
  }
  for (auto& v : batch_variance_) v /= static_cast<double>(n);
  merge(static_cast<double>(n), batch_mean_, batch_variance_);
}

void running_moments::update(std::span<const float> rows) { update_rows(rows); }
void running_moments::update(std::span<const double> rows) { update_rows(rows); }

void running_moments::merge(const running_moments& other) {
  if (other.width() != width()) {
    throw usage_error(fmt::format("running_moments: merging width {} into width {}", other.width(), width()));
  }
  if (other.count_ > 0) merge(other.count_, other.mean_, other.variance_);
}

void running_moments::merge(double n, std::span<const double> mean, std::span<const double> variance) {
  if (count_ == 0) {  // the first rows replace the identity's placeholder moments
    std::copy(mean.begin(), mean.end(), mean_.begin());
    std::copy(variance.begin(), variance.end(), variance_.begin());
    count_ = n;
    return;
  }
  const double total = count_ + n;
  for (std::size_t i = 0; i < width(); ++i) {
    const double delta = mean[i] - mean_[i];
    const double m2 = variance_[i] * count_ + variance[i] * n + delta * delta * count_ * n / total;
    mean_[i] += delta * n / total;
    variance_[i] = m2 / total;
  }
  count_ = total;
}

std::vector<double> running_moments::save() const {
  std::vector<double> out;
  out.reserve(1 + 2 * width());
  out.push_back(count_);
  out.insert(out.end(), mean_.begin(), mean_.end());
  out.insert(out.end(), variance_.begin(), variance_.end());
  return out;
}

void running_moments::load(std::span<const double> state) {
  const std::size_t w = width();
  if (state.size() != 1 + 2 * w) {
    throw usage_error(fmt::format("running_moments: a state of {} values, expected {}", state.size(), 1 + 2 * w));
  }
  count_ = state[0];
  std::copy_n(state.begin() + 1, w, mean_.begin());
  std::copy_n(state.begin() + 1 + static_cast<std::ptrdiff_t>(w), w, variance_.begin());
}

std::vector<float> normalizer_block(const running_moments& m) {
  const std::size_t w = m.width();
  std::vector<float> block(2 * w);
  for (std::size_t i = 0; i < w; ++i) {
    block[i] = static_cast<float>(m.mean()[i]);
    block[w + i] = static_cast<float>(1.0 / std::sqrt(m.variance()[i] + normalizer_epsilon));
  }
  return block;
}

// ---------------------------------------------------------------------------

reward_scaler::reward_scaler(double gamma) : gamma_(gamma) {}

void reward_scaler::scale(std::span<float> rewards, std::span<const std::uint8_t> terminated,
                          std::span<const std::uint8_t> truncated, std::size_t rows, std::size_t horizon) {
  const std::size_t n = rows * horizon;
  if (rewards.size() != n || terminated.size() != n || truncated.size() != n) {
    throw usage_error(fmt::format("reward_scaler: {} rewards for {} rows of {} steps", rewards.size(), rows, horizon));
  }
  if (returns_.size() != rows) returns_.assign(rows, 0.0);
  step_returns_.resize(rows);
  for (std::size_t t = 0; t < horizon; ++t) {
    for (std::size_t r = 0; r < rows; ++r) {
      returns_[r] = gamma_ * returns_[r] + static_cast<double>(rewards[r * horizon + t]);
      step_returns_[r] = returns_[r];
    }
    moments_.update(std::span<const double>(step_returns_));
    const double inv_std = 1.0 / std::sqrt(moments_.variance()[0] + normalizer_epsilon);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t i = r * horizon + t;
      const auto scaled = static_cast<float>(static_cast<double>(rewards[i]) * inv_std);
      rewards[i] = std::clamp(scaled, -reward_clip, reward_clip);
      if (terminated[i] != 0 || truncated[i] != 0) returns_[r] = 0.0;
    }
  }
}

std::vector<double> reward_scaler::save() const {
  auto out = moments_.save();
  out.insert(out.end(), returns_.begin(), returns_.end());
  return out;
}

void reward_scaler::load(std::span<const double> state) {
  const std::size_t m = moments_.save().size();
  if (state.size() < m) {
    throw usage_error(fmt::format("reward_scaler: a state of {} values, expected at least {}", state.size(), m));
  }
  moments_.load(state.first(m));
  returns_.assign(state.begin() + static_cast<std::ptrdiff_t>(m), state.end());
}

}  // namespace coral::training
