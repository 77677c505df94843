#pragma once
/// \file
/// Ape-X-style DQN: the learner (double DQN, target network, Huber loss,
/// importance-weighted, on the fused engine or the torch twin behind a
/// torch-free interface) and the
/// acting policy with a per-env epsilon from Ape-X's ladder.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "coral/actors/epsilon_schedule.hpp"
#include "coral/actors/policy.hpp"
#include "coral/learners/network.hpp"
#include "coral/training/learner_state.hpp"
#include "coral/training/training_stats.hpp"
#include "coral/replay/replay_actor.hpp"

namespace coral::learners {

/// DQN's and its replay's hyper-parameters (the `coral train` flags of the same names).
struct dqn_config {
  double learning_rate = 5e-4;        ///< Adam step size
  double adam_epsilon = 1e-5;
  double gamma = 0.99;                ///< discount
  std::size_t n_step = 3;             ///< steps in each return
  std::size_t batch_size = 128;       ///< transitions per update
  double replay_ratio = 32.0;         ///< transitions sampled per env step (Reverb's samples per insert)
  std::size_t replay_capacity = 100'000;  ///< transitions the replay holds
  std::uint64_t learning_starts = 1'000;  ///< env steps inserted before the first update
  std::size_t prefetch = 4;           ///< batches the learner keeps in flight
  bool prioritized = true;            ///< proportional prioritized replay (false: uniform)
  double priority_alpha = 0.6;
  double priority_beta = 0.4;         ///< importance exponent at the start, annealed to 1 over the run
  double priority_epsilon = 1e-6;
  std::size_t target_update = 250;    ///< updates between copies of the online network into the target
  double huber_delta = 1.0;
  double max_grad_norm = 10.0;        ///< 0: no clipping
  bool double_dqn = true;             ///< the online network picks the bootstrap action, the target scores it
  /// Ape-X ladder: env i of N explores with base^(1 + alpha i / (N − 1)).
  /// Ape-X used base 0.4 over 360 actors; with the 8 envs of a small run
  /// that leaves one env at 0.4 whose short episodes fill the last-100
  /// window, so coral's default base is 0.05.
  double epsilon_base = 0.05;
  double epsilon_alpha = 7.0;
  std::uint64_t exploration_steps = 20'000;  ///< env steps over which every env's epsilon falls from 1 to its rung
  std::size_t publish_every = 1;      ///< updates between weight publications to the policy
  /// Honour the env's action masks: the policy acts among the legal actions
  /// and the target's max (and double DQN's argmax) runs over the next
  /// observation's legal actions. Off (`--no-action-masks`): every action
  /// is taken for legal.
  bool action_masks = true;
  /// The fused engine (it has every Q-network, R2D2's recurrent one too),
  /// or the torch twin (`--backend torch`).
  network_backend backend = network_backend::fused;
};

/// The widths of the Q network of `spec`'s dense layers (their input, which
/// is the observation or the convolutions' output, hidden..., actions). Throws
/// config_error (errors::dqn_needs_discrete) unless the action space is
/// one Discrete.
[[nodiscard]] std::vector<std::size_t> q_network_widths(const network_spec& spec, std::string_view action_space);

/// Double DQN on batches from the replay actor, on one thread: the fused
/// engine's (coral/learners/fused/q_network.hpp) with config.backend fused,
/// the torch twin's with torch. Both compute the same update to float
/// rounding, and their states are alike: a checkpoint of one resumes on
/// the other.
///
/// Loss: the importance-weighted (weights scaled so the batch's largest is
/// 1) mean of the Huber loss of the TD error
/// y − Q(o, a), y = R + d · Q_target(o', argmax_a Q_online(o', a)) (or max
/// of Q_target with double_dqn off), with R the n-step return and d its
/// discount (γ^k, 0 after a terminal). Where the batch has next_masks (and
/// config.action_masks), the argmax and max run over the actions legal at
/// o' only. The target network is a copy of the
/// online one, refreshed every target_update updates. Adam is written out
/// over flat parameters, so a checkpoint restores it exactly.
///
/// Thread safety: one thread at a time (the learner actor).
class dqn_learner {
 public:
  /// Builds both networks (identical at first), initialised from `seed`:
  /// the fused engine's draws (fused::init_q_network) or torch's
  /// (torch::manual_seed), as config.backend says. usage_error
  /// (errors::torch_not_linked) for the torch backend where it is not linked.
  dqn_learner(const network_spec& spec, const dqn_config& config, std::uint64_t seed);
  ~dqn_learner();
  dqn_learner(const dqn_learner&) = delete;
  dqn_learner& operator=(const dqn_learner&) = delete;

  /// One update on `batch`; writes |TD error| per draw into batch.td_errors.
  training::update_stats update(replay::sample_batch& batch);

  /// The online network's flat weights (what the policy loads).
  [[nodiscard]] std::vector<float> weights() const;
  /// The target network's flat weights.
  [[nodiscard]] std::vector<float> target_weights() const;
  /// Learner state (online weights, Adam, counters) for a checkpoint.
  [[nodiscard]] training::learner_state state() const;
  /// Restores a state and the target weights; usage_error if sizes differ.
  void restore(const training::learner_state& s, std::span<const float> target);
  [[nodiscard]] std::uint64_t updates() const noexcept;
  /// Counts env steps into the state a checkpoint keeps.
  void set_env_steps(std::uint64_t steps) noexcept;

  /// What computes the updates: the torch twin (coral::learners_torch) or
  /// the fused engine; learners/src/learner_backends.hpp. The methods above
  /// forward to it.
  struct backend;

 private:
  std::unique_ptr<backend> impl_;
};

}  // namespace coral::learners
