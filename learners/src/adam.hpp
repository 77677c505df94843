#pragma once
// Private: Adam written out over a list of parameter tensors, so that its
// state is plain floats a checkpoint holds exactly (the learners' shared
// optimiser). Only torch translation units include it.

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include <torch/torch.h>

#include "coral/core/error.hpp"
#include "coral/learners/fused/optim.hpp"
#include "coral/learners/ppo_learner.hpp"

namespace coral::learners::detail {

/// Scales the gradients of `params` so that their joint 2-norm is at most
/// `max_norm`, as torch::nn::utils::clip_grad_norm_ does, in one pass over
/// the floats rather than a few operators per tensor: the fused engine's
/// square_sum and scale() (coral/learners/fused/optim.hpp), so that both
/// backends clip to the bit alike. Returns the norm before.
inline double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  torch::NoGradGuard no_grad;
  fused::square_sum squares;
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    const auto g = p.grad().contiguous();
    squares.add({g.data_ptr<float>(), static_cast<std::size_t>(g.numel())});
  }
  const double norm = std::sqrt(squares.total());
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1.0) {
    for (const auto& p : params) {
      if (!p.grad().defined()) continue;
      auto g = p.grad();
      if (g.is_contiguous()) {
        fused::scale({g.data_ptr<float>(), static_cast<std::size_t>(g.numel())}, coef);
      } else {
        g.mul_(coef);
      }
    }
  }
  return norm;
}

/// Adam (Kingma and Ba) with bias correction.
struct flat_adam {
  std::vector<torch::Tensor> m;  ///< first moments, one per parameter
  std::vector<torch::Tensor> v;  ///< second moments
  std::uint64_t steps = 0;
  double epsilon = 1e-5;

  flat_adam(const std::vector<torch::Tensor>& params, double eps) : epsilon(eps) {
    for (const auto& p : params) {
      m.push_back(torch::zeros_like(p));
      v.push_back(torch::zeros_like(p));
    }
  }

  /// One step of size `lr` on every parameter that has a gradient.
  ///
  /// A plain loop over each tensor's floats: the networks are small (about
  /// 10k parameters), and eight torch operators per tensor cost more in
  /// dispatch than the arithmetic (a PPO update takes a step per minibatch).
  void step(const std::vector<torch::Tensor>& params, double lr) {
    torch::NoGradGuard no_grad;
    ++steps;
    for (std::size_t i = 0; i < params.size(); ++i) {
      auto p = params[i];
      if (!p.grad().defined()) continue;
      const auto g = p.grad().contiguous();
      // The fused engine's update (coral/learners/fused/optim.hpp): one
      // arithmetic for both backends.
      fused::adam_update(p.data_ptr<float>(), g.data_ptr<float>(), m[i].data_ptr<float>(), v[i].data_ptr<float>(),
                         static_cast<std::size_t>(p.numel()), steps, lr, epsilon);
    }
  }

  /// Appends the moments, flat in parameter order.
  void save(std::vector<float>& m_out, std::vector<float>& v_out) const {
    for (std::size_t i = 0; i < m.size(); ++i) {
      const auto mc = m[i].contiguous();
      const auto vc = v[i].contiguous();
      m_out.insert(m_out.end(), mc.data_ptr<float>(), mc.data_ptr<float>() + mc.numel());
      v_out.insert(v_out.end(), vc.data_ptr<float>(), vc.data_ptr<float>() + vc.numel());
    }
  }

  /// Restores moments written by save(); usage_error if the sizes differ.
  void load(std::span<const float> m_in, std::span<const float> v_in, std::uint64_t step_count) {
    std::size_t total = 0;
    for (const auto& t : m) total += static_cast<std::size_t>(t.numel());
    if (m_in.size() != total || v_in.size() != total) {
      throw usage_error("adam: optimiser state does not match the parameters");
    }
    torch::NoGradGuard no_grad;
    std::size_t offset = 0;
    for (std::size_t i = 0; i < m.size(); ++i) {
      const auto n = static_cast<std::size_t>(m[i].numel());
      std::copy_n(m_in.begin() + static_cast<std::ptrdiff_t>(offset), n, m[i].data_ptr<float>());
      std::copy_n(v_in.begin() + static_cast<std::ptrdiff_t>(offset), n, v[i].data_ptr<float>());
      offset += n;
    }
    steps = step_count;
  }
};

/// The checkpoint state of a Q learner (DQN, R2D2): its online `parameters`,
/// `adam` and counters.
inline training::learner_state q_learner_state(std::vector<float> parameters, const flat_adam& adam, std::uint64_t updates,
                                     std::uint64_t env_steps) {
  training::learner_state st;
  st.parameters = std::move(parameters);
  adam.save(st.adam_m, st.adam_v);
  st.adam_steps = adam.steps;
  st.updates = updates;
  st.env_steps = env_steps;
  return st;
}

}  // namespace coral::learners::detail
