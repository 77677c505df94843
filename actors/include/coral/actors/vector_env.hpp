#pragma once
/// \file
/// `vector_env`: a sampler driven from outside. The caller receives a batch
/// of env rows, writes their actions, and sends the batch back; the env
/// groups, channels and batcher are the same actors `coral train` and
/// `coral bench` run, in the same topologies. This is the engine of
/// Python's `coral.make_vec` (python/), and usable from C++ as it is.
///
/// ```
/// coral::actors::vector_env v(options);          // builds the envs; config_error before anything starts
/// v.start();                                      // envs reset, the first batch forms
/// for (;;) {
///   auto ids = v.receive(std::chrono::milliseconds(50));   // nullopt: not yet (check signals, wait again)
///   if (!ids) continue;
///   // read v.batch().observations() rows *ids, write their action rows
///   v.send();
/// }
/// ```
///
/// ## The hand-off
///
/// The batcher's policy is a hand-off: when a batch is full, the batcher
/// offers it (the env ids of its rows, in increasing order) and waits until
/// the caller sends it back; then the groups step with the actions in their
/// rows. Between receive() and send() the caller owns the rows of the batch:
/// their observations, rewards, flags and episode columns hold the step's
/// outcome and stay as they are, and their action rows and commands (see
/// env_batch::commands()) are the caller's to write. Every other row belongs
/// to the actors. Each side polls for up to `spin` (sampler_options::spin)
/// before it blocks, so a caller that answers at once pays no wake-up.
///
/// With threads the batcher runs on the sampling threads and blocks one of
/// them while the caller holds a batch (in sync that thread has nothing else
/// to do); with `executor_mode::single` the whole sampler runs on one thread
/// of its own, and runs are reproducible.
///
/// Rows and envs: env e owns rows [e × agents_per_env(), (e + 1) ×
/// agents_per_env()), one per agent slot (one row for a single-agent env,
/// where env id = row). receive() hands out row ids; a batch holds every
/// row of each env in it. A multi-agent env's rows say which slots are in
/// play (env_batch::active()) and, for an env that masks actions, which
/// actions are legal (env_batch::action_masks()); an inactive row's action
/// is ignored. Commands (reset, hold) are per env, at its first row.
///
/// Thread safety: one caller thread at a time, except that close() may come
/// from another thread while the caller waits in receive() (which then
/// throws usage_error: not running). The actors run on threads of their own.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "coral/actors/sampler_options.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/rgb_frame.hpp"
#include "coral/envs/space.hpp"

namespace coral {
class runtime;
}

namespace coral::actors {

class sampler;

/// What Gymnasium calls the autoreset mode of a vector env.
enum class autoreset_mode {
  /// The step that ends an episode shows its last observation; the next step
  /// of that env resets it (its action ignored, reward 0, flags 0).
  next_step,
  /// The step that ends an episode resets the env at once: the observation is
  /// the new episode's first, the ended one's last is in final_observations.
  same_step,
  /// No env is reset by the actors: an env whose episode ended keeps its
  /// last observation and flags until the caller writes the `reset` command
  /// into its row (a partial reset holds the others with `hold`). send()
  /// refuses a batch that would step such an env without either.
  disabled,
};

/// Parses next_step, same_step or disabled; throws config_error naming `what` otherwise.
[[nodiscard]] autoreset_mode parse_autoreset_mode(std::string_view text, std::string_view what = "autoreset_mode");

/// A sampler whose policy is the caller; see the file comment.
class vector_env {
 public:
  /// Builds the sampler (every env; options checked as resolve_wiring()
  /// does, config_error naming the option at fault). Nothing runs until start().
  vector_env(sampler_options options, autoreset_mode mode);
  vector_env(const vector_env&) = delete;
  vector_env& operator=(const vector_env&) = delete;
  /// close()s.
  ~vector_env();

  /// Starts the actors: every env resets and the first batch forms. If it
  /// was running, it is closed first and every env is built anew, seeded
  /// from `seed` if given (else from the seed it had): a new episode
  /// everywhere, and the same trajectories as a fresh vector_env with that
  /// seed.
  void start(std::optional<std::uint64_t> seed = std::nullopt);

  /// Waits at most `timeout` for the next batch. Returns the env ids of its
  /// rows in increasing order (valid until send()), or nullopt if none came
  /// in time. Throws what ended the run (actor_failed naming the env for an
  /// env fault), or usage_error if not started, closed, or a batch is in hand.
  /// Once an actor has failed (or a stop was requested otherwise) no batch
  /// is formed for the caller any more: receive waits, within `timeout`, for
  /// the run to end and throws what ended it.
  [[nodiscard]] std::optional<std::span<const std::uint32_t>> receive(std::chrono::nanoseconds timeout);

  /// Hands the batch in hand back: the groups step with the actions (and
  /// commands) in its rows. Throws usage_error if no batch is in hand, or
  /// (autoreset_mode::disabled) if an env of the batch ended its episode
  /// (no row both active and not ended) and its command neither resets nor
  /// holds it; the batch then stays in hand.
  void send();

  /// True between receive() returning ids and send().
  [[nodiscard]] bool holding() const noexcept { return holding_.load(); }
  /// The ids of the batch in hand (empty if none).
  [[nodiscard]] std::span<const std::uint32_t> held() const noexcept;

  /// Draws env `env_id`'s current state into `frame` (envs::env::render()):
  /// false if the env does not render. `env_id` is an env, not a row (the
  /// same for a single-agent env). Only for an env of the batch in hand,
  /// which no actor steps until send(); usage_error
  /// (errors::vector_env_render_not_held) otherwise. With next-step
  /// autoreset, an env whose episode just ended shows its last state; with
  /// same-step, the next episode's first.
  [[nodiscard]] bool render(std::uint32_t env_id, envs::rgb_frame& frame) const;

  /// Stops the actors and joins their threads; the batch rows keep their
  /// last contents. Idempotent. Rethrows nothing: a failure that ended the
  /// run is reported by receive(). Returns within the runtime's stop
  /// deadline: an env still inside a step then (a step of minutes) is
  /// abandoned, not waited for. Its thread finishes the step on its own and
  /// frees the envs, the actors and the run it served; the rows stay valid
  /// for it. A later start() waits for it first (its env writes into the
  /// rows the new envs would); the destructor does not.
  void close() noexcept;

  /// True after start() until close().
  [[nodiscard]] bool running() const noexcept { return running_.load(); }
  /// True from close() until the next start(): receive() and send() then
  /// say so rather than that nothing runs or no batch is in hand.
  [[nodiscard]] bool closed() const noexcept { return closed_.load(); }

  [[nodiscard]] const sampler_options& options() const noexcept { return options_; }
  [[nodiscard]] autoreset_mode autoreset() const noexcept { return mode_; }
  [[nodiscard]] std::size_t num_envs() const noexcept { return options_.num_envs; }
  /// Rows (agent slots) per env: 1 for a single-agent env.
  [[nodiscard]] std::size_t agents_per_env() const noexcept { return agents_; }
  /// Envs per batch.
  [[nodiscard]] std::size_t batch_size() const noexcept;
  [[nodiscard]] const envs::space& observation_space() const noexcept;
  [[nodiscard]] const envs::space& action_space() const noexcept;
  /// The rows; the same object for the life of the vector_env (start() with
  /// a restart builds new envs into the same rows).
  [[nodiscard]] envs::env_batch& batch() noexcept;
  /// The same rows, shared: they stay valid while a holder keeps them, after
  /// the vector_env is gone (for views handed out to other owners).
  [[nodiscard]] std::shared_ptr<envs::env_batch> shared_batch() const noexcept { return batch_; }
  /// Env steps the actors took since start().
  [[nodiscard]] std::uint64_t env_steps() const noexcept;

 private:
  class handoff;

  void build(std::uint64_t seed);
  /// send() with autoreset_mode::disabled: throws usage_error naming the
  /// first env of the batch in hand that would step past its episode's end.
  void check_no_step_after_end() const;
  /// close() without marking the env closed. `wait_for_envs`: join the run
  /// however long its envs take (start() needs them back); else abandon it
  /// at the stop deadline (close()).
  void stop_run(bool wait_for_envs) noexcept;

  sampler_options options_;
  autoreset_mode mode_;
  // Shared with the runner thread, which keeps them alive when close() abandons it.
  std::shared_ptr<handoff> handoff_;
  std::shared_ptr<envs::env_batch> batch_;  ///< every sampler built writes into these rows
  std::shared_ptr<sampler> sampler_;
  std::shared_ptr<runtime> runtime_;
  std::thread runner_;
  std::vector<std::thread> abandoned_;  ///< runners close() left to finish their env steps
  std::atomic<bool> holding_{false};
  std::atomic<bool> running_{false};
  std::atomic<bool> closed_{false};  // set before close() drops the batch in hand
  std::mutex control_;  ///< start() and close(): runtime_, runner_, sampler_
  bool spawned_ = false;  ///< sampler_ ran (a sampler's actors run once)
  std::size_t agents_ = 1;  ///< envs::env::max_agents() of the env
};

}  // namespace coral::actors
