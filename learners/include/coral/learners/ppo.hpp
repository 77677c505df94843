#pragma once
/// \file
/// `--algo ppo`'s options: the learner's hyper-parameters (ppo_config) and
/// the rollout and network settings only PPO reads. Its descriptor (ppo.cpp)
/// declares a flag for each; learners::register_builtin_algorithms() registers it.

#include <cstddef>

#include "coral/learners/ppo_learner.hpp"

namespace coral::learners {

/// Everything `--algo ppo` reads beyond the settings every run has.
struct ppo_options {
  ppo_config ppo;                      ///< the learner's hyper-parameters
  std::size_t horizon = 64;            ///< steps per row per segment
  std::size_t max_policy_lag = 0;      ///< 0: strictly on-policy
  std::size_t frames = 1;              ///< observations stacked into the policy's input
  /// Width of an LSTM after the hidden layers (`--lstm`; network_spec::lstm); 0: none.
  std::size_t lstm = 0;
  /// Normalise the network's input by running moments (`--obs-norm`; network_spec).
  bool normalize_observations = false;
  /// Feed the observation's Discrete and MultiDiscrete elements one-hot
  /// (network_spec::one_hot); off (`--no-one-hot`), as their index.
  bool one_hot = true;
  /// Train one team of each env against frozen snapshots (`--self-play`;
  /// self_play.hpp): the pool's size, the updates between snapshots, the
  /// share of opponents that play as the learner itself, and the games per
  /// side against the env's reference opponent at each snapshot (0: none).
  bool self_play = false;
  std::size_t self_play_pool = 8;
  std::size_t self_play_refresh = 10;
  double self_play_latest = 0.5;
  std::size_t self_play_eval_games = 0;
};

/// The most games per side --self-play-eval-games may ask for: the match is
/// played on the learner's thread at each refresh, the update waiting.
inline constexpr std::size_t max_self_play_eval_games = 10'000;

}  // namespace coral::learners
