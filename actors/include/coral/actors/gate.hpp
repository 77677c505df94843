#pragma once
/// \file
/// A gate: the actor between the env groups and the inference batcher that
/// holds groups back while a policy says they may not step yet.
///
/// Env groups announce ready to the gate's inbox instead of to the batcher;
/// the gate forwards each announcement to the batcher once its policy lets
/// that group take its next step. Whoever can change the policy's answer (a
/// learner that published weights, a replay that raised its insert
/// allowance) sends the gate a note, and the gate asks again about every
/// group it holds. Nothing is dropped: a held group simply does not step.
///
/// The PPO policy-lag bound (training/policy_lag_gate.hpp) and the replay
/// rate limit (replay/rate_limit_gate.hpp) are two policies of this one gate.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <asio/awaitable.hpp>

#include "coral/actors/inference_batcher.hpp"
#include "coral/actors/messages.hpp"
#include "coral/actors/sampler_options.hpp"
#include "coral/channels/channel.hpp"

namespace coral::actors {

/// Decides whether an env group may take its next step. The gate calls
/// every member from its own actor, one call at a time.
class gate_policy {
 public:
  virtual ~gate_policy() = default;

  /// Group `group` announced ready for its step number `step` (0: the first
  /// after its reset). Its rows hold the outcome of its previous step and
  /// stay as they are until the gate lets it step.
  virtual void arrived(std::uint32_t group, std::uint64_t step) {
    (void)group;
    (void)step;
  }
  /// Whether group `group`, of `rows` batch rows, may take its step `step`
  /// now. Asked again, for every group still held, after each message.
  [[nodiscard]] virtual bool may_step(std::uint32_t group, std::uint64_t step, std::size_t rows) = 0;
  /// Whether groups step in arrival order only: a group the policy holds
  /// then holds every group that arrived after it, and may_step() is not
  /// asked about them in that pass. For a policy whose answer does not
  /// depend on the group (a rate limit): asking about the others would only
  /// repeat the answer, and may_step() may have side effects that a later
  /// question would undo (the rate limit leaves a note of what it waits for).
  [[nodiscard]] virtual bool in_order() const { return false; }
  /// The gate let that step go to the batcher.
  virtual void stepped(std::uint32_t group, std::uint64_t step, std::size_t rows) {
    (void)group;
    (void)step;
    (void)rows;
  }

 protected:
  gate_policy() = default;
  gate_policy(const gate_policy&) = default;
  gate_policy& operator=(const gate_policy&) = default;
};

/// Why a gate ended the run.
enum class gate_end {
  step_limit,  ///< max_env_steps env steps were let through
  requested,   ///< request_end() was called (the run reached its target)
};

/// The interposer. run() is one actor; inbox(), request_end(), close() and
/// the counters may be used from any thread.
class gate {
 public:
  /// What a gate is built with.
  struct options {
    std::uint64_t env_steps = 0;      ///< env steps already done (a resumed run)
    std::uint64_t max_env_steps = 0;  ///< end the run once this many were let through; 0 = never
    /// Inbox room for notes besides one announcement per group: each sender
    /// of notes must keep at most this many in flight (or use try_send).
    std::size_t note_room = 8;
  };

  /// `group_rows[g]` are the batch rows of group g.
  gate(std::vector<row_range> group_rows, options opts);

  /// Where groups announce ready, and where notes go.
  [[nodiscard]] channel<gate_msg>& inbox() noexcept { return inbox_; }

  /// The actor's body: forwards group g to `batcher_ready[g % size]` when
  /// `policy` allows, in arrival order among the groups it allows (or, for
  /// an in-order policy, up to the first it holds). Calls
  /// `on_end` once and returns when the run should end; returns without it
  /// when the inbox is closed or a forward fails (the batcher closed).
  /// `policy` must outlive it.
  [[nodiscard]] asio::awaitable<void> run(gate_policy& policy, std::vector<channel<ready_msg>*> batcher_ready,
                                          std::function<void(gate_end)> on_end);

  /// Ends the run at the next message (any thread).
  void request_end() noexcept { end_requested_.store(true, std::memory_order_release); }
  /// Closes the inbox: run() returns.
  void close() noexcept { inbox_.close(); }

  /// Env steps let through so far (a resumed run's included).
  [[nodiscard]] std::uint64_t env_steps() const noexcept { return env_steps_.load(std::memory_order_relaxed); }
  /// Groups held right now.
  [[nodiscard]] std::size_t held() const noexcept { return held_count_.load(std::memory_order_relaxed); }
  /// One line for a stall report: held groups and the inbox.
  void describe(std::string& out) const;

 private:
  struct waiting {
    std::uint32_t group;
    std::uint64_t step;
  };

  std::vector<row_range> group_rows_;
  options options_;
  channel<gate_msg> inbox_;
  std::vector<std::uint64_t> arrivals_;  // per group: announcements received
  std::atomic<bool> end_requested_{false};
  std::atomic<std::uint64_t> env_steps_;
  std::atomic<std::size_t> held_count_{0};
};

/// The batcher options for a sampler behind a gate.
///
/// A batch smaller than the groups of its ready channel (the pool topology)
/// needs dynamic batching behind a gate: when the gate holds some groups
/// (for new weights, or for the rate limiter) the rest may be fewer than a
/// batch, and a batcher waiting for a full batch would wait for ever. Unless
/// the options set min_batch_size, this sets it to one group, with a timeout
/// of `threads_timeout` (threads mode) or 0 (single mode: act on what is
/// buffered, which keeps the run deterministic).
[[nodiscard]] inference_batcher::options batcher_options_behind_gate(
    const sampler_options& options, const wiring& w,
    std::chrono::microseconds threads_timeout = std::chrono::microseconds(200));

}  // namespace coral::actors
