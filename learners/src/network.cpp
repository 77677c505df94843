// network_spec: a built-in network's shape from the env's spaces, its
// parameter count and signature (torch-free).

#include "coral/learners/network.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/core/error.hpp"
#include "coral/learners/errors.hpp"
#include "flat_layout.hpp"

namespace coral::learners {
namespace {

void collect_leaves(const envs::space& s, network_spec& spec) {
  switch (s.kind()) {
    case envs::space_kind::discrete:
    case envs::space_kind::multi_discrete:
      spec.nvec.insert(spec.nvec.end(), s.nvec().begin(), s.nvec().end());
      break;
    case envs::space_kind::box:
      spec.low.insert(spec.low.end(), s.low().begin(), s.low().end());
      spec.high.insert(spec.high.end(), s.high().begin(), s.high().end());
      break;
    case envs::space_kind::dict:
    case envs::space_kind::tuple:
      for (const auto& c : s.children()) collect_leaves(c, spec);
      break;
  }
}

}  // namespace

network_spec network_spec::from_spaces(const envs::space& observation, const envs::space& action,
                                       std::vector<std::size_t> hidden, std::size_t frames) {
  network_spec spec;
  spec.raw_obs_dim = observation.flat_size();
  spec.frames = std::max<std::size_t>(frames, 1);
  spec.hidden = std::move(hidden);
  collect_leaves(action, spec);
  if (spec.nvec.size() != action.discrete_size() || spec.low.size() != action.continuous_size() ||
      spec.nvec.size() + spec.low.size() == 0) {
    throw config_error(fmt::format(fmt::runtime(errors::unsupported_action_space), action.to_string()));
  }
  return spec;
}

std::size_t network_spec::logits_dim() const noexcept {
  std::size_t n = 0;
  for (auto k : nvec) n += static_cast<std::size_t>(k);
  return n;
}

std::size_t parameter_count(const network_spec& spec) { return detail::actor_critic_parameter_count(spec); }

std::size_t published_weight_count(const network_spec& spec) {
  return parameter_count(spec) + (spec.normalize_observations ? 2 * spec.input_dim() : 0);
}

std::string network_signature(const network_spec& spec) {
  // Without obs norm the text is what it was before the flag existed, so
  // those checkpoints still match.
  return fmt::format("mlp obs={} frames={} nvec=[{}] box={} hidden=[{}] params={}{}{}", spec.raw_obs_dim, spec.frames,
                     fmt::join(spec.nvec, ","), spec.continuous_dim(), fmt::join(spec.hidden, ","),
                     parameter_count(spec), spec.normalize_observations ? " obs_norm" : "",
                     spec.lstm > 0 ? fmt::format(" lstm={}", spec.lstm) : std::string());
}

}  // namespace coral::learners
