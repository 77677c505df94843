// Loading MuJoCo models: the cache of shared models, the model folders, and
// the process-wide error and warning handlers.

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mujoco/mujoco.h>
#include <spdlog/spdlog.h>

#include "coral/core/error.hpp"
#include "coral/envs/errors.hpp"
#include "coral/envs/mujoco_env.hpp"

namespace coral::envs {
namespace {

// MuJoCo calls this instead of ending the process. The throw unwinds
// through MuJoCo's C frames (built with unwind tables, as GCC does on
// x86-64 by default); whatever MuJoCo was doing to the mjData is abandoned,
// which is why a failed env is reset before it is used again.
void throw_mujoco_error(const char* message) {
  throw error(fmt::format(fmt::runtime(errors::mujoco_error), message));
}

// MuJoCo's default prints to stdout and appends to MUJOCO_LOG.TXT in the
// working directory. A warning that matters (a bad value) is seen by the env
// in mjData's warning counters and reported as a fault.
void log_mujoco_warning(const char* message) { spdlog::debug("MuJoCo warning: {}", message); }

// MuJoCo's messages may span lines; an error line is one line.
std::string one_line(std::string_view text) {
  std::string out;
  bool space = false;
  for (const char c : text) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

struct model_cache {
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<const mjModel>> models;  // by canonical path
};

model_cache& cache() {
  static auto* c = new model_cache;  // never destroyed: envs may outlive static destruction
  return *c;
}

}  // namespace

void install_mujoco_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    mju_user_error = throw_mujoco_error;
    mju_user_warning = log_mujoco_warning;
  });
}

mujoco_model load_mujoco_model(std::string_view env_name, const std::string& path) {
  install_mujoco_handlers();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw config_error(fmt::format(fmt::runtime(errors::mujoco_model_missing), env_name, path));
  }
  const std::string key = std::filesystem::weakly_canonical(path, ec).string();
  model_cache& c = cache();
  std::lock_guard lock(c.mutex);
  auto& slot = c.models[ec ? path : key];
  if (auto shared = slot.lock()) return shared;

  char message[1024] = {};
  mjModel* loaded = nullptr;
  try {
    loaded = mj_loadXML(path.c_str(), nullptr, message, sizeof message);
  } catch (const std::exception& e) {
    fmt::format_to_n(message, sizeof message - 1, "{}", e.what());
  }
  if (loaded == nullptr) {
    throw config_error(fmt::format(fmt::runtime(errors::mujoco_model_malformed), env_name, path, one_line(message)));
  }
  mujoco_model shared(loaded, [](const mjModel* m) { mj_deleteModel(const_cast<mjModel*>(m)); });
  slot = shared;
  return shared;
}

std::vector<std::string> mujoco_model_dirs() {
  std::vector<std::string> dirs;
  if (const char* env_dir = std::getenv("CORAL_MODEL_DIR"); env_dir != nullptr && *env_dir != '\0') {
    dirs.emplace_back(env_dir);
  }
  dirs.emplace_back(CORAL_MODEL_INSTALL_DIR);
  dirs.emplace_back(CORAL_MODEL_SOURCE_DIR);
  return dirs;
}

std::string find_mujoco_model(std::string_view env_name, std::string_view file) {
  const auto dirs = mujoco_model_dirs();
  for (const auto& dir : dirs) {
    const auto candidate = std::filesystem::path(dir) / file;
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
  }
  throw config_error(fmt::format(fmt::runtime(errors::mujoco_model_not_found), env_name, file, fmt::join(dirs, ", ")));
}

}  // namespace coral::envs
