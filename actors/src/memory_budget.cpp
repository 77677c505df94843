#include "coral/actors/memory_budget.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/envs/registry.hpp"

namespace coral::actors {
namespace {

// Measured with `coral bench --steps 1` on cartpole (peak RSS over envs
// and groups), rounded down so that the estimate stays a lower bound: an
// env with its slice bookkeeping and rng costs about 790 bytes besides its
// batch rows, a group actor (coroutine frame, channels) about 5 KiB.
constexpr double env_bytes = 512;
constexpr double group_bytes = 4096;

// Bytes of one batch row besides its observation and action widths: reward
// (float), terminated, truncated, active (bytes), episode return (float) and
// length (int32).
constexpr double row_scalar_bytes = 4 + 1 + 1 + 1 + 4 + 4;

std::optional<double> read_number(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text)) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(v >= 0)) return std::nullopt;  // "max" is no limit
  return v;
}

// MemAvailable, or MemTotal on kernels that do not report it, in bytes.
std::optional<double> meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  std::optional<double> total;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
    if (key == "MemTotal:") total = kib * 1024;
  }
  return total;
}

// What the cgroup (v2) limits of this process and its parents leave.
std::optional<double> cgroup_headroom() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::string path;
  while (std::getline(in, line)) {
    if (line.starts_with("0::")) path = line.substr(3);
  }
  if (path.empty()) return std::nullopt;
  std::optional<double> headroom;
  for (;;) {
    const std::string dir = "/sys/fs/cgroup" + (path == "/" ? std::string() : path);
    const auto max = read_number(dir + "/memory.max");
    const auto current = read_number(dir + "/memory.current");
    if (max && current) headroom = std::min(headroom.value_or(*max), std::max(0.0, *max - *current));
    if (path == "/" || path.empty()) break;
    const auto slash = path.rfind('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return headroom;
}

double parse_override(const char* text) {
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string suffix(end);
  double unit = 0;
  if (suffix.empty() || suffix == "B") unit = 1;
  if (suffix == "KiB") unit = 1024.0;
  if (suffix == "MiB") unit = 1024.0 * 1024;
  if (suffix == "GiB") unit = 1024.0 * 1024 * 1024;
  if (suffix == "TiB") unit = 1024.0 * 1024 * 1024 * 1024;
  if (end == s.c_str() || unit == 0 || !std::isfinite(v) || v < 0) {
    throw config_error(fmt::format(fmt::runtime(errors::bad_memory_override), s));
  }
  return v * unit;
}

std::size_t choices(const envs::space& s) {
  switch (s.kind()) {
    case envs::space_kind::discrete:
    case envs::space_kind::multi_discrete: {
      std::size_t n = 0;
      for (auto k : s.nvec()) n += static_cast<std::size_t>(std::max(k, 0));
      return n;
    }
    case envs::space_kind::box:
      return 0;
    case envs::space_kind::dict:
    case envs::space_kind::tuple: {
      std::size_t n = 0;
      for (const auto& c : s.children()) n += choices(c);
      return n;
    }
  }
  return 0;
}

}  // namespace

void memory_estimate::add(std::string what, double bytes) {
  if (bytes > 0) parts_.push_back({std::move(what), bytes});
}

double memory_estimate::total() const noexcept {
  double sum = 0;
  for (const auto& p : parts_) sum += p.bytes;
  return sum;
}

std::string memory_estimate::largest_parts(std::size_t at_most) const {
  auto sorted = parts_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  std::string text;
  for (std::size_t i = 0; i < sorted.size() && i < at_most; ++i) {
    if (i > 0) text += ", ";
    text += fmt::format("{} {}", sorted[i].what, format_bytes(sorted[i].bytes));
  }
  return text;
}

env_shape probe_env_shape(const sampler_options& o) {
  const auto e = envs::registry::global().make(o.env, o.env_args, o.seed, 0);
  const auto& observation = e->observation_space();
  return {.obs_dim = observation.flat_size(),
          .obs_shape = observation.kind() == envs::space_kind::box ? observation.shape() : std::vector<std::size_t>{},
          .discrete_action_dim = e->action_space().discrete_size(),
          .continuous_action_dim = e->action_space().continuous_size(),
          .action_choices = choices(e->action_space()),
          .action_mask_bytes = e->action_mask_size(),
          .agents = e->max_agents(),
          .heap_bytes = e->heap_bytes()};
}

void add_sampler_memory(memory_estimate& estimate, const sampler_options& o, const env_shape& shape) {
  const double env_count = static_cast<double>(o.num_envs);
  // Shards pad their rows apart (shard_row_alignment); an auto count may be one per thread.
  const double shards = static_cast<double>(o.shards == shards_auto ? o.threads : o.shards);
  const double padding = shards > 1 ? shards * static_cast<double>(shard_row_alignment - 1) : 0.0;
  const double rows = env_count * static_cast<double>(shape.agents) + padding;
  const double row_bytes = 2 * 4 * static_cast<double>(shape.obs_dim) +
                           4 * static_cast<double>(shape.discrete_action_dim + shape.continuous_action_dim) +
                           row_scalar_bytes;
  estimate.add("env batch slabs", rows * row_bytes);
  const double groups =
      o.envs_per_group == 0 ? env_count : std::ceil(env_count / static_cast<double>(o.envs_per_group));
  estimate.add("envs", env_count * (env_bytes + static_cast<double>(shape.heap_bytes)) + groups * group_bytes);
}

double available_memory() {
  if (const char* text = std::getenv("CORAL_MEMORY_AVAILABLE"); text != nullptr) return parse_override(text);
  double bytes = meminfo_available().value_or(0);
  if (bytes == 0) {
    bytes = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  }
  if (const auto cg = cgroup_headroom()) bytes = std::min(bytes, *cg);
  return bytes;
}

std::string format_bytes(double bytes) {
  static constexpr std::array<const char*, 7> units{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{:.0f} B", bytes);
  std::size_t u = 0;
  while (bytes >= 1024 && u + 1 < units.size()) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", bytes, units[u]);
}

void check_memory(const memory_estimate& estimate, const std::vector<sizing_flag>& flags, double available) {
  const double total = estimate.total();
  if (flags.empty() || total <= available) return;
  const sizing_flag* culprit = &flags.front();
  double saved = 0;
  for (const auto& f : flags) {
    if (total - f.total_at_default > saved) {
      saved = total - f.total_at_default;
      culprit = &f;
    }
  }
  throw config_error(fmt::format(fmt::runtime(errors::memory_over_budget), culprit->flag, culprit->value,
                                 format_bytes(total), estimate.largest_parts(), format_bytes(available)));
}

}  // namespace coral::actors
