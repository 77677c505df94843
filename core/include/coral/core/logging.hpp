#pragma once
/// \file
/// Logging through spdlog: one shared sink, one named logger per actor, so
/// that every line carries the name of the actor that wrote it.

#include <memory>
#include <string>
#include <string_view>

#include <spdlog/logger.h>

namespace coral::log {

/// Parses a level name (trace, debug, info, warn, error, critical, off).
/// Throws config_error naming `--log-level` and the allowed values.
[[nodiscard]] spdlog::level::level_enum parse_level(std::string_view name);

/// Sets the level of every coral logger, present and future. Thread safe.
void set_level(spdlog::level::level_enum level);

/// The logger of the actor (or component) `name`: lines look like
/// `[12:00:01.234] [info] [env-group-3] message`. Loggers share one
/// thread-safe stderr sink; the same name returns the same logger.
[[nodiscard]] std::shared_ptr<spdlog::logger> get(const std::string& name);

}  // namespace coral::log
