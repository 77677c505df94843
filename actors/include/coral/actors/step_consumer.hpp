#pragma once
/// \file
/// Whoever consumes the steps the batcher produces (a rollout assembler, a
/// replay inserter, a test that counts).

#include <cstdint>
#include <span>

#include "coral/actors/policy.hpp"
#include "coral/envs/env_batch.hpp"

namespace coral::actors {

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

/// Consumes steps. consume() runs on the batcher's executor, between acting
/// and sending the actions back, so the rows cannot change under it; it must
/// copy what it keeps and should be quick (it is on the sampling path).
/// Handing steps over by a synchronous call rather than a message is
/// deliberate: a message would need a copy of every row, or rows that stay
/// frozen until some other actor is done with them.
class step_consumer {
 public:
  virtual ~step_consumer() = default;
  virtual void consume(const step_batch& step) = 0;

 protected:
  step_consumer() = default;
  step_consumer(const step_consumer&) = default;
  step_consumer& operator=(const step_consumer&) = default;
};

}  // namespace coral::actors
