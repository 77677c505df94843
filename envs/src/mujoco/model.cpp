// Loading MuJoCo models: the cache of shared models, the model folders, and
// the process-wide error and warning handlers.

#include <algorithm>
#include <cctype>
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
#include "coral/core/input_file.hpp"
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

// The values of every `NAME="..."` (or '...') attribute in XML `text`,
// outside comments, with the line each is on.
std::vector<std::pair<std::string, std::size_t>> attribute_values(std::string_view text, std::string_view name) {
  std::vector<std::pair<std::string, std::size_t>> out;
  std::size_t line = 1;
  std::size_t counted = 0;  // text before this offset is counted in `line`
  auto line_at = [&](std::size_t at) {
    line += static_cast<std::size_t>(std::count(text.begin() + static_cast<std::ptrdiff_t>(counted),
                                                text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    counted = at;
    return line;
  };
  std::size_t at = 0;
  while (at < text.size()) {
    if (text.compare(at, 4, "<!--") == 0) {
      const auto end = text.find("-->", at + 4);
      if (end == std::string_view::npos) break;
      at = end + 3;
      continue;
    }
    const bool starts = text.compare(at, name.size(), name) == 0 && at > 0 &&
                        std::isspace(static_cast<unsigned char>(text[at - 1])) != 0;
    if (!starts) {
      ++at;
      continue;
    }
    std::size_t p = at + name.size();
    while (p < text.size() && std::isspace(static_cast<unsigned char>(text[p])) != 0) ++p;
    if (p >= text.size() || text[p] != '=') {
      at = p;
      continue;
    }
    ++p;
    while (p < text.size() && std::isspace(static_cast<unsigned char>(text[p])) != 0) ++p;
    if (p >= text.size() || (text[p] != '"' && text[p] != '\'')) {
      at = p;
      continue;
    }
    const auto end = text.find(text[p], p + 1);
    if (end == std::string_view::npos) break;
    out.emplace_back(std::string(text.substr(p + 1, end - p - 1)), line_at(at));
    at = end + 1;
  }
  return out;
}

// Includes nested deeper than this are left to MuJoCo (which refuses cycles).
constexpr int max_include_depth = 8;

// Checks every file MJCF `file` names (an <include>, a mesh, a texture, a
// height field) that exists under any of the folders MuJoCo may look in,
// before MuJoCo opens it: a FIFO would block it forever, a device never
// end. A name that exists nowhere is left to MuJoCo, which says so.
// `text` is `file`'s contents; `depth` counts nested includes.
void check_model_files(std::string_view env_name, const std::filesystem::path& model_dir, const std::string& file,
                       std::string_view text, int depth) {
  namespace fs = std::filesystem;
  std::vector<fs::path> dirs{model_dir};
  for (const auto* key : {"meshdir", "texturedir"}) {
    for (const auto& [dir, line] : attribute_values(text, key)) dirs.push_back(model_dir / dir);
  }
  for (const auto& [name, line] : attribute_values(text, "file")) {
    for (const auto& dir : dirs) {
      const fs::path candidate = dir / name;  // an absolute name replaces dir
      std::error_code ec;
      if (!fs::exists(fs::symlink_status(candidate, ec)) || ec) continue;
      input_file named(candidate.string(), max_mujoco_file_bytes);
      const bool scan = depth < max_include_depth && name.ends_with(".xml");  // an include, read by MuJoCo as MJCF
      std::string nested;
      if (!named || (scan && !named.read_rest(nested))) {
        throw config_error(fmt::format(fmt::runtime(errors::mujoco_model_names_unreadable), env_name, file, line,
                                       candidate.string(), named.problem()));
      }
      if (scan) check_model_files(env_name, model_dir, candidate.string(), nested, depth + 1);
    }
  }
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
  const std::string key = std::filesystem::weakly_canonical(path, ec).string();
  model_cache& c = cache();
  std::lock_guard lock(c.mutex);
  auto& slot = c.models[ec ? path : key];
  if (auto shared = slot.lock()) return shared;

  {
    input_file model(path, max_mujoco_file_bytes);
    std::string text;
    if (!model || !model.read_rest(text)) {
      throw config_error(fmt::format(fmt::runtime(errors::mujoco_model_unreadable), env_name, path, model.problem()));
    }
    check_model_files(env_name, std::filesystem::path(path).parent_path(), path, text, 0);
  }
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
