#pragma once
/// \file
/// A checkpoint directory: the checkpoints of one run (one identity: env,
/// algo, network, seed), named by their env steps, pruned to the newest few.
/// Which is newest is decided by the env steps recorded inside each file,
/// never by its name.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coral/training/checkpoint.hpp"

namespace coral::training {

/// `dir/checkpoint-<env steps, 12 digits>.ckpt`.
[[nodiscard]] std::filesystem::path checkpoint_path(const std::filesystem::path& dir, std::uint64_t env_steps);

/// Whether `name` (a file name) is named like a checkpoint: `checkpoint-*.ckpt`.
[[nodiscard]] bool is_checkpoint_name(std::string_view name) noexcept;

/// A checkpoint found in a directory.
struct listed_checkpoint {
  std::filesystem::path file;
  checkpoint_id id;
};

/// Something named like a checkpoint that is not a readable one.
struct skipped_checkpoint {
  std::filesystem::path file;
  std::string why;            ///< a errors::checkpoint_* text
  bool regular_file = false;  ///< false: a directory or other non-file
};

/// What a checkpoint directory holds.
struct checkpoint_listing {
  std::vector<listed_checkpoint> checkpoints;  ///< most recorded env steps first (ties: greater name first)
  std::vector<skipped_checkpoint> skipped;     ///< greater name first
};

/// Every name like a checkpoint's in `dir`, each peeked (peek_checkpoint());
/// directories and files that do not peek are listed as skipped, never thrown.
/// An absent or unreadable directory lists nothing.
[[nodiscard]] checkpoint_listing list_checkpoints(const std::filesystem::path& dir);

/// The checkpoint in `dir` with the most env steps recorded inside it, if any.
[[nodiscard]] std::optional<std::filesystem::path> newest_checkpoint(const std::filesystem::path& dir);

/// Writes `c` into `dir` as checkpoint_path(dir, its env steps) and prunes.
/// That name is overwritten only when it holds an older (or as old) checkpoint
/// of the same run; anything else there (a newer checkpoint, another run's,
/// an unreadable file, a directory) is kept, and `c` goes to
/// `checkpoint-<steps>-<k>.ckpt` with the first free k instead. Then, when
/// `keep` is not 0, every checkpoint of the same run but the `keep` with the
/// most env steps (and the file just written) is removed; other runs' files
/// and unreadable ones are never touched. Returns the file written; throws
/// checkpoint_error (errors::checkpoint_io) if it cannot write.
std::filesystem::path save_checkpoint(const std::filesystem::path& dir, const checkpoint& c, std::size_t keep);

/// Removes the `checkpoint-*.ckpt.tmp` files in `dir` that writes killed
/// before their rename left behind; returns how many.
std::size_t remove_stale_temporaries(const std::filesystem::path& dir);

}  // namespace coral::training
