#pragma once
/// \file
/// `rate_limiter`: Reverb's SampleToInsertRatio, as pure bookkeeping.
///
/// It keeps the number of samples per insert near a target: with
/// diff = inserts × samples_per_insert − samples, every insert adds
/// samples_per_insert to diff and every sampled item subtracts 1. Once
/// min_size_to_sample items were inserted, diff stays within
/// [offset − error_buffer, offset + error_buffer], offset =
/// samples_per_insert × min_size_to_sample: inserts are refused where diff would
/// rise above the window (the learner is behind), samples where it would fall
/// below (the actors are behind). Before min_size_to_sample inserts, inserts
/// are always allowed and samples never.
///
/// The replay actor asks can_insert / can_sample before serving a request and
/// records what it served; waiting is the actor's business, not this object's.
///
/// Thread safety: none; owned by the replay actor.

#include <cstdint>

namespace coral::replay {

/// Settings of a rate_limiter.
struct rate_limiter_config {
  double samples_per_insert = 1.0;        ///< target samples per inserted item (> 0)
  std::uint64_t min_size_to_sample = 1;   ///< inserts before the first sample is allowed
  double error_buffer = 1.0;              ///< half-width of the allowed diff window, >= (samples_per_insert + 1) / 2
};

/// Samples-to-insert ratio limiter (Reverb's SampleToInsertRatio).
class rate_limiter {
 public:
  /// Checks the config; throws coral::config_error (errors::bad_ratio,
  /// errors::small_error_buffer). A window narrower than
  /// samples_per_insert + 1 could refuse both an insert and a sample at once.
  explicit rate_limiter(const rate_limiter_config& config);

  /// Whether inserting n more items keeps diff within the window (always true
  /// while the buffer would stay at or below min_size_to_sample).
  [[nodiscard]] bool can_insert(std::uint64_t n = 1) const noexcept;
  /// Whether sampling n more items keeps diff within the window (false until
  /// min_size_to_sample items were inserted).
  [[nodiscard]] bool can_sample(std::uint64_t n = 1) const noexcept;

  /// Records n inserted items (whether or not can_insert allowed them).
  void record_insert(std::uint64_t n = 1) noexcept { inserts_ += n; }
  /// Records n sampled items (whether or not can_sample allowed them).
  void record_sample(std::uint64_t n = 1) noexcept { samples_ += n; }

  /// Items inserted so far.
  [[nodiscard]] std::uint64_t inserts() const noexcept { return inserts_; }
  /// Items sampled so far.
  [[nodiscard]] std::uint64_t samples() const noexcept { return samples_; }
  /// inserts × samples_per_insert − samples.
  [[nodiscard]] double diff() const noexcept;
  /// Lower edge of the allowed diff window.
  [[nodiscard]] double min_diff() const noexcept { return min_diff_; }
  /// Upper edge of the allowed diff window.
  [[nodiscard]] double max_diff() const noexcept { return max_diff_; }

 private:
  rate_limiter_config config_;
  double min_diff_;
  double max_diff_;
  std::uint64_t inserts_ = 0;
  std::uint64_t samples_ = 0;
};

}  // namespace coral::replay
