#pragma once
// Private: what the built-in networks take in memory, for the descriptors'
// memory estimates (algorithm_descriptor::memory).

#include <cstddef>
#include <vector>

#include "coral/actors/memory_budget.hpp"
#include "coral/learners/network.hpp"

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

// Adds what the convolutions `c` take: their parameters at
// `bytes_per_parameter`, and for `rows` rows in passes at once each
// layer's patches (im2col) and output, floats.
inline void add_conv_memory(actors::memory_estimate& e, const conv_spec& c, double rows, double bytes_per_parameter) {
  double per_row = 0;
  std::size_t in = c.channels;
  for (std::size_t l = 0; l < c.layers.size(); ++l) {
    const auto g = c.output_grid(l);
    const double cells = static_cast<double>(g[0]) * static_cast<double>(g[1]);
    const double patch = static_cast<double>(in) * static_cast<double>(c.layers[l].kernel * c.layers[l].kernel);
    per_row += cells * (patch + static_cast<double>(g[2]));
    in = g[2];
  }
  e.add("convolutions", static_cast<double>(c.parameter_count()) * bytes_per_parameter + rows * per_row * 4);
}

// Bytes per network parameter: the parameter, its gradient and Adam's two
// moments (16), plus the flat copies that travel to the policy: the
// learner's flat weights, the published cell and the acting policy's (12).
inline constexpr double ppo_bytes_per_parameter = 16 + 12;
// DQN adds its target network.
inline constexpr double dqn_bytes_per_parameter = ppo_bytes_per_parameter + 4;

}  // namespace coral::learners::detail
