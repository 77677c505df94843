#pragma once
/// \file
/// Checkpoints: a learner's state with the run's counters, in a file that
/// refuses to load when truncated or corrupted.
///
/// Format (little-endian, as the machine writes it):
///
///     magic "CORALCKP" (8 bytes) | format version u32 | payload size u64 |
///     FNV-1a 64 of the payload u64 | payload
///
/// The payload is a sequence of records `name length u32 | name | size u64 |
/// bytes`. Format 2 adds the records `algo`, `target_parameters` and `replay`
/// (the replay buffer, so that a resumed DQN run continues with the same
/// data); format 1 files are still read, as PPO. Writing goes to `<file>.tmp`, which is flushed and then renamed
/// over `<file>`: a crash leaves the old checkpoint or the new one, never a
/// mix.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "coral/core/error.hpp"
#include "coral/learners/ppo_learner.hpp"

namespace coral::learners {

/// A checkpoint that cannot be used; what() is one of messages::checkpoint_*.
class checkpoint_error : public coral::error {
 public:
  using coral::error::error;
};

/// What a checkpoint holds.
struct checkpoint {
  std::string env;        ///< env name, checked on resume
  std::string network;    ///< network signature (network_signature()), checked on resume
  std::uint64_t seed = 0;
  learner_state learner;  ///< weights, optimiser, counters, generator state
  std::string algo = "ppo";               ///< the algorithm that wrote it (format 1: always ppo)
  std::vector<float> target_parameters;   ///< DQN's target network; empty for PPO
  std::vector<char> replay;               ///< the replay actor's saved state; empty for PPO
};

/// Current format version.
inline constexpr std::uint32_t checkpoint_format_version = 2;
/// The oldest format version read_checkpoint() still reads (PPO-only files).
inline constexpr std::uint32_t checkpoint_oldest_version = 1;

/// A text that identifies the parameter layout of `spec`.
[[nodiscard]] std::string network_signature(const network_spec& spec);

/// Writes `c` to `file` atomically (temporary file, then rename). Throws
/// checkpoint_error (messages::checkpoint_io) if it cannot.
void write_checkpoint(const std::filesystem::path& file, const checkpoint& c);

/// Reads and verifies `file`. Throws checkpoint_error with
/// messages::checkpoint_truncated, checkpoint_not_coral, checkpoint_version,
/// checkpoint_corrupted, checkpoint_bad_record or checkpoint_io.
[[nodiscard]] checkpoint read_checkpoint(const std::filesystem::path& file);

/// `dir/checkpoint-<env steps, 12 digits>.ckpt`.
[[nodiscard]] std::filesystem::path checkpoint_path(const std::filesystem::path& dir, std::uint64_t env_steps);

/// The checkpoint in `dir` with the most env steps, if any.
[[nodiscard]] std::optional<std::filesystem::path> newest_checkpoint(const std::filesystem::path& dir);

/// FNV-1a 64 of `bytes`.
[[nodiscard]] std::uint64_t fnv1a64(const void* bytes, std::size_t size) noexcept;

}  // namespace coral::learners
