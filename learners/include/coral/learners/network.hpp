#pragma once
/// \file
/// The shape of the MLP actor-critic (torch-free), and the torch policy the
/// inference batcher runs.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "coral/actors/policy.hpp"
#include "coral/envs/space.hpp"

namespace coral::learners {

/// What computes a learner's updates (train_options::backend).
enum class network_backend {
  fused,  ///< coral's CPU engine (coral/learners/fused/), where it has the network
  torch,  ///< the libtorch twin (coral::learners_torch)
};

/// "fused" or "torch"; config_error (naming --backend) for anything else.
[[nodiscard]] network_backend parse_backend(std::string_view text);

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
  /// Observations are normalised by running moments (`--obs-norm`): the
  /// published weights then end with normalizer_block() (2 × input_dim floats).
  bool normalize_observations = false;
  /// Width of the LSTM after the encoder (`--lstm`); 0: no recurrent core.
  /// With it the network is one trunk: the hidden layers encode the input,
  /// an LSTM cell of this width carries the state across steps, and the
  /// actor and critic heads read its output. mlp_policy keeps each row's
  /// state; rollout segments carry it at their first step.
  std::size_t lstm = 0;
  /// The observation's elements fed one-hot (PPO, unless `--no-one-hot`):
  /// each one's position in the flat observation row (a Discrete leaf's
  /// index, a MultiDiscrete component's) and its number of values, by
  /// position (categorical_elements()). The network sees the row with each
  /// such element replaced by that many floats (encode_observation()).
  /// Empty: the flat row is the input as it is.
  std::vector<std::pair<std::size_t, std::int32_t>> one_hot;

  /// The spec for these spaces. Throws config_error
  /// (errors::unsupported_action_space) for an action space without leaves.
  [[nodiscard]] static network_spec from_spaces(const envs::space& observation, const envs::space& action,
                                                std::vector<std::size_t> hidden, std::size_t frames);
  /// Width of one observation as the network sees it: raw_obs_dim, plus
  /// count − 1 for each one-hot element.
  [[nodiscard]] std::size_t obs_width() const noexcept {
    std::size_t width = raw_obs_dim;
    for (const auto& [at, count] : one_hot) width += static_cast<std::size_t>(count) - 1;
    return width;
  }
  /// Input width: frames × obs_width().
  [[nodiscard]] std::size_t input_dim() const noexcept { return frames * obs_width(); }
  /// Sum of nvec: the width of the logits.
  [[nodiscard]] std::size_t logits_dim() const noexcept;
  /// Number of Box elements.
  [[nodiscard]] std::size_t continuous_dim() const noexcept { return low.size(); }
  /// Floats of recurrent state per row: the LSTM's h then c (2 × lstm), 0 without one.
  [[nodiscard]] std::size_t state_dim() const noexcept { return 2 * lstm; }
};

/// The elements of `observation`'s flat row that hold a category, in leaf
/// order: every Discrete leaf and MultiDiscrete component (envs/space.hpp's
/// flat layout stores its index as one float), with its number of values.
/// Box elements are not among them. What network_spec::one_hot takes.
[[nodiscard]] std::vector<std::pair<std::size_t, std::int32_t>> categorical_elements(const envs::space& observation);

/// Writes the network's input for a stacked flat observation row `raw`
/// (frames × raw_obs_dim floats) into `out` (input_dim() floats): frame by
/// frame, each element as it is, except the one_hot ones, each written as
/// `count` floats with a 1 at its index (all 0 for an index outside [0,
/// count), such as an empty slot's meaningless row). Allocates nothing.
void encode_observation(const network_spec& spec, std::span<const float> raw, std::span<float> out) noexcept;

/// Sets torch's intra-op and inter-op thread counts to 1, once per process.
///
/// On the 2-core machines coral targets, the env groups already own the
/// cores: a torch pool of its own would oversubscribe them, and for 64-wide
/// layers one thread is faster than a parallel region's fork/join anyway.
/// Later calls do nothing (torch refuses to change inter-op threads twice).
/// Defined in coral::learners_torch; the torch learners call it when made.
void use_one_torch_thread();

/// The number of floats in the flat weights of a network of `spec` (its
/// parameters, without the normaliser's block).
[[nodiscard]] std::size_t parameter_count(const network_spec& spec);
/// The number of floats the learner publishes for `spec`: parameter_count(),
/// plus 2 × input_dim() with normalize_observations.
[[nodiscard]] std::size_t published_weight_count(const network_spec& spec);

/// A text that identifies the parameter layout of `spec` (checkpoints carry it).
[[nodiscard]] std::string network_signature(const network_spec& spec);

}  // namespace coral::learners
