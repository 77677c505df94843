// libFuzzer target: the `coral envs rollout --actions` text
// (apps/coral/action_text.cpp, parse_actions).
//
// Input: a first line that says which action space the text is parsed for,
// then the text itself (everything after the first newline):
// - an env name: that env's action space with its default config, for its
//   rows (max_agents); the parsed actions are then stepped through the env;
// - `space ROWS SPEC`: a space built from SPEC, for ROWS rows (1 to 8), to
//   reach the Box, MultiDiscrete, Dict and Tuple syntax no built-in env has.
//   SPEC: `d5` Discrete(5); `m3.2` MultiDiscrete([3, 2]); `b2` Box of 2 in
//   [-1, 1], `b2u` unbounded, `b2p` in [0, +inf); `t(SPEC,...)` Tuple;
//   `k(SPEC,...)` Dict with keys k0, k1, ...
//
// The text must either be refused with config_error or give one step per
// entry, every row inside the action space, and the same actions again when
// the rows are written back with format_action() and parsed.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "coral/action_text.hpp"
#include "coral/core/error.hpp"
#include "coral/envs/registry.hpp"
#include "coral/envs/space.hpp"
#include "env_rollout.hpp"

namespace {

namespace envs = coral::envs;
using coral::fuzz::check;

// Reads a decimal number of at most 7 digits at the front of `s`.
std::optional<std::int32_t> number(std::string_view& s) {
  std::int32_t v = 0;
  std::size_t i = 0;
  for (; i < s.size() && i < 7 && s[i] >= '0' && s[i] <= '9'; ++i) v = v * 10 + (s[i] - '0');
  if (i == 0) return std::nullopt;
  s.remove_prefix(i);
  return v;
}

// Parses SPEC (see the file comment) at the front of `s`. nullopt for a
// malformed spec; envs::space's own checks throw usage_error.
std::optional<envs::space> parse_space(std::string_view& s, int depth) {
  if (s.empty() || depth > 4) return std::nullopt;
  const char kind = s.front();
  s.remove_prefix(1);
  if (kind == 'd') {
    const auto n = number(s);
    if (!n) return std::nullopt;
    return envs::space::discrete(*n);
  }
  if (kind == 'm') {
    std::vector<std::int32_t> nvec;
    for (;;) {
      const auto n = number(s);
      if (!n || nvec.size() == 8) return std::nullopt;
      nvec.push_back(*n);
      if (s.empty() || s.front() != '.') break;
      s.remove_prefix(1);
    }
    return envs::space::multi_discrete(std::move(nvec));
  }
  if (kind == 'b') {
    const auto n = number(s);
    if (!n || *n > 16) return std::nullopt;
    constexpr float inf = std::numeric_limits<float>::infinity();
    const char bounds = s.empty() ? '\0' : s.front();
    if (bounds == 'u' || bounds == 'p') s.remove_prefix(1);
    const float low = bounds == 'u' ? -inf : bounds == 'p' ? 0.0f : -1.0f;
    const float high = bounds == 'u' || bounds == 'p' ? inf : 1.0f;
    return envs::space::box({static_cast<std::size_t>(*n)}, low, high);
  }
  if ((kind == 't' || kind == 'k') && !s.empty() && s.front() == '(') {
    s.remove_prefix(1);
    std::vector<envs::space> items;
    for (;;) {
      auto item = parse_space(s, depth + 1);
      if (!item || items.size() == 8) return std::nullopt;
      items.push_back(std::move(*item));
      if (s.empty()) return std::nullopt;
      const char next = s.front();
      s.remove_prefix(1);
      if (next == ')') break;
      if (next != ',') return std::nullopt;
    }
    if (kind == 't') return envs::space::tuple(std::move(items));
    std::vector<std::pair<std::string, envs::space>> entries;
    for (std::size_t i = 0; i < items.size(); ++i) entries.emplace_back(fmt::format("k{}", i), std::move(items[i]));
    return envs::space::dict(std::move(entries));
  }
  return std::nullopt;
}

// A `space ROWS SPEC` line: the space and the rows.
std::optional<std::pair<envs::space, std::size_t>> space_line(std::string_view line) {
  if (!line.starts_with("space ")) return std::nullopt;
  line.remove_prefix(6);
  const auto rows = number(line);
  if (!rows || *rows < 1 || *rows > 8 || line.empty() || line.front() != ' ') return std::nullopt;
  line.remove_prefix(1);
  try {
    auto s = parse_space(line, 0);
    if (!s || !line.empty()) return std::nullopt;
    return std::pair{std::move(*s), static_cast<std::size_t>(*rows)};
  } catch (const coral::usage_error&) {
    return std::nullopt;  // e.g. Discrete(0): not a space
  }
}

bool same(const coral::cli::step_actions& a, const coral::cli::step_actions& b) {
  return a.discrete == b.discrete && a.continuous.size() == b.continuous.size() &&
         (a.continuous.empty() ||
          std::memcmp(a.continuous.data(), b.continuous.data(), a.continuous.size() * sizeof(float)) == 0);
}

// The checks of the file comment, for a text that parsed.
void check_parsed(std::string_view text, const envs::space& space, std::size_t rows,
                  const std::vector<coral::cli::step_actions>& steps) {
  const std::size_t nd = space.discrete_size(), nc = space.continuous_size();
  std::size_t entries = 1;
  for (const char c : text) entries += c == ',' ? 1 : 0;
  check(steps.size() == entries, "parse_actions gave another number of steps than entries");
  std::string again;
  for (const auto& step : steps) {
    check(step.discrete.size() == rows * nd && step.continuous.size() == rows * nc,
          "parse_actions gave a step of the wrong width");
    if (!again.empty()) again += ',';
    for (std::size_t r = 0; r < rows; ++r) {
      const std::span<const std::int32_t> d(step.discrete.data() + r * nd, nd);
      const std::span<const float> c(step.continuous.data() + r * nc, nc);
      check(envs::contains_action(space, d, c), "parse_actions accepted an action outside the action space");
      if (r > 0) again += '/';
      again += coral::cli::format_action(space, d, c);
    }
  }
  const auto reparsed = coral::cli::parse_actions(again, space, rows);
  check(reparsed.size() == steps.size(), "format_action's text parses to another number of steps");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    check(same(reparsed[i], steps[i]), "format_action's text parses to other actions");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto newline = input.find('\n');
  if (newline == std::string_view::npos) return 0;
  const std::string_view first = input.substr(0, newline);
  const std::string_view text = input.substr(newline + 1);

  std::unique_ptr<envs::env> env;
  std::optional<std::pair<envs::space, std::size_t>> target = space_line(first);
  if (!target) {
    const auto& registry = envs::registry::global();
    if (!registry.contains(first)) return 0;
    env = registry.make(first, {}, 0, 0);
    target.emplace(env->action_space(), env->max_agents());
  }
  const auto& [space, rows] = *target;
  std::vector<coral::cli::step_actions> steps;
  try {
    steps = coral::cli::parse_actions(text, space, rows);
  } catch (const coral::config_error&) {
    return 0;  // refused with a named error
  }
  check_parsed(text, space, rows, steps);
  if (env && coral::fuzz::steppable(first)) {
    coral::fuzz::roll(std::move(env), std::min<std::size_t>(steps.size(), 16), [&](std::size_t t, envs::env_batch& b) {
      std::copy(steps[t].discrete.begin(), steps[t].discrete.end(), b.discrete_actions().data());
      std::copy(steps[t].continuous.begin(), steps[t].continuous.end(), b.continuous_actions().data());
    });
  }
  return 0;
}
