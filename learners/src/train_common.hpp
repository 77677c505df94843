#pragma once
// Private: what the PPO and DQN training runs share (option errors, JSON
// text, the result, the progress actor; run files in run_files.hpp).

#include <cmath>
#include <ostream>
#include <string>
#include <string_view>

#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <fmt/format.h>

#include "coral/core/runtime.hpp"

#include "coral/actors/messages.hpp"
#include "coral/core/error.hpp"
#include "coral/learners/checkpoint.hpp"
#include "coral/learners/messages.hpp"
#include "coral/learners/train.hpp"
#include "coral/learners/training_stats.hpp"
#include "run_files.hpp"

namespace coral::learners::detail {

[[noreturn]] inline void out_of_range(std::string_view flag, const auto& value, std::string_view requirement) {
  throw config_error(fmt::format(fmt::runtime(actors::messages::flag_out_of_range), flag, value, requirement));
}

inline std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
      continue;
    }
    out += c;
  }
  return out + "\"";
}

inline std::string number(double x) { return std::isfinite(x) ? fmt::format("{}", x) : "null"; }

/// The result of a run that ended with statistics `s`.
inline train_result make_result(const stats_snapshot& s, std::optional<double> target, bool interrupted,
                                std::uint64_t env_steps, std::uint64_t updates, std::string checkpoint_file,
                                double wall_seconds) {
  train_result result;
  result.wall_seconds = wall_seconds;
  result.solved = target && s.window >= 100 && s.mean_return >= *target;
  result.interrupted = interrupted;
  result.env_steps = env_steps;
  result.mean_return = s.mean_return;
  result.mean_length = s.mean_length;
  result.episodes = s.episodes;
  result.updates = updates;
  result.target_return = target;
  result.checkpoint = std::move(checkpoint_file);
  return result;
}

/// Spawns actor `progress`, which calls `report` every `seconds` (none if 0).
template <class Report>
void spawn_progress(runtime& rt, double seconds, Report& report) {
  if (!(seconds > 0)) return;
  rt.spawn("progress", rt.pool("progress", 1), [seconds, &report]() -> asio::awaitable<void> {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
    for (;;) {
      timer.expires_after(period);
      co_await timer.async_wait(asio::use_awaitable);
      report();
    }
  });
}

}  // namespace coral::learners::detail
