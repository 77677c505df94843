#pragma once
/// \file
/// Error texts of coral::replay. Each is a fmt format string or a plain
/// text; tests assert them exactly. Misuse throws coral::config_error.

#include <string_view>

namespace coral::replay::messages {
/// A replay buffer asked for with capacity zero or not a multiple of its streams.
inline constexpr std::string_view bad_capacity =
    "replay_buffer: capacity {} must be a positive multiple of num_streams {}";
/// A replay buffer or assembler asked for with zero streams.
inline constexpr std::string_view zero_streams = "replay_buffer: num_streams must be at least 1";
/// A stream's share of the buffer too small to hold n + 2 slots.
inline constexpr std::string_view stream_too_small =
    "replay_buffer: each stream needs at least n_step + 2 = {} slots, has {}";
/// n-step of zero.
inline constexpr std::string_view zero_n_step = "n_step must be at least 1";
/// A discount outside [0, 1].
inline constexpr std::string_view bad_gamma = "gamma {} must be in [0, 1]";
/// A priority exponent or importance exponent outside its range.
inline constexpr std::string_view bad_exponent = "replay_buffer: {} {} must be in [0, 1]";
/// A non-positive priority epsilon.
inline constexpr std::string_view bad_epsilon = "replay_buffer: epsilon {} must be positive";
/// A stream index out of range.
inline constexpr std::string_view bad_stream = "replay_buffer: stream {} out of range (num_streams {})";
/// Sampling from a buffer with no complete transition.
inline constexpr std::string_view empty_buffer = "replay_buffer: no transition to sample";
/// Batch arrays of different lengths.
inline constexpr std::string_view size_mismatch = "replay_buffer: {} has {} elements, expected {}";
/// An inserted transition whose n-step offset does not fit the buffer's n_step.
inline constexpr std::string_view bad_steps = "replay_buffer: transition steps {} not in [1, {}]";
/// A rate limiter with a negative or zero ratio.
inline constexpr std::string_view bad_ratio = "rate_limiter: samples_per_insert {} must be positive";
/// A rate limiter whose error buffer is too small to ever allow both sides.
inline constexpr std::string_view small_error_buffer =
    "rate_limiter: error_buffer {} must be at least (samples_per_insert + 1) / 2 = {}";
}  // namespace coral::replay::messages
