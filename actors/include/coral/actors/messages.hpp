#pragma once
/// \file
/// The messages of the sampling side: what env groups announce, what a gate
/// is told, and the step the batcher hands its consumer.

#include <cstdint>
#include <span>
#include <variant>

#include "coral/envs/env_batch.hpp"

namespace coral::actors {

/// Rows [first, first + count) of an env_batch.
struct row_range {
  std::uint32_t first = 0;
  std::uint32_t count = 0;
  friend bool operator==(const row_range&, const row_range&) = default;
};

/// "Group `group` has stepped (or reset) and its rows are ready."
struct ready_msg {
  std::uint32_t group = 0;
};

/// "The learner published new weights (`version`)": groups a gate holds for
/// fresher weights may move on.
struct weights_published {
  std::uint64_t version = 0;
};

/// "The replay raised its insert allowance": groups a gate holds for the
/// rate limiter may move on.
struct allowance_raised {};

/// What a gate receives: env groups' ready announcements and the notes that
/// may let held groups move on (see gate.hpp).
using gate_msg = std::variant<ready_msg, weights_published, allowance_raised>;

/// One batch as the batcher hands it on, after the policy acted.
///
/// For every row in `ranges`, the batch rows hold: the reward, terminated,
/// truncated, final observation and episode totals of the step the group
/// just took (see env_slice.hpp), the observation the policy just saw, and
/// the action it chose from it (with its log probability and value when the
/// policy provides them). Rows of a group's first batch hold reset data.
struct step_batch {
  const envs::env_batch& batch;
  std::span<const row_range> ranges;  ///< sorted by first row
  std::span<const float> log_probs = {};  ///< one per batch row, or empty
  std::span<const float> values = {};     ///< one per batch row, or empty
  std::uint64_t policy_version = 0;   ///< version of the weights that chose the actions
  std::uint64_t batch_index = 0;      ///< 0, 1, 2, ... per batcher
};

}  // namespace coral::actors
