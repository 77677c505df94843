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

namespace coral::learners::detail {

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
  void step(const std::vector<torch::Tensor>& params, double lr) {
    torch::NoGradGuard no_grad;
    ++steps;
    constexpr double b1 = 0.9;
    constexpr double b2 = 0.999;
    const double c1 = 1.0 - std::pow(b1, static_cast<double>(steps));
    const double c2 = 1.0 - std::pow(b2, static_cast<double>(steps));
    for (std::size_t i = 0; i < params.size(); ++i) {
      auto p = params[i];
      if (!p.grad().defined()) continue;
      const auto& g = p.grad();
      m[i].mul_(b1).add_(g, 1.0 - b1);
      v[i].mul_(b2).addcmul_(g, g, 1.0 - b2);
      auto denom = (v[i] / c2).sqrt_().add_(epsilon);
      p.addcdiv_(m[i], denom, -lr / c1);
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

}  // namespace coral::learners::detail
