#pragma once
/// \file
/// How a distributed run plugs into the training composition: the ranks this
/// process takes part in (remote_ranks, set as train_options::remote) and
/// the link between them that runs beside the actors (remote_link).
/// distributed/ implements both over a transport (the bridge actor); the
/// composition knows only these interfaces.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <asio/awaitable.hpp>

#include "coral/core/runtime.hpp"

namespace coral::training {

class algorithm;
class training_run;
struct train_options;

/// Why a rank stops (its last message).
enum class stop_reason : std::uint8_t {
  ended = 0,        ///< its part is done (its steps, or the target return was reached)
  interrupted = 1,  ///< a signal, or the caller
  failed = 2,       ///< an error (the text says which)
};

/// What every rank must agree on, as (what, value) pairs, checked at the handshake.
using fingerprint = std::vector<std::pair<std::string, std::string>>;

/// The learner's start, as a sampler receives it.
struct run_start {
  std::uint64_t start_steps = 0;
  std::uint64_t version = 0;
  std::vector<float> weights;
};

/// The link of one rank to the others during a run. The composition calls,
/// in order: a handshake, run() as an actor, the per-run calls, then close().
///
/// Thread safety: published() from the learner's thread, episode() from
/// any thread; the rest from the thread that runs the composition or the
/// link's own actor, one at a time.
class remote_link {
 public:
  virtual ~remote_link() = default;
  /// On the learner: waits for every sampler's hello, checks it against
  /// `mine` (config_error naming the rank and what differs, sent to the
  /// samplers too) and sends each `start`.
  virtual void handshake_learner(const fingerprint& mine, const run_start& start) = 0;
  /// On a sampler: sends `mine`, waits for the learner's start (config_error
  /// with the learner's text if it refused, error if it stays silent).
  [[nodiscard]] virtual run_start handshake_sampler(const fingerprint& mine) = 0;
  /// The actor: runs until the runtime stops.
  [[nodiscard]] virtual asio::awaitable<void> run(runtime& rt) = 0;
  /// After the runtime: sends this rank's stop and waits for the peers'.
  /// Returns the peers that stayed silent past silence_limit(), named
  /// (empty when all stopped).
  virtual std::string close(stop_reason why, const std::string& text) = 0;
  /// On the learner: new weights were published.
  virtual void published() = 0;
  /// On a sampler: a finished episode, for the learner.
  virtual void episode(double episode_return, double episode_length) = 0;
  /// On the learner: env steps the samplers reported, in all.
  [[nodiscard]] virtual std::uint64_t env_steps() const = 0;
  /// On a sampler: the learner's steps (learner_activity::steps()) as last
  /// heard. The sampler's stall watchdog counts them: its env steps stand
  /// still while the learner is busy in a long update, which is no stall.
  [[nodiscard]] virtual std::uint64_t learner_steps() const = 0;
  /// On the learner: the first failure a sampler reported, or empty.
  [[nodiscard]] virtual std::string failure() const = 0;
  /// On the learner: whether a sampler was interrupted; on a sampler: whether the learner said so.
  [[nodiscard]] virtual bool interrupted() const = 0;
  /// On a sampler, after the runtime: whether the learner's stop ended the run.
  [[nodiscard]] virtual bool stopped_by_peer() const = 0;
  /// How long a rank waits for a peer that sends nothing, seconds.
  [[nodiscard]] virtual double silence_limit() const = 0;
  /// Its part of a progress line.
  [[nodiscard]] virtual std::string row(double seconds) = 0;
  /// Its lines of a stall report.
  virtual void describe(std::string& out) const = 0;

 protected:
  remote_link() = default;
  remote_link(const remote_link&) = default;
  remote_link& operator=(const remote_link&) = default;
};

/// The ranks of a distributed run, as this process sees them: rank 0
/// learns, the others sample.
class remote_ranks {
 public:
  virtual ~remote_ranks() = default;
  /// This process's rank.
  [[nodiscard]] virtual std::size_t rank() const = 0;
  /// Ranks in all.
  [[nodiscard]] virtual std::size_t size() const = 0;
  /// How messages name rank `r` ("rank 2 on host-b").
  [[nodiscard]] virtual std::string name(std::size_t r) const = 0;
  /// The link of a run of `options`, with `algo` (whose distribution() is
  /// not null) plugged into `run`.
  [[nodiscard]] virtual std::unique_ptr<remote_link> link(const train_options& options, algorithm& algo,
                                                          training_run& run) = 0;

 protected:
  remote_ranks() = default;
  remote_ranks(const remote_ranks&) = default;
  remote_ranks& operator=(const remote_ranks&) = default;
};

}  // namespace coral::training
