#pragma once
/// \file
/// The ranks of a distributed training run as training_run sees them: bytes
/// sent to a rank with a tag, and messages polled as they arrive.
/// distributed/ implements it over MPI (`coral train --distributed` under
/// mpirun); local_transport implements it between threads of one process,
/// for tests. Torch-free and MPI-free.
///
/// Rank 0 runs the learner (and the replay actor); every other rank runs
/// env groups and a batcher with its own copy of the policy. What crosses
/// the wire, and in which order, is docs/distributed.md; the bridge actor
/// that moves it is the bridge (bridge.hpp).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace coral::distributed {

/// What a message is.
enum class wire_tag : int {
  hello = 1,  ///< sampler → learner, first: what this rank runs (checked against the learner's)
  setup,      ///< learner → sampler, answer to hello: start steps and the initial weights
  data,       ///< sampler → learner: the algorithm's items (PPO segments, replay inserts)
  episodes,   ///< sampler → learner: finished episodes and the rank's counters
  weights,    ///< learner → sampler: weights with their version
  control,    ///< learner → sampler: the algorithm's control (DQN: the insert allowance)
  stop,       ///< either way, each rank's last message: why it stops
  progress,   ///< learner → sampler, every 100 ms: the learner's steps so far
};

/// A message as it arrived.
struct wire_message {
  std::size_t from = 0;
  wire_tag tag = wire_tag::data;
  std::vector<std::byte> bytes;
};

/// The ranks. All calls come from one thread at a time (the bridge actor
/// while the runtime runs, the caller's thread before and after it).
class transport {
 public:
  virtual ~transport() = default;
  /// This process's rank: 0 is the learner.
  [[nodiscard]] virtual std::size_t rank() const = 0;
  /// Ranks in all (the learner and the samplers).
  [[nodiscard]] virtual std::size_t size() const = 0;
  /// Sends `bytes` to rank `to` without waiting; the transport keeps them
  /// until they are delivered. Messages from one rank to another arrive in
  /// the order they were sent.
  virtual void send(std::size_t to, wire_tag tag, std::vector<std::byte> bytes) = 0;
  /// Messages sent by this rank to `to` with `tag` that are not delivered yet.
  [[nodiscard]] virtual std::size_t in_flight(std::size_t to, wire_tag tag) = 0;
  /// Every message sent by this rank not delivered yet (progresses them).
  [[nodiscard]] virtual std::size_t in_flight() = 0;
  /// The next message that arrived, if any; never waits.
  [[nodiscard]] virtual std::optional<wire_message> poll() = 0;
  /// How to name rank `r` in a message ("rank 2 on host-b").
  [[nodiscard]] virtual std::string name(std::size_t r) const { return "rank " + std::to_string(r); }

 protected:
  transport() = default;
  transport(const transport&) = default;
  transport& operator=(const transport&) = default;
};

}  // namespace coral::distributed
