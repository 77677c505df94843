#pragma once
/// \file
/// The PPO update (torch-free interface over the fused engine or the torch twin).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "coral/learners/network.hpp"
#include "coral/training/learner_activity.hpp"
#include "coral/training/rollout.hpp"
#include "coral/training/learner_state.hpp"
#include "coral/training/training_stats.hpp"

namespace coral::learners {

/// PPO's hyper-parameters (the `coral train` flags of the same names).
struct ppo_config {
  double learning_rate = 5e-3;     ///< Adam step size at the start
  bool anneal_lr = true;           ///< decay linearly to 0 at total_steps
  double gamma = 0.99;
  double gae_lambda = 0.95;
  std::size_t epochs = 4;
  std::size_t minibatch_size = 256;
  double clip = 0.2;               ///< surrogate clip range
  bool clip_value_loss = true;     ///< clip the value change to ±clip as well
  double value_coef = 0.5;
  double entropy_coef = 0.01;
  double max_grad_norm = 0.5;
  bool normalize_advantages = true;
  double adam_epsilon = 1e-5;
  /// Divide the rewards trained on by a running std of the discounted return
  /// (reward_scaler; `--reward-scale`).
  bool scale_rewards = false;
  /// Honour the env's action masks (a segment's action_masks): a masked
  /// value's logit is −∞ in the log probability and the entropy. Off
  /// (`--no-action-masks`), the loss sees every value as legal, as the
  /// policy then acts.
  bool action_masks = true;
  /// The fused engine (coral/learners/fused/), or the torch twin.
  network_backend backend = network_backend::fused;
};

/// PPO with GAE, the clipped surrogate, an (optionally clipped) value loss,
/// an entropy bonus, per-minibatch advantage normalisation, gradient-norm
/// clipping and a linearly annealed learning rate, on one thread.
///
/// Truncated (not terminated) steps bootstrap with the value of their final
/// observation; terminated ones do not.
///
/// With spec.lstm (recurrent PPO): each row of a segment is unrolled from
/// the state the acting policy had at its step 0 (segment.initial_states),
/// zeroed before each step that starts an episode; minibatches are whole
/// rows (minibatch_size / horizon of them, at least one), and the gradient
/// flows back through the whole horizon (truncated back-propagation through
/// time). The final observation of a truncated step is valued one LSTM step
/// on from the state after that step. The optimiser is Adam written out
/// over the flat parameters, so that its state is plain floats that a
/// checkpoint holds exactly. Minibatches are drawn by a generator of its own
/// seeded from the run's seed: the same seed and data give the same weights.
///
/// With spec.normalize_observations, every observation the network sees is
/// normalised by running moments (normalize_observation()): an update trains
/// on its segment normalised with the moments the acting policy had (those
/// published with the weights), then folds the segment's observations into
/// the moments; weights() appends the new normalizer_block(). With
/// config.scale_rewards, the segment's rewards are scaled (reward_scaler)
/// before GAE.
///
/// Thread safety: one thread at a time (the learner actor).
class ppo_learner {
 public:
  /// Seeds torch with `seed` and builds the network (its initial weights
  /// depend only on the seed and the spec).
  ppo_learner(const network_spec& spec, const ppo_config& config, std::uint64_t seed, std::uint64_t total_steps);
  ~ppo_learner();
  ppo_learner(const ppo_learner&) = delete;
  ppo_learner& operator=(const ppo_learner&) = delete;

  /// One update on `segment`; `version` is the version of the weights it
  /// starts from (for the policy lag). With `activity`, each minibatch step
  /// is told to it, and a stop it says ends the update after that step (the
  /// update counts, with the steps it took).
  training::update_stats update(const training::rollout_segment& segment, std::uint64_t version,
                                training::learner_activity* activity = nullptr);

  /// The current flat weights (what the policy loads): the network's
  /// parameters, then, with spec.normalize_observations, normalizer_block().
  [[nodiscard]] std::vector<float> weights() const;
  /// The critic's values of `observations` (rows of frames × raw_obs_dim raw
  /// floats), encoded and normalised as the learner trains (for checks and tests); with
  /// an LSTM, each from a zero state (as an episode's first observation).
  [[nodiscard]] std::vector<float> values(std::span<const float> observations) const;
  [[nodiscard]] training::learner_state state() const;
  /// Restores a state; throws usage_error if its sizes do not fit the network
  /// or it lacks the normaliser or scaler state this learner keeps.
  void restore(const training::learner_state& s);
  [[nodiscard]] std::uint64_t updates() const noexcept;
  [[nodiscard]] std::uint64_t env_steps() const noexcept;
  [[nodiscard]] const network_spec& spec() const noexcept;

  /// What computes the updates: the torch twin (coral::learners_torch) or
  /// the fused engine; learners/src/learner_backends.hpp. The methods above
  /// forward to it.
  struct backend;

 private:
  std::unique_ptr<backend> impl_;
};

}  // namespace coral::learners
