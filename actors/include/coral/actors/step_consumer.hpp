#pragma once
/// \file
/// Whoever consumes the steps the batcher produces (a rollout assembler, a
/// replay inserter, a test that counts).

#include <cstdint>
#include <span>

#include "coral/actors/messages.hpp"
#include "coral/envs/env_batch.hpp"

namespace coral::actors {

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
  /// Whether consume() may run on several threads at once for disjoint rows
  /// (a sampler of several shards: one batcher per shard, each with its own
  /// batch_index count). False unless a consumer says otherwise.
  [[nodiscard]] virtual bool consumes_concurrently() const noexcept { return false; }

 protected:
  step_consumer() = default;
  step_consumer(const step_consumer&) = default;
  step_consumer& operator=(const step_consumer&) = default;
};

}  // namespace coral::actors
