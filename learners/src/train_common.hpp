#pragma once
// Private: what the PPO and DQN training runs share (option errors, JSON
// text, the learning-curve plot, checkpoint checks on resume).

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

/// Writes run_dir/learning_curve.png with gnuplot, if it is installed.
inline void plot_learning_curve(const std::filesystem::path& dir, std::ostream& progress) {
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) {
    progress << "warning: gnuplot not found; no learning_curve.png\n";
    return;
  }
  const auto script = dir / "learning_curve.gp";
  {
    std::ofstream gp(script);
    gp << "set terminal pngcairo size 900,500 noenhanced\n"
       << "set output '" << (dir / "learning_curve.png").string() << "'\n"
       << "set datafile separator ','\n"
       << "set key autotitle columnhead left top\n"
       << "set xlabel 'env steps'\n"
       << "set ylabel 'mean return (last 100 episodes)'\n"
       << "set grid\n"
       << "plot '" << (dir / "metrics.csv").string() << "' using 2:5 with lines lw 2 title 'mean return'\n";
  }
  const auto cmd = fmt::format("gnuplot '{}' > /dev/null 2>&1", script.string());
  if (std::system(cmd.c_str()) != 0) progress << "warning: gnuplot failed; no learning_curve.png\n";
}

/// A checkpoint a run resumes from, and its file.
struct resumed_checkpoint {
  checkpoint c;
  std::filesystem::path file;
};

/// Reads the newest checkpoint in `dir` for a resumed run of `algo` on
/// `env` with a network of `signature`; throws config_error when there is
/// none, checkpoint_error when it belongs to another run.
inline resumed_checkpoint read_for_resume(const std::string& dir, std::string_view env, std::string_view algo,
                                          std::string_view signature) {
  const auto file = newest_checkpoint(dir);
  if (!file) throw config_error(fmt::format(fmt::runtime(messages::no_checkpoint), dir));
  auto c = read_checkpoint(*file);
  if (c.algo != algo) {
    throw checkpoint_error(fmt::format(fmt::runtime(messages::checkpoint_algo), file->string(), c.algo, algo));
  }
  if (c.env != env) {
    throw checkpoint_error(fmt::format(fmt::runtime(messages::checkpoint_mismatch), file->string(), "env", c.env, env));
  }
  if (c.network != signature) {
    throw checkpoint_error(
        fmt::format(fmt::runtime(messages::checkpoint_mismatch), file->string(), "network", c.network, signature));
  }
  return {std::move(c), *file};
}

/// run_dir/metrics.csv with `header` written, or a closed stream when run_dir is empty.
inline std::ofstream open_metrics(const std::string& run_dir, std::string_view header) {
  std::ofstream csv;
  if (run_dir.empty()) return csv;
  std::filesystem::create_directories(run_dir);
  csv.open(std::filesystem::path(run_dir) / "metrics.csv");
  csv << header << '\n';
  return csv;
}

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

/// Closes metrics.csv (if open) and plots it.
inline void close_metrics(std::ofstream& csv, const std::string& run_dir, std::ostream& progress) {
  if (!csv.is_open()) return;
  csv.close();
  plot_learning_curve(run_dir, progress);
}

}  // namespace coral::learners::detail
