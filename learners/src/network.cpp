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
#include "coral/core/errors.hpp"
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

void collect_categories(const envs::space& s, std::size_t& at,
                        std::vector<std::pair<std::size_t, std::int32_t>>& out) {
  switch (s.kind()) {
    case envs::space_kind::discrete:
    case envs::space_kind::multi_discrete:
      for (const auto n : s.nvec()) out.emplace_back(at++, n);
      break;
    case envs::space_kind::box:
      at += s.flat_size();
      break;
    case envs::space_kind::dict:
    case envs::space_kind::tuple:
      for (const auto& c : s.children()) collect_categories(c, at, out);
      break;
  }
}

}  // namespace

std::vector<std::pair<std::size_t, std::int32_t>> categorical_elements(const envs::space& observation) {
  std::vector<std::pair<std::size_t, std::int32_t>> out;
  std::size_t at = 0;
  collect_categories(observation, at, out);
  return out;
}

void encode_observation(const network_spec& spec, std::span<const float> raw, std::span<float> out) noexcept {
  std::size_t o = 0;
  for (std::size_t f = 0; f < spec.frames; ++f) {
    const float* in = raw.data() + f * spec.raw_obs_dim;
    std::size_t next = 0;  // the next one-hot element's entry in spec.one_hot
    for (std::size_t i = 0; i < spec.raw_obs_dim; ++i) {
      if (next < spec.one_hot.size() && spec.one_hot[next].first == i) {
        const auto count = static_cast<std::size_t>(spec.one_hot[next].second);
        std::fill_n(out.data() + o, count, 0.0f);
        const float v = in[i];
        if (v >= 0.0f && v < static_cast<float>(count)) out[o + static_cast<std::size_t>(v)] = 1.0f;
        o += count;
        ++next;
      } else {
        out[o++] = in[i];
      }
    }
  }
}

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

network_backend parse_backend(std::string_view text) {
  if (text == "fused") return network_backend::fused;
  if (text == "torch") return network_backend::torch;
  throw config_error(fmt::format(fmt::runtime(coral::errors::bad_value), "--backend", text, "fused, torch"));
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
  std::string one_hot;
  for (const auto& [at, count] : spec.one_hot) one_hot += fmt::format("{}{}:{}", one_hot.empty() ? "" : ",", at, count);
  return fmt::format("mlp obs={} frames={} nvec=[{}] box={} hidden=[{}] params={}{}{}{}", spec.raw_obs_dim, spec.frames,
                     fmt::join(spec.nvec, ","), spec.continuous_dim(), fmt::join(spec.hidden, ","),
                     parameter_count(spec), spec.normalize_observations ? " obs_norm" : "",
                     spec.lstm > 0 ? fmt::format(" lstm={}", spec.lstm) : std::string(),
                     one_hot.empty() ? std::string() : fmt::format(" one_hot=[{}]", one_hot));
}

}  // namespace coral::learners
