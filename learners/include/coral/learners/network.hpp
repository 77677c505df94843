#pragma once
/// \file
/// The shape of the MLP actor-critic (torch-free), and the torch policy the
/// inference batcher runs.

#include <array>
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

/// One convolution layer (`--conv C:K[:S]`): `channels` output channels, a
/// `kernel` × `kernel` window moved by `stride` cells, no padding ("valid":
/// an H-cell input gives (H − kernel) / stride + 1 cells), ReLU after it.
struct conv_layer_spec {
  std::size_t channels = 0;  ///< output channels
  std::size_t kernel = 0;    ///< window side, in cells
  std::size_t stride = 1;    ///< cells the window moves by
  friend bool operator==(const conv_layer_spec&, const conv_layer_spec&) = default;
};

/// The convolutions a network's input goes through before its dense layers:
/// the grid they read and the layers in order. The grid is an observation
/// Box of shape (height, width, channels), elements row-major with the
/// channel last (element (y · width + x) · channels + c), as MinAtar's and
/// coral's grid envs lay it out. No layers: no convolution.
struct conv_spec {
  std::size_t height = 0;    ///< grid rows
  std::size_t width = 0;     ///< grid columns
  std::size_t channels = 0;  ///< channels per cell
  std::vector<conv_layer_spec> layers;

  /// Whether there is no convolution.
  [[nodiscard]] bool empty() const noexcept { return layers.empty(); }
  /// The grid after layer `i` (i < layers.size()) as (height, width,
  /// channels); a side a window does not fit in is 0.
  [[nodiscard]] std::array<std::size_t, 3> output_grid(std::size_t i) const noexcept {
    std::size_t h = height, w = width;
    for (std::size_t l = 0; l <= i && l < layers.size(); ++l) {
      const auto& layer = layers[l];
      h = h < layer.kernel ? 0 : (h - layer.kernel) / layer.stride + 1;
      w = w < layer.kernel ? 0 : (w - layer.kernel) / layer.stride + 1;
    }
    return {h, w, i < layers.size() ? layers[i].channels : channels};
  }
  /// Floats per row after the last layer (the grid's own without layers).
  [[nodiscard]] std::size_t output_dim() const noexcept {
    if (layers.empty()) return height * width * channels;
    const auto g = output_grid(layers.size() - 1);
    return g[0] * g[1] * g[2];
  }
  /// Floats of every layer's parameters: weight [out][in][k][k], bias [out] each.
  [[nodiscard]] std::size_t parameter_count() const noexcept {
    std::size_t n = 0, in = channels;
    for (const auto& l : layers) {
      n += l.channels * in * l.kernel * l.kernel + l.channels;
      in = l.channels;
    }
    return n;
  }
  /// "10x10x4 16:3:1,32:3:2": the grid, then each layer's channels:kernel:stride.
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const conv_spec&, const conv_spec&) = default;
};

/// The convolution of MinAtar's networks (Young & Tian 2019): 16 channels,
/// a 3 × 3 kernel, stride 1. A network over a grid observation has it
/// unless `--conv` says otherwise.
inline constexpr conv_layer_spec minatar_conv{16, 3, 1};
/// The hidden widths without `--hidden`: two tanh layers of 32 for an MLP.
inline constexpr std::array<std::size_t, 2> default_mlp_hidden{32, 32};
/// The hidden widths without `--hidden` after a convolution: one ReLU
/// layer of 128, MinAtar's.
inline constexpr std::array<std::size_t, 1> default_conv_hidden{128};

/// The layers of a network, resolved from `--conv` and `--hidden` for one
/// observation: its convolutions (empty for none) and its hidden widths.
struct network_layers {
  conv_spec conv;
  std::vector<std::size_t> hidden;
};

/// Resolves `--conv` (`conv`: its values) and `--hidden` (`hidden`; empty:
/// the default, default_mlp_hidden or, after a convolution,
/// default_conv_hidden) for an observation whose Box shape is `box_shape`
/// (empty for a space that is no Box). `conv` holds `C:K` or `C:K:S`
/// values (whole numbers from 1 to max_conv_number), one per layer, or the
/// one value `none`; empty: MinAtar's convolution (minatar_conv) for a grid
/// (a Box of 3 dimensions), none otherwise. Throws config_error naming
/// --conv for a malformed value, layers over an observation that is not a
/// grid, and a layer whose window is larger than its input grid.
[[nodiscard]] network_layers resolve_layers(const std::vector<std::size_t>& hidden, std::span<const std::string> conv,
                                            std::span<const std::size_t> box_shape);

/// The largest channel count, kernel or stride `--conv` takes.
inline constexpr std::size_t max_conv_number = 65536;

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
  std::vector<std::size_t> hidden{64, 64};  ///< hidden widths (tanh; ReLU after a convolution)
  /// Convolutions before the hidden layers (`--conv`); empty: none. With
  /// them the input is a grid (conv.height × conv.width × conv.channels =
  /// raw_obs_dim, frames 1), the hidden layers use ReLU, and the actor and
  /// the critic share the convolutions and hidden layers (one encoder, as in
  /// MinAtar's and CleanRL's Atari networks) under a linear head each.
  conv_spec conv;
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

  /// The spec for these spaces, its layers resolved from `hidden` and
  /// `conv` (resolve_layers()). Throws config_error
  /// (errors::unsupported_action_space) for an action space without leaves,
  /// what resolve_layers() throws, and errors::conv_no_frames for a
  /// convolution over `frames` > 1.
  [[nodiscard]] static network_spec from_spaces(const envs::space& observation, const envs::space& action,
                                                const std::vector<std::size_t>& hidden, std::size_t frames,
                                                std::span<const std::string> conv = {});
  /// Width of one observation as the network sees it: raw_obs_dim, plus
  /// count − 1 for each one-hot element.
  [[nodiscard]] std::size_t obs_width() const noexcept {
    std::size_t width = raw_obs_dim;
    for (const auto& [at, count] : one_hot) width += static_cast<std::size_t>(count) - 1;
    return width;
  }
  /// Input width: frames × obs_width().
  [[nodiscard]] std::size_t input_dim() const noexcept { return frames * obs_width(); }
  /// Width of what the first hidden layer reads: the convolutions' output,
  /// or the input without them.
  [[nodiscard]] std::size_t dense_input_dim() const noexcept { return conv.empty() ? input_dim() : conv.output_dim(); }
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

/// The part of a network's signature that names its convolutions: empty
/// without them, else " conv=" and conv.to_string().
[[nodiscard]] std::string conv_signature(const conv_spec& conv);

/// A text that identifies the parameter layout of `spec` (checkpoints carry it).
[[nodiscard]] std::string network_signature(const network_spec& spec);

}  // namespace coral::learners
