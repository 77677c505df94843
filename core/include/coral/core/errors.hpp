#pragma once
/// \file
/// Error texts of the core layer (fmt format strings); tests assert them exactly.

#include <string_view>

namespace coral {

/// Error texts. Each is a fmt format string; tests assert them exactly.
namespace errors {
/// An actor's coroutine ended with an exception: actor name, what().
inline constexpr std::string_view actor_failed = "actor '{}' failed: {}";
/// Actors still running when the stop deadline passed: comma-separated names.
inline constexpr std::string_view stop_timeout = "actors did not stop within {} ms: {}";
/// A flag or config value outside its allowed values: flag, value, allowed.
inline constexpr std::string_view bad_value = "{}: invalid value '{}' (allowed: {})";
/// Something spawned or configured on a runtime that already ran.
inline constexpr std::string_view runtime_already_ran = "runtime: run() may be called only once";
/// Two actors spawned with the same name.
inline constexpr std::string_view duplicate_actor = "runtime: an actor named '{}' already exists";
/// A pool asked for with a thread count of zero.
inline constexpr std::string_view zero_threads = "executor '{}': thread count must be at least 1";
/// The stall watchdog fired: seconds without progress; a picture of the run follows on the next lines.
inline constexpr std::string_view run_stalled = "run stalled: nothing moved for {} s (--stall-seconds):\n";
/// The last line of a stall report when the address space is limited
/// (ulimit -v): the limit in MiB.
inline constexpr std::string_view stall_address_space =
    "  the address space is limited to {} MiB (ulimit -v): an allocation that fails under it can stall a thread "
    "rather than fail it (OpenBLAS retries its buffer forever)\n";
/// A channel made with capacity zero.
inline constexpr std::string_view zero_capacity = "channel: capacity must be at least 1";
inline constexpr std::string_view capacity_too_large = "channel: capacity must be at most 2^61 - 1";

// Why a file named by the user cannot be read (coral/core/input_file.hpp);
// each caller's own message says which file and what it was for.
/// Nothing at the path.
inline constexpr std::string_view input_missing = "no such file";
/// A directory, FIFO, socket or device: what it is.
inline constexpr std::string_view input_not_regular = "not a regular file ({})";
/// Larger than the caller's bound: its size, the bound.
inline constexpr std::string_view input_too_large = "{} bytes, larger than the {} bytes allowed";
/// The file ended before a read the caller asked for: bytes asked, the position, the file's size.
inline constexpr std::string_view input_short = "ends early: {} bytes asked at byte {} of {}";
}  // namespace errors

}  // namespace coral
