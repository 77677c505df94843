// network_spec: a built-in network's shape from the env's spaces, its
// parameter count and signature (torch-free).

#include "coral/learners/network.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
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

/// One `--conv` value, `C:K` or `C:K:S`; nullopt where it is malformed.
std::optional<conv_layer_spec> parse_conv_layer(std::string_view text) {
  std::size_t numbers[3] = {0, 0, 1};
  std::size_t count = 0;
  while (true) {
    const auto colon = text.find(':');
    const auto part = text.substr(0, colon);
    if (count == 3 || part.empty()) return std::nullopt;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), numbers[count]);
    if (ec != std::errc() || end != part.data() + part.size() || numbers[count] == 0 ||
        numbers[count] > max_conv_number) {
      return std::nullopt;
    }
    ++count;
    if (colon == std::string_view::npos) break;
    text.remove_prefix(colon + 1);
  }
  if (count < 2) return std::nullopt;
  return conv_layer_spec{numbers[0], numbers[1], numbers[2]};
}

std::string layer_text(const conv_layer_spec& l) { return fmt::format("{}:{}:{}", l.channels, l.kernel, l.stride); }

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


std::string conv_spec::to_string() const {
  std::vector<std::string> texts;
  for (const auto& l : layers) texts.push_back(layer_text(l));
  return fmt::format("{}x{}x{} {}", height, width, channels, fmt::join(texts, ","));
}

network_layers resolve_layers(const std::vector<std::size_t>& hidden, std::span<const std::string> conv,
                              std::span<const std::size_t> box_shape) {
  network_layers out;
  const bool grid = box_shape.size() == 3;
  const bool none = conv.size() == 1 && conv.front() == "none";
  std::vector<conv_layer_spec> layers;
  if (!none) {
    for (const auto& text : conv) {
      const auto layer = parse_conv_layer(text);
      if (!layer) {
        throw config_error(fmt::format(fmt::runtime(coral::errors::bad_value), "--conv", text, errors::conv_allowed));
      }
      layers.push_back(*layer);
    }
  }
  const bool given = !conv.empty();
  if (given && !none && !grid) {
    throw config_error(fmt::format(fmt::runtime(errors::conv_needs_grid), fmt::join(conv, " "),
                                   box_shape.empty() ? std::string("not a Box")
                                                     : fmt::format("a Box of shape ({})", fmt::join(box_shape, ", "))));
  }
  if (!given && grid) layers.push_back(minatar_conv);
  if (!layers.empty()) {
    out.conv = {.height = box_shape[0], .width = box_shape[1], .channels = box_shape[2], .layers = layers};
    std::size_t h = box_shape[0], w = box_shape[1];
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const auto& l = layers[i];
      if (l.kernel > h || l.kernel > w) {
        throw config_error(fmt::format(
            fmt::runtime(errors::conv_too_large), i + 1, given ? conv[i] : layer_text(l), l.kernel, l.kernel, h, w,
            given ? "give smaller windows or fewer layers"
                  : "it is the default for a grid observation: give --conv none, or layers that fit"));
      }
      h = (h - l.kernel) / l.stride + 1;
      w = (w - l.kernel) / l.stride + 1;
    }
  }
  if (!hidden.empty()) {
    out.hidden = hidden;
  } else if (out.conv.empty()) {
    out.hidden.assign(default_mlp_hidden.begin(), default_mlp_hidden.end());
  } else {
    out.hidden.assign(default_conv_hidden.begin(), default_conv_hidden.end());
  }
  return out;
}

network_spec network_spec::from_spaces(const envs::space& observation, const envs::space& action,
                                       const std::vector<std::size_t>& hidden, std::size_t frames,
                                       std::span<const std::string> conv) {
  network_spec spec;
  spec.raw_obs_dim = observation.flat_size();
  spec.frames = std::max<std::size_t>(frames, 1);
  const std::vector<std::size_t> no_shape;
  auto layers = resolve_layers(hidden, conv,
                               observation.kind() == envs::space_kind::box ? observation.shape() : no_shape);
  spec.hidden = std::move(layers.hidden);
  spec.conv = std::move(layers.conv);
  if (!spec.conv.empty() && spec.frames > 1) {
    throw config_error(fmt::format(fmt::runtime(errors::conv_no_frames), spec.frames,
                                   conv.empty() ? std::string("16:3, the default for a grid")
                                                : fmt::format("{}", fmt::join(conv, " "))));
  }
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

std::string conv_signature(const conv_spec& conv) {
  // Empty without convolutions: the signatures of networks without them
  // read as they did before the flag, so their checkpoints still match.
  return conv.empty() ? std::string() : " conv=" + conv.to_string();
}

std::string network_signature(const network_spec& spec) {
  // Without obs norm the text is what it was before the flag existed, so
  // those checkpoints still match.
  std::string one_hot;
  for (const auto& [at, count] : spec.one_hot) one_hot += fmt::format("{}{}:{}", one_hot.empty() ? "" : ",", at, count);
  return fmt::format("mlp obs={} frames={} nvec=[{}] box={} hidden=[{}] params={}{}{}{}{}", spec.raw_obs_dim,
                     spec.frames, fmt::join(spec.nvec, ","), spec.continuous_dim(), fmt::join(spec.hidden, ","),
                     parameter_count(spec), spec.normalize_observations ? " obs_norm" : "",
                     spec.lstm > 0 ? fmt::format(" lstm={}", spec.lstm) : std::string(),
                     one_hot.empty() ? std::string() : fmt::format(" one_hot=[{}]", one_hot), conv_signature(spec.conv));
}

}  // namespace coral::learners
