#include "coral/core/logging.hpp"

#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "coral/core/error.hpp"

namespace coral::log {
namespace {

struct registry {
  std::mutex mutex;
  spdlog::sink_ptr sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  spdlog::level::level_enum level = spdlog::level::info;

  registry() { sink->set_pattern("[%H:%M:%S.%e] [%^%l%$] [%n] %v"); }
};

registry& the_registry() {
  static registry r;
  return r;
}

}  // namespace

spdlog::level::level_enum parse_level(std::string_view name) {
  using spdlog::level::level_enum;
  for (auto l : {level_enum::trace, level_enum::debug, level_enum::info, level_enum::warn,
                 level_enum::err, level_enum::critical, level_enum::off}) {
    if (name == spdlog::level::to_string_view(l) || (l == level_enum::warn && name == "warn") ||
        (l == level_enum::err && name == "error")) {
      return l;
    }
  }
  throw config_error(fmt::format(fmt::runtime(errors::bad_value), "--log-level", name,
                                 "trace, debug, info, warn, error, critical, off"));
}

void set_level(spdlog::level::level_enum level) {
  auto& r = the_registry();
  std::lock_guard lock(r.mutex);
  r.level = level;
  spdlog::apply_all([level](const std::shared_ptr<spdlog::logger>& l) { l->set_level(level); });
}

std::shared_ptr<spdlog::logger> get(const std::string& name) {
  auto& r = the_registry();
  std::lock_guard lock(r.mutex);
  if (auto existing = spdlog::get(name)) return existing;
  auto logger = std::make_shared<spdlog::logger>(name, r.sink);
  logger->set_level(r.level);
  spdlog::register_logger(logger);
  return logger;
}

}  // namespace coral::log
