#pragma once
/// \file
/// The MLP actor-critic on the fused engine (torch-free): separate actor and
/// critic MLPs with tanh hidden layers, categorical heads over `nvec` and
/// Gaussian heads with a state-independent log std, forward and backward by
/// hand over one flat parameter buffer in the torch twin's order
/// (learners/src/actor_critic.hpp's ordered(): log_std if any, then the
/// actor's layers, then the critic's; each layer weight [out][in], bias).
/// With convolutions (spec.conv) the actor and critic share one encoder
/// (fused::encoder: the convolutions, then the hidden layers with ReLU) and
/// are a linear head each: log_std, the encoder, the actor's head, the
/// critic's.
///
/// Flat weights move between the backends unchanged: load the torch twin's
/// flatten() into parameters(), or parameters() into the twin's load().

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "coral/learners/fused/conv.hpp"
#include "coral/learners/fused/layers.hpp"
#include "coral/learners/network.hpp"

namespace coral::learners::fused {

/// The network of a spec without an LSTM (spec.lstm == 0), with the buffers
/// for passes of up to `max_rows` rows, allocated once.
///
/// A pass: forward() on observations, log_prob_entropy() on the actions
/// taken, then backward() from the loss's gradients with respect to each
/// row's log probability, entropy and value. The parameters are the
/// network's own (zero until written: see init_orthogonal()).
class actor_critic {
 public:
  /// Throws usage_error (errors::fused_needs_mlp) for a spec with an LSTM.
  actor_critic(const network_spec& spec, std::size_t max_rows);

  /// Floats of the flat parameters of `spec` (as the torch twin's flatten()).
  [[nodiscard]] static std::size_t parameter_count(const network_spec& spec);

  /// The spec it was built for.
  [[nodiscard]] const network_spec& spec() const noexcept { return spec_; }
  /// The most rows a pass may have.
  [[nodiscard]] std::size_t max_rows() const noexcept { return max_rows_; }
  /// Width of the actor's output: the logits (sum of nvec), then the means.
  [[nodiscard]] std::size_t head_width() const noexcept { return logits_ + continuous_; }

  /// The flat parameters, in the torch twin's order and layout.
  [[nodiscard]] std::span<float> parameters() noexcept { return params_; }
  /// The flat parameters (read-only).
  [[nodiscard]] std::span<const float> parameters() const noexcept { return params_; }
  /// The flat gradients of the last backward(), laid out as parameters().
  [[nodiscard]] std::span<float> gradients() noexcept { return grads_; }
  /// The flat gradients (read-only).
  [[nodiscard]] std::span<const float> gradients() const noexcept { return grads_; }

  /// Runs actor and critic on `x` [rows][input_dim]. `x` must stay valid
  /// and unchanged until backward(). Throws usage_error
  /// (errors::fused_too_many_rows) where rows > max_rows().
  void forward(const float* x, std::size_t rows);
  /// The actor's output of the last forward() [rows][head_width()].
  [[nodiscard]] std::span<const float> actor_out() const noexcept;
  /// The values of the last forward() [rows].
  [[nodiscard]] std::span<const float> values() const noexcept;

  /// Each row's log probability and entropy of the actions `discrete`
  /// [rows][nvec.size()] and `continuous` [rows][continuous_dim] under the
  /// last forward(), as the twin's log_prob_entropy(). With `masks`
  /// [rows][sum of nvec] (1 = legal, envs/env.hpp's action-mask rows), a
  /// masked value's logit is −∞: each head's softmax, log probability and
  /// entropy are over its legal values alone, and a masked logit gets no
  /// gradient (every head needs a legal value, and the action taken must be
  /// one). The actions and masks must stay valid until backward().
  void log_prob_entropy(const std::int32_t* discrete, const float* continuous,
                        const std::uint8_t* masks = nullptr) noexcept;
  /// The log probabilities of the last log_prob_entropy() [rows].
  [[nodiscard]] std::span<const float> log_probs() const noexcept;
  /// The entropies of the last log_prob_entropy() [rows].
  [[nodiscard]] std::span<const float> entropies() const noexcept;

  /// Writes gradients() of a loss whose gradients with respect to each
  /// row's log probability, entropy and value are `d_log_prob`,
  /// `d_entropy`, `d_value` [rows each], after forward() and
  /// log_prob_entropy() of those rows. Unless `d_x` is null, also writes
  /// the loss's gradient with respect to the input, d_x [rows][input_dim]
  /// (the actor's and the critic's parts added: what a trunk below the
  /// heads back-propagates from); a network with convolutions writes none
  /// (its encoder reads observations).
  void backward(const float* d_log_prob, const float* d_entropy, const float* d_value,
                float* d_x = nullptr) noexcept;

 private:
  network_spec spec_;
  std::size_t max_rows_;
  std::size_t rows_ = 0;
  std::size_t logits_ = 0;      // sum of nvec
  std::size_t continuous_ = 0;  // Box elements
  std::vector<float> params_;
  std::vector<float> grads_;
  encoder encoder_;  // shared by actor and critic with convolutions; empty without
  mlp actor_;        // the actor's MLP, or with the encoder its head
  mlp critic_;       // likewise
  const float* x_ = nullptr;  // what actor_ and critic_ read: the input, or the encoder's features
  const std::int32_t* discrete_ = nullptr;
  const float* continuous_actions_ = nullptr;
  const std::uint8_t* masks_ = nullptr;
  std::vector<float> log_softmax_;  // [max_rows][logits_]
  std::vector<float> head_entropy_; // [max_rows][nvec.size()]
  std::vector<float> z_;            // [max_rows][continuous_]: (action − mean) / std
  std::vector<float> inv_std_;      // [continuous_]
  std::vector<double> d_log_std_;   // [continuous_]: its gradient, summed
  std::vector<float> log_prob_;     // [max_rows]
  std::vector<float> entropy_;      // [max_rows]
  std::vector<float> d_out_;        // [max_rows][head_width()]
  std::vector<float> d_x_critic_;   // [max_rows][input_dim]: the critic's part of backward()'s d_x
  std::vector<float> d_features_, d_critic_features_;  // [max_rows][features]: with the encoder
};

/// Fresh flat parameters for `spec` as the torch twin initialises them
/// (orthogonal weights with gain √2 for hidden layers, 0.01 for the actor's
/// head, 1 for the critic's; zero biases; log std 0), drawn from
/// coral::rng(seed): the same distribution as torch's, not its numbers.
[[nodiscard]] std::vector<float> init_orthogonal(const network_spec& spec, std::uint64_t seed);

/// Writes an orthogonal [rows][cols] matrix times `gain` into `w`: its rows
/// orthonormal where rows ≤ cols, else its columns (Gram-Schmidt, in
/// double, of a matrix of standard normal draws from `seed`).
void orthogonal(float* w, std::size_t rows, std::size_t cols, double gain, std::uint64_t seed);
/// The work (rows × cols × the shorter side) from which orthogonal() stops
/// at a signal (errors::init_interrupted) rather than finishing: about a
/// tenth of a second of it.
inline constexpr double orthogonal_stoppable_work = 134'217'728.0;  // 2^27

}  // namespace coral::learners::fused
