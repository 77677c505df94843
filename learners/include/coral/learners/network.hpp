#pragma once
/// \file
/// The shape of the MLP actor-critic (torch-free), and the torch policy the
/// inference batcher runs.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "coral/actors/policy.hpp"
#include "coral/envs/space.hpp"

namespace coral::learners {

/// Everything that fixes the network's parameter layout.
///
/// The network sees `frames` stacked observations (the newest last; see
/// frame_stack), so its input width is frames × raw_obs_dim. The action
/// space is reduced to its leaves: Discrete and MultiDiscrete components
/// (one categorical head each, `nvec`) and Box elements (one Gaussian each
/// with a state-independent log standard deviation, actions clipped to
/// [low, high]).
struct network_spec {
  std::size_t raw_obs_dim = 0;        ///< flat width of one observation
  std::size_t frames = 1;             ///< observations stacked into the input
  std::vector<std::int32_t> nvec;     ///< categorical heads, in leaf order
  std::vector<float> low;             ///< Box element bounds, in leaf order
  std::vector<float> high;
  std::vector<std::size_t> hidden{64, 64};  ///< hidden widths (tanh), actor and critic alike

  /// The spec for these spaces. Throws config_error
  /// (messages::unsupported_action_space) for an action space without leaves.
  [[nodiscard]] static network_spec from_spaces(const envs::space& observation, const envs::space& action,
                                                std::vector<std::size_t> hidden, std::size_t frames);
  /// Input width: frames × raw_obs_dim.
  [[nodiscard]] std::size_t input_dim() const noexcept { return frames * raw_obs_dim; }
  /// Sum of nvec: the width of the logits.
  [[nodiscard]] std::size_t logits_dim() const noexcept;
  /// Number of Box elements.
  [[nodiscard]] std::size_t continuous_dim() const noexcept { return low.size(); }
};

/// Sets torch's intra-op and inter-op thread counts to 1, once per process.
///
/// On the 2-core machines coral targets, the env groups already own the
/// cores: a torch pool of its own would oversubscribe them, and for 64-wide
/// layers one thread is faster than a parallel region's fork/join anyway.
/// Later calls do nothing (torch refuses to change inter-op threads twice).
void use_one_torch_thread();

/// The number of floats in the flat weights of a network of `spec`.
[[nodiscard]] std::size_t parameter_count(const network_spec& spec);

/// The actor-critic as the inference batcher runs it.
///
/// The network is the learner's torch module (same layout, same flat
/// weights); load_weights() copies the weights into the module and into
/// small dense kernels that act() runs row by row on the CPU. At the batch
/// sizes a batcher forms (2 to 64 rows), torch's per-operator dispatch and
/// Debian's reference BLAS cost more than the arithmetic: the kernels are
/// several times faster, allocate nothing, and use no thread pool, so the
/// policy never competes with the env threads for cores.
///
/// act(): stacks each row's observations over `frames` (the stack restarts
/// with each episode), runs the actor and the critic, and samples the action
/// from that row's own rng, seeded from (seed, row) in a stream family apart
/// from the envs' (seed, env index) streams: the actions a row gets
/// do not depend on which rows share its batch, so the topologies sample the
/// same trajectories. Writes the log probability and the value of every row
/// when the spans are given. Box actions are clipped to their bounds and the
/// log probability is that of the clipped action under the Gaussian (the
/// learner scores the same clipped action, so the ratio is consistent).
///
/// Allocation: none in act(); load_weights() reuses its buffers.
///
/// Thread safety: one batcher at a time, as for every policy.
class mlp_policy final : public actors::policy {
 public:
  /// A policy for `rows` batch rows. Its weights are torch's initial ones
  /// until load_weights(); the learner publishes its own before sampling.
  mlp_policy(const network_spec& spec, std::size_t rows, std::uint64_t seed);
  ~mlp_policy() override;
  mlp_policy(const mlp_policy&) = delete;
  mlp_policy& operator=(const mlp_policy&) = delete;

  void act(const actors::policy_rows& rows) override;
  /// Throws usage_error if the size is not parameter_count(spec).
  void load_weights(std::span<const float> weights) override;

  /// Greedy actions (argmax / mean) instead of samples, for evaluation.
  void set_deterministic(bool on) noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace coral::learners
