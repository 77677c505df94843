#pragma once
/// \file
/// A trained agent in your own program: load a checkpoint's policy and call
/// it on observations. Torch-free (coral::learners), installed with coral.
///
/// ```
/// auto policy = coral::learners::load_policy("runs/cartpole/checkpoints");  // the newest checkpoint there
/// auto actions = policy.act(observation);   // one row: observation_size() floats
/// env_action = actions.discrete[0];
/// policy.reset(0);                          // the row's episode ended: its next observation starts one
/// ```
///
/// The policy is the one the training run's batcher acted with (the
/// algorithm descriptor's `acting`: mlp_policy, q_policy, r2d2_policy),
/// rebuilt from the run's settings kept in the checkpoint
/// (checkpoint_settings.hpp) and the spaces of its env, and loaded with the
/// checkpoint's weights (with `--obs-norm`, the observation normaliser too).
/// Each row keeps what training kept per env row: its stacked frames
/// (`--frames`) and its recurrent state (`--lstm`, R2D2), both cleared by
/// reset(row) before the row's next observation, as an episode's start
/// clears them in training. Deterministic by default: the most probable
/// action (the Gaussian's mean, clipped to the action space; the greedy
/// Q-action), so that the actions equal those of the training process's
/// policy with set_deterministic(true) on the same observations, bit for bit.
///
/// The env of the checkpoint is built once from the env registry to learn
/// its spaces: a program with its own env registers it first.
///
/// Thread safety: none; one caller at a time (a policy per thread).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "coral/envs/config.hpp"
#include "coral/envs/space.hpp"
#include "coral/training/train_options.hpp"

namespace coral::learners {

/// How load_policy() builds a policy.
struct policy_options {
  /// Rows acted on at once (envs, or agents), each with its own frames and state.
  std::size_t rows = 1;
  /// The best action rather than a draw (see the file comment). Without it
  /// an actor-critic samples as in training, from generators seeded by
  /// `seed`, and a Q-network acts epsilon-greedily with
  /// training::eval_epsilon (0.05).
  bool deterministic = true;
  /// Seeds the draws when not deterministic. Default: the run's seed.
  std::optional<std::uint64_t> seed;
  /// Env args that replace the run's (or add to them) when the env is built
  /// for its spaces; an arg that changes a space makes the checkpoint's
  /// network not fit (checkpoint_error).
  envs::config_args env_args;
};

/// The actions of one act(), row after row; valid until the next act().
struct policy_actions {
  std::span<const std::int32_t> discrete;  ///< rows × discrete_size(): Discrete / MultiDiscrete components
  std::span<const float> continuous;       ///< rows × continuous_size(): Box elements, within their bounds
};

/// A checkpoint's policy, acting on observation rows; see the file comment.
class trained_policy {
 public:
  trained_policy(trained_policy&&) noexcept;
  trained_policy& operator=(trained_policy&&) noexcept;
  trained_policy(const trained_policy&) = delete;
  trained_policy& operator=(const trained_policy&) = delete;
  ~trained_policy();

  /// The actions for `observations`: rows() rows of observation_size()
  /// floats (the env's flat observation), row after row. With
  /// `action_masks` (rows() rows of action_mask_size() bytes, 1 = legal:
  /// the env's action-mask rows, envs/env.hpp), a masked value is never
  /// chosen (unless the run trained with `--no-action-masks`); empty:
  /// every value legal; a nonzero byte is legal. Throws usage_error
  /// (errors::policy_observation_size, errors::policy_mask_size) for another
  /// number of floats or bytes, and (errors::policy_mask_empty) for a row
  /// whose mask rules out every value of a component.
  /// Allocates nothing.
  policy_actions act(std::span<const float> observations, std::span<const std::uint8_t> action_masks = {});
  /// Bytes in one row's action mask: one per value of each Discrete and
  /// MultiDiscrete component (envs::action_mask_size() of the action space).
  [[nodiscard]] std::size_t action_mask_size() const noexcept;
  /// Row `row`'s next observation starts an episode: its frames and
  /// recurrent state start afresh. Throws usage_error
  /// (errors::policy_row_out_of_range) past the last row.
  void reset(std::size_t row);
  /// Every row's next observation starts an episode.
  void reset();

  [[nodiscard]] std::size_t rows() const noexcept;
  /// Floats in one row's observation (the env's flat observation space).
  [[nodiscard]] std::size_t observation_size() const noexcept;
  /// Ints in one row's action (its Discrete and MultiDiscrete components).
  [[nodiscard]] std::size_t discrete_size() const noexcept;
  /// Floats in one row's action (its Box elements).
  [[nodiscard]] std::size_t continuous_size() const noexcept;
  /// The env's spaces.
  [[nodiscard]] const envs::space& observation_space() const noexcept;
  [[nodiscard]] const envs::space& action_space() const noexcept;
  /// The settings of the run that wrote the checkpoint (env, env args with
  /// policy_options::env_args applied, seed, algo, network).
  [[nodiscard]] const training::train_options& run_options() const noexcept;
  /// The checkpoint file read.
  [[nodiscard]] const std::filesystem::path& file() const noexcept;
  /// The env steps the run had trained on when it wrote the checkpoint.
  [[nodiscard]] std::uint64_t env_steps() const noexcept;
  /// Whether it picks the best action (policy_options::deterministic).
  [[nodiscard]] bool deterministic() const noexcept;
  /// The seed of its draws.
  [[nodiscard]] std::uint64_t seed() const noexcept;

 private:
  struct impl;
  explicit trained_policy(std::unique_ptr<impl> m);
  friend trained_policy load_policy(const std::filesystem::path& path, const policy_options& options);
  std::unique_ptr<impl> impl_;
};

/// The checkpoint `path` names: `path` itself, or when it is a directory the
/// checkpoint there with the most env steps recorded inside it, as
/// `coral train --resume` picks it. Throws config_error
/// (errors::no_checkpoint_in_dir) for a directory without a readable one,
/// or the checkpoint_error of the newest unreadable file there.
[[nodiscard]] std::filesystem::path find_checkpoint(const std::filesystem::path& path);

/// Loads the policy of the checkpoint `path` names (find_checkpoint()).
/// Throws checkpoint_error for a file that is missing, truncated, corrupted,
/// not a coral checkpoint, written without the run's settings
/// (training::errors::checkpoint_no_settings) or for another network than
/// the env's spaces give; config_error for an env or env arg the registry
/// refuses, or an algorithm not registered or that cannot act
/// (errors::algo_cannot_act).
[[nodiscard]] trained_policy load_policy(const std::filesystem::path& path, const policy_options& options = {});

}  // namespace coral::learners
