#pragma once
/// \file
/// `env_slice`: K env instances bound to a contiguous range of batch rows,
/// stepped back to back with auto-reset. The env group actor drives one; so
/// does the plain for-loop benchmark baseline.
///
/// ## Auto-reset semantics (exact)
///
/// reset_all(): for every env, sets its rows active, calls env::reset(), then
/// clears reward, terminated, truncated, episode_returns, episode_lengths and
/// final_observations of its rows.
///
/// step_all(): for every env e, in order, with its rows R:
///  1. For each row that ended on the previous step (terminated or truncated
///     still set), the running episode_return and episode_length restart at 0.
///     The mask `was_active` is taken from `active` as the policy saw it.
///  2. env::step(R) applies the actions in R's action rows.
///  3. For each row with was_active = 0 that the env did not end: reward,
///     terminated and truncated are 0 (a row with was_active = 0 gets its
///     reward and flags cleared before 2., so only what the env writes now
///     counts). A row with was_active = 0 that the env ended (a waiting
///     agent, see env.hpp) keeps them: episode_return += reward, its
///     length unchanged, its observation copied to final_observations. For
///     each row with was_active = 1: episode_return += reward,
///     episode_length += 1; if it ended (terminated or truncated), its
///     observation row is copied to final_observations. If the env masks
///     actions, every row now active and not ended must leave each action
///     component a legal value (errors::all_actions_masked, a failure of the
///     env as below); reset() is checked the same way for its active rows.
///  4. If no row of e is both active (as the env now says) and not ended, the
///     env's episode is over and env::reset(R) runs at once (rows set active
///     first): the observation rows then hold the first observation of the
///     next episode.
///  5. `failed` is set to 0 for R (the env group sets it to 1 when it resets
///     an env that failed: see env_batch::failed()).
///
/// Before 1., the env's command (env_batch::commands() at its first row) is
/// read: `hold` skips the env for this step (rows untouched; the hold bit is
/// cleared, a reset bit kept); `reset` runs env::reset(R) instead of steps
/// 1-4 and clears R as reset_all() does (the action is ignored); the command
/// is then cleared.
///
/// Next-step auto-reset (set_next_step_autoreset(true), what Gymnasium calls
/// NEXT_STEP): in 4., the env is not reset at once; its command becomes
/// `reset`, so the observation rows keep the ended episode's last
/// observation and the next step_all() starts the new episode (reward 0,
/// flags 0, the action ignored). The learners use the default (same-step).
///
/// No auto-reset (set_autoreset(false), what Gymnasium calls DISABLED): 4.
/// is skipped; an env whose episode ended keeps its rows (flags set, the
/// last observation) until the caller's `reset` command starts the next
/// episode. Stepping it before that steps an env past its episode's end:
/// the caller must not (actors::vector_env refuses to).
///
/// With finite checks on (the default), a step whose reward or any element
/// of an active row's observation is NaN or infinite is a failure of that
/// env (errors::non_finite_reward / non_finite_observation), as if step()
/// had thrown; so is a reset() that writes such an observation
/// (errors::reset_failed around non_finite_observation). A reset() that throws (in reset_all(), reset_one() or the
/// auto-reset of step 4) is a failure of that env too
/// (errors::reset_failed).
///
/// So whoever consumes a step sees, for a row whose episode ended on it:
/// terminated/truncated as the env set them, the reward of the final step,
/// final_observations = the last observation of the ended episode,
/// episode_returns/episode_lengths = that episode's return (sum of rewards)
/// and length (steps taken), and observations = the first observation of the
/// next episode (for a multi-agent env whose other agents play on, the row's
/// own observation as the env wrote it). The action the policy picks from
/// that observation is applied by the next step_all() to the new episode:
/// no action is ever discarded. On other steps episode_returns and
/// episode_lengths hold the running totals of the current episode, and
/// final_observations holds stale data.
///
/// No allocation in reset_all() or step_all(); one virtual call per env per step.
///
/// Thread safety: one thread at a time; the slice is the only user of its
/// rows while it runs.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "coral/core/error.hpp"

#include "coral/envs/env.hpp"
#include "coral/envs/env_batch.hpp"

namespace coral::envs {

/// Thrown by env_slice::step_all() when env `index()` of the slice threw:
/// what() is that exception's text. Earlier envs of the slice have stepped;
/// env index() and later ones have not completed this step.
class env_failed : public error {
 public:
  env_failed(std::size_t index, const std::string& what) : error(what), index_(index) {}
  /// Index of the failing env within its slice.
  [[nodiscard]] std::size_t index() const noexcept { return index_; }

 private:
  std::size_t index_;
};

/// K envs over rows [first_row, first_row + row_count()) of a batch.
class env_slice {
 public:
  /// Binds `envs` to consecutive rows of `batch` starting at `first_row`: env
  /// i owns max_agents() rows after those of env i-1. Throws usage_error
  /// (errors::batch_mismatch) if an env's flat spaces do not have the
  /// batch's widths or the rows run past the end of the batch,
  /// (errors::mask_width) if an env declares a mask of another width than
  /// its action space's, (errors::team_out_of_range) if a slot's team id is
  /// not below team_count(). Writes each row's team id into the batch's
  /// teams column and, for an env that masks, declares the batch masked.
  /// The batch must outlive the slice.
  env_slice(env_batch& batch, std::size_t first_row, std::vector<std::unique_ptr<env>> envs);

  /// Turns the non-finite checks of step_from() on (the default) or off.
  void check_finite(bool on) noexcept { check_finite_ = on; }

  /// Next-step auto-reset on or off (the default); see the file comment.
  void set_next_step_autoreset(bool on) noexcept { next_step_autoreset_ = on; }

  /// Auto-reset on (the default) or off; see the file comment.
  void set_autoreset(bool on) noexcept { autoreset_ = on; }

  /// Starts a new episode in every env; see the file comment. If env i's
  /// reset throws, stops there and throws env_failed(i, errors::reset_failed).
  void reset_all();

  /// Steps every env once with auto-reset; see the file comment. If env i
  /// throws, stops there and throws env_failed(i, what).
  void step_all();

  /// Steps envs [first, size()) once, as step_all() does for each.
  void step_from(std::size_t first);

  /// Starts a new episode in env i alone, clearing its rows as reset_all()
  /// does (used after env i failed, with `--on-env-error reset`). Throws
  /// env_failed(i, errors::reset_failed) if the reset throws.
  void reset_one(std::size_t i);

  /// Number of envs.
  [[nodiscard]] std::size_t size() const noexcept { return envs_.size(); }
  /// First batch row of this slice.
  [[nodiscard]] std::size_t first_row() const noexcept { return first_row_; }
  /// Number of batch rows this slice owns (sum of max_agents()).
  [[nodiscard]] std::size_t row_count() const noexcept { return row_count_; }
  /// Env i.
  [[nodiscard]] env& at(std::size_t i) noexcept { return *envs_[i]; }
  /// Env i.
  [[nodiscard]] const env& at(std::size_t i) const noexcept { return *envs_[i]; }
  /// First batch row of env i.
  [[nodiscard]] std::size_t first_row_of(std::size_t i) const noexcept { return row_offsets_[i]; }
  /// The batch.
  [[nodiscard]] env_batch& batch() noexcept { return *batch_; }

 private:
  void reset_env(std::size_t i, const env_rows& rows);
  void check_values(std::size_t i, const env_rows& rows) const;
  void clear_rows(std::size_t i);
  void check_masks(std::size_t i, const env_rows& rows) const;

  env_batch* batch_;
  std::size_t first_row_;
  std::size_t row_count_ = 0;
  std::vector<std::unique_ptr<env>> envs_;
  std::vector<std::size_t> row_offsets_;
  std::vector<env_rows> views_;
  std::vector<std::uint8_t> was_active_;  // scratch, one per row of the widest env
  std::vector<std::int32_t> mask_counts_;  // discrete_counts() of the action space, when masked
  bool masked_ = false;
  bool check_finite_ = true;
  bool next_step_autoreset_ = false;
  bool autoreset_ = true;
};

}  // namespace coral::envs
