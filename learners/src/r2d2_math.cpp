#include "coral/learners/r2d2_math.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/errors.hpp"
#include "coral/replay/sequence.hpp"

namespace coral::learners {

namespace {

void check_r2d2_size(const char* name, std::size_t actual, std::size_t expected) {
  if (actual != expected) {
    throw config_error(fmt::format(fmt::runtime(replay::errors::r2d2_size_mismatch), name, actual, expected));
  }
}

}  // namespace

double value_rescale(double x, double eps) noexcept {
  const double u = std::abs(x);
  // sqrt(u + 1) − 1 written without the cancellation near 0.
  const double squashed = u / (std::sqrt(u + 1.0) + 1.0);
  return std::copysign(squashed, x) + eps * x;
}

double value_unrescale(double y, double eps) noexcept {
  const double u = std::abs(y);
  // With a = sqrt(1 + 4ε(u + 1 + ε)) and z = (a − 1)/(2ε), h⁻¹ = z² − 1 =
  // (z − 1)(z + 1), where z − 1 = 2u/(a + 1 + 2ε) exactly (multiply by the
  // conjugate): no difference of nearly equal numbers, and ε = 0 works too.
  const double a = std::sqrt(1.0 + 4.0 * eps * (u + 1.0 + eps));
  const double z_minus_1 = 2.0 * u / (a + 1.0 + 2.0 * eps);
  return std::copysign(z_minus_1 * (z_minus_1 + 2.0), y);
}

void nstep_sequence_targets(std::span<const float> rewards, std::span<const std::uint8_t> flags,
                            std::span<const float> bootstrap, const nstep_target_options& options,
                            std::span<float> targets, std::span<float> mask) {
  const std::size_t length = rewards.size();
  check_r2d2_size("flags", flags.size(), length);
  check_r2d2_size("bootstrap", bootstrap.size(), length + 1);
  check_r2d2_size("targets", targets.size(), length);
  check_r2d2_size("mask", mask.size(), length);
  if (options.n == 0) throw config_error(std::string(replay::errors::zero_n_step));
  if (!(options.gamma >= 0.0 && options.gamma <= 1.0)) {
    throw config_error(fmt::format(fmt::runtime(replay::errors::bad_gamma), options.gamma));
  }
  for (std::size_t t = 0; t < length; ++t) {
    if ((flags[t] & replay::slot_valid) == 0 || t < options.burn_in) {
      targets[t] = 0.0f;
      mask[t] = 0.0f;
      continue;
    }
    double n_step_return = 0.0;
    double discount = 1.0;  // γ^k after k steps summed
    bool bootstraps = true;
    std::size_t slot = t;  // the observation slot bootstrapped from
    for (std::size_t j = t;; ++j) {
      if (j - t == options.n || j == length || (flags[j] & replay::slot_valid) == 0) {
        slot = j;
        break;
      }
      n_step_return += discount * static_cast<double>(rewards[j]);
      discount *= options.gamma;
      if ((flags[j] & replay::slot_terminated) != 0) {
        bootstraps = false;
        break;
      }
      if ((flags[j] & replay::slot_truncated) != 0) {
        slot = j + 1;
        break;
      }
    }
    const double value =
        n_step_return +
        (bootstraps ? discount * value_unrescale(static_cast<double>(bootstrap[slot]), options.eps) : 0.0);
    targets[t] = static_cast<float>(value_rescale(value, options.eps));
    mask[t] = 1.0f;
  }
}

void nstep_batch_targets(std::size_t sequences, std::size_t length, std::span<const float> rewards,
                         std::span<const std::uint8_t> flags, std::span<const float> bootstrap,
                         const nstep_target_options& options, std::span<float> targets, std::span<float> mask) {
  check_r2d2_size("rewards", rewards.size(), sequences * length);
  check_r2d2_size("flags", flags.size(), sequences * length);
  check_r2d2_size("bootstrap", bootstrap.size(), sequences * (length + 1));
  check_r2d2_size("targets", targets.size(), sequences * length);
  check_r2d2_size("mask", mask.size(), sequences * length);
  for (std::size_t s = 0; s < sequences; ++s) {
    nstep_sequence_targets(rewards.subspan(s * length, length), flags.subspan(s * length, length),
                           bootstrap.subspan(s * (length + 1), length + 1), options,
                           targets.subspan(s * length, length), mask.subspan(s * length, length));
  }
}

float sequence_priority(std::span<const float> td_errors, std::span<const float> mask, double eta) {
  check_r2d2_size("mask", mask.size(), td_errors.size());
  if (!(eta >= 0.0 && eta <= 1.0)) throw config_error(fmt::format(fmt::runtime(replay::errors::bad_priority_eta), eta));
  double largest = 0.0;
  double sum = 0.0;
  std::size_t count = 0;
  for (std::size_t i = 0; i < td_errors.size(); ++i) {
    if (!(mask[i] > 0.0f)) continue;
    const double d = std::abs(static_cast<double>(td_errors[i]));
    largest = std::max(largest, d);
    sum += d;
    ++count;
  }
  if (count == 0) return 0.0f;
  return static_cast<float>(eta * largest + (1.0 - eta) * sum / static_cast<double>(count));
}

}  // namespace coral::learners
