// libFuzzer target: `--env-arg key=value` (envs/src/config.cpp: the split of
// each value and its check against an env's declared keys), then the env the
// registry builds from it.
//
// Input: text lines. The first names an env of the registry; each further
// line is one `--env-arg` value, as a user types it.
//
// The values must either be refused with config_error before any env exists,
// or build an env that resets and steps (random actions) with every
// observation in its space and every reward finite; a MuJoCo env may instead
// report a diverging simulation as an env fault (env_failed).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "coral/core/error.hpp"
#include "coral/envs/config.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"
#include "env_rollout.hpp"

namespace {

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    const auto end = text.find('\n');
    lines.emplace_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto lines = lines_of({reinterpret_cast<const char*>(data), size});
  if (lines.empty()) return 0;
  const std::string name = lines.front();
  lines.erase(lines.begin());
  const auto& registry = coral::envs::registry::global();
  std::unique_ptr<coral::envs::env> env;
  try {
    env = registry.make(name, coral::envs::parse_env_args(lines), 0, 0);
  } catch (const coral::config_error&) {
    return 0;  // refused with a named error before anything started
  }
  if (!coral::fuzz::steppable(name)) return 0;
  if (coral::fuzz::may_diverge(name)) {
    try {
      coral::fuzz::roll_random(std::move(env), 32, size);
    } catch (const coral::envs::env_failed&) {
      // a diverging simulation, reported as the env fault it is
    }
    return 0;
  }
  coral::fuzz::roll_random(std::move(env), 32, size);
  return 0;
}
