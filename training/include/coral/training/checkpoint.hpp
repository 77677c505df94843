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
/// data); format 3 adds `observation_moments` and `reward_scaling` (PPO's
/// `--obs-norm` and `--reward-scale` state, doubles; empty when off). Format
/// 1 and 2 files are still read, as runs without those flags (a run with
/// them refuses such a file: its network signature or state does not match).
/// Format 4 writes an algorithm's own records (checkpoint::records) only
/// when it has them, so a run without a target network or replay writes no
/// empty `target_parameters` or `replay`; the records of older files that
/// are not common ones are read as algorithm records. A training run also
/// writes the record `run_settings` (checkpoint_settings.hpp: the env args,
/// network and algorithm settings that rebuild its policy outside the run);
/// it is an ordinary record, so files without it still read. Writing goes to `<file>.tmp`,
/// which is flushed, synced to disk and then renamed over `<file>` (the
/// directory is synced too): a crash leaves the old checkpoint or the new one,
/// never a mix, and at worst a `.tmp` that remove_stale_temporaries() clears.
///
/// A checkpoint directory (checkpoint_dir.hpp) holds the checkpoints of one
/// run.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "coral/core/error.hpp"
#include "coral/training/learner_state.hpp"

namespace coral::training {

/// A checkpoint that cannot be used; what() is one of errors::checkpoint_*.
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
  /// The algorithm's own records (a target network, a replay's state, ...),
  /// by name, in the order written; the file keeps them as they are.
  std::vector<std::pair<std::string, std::vector<char>>> records;

  /// Sets record `name` to `bytes`. Throws usage_error for a name that a
  /// common record has (env, network, seed, the learner's, algo).
  void set_record(std::string name, std::vector<char> bytes);
  /// Sets record `name` to the floats `values`.
  void set_floats(std::string name, std::span<const float> values);
  /// Record `name`, or null when the checkpoint has none.
  [[nodiscard]] const std::vector<char>* record(std::string_view name) const noexcept;
  /// Record `name` read as floats: empty when absent; checkpoint_error
  /// (errors::checkpoint_bad_record, naming `file`) when its size is not a
  /// whole number of floats.
  [[nodiscard]] std::vector<float> floats(std::string_view name, std::string_view file = "") const;
};

/// Who wrote a checkpoint and how far it got: what tells one run's
/// checkpoints from another's, and the newest from the oldest.
struct checkpoint_id {
  std::string env;
  std::string network;
  std::string algo = "ppo";
  std::uint64_t seed = 0;
  std::uint64_t env_steps = 0;
  /// Whether `other` is a checkpoint of the same run (every field but env_steps agrees).
  [[nodiscard]] bool same_run(const checkpoint_id& other) const noexcept {
    return env == other.env && network == other.network && algo == other.algo && seed == other.seed;
  }
};

/// The identity of `c`.
[[nodiscard]] checkpoint_id id_of(const checkpoint& c);

/// Current format version.
inline constexpr std::uint32_t checkpoint_format_version = 4;
/// The oldest format version read_checkpoint() still reads (PPO-only files).
inline constexpr std::uint32_t checkpoint_oldest_version = 1;

/// Writes `c` to `file` atomically: to `<file>.tmp`, synced, renamed over
/// `file`, then the directory synced. Overwrites whatever `file` holds (see
/// save_checkpoint() for the checks a run makes first). Throws
/// checkpoint_error (errors::checkpoint_io) if it cannot.
void write_checkpoint(const std::filesystem::path& file, const checkpoint& c);

/// The largest checkpoint file read (a replay record can make one large).
inline constexpr std::uint64_t max_checkpoint_bytes = std::uint64_t{1} << 40;
/// The largest counter (updates, env steps, Adam steps) a checkpoint may
/// hold: 2^53, the largest whole number a double (and the final JSON line)
/// holds exactly, far beyond any run and far from wrapping.
inline constexpr std::uint64_t max_checkpoint_count = std::uint64_t{1} << 53;

/// Reads and verifies `file`: a regular file (coral/core/input_file.hpp),
/// its header, every record's length against the file's size before
/// anything is allocated, then its checksum (read in chunks), then its
/// records, each allocated once at its size. Counters above
/// max_checkpoint_count and non-finite weights, Adam moments and
/// normalisation statistics are refused. Throws checkpoint_error with
/// errors::checkpoint_truncated, checkpoint_not_coral, checkpoint_version,
/// checkpoint_corrupted, checkpoint_bad_record, checkpoint_count_too_large,
/// checkpoint_not_finite, checkpoint_no_memory (an allocation failed),
/// checkpoint_not_a_file or checkpoint_io.
[[nodiscard]] checkpoint read_checkpoint(const std::filesystem::path& file);

/// Reads the identity records of `file` (env, network, algo, seed, env steps)
/// and seeks past the others, so that it is cheap on a checkpoint of any size.
/// Checks the header (magic, version, size) and the record framing but not
/// the checksum: read_checkpoint() verifies a file before it is used. Throws
/// checkpoint_error as read_checkpoint() does.
[[nodiscard]] checkpoint_id peek_checkpoint(const std::filesystem::path& file);

/// FNV-1a 64 of `bytes`.
[[nodiscard]] std::uint64_t fnv1a64(const void* bytes, std::size_t size) noexcept;

}  // namespace coral::training
