#pragma once
// Private: what the built-in networks take in memory, for the descriptors'
// memory estimates (algorithm_descriptor::memory).

#include <cstddef>
#include <vector>

namespace coral::learners::detail {

// A tanh MLP in -> hidden... -> out: weights and biases, and the sum of its
// layer widths (one float per width and sample for activations).
inline double mlp_parameters(double in, const std::vector<std::size_t>& hidden, double out) {
  double params = 0;
  double width = in;
  for (auto h : hidden) {
    params += (width + 1) * static_cast<double>(h);
    width = static_cast<double>(h);
  }
  return params + (width + 1) * out;
}

inline double mlp_widths(double in, const std::vector<std::size_t>& hidden, double out) {
  double sum = in + out;
  for (auto h : hidden) sum += static_cast<double>(h);
  return sum;
}

// Bytes per network parameter: the parameter, its gradient and Adam's two
// moments (16), plus the flat copies that travel to the policy: the
// learner's flat weights, the published cell and the acting policy's (12).
inline constexpr double ppo_bytes_per_parameter = 16 + 12;
// DQN adds its target network.
inline constexpr double dqn_bytes_per_parameter = ppo_bytes_per_parameter + 4;

}  // namespace coral::learners::detail
