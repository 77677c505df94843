#include "run_files.hpp"

#include <cerrno>
#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/actors/topology.hpp"
#include "coral/core/error.hpp"
#include "coral/core/json.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/errors.hpp"
#include "coral/training/checkpoint_dir.hpp"

namespace coral::training::detail {
namespace {

namespace fs = std::filesystem;

template <class... Args>
std::string text(std::string_view format, Args&&... args) {
  return fmt::format(fmt::runtime(format), std::forward<Args>(args)...);
}

/// The longest file name a run writes in its run or checkpoint directory
/// (`events.out.tfevents.<10 digits>.<host, at most 64>.<pid>`,
/// `checkpoint-<20 digits>-<k>.ckpt.tmp`, `learning_curve.png`, ...), with
/// room: the test file is this long, so that a directory whose path leaves
/// no room for the run's real names is refused at the start, not after
/// training.
constexpr std::size_t longest_name = 112;

/// Creates `dir` and proves it writable with a test file named as long as
/// the run's longest, or throws config_error naming `flag`.
void make_usable(std::string_view flag, const std::string& dir) {
  auto refuse = [&](const std::string& why) { throw config_error(text(errors::dir_unusable, flag, dir, why)); };
  std::error_code ec;
  const auto st = fs::status(dir, ec);
  if (fs::exists(st) && !fs::is_directory(st)) refuse(std::string(errors::not_a_directory));
  fs::create_directories(dir, ec);
  if (ec) refuse(ec.message());
  auto name = fmt::format(".coral-write-test-{}-", ::getpid());
  name.resize(std::max(name.size(), longest_name), 'x');
  const auto probe = fs::path(dir) / name;
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) refuse(text(errors::not_writable, std::strerror(errno)));
  const bool wrote = ::write(fd, "x", 1) == 1;
  const int write_errno = errno;
  const bool closed = ::close(fd) == 0;
  const int close_errno = errno;
  ::unlink(probe.c_str());
  if (!wrote) refuse(text(errors::not_writable, std::strerror(write_errno)));
  if (!closed) refuse(text(errors::not_writable, std::strerror(close_errno)));
}

}  // namespace

dir_lock::dir_lock(std::string_view flag, const std::string& dir) {
  const auto file = fs::path(dir) / ".coral.lock";
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) throw config_error(text(errors::dir_unusable, flag, dir, std::strerror(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int why = errno;
    std::string holder(32, '\0');
    const auto n = ::pread(fd_, holder.data(), holder.size() - 1, 0);
    holder.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
    ::close(fd_);
    fd_ = -1;
    if (why == EWOULDBLOCK) {
      throw config_error(text(errors::dir_locked, flag, dir, holder.empty() ? std::string("unknown") : holder));
    }
    throw config_error(text(errors::dir_unusable, flag, dir, std::strerror(why)));
  }
  // The holder's PID, for the message of the run refused.
  const auto pid = fmt::format("{}\n", ::getpid());
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int why = errno;
    ::close(fd_);
    fd_ = -1;
    throw config_error(text(errors::dir_unusable, flag, dir, std::strerror(why)));
  }
}

dir_lock::dir_lock(dir_lock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

dir_lock::~dir_lock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock; the file stays (removing it would race a new holder)
}

std::vector<dir_lock> prepare_run_dirs(const train_options& o) {
  std::vector<dir_lock> locks;
  if (!o.run_dir.empty()) {
    make_usable("--run-dir", o.run_dir);
    locks.emplace_back("--run-dir", o.run_dir);
  }
  if (o.checkpoint_dir.empty()) return locks;
  make_usable("--checkpoint-dir", o.checkpoint_dir);
  std::error_code ec;
  // One directory for both: one lock (a second flock of it would refuse this run).
  if (o.run_dir.empty() || !fs::equivalent(o.run_dir, o.checkpoint_dir, ec)) {
    locks.emplace_back("--checkpoint-dir", o.checkpoint_dir);
  }
  // Under the lock: no other run's write is in flight.
  (void)remove_stale_temporaries(o.checkpoint_dir);
  if (o.resume) return locks;
  // A fresh run would write its checkpoints among another run's, and a later
  // --resume could not tell them apart: refuse before anything starts.
  const auto listing = list_checkpoints(o.checkpoint_dir);
  std::optional<fs::path> held;
  if (!listing.checkpoints.empty()) held = listing.checkpoints.front().file;
  for (const auto& s : listing.skipped) {
    if (!held && s.regular_file) held = s.file;
  }
  if (held) throw config_error(text(errors::checkpoint_dir_in_use, o.checkpoint_dir, held->string()));
  return locks;
}

std::vector<std::pair<std::string, std::string>> run_settings(const train_options& o) {
  std::vector<std::pair<std::string, std::string>> out;
  auto line = [&out](std::string key, std::string value) { out.emplace_back(std::move(key), std::move(value)); };
  line("algo", json::quote(o.algo));
  line("env", json::quote(o.sampler.env));
  if (!o.sampler.env_args.empty()) {
    std::string args;
    for (const auto& [k, v] : o.sampler.env_args) args += fmt::format("{}{}", args.empty() ? "" : ", ", json::quote(k + "=" + v));
    line("env-arg", "[" + args + "]");
  }
  line("seed", std::to_string(o.sampler.seed));
  line("num-envs", std::to_string(o.sampler.num_envs));
  line("topology", json::quote(actors::to_string(o.sampler.topo)));
  line("total-steps", std::to_string(o.total_steps));
  // Left out at their defaults, which depend on the env's observation.
  if (!o.hidden.empty()) line("hidden", fmt::format("[{}]", fmt::join(o.hidden, ", ")));
  if (!o.conv.empty()) {
    std::vector<std::string> quoted;
    for (const auto& c : o.conv) quoted.push_back(json::quote(c));
    line("conv", fmt::format("[{}]", fmt::join(quoted, ", ")));
  }
  line("backend", json::quote(o.backend));
  const auto d = find_algorithm(o.algo);
  const auto filled = with_algorithm_defaults(o);
  for (const auto& f : d->fields) {
    const auto v = f.get(filled.algo_options);
    line(f.name, std::holds_alternative<std::vector<std::size_t>>(v)
                     ? fmt::format("[{}]", fmt::join(std::get<std::vector<std::size_t>>(v), ", "))
                     : to_text(v));
  }
  return out;
}

void write_run_config(const train_options& o) {
  if (o.run_dir.empty()) return;
  std::string body = "# The settings of this run; `coral train --config config.toml` runs it again.\n[train]\n";
  for (const auto& [key, value] : run_settings(o)) body += fmt::format("{} = {}\n", key, value);
  const auto file = fs::path(o.run_dir) / "config.toml";
  const auto temporary = fs::path(o.run_dir) / "config.toml.tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << body;
    out.flush();
    if (!out) throw config_error(text(errors::dir_unusable, "--run-dir", o.run_dir, "cannot write config.toml"));
  }
  std::error_code ec;
  fs::rename(temporary, file, ec);
  if (ec) throw config_error(text(errors::dir_unusable, "--run-dir", o.run_dir, ec.message()));
}

resumed_checkpoint read_for_resume(const train_options& o, std::string_view algo, std::string_view signature,
                                   std::ostream& warnings) {
  const auto listing = list_checkpoints(o.checkpoint_dir);
  std::optional<std::string> first_error;  // of the newest unreadable file, thrown when nothing else is left
  auto pass_over = [&](const std::string& why, bool regular_file) {
    warnings << text(errors::checkpoint_skipped, why) << '\n';
    if (regular_file && !first_error) first_error = why;
  };
  for (const auto& s : listing.skipped) pass_over(s.why, s.regular_file);
  for (const auto& listed : listing.checkpoints) {
    checkpoint c;
    try {
      c = read_checkpoint(listed.file);
    } catch (const checkpoint_error& e) {
      pass_over(e.what(), true);
      continue;
    }
    const auto file = listed.file.string();
    if (c.algo != algo) throw checkpoint_error(text(errors::checkpoint_algo, file, c.algo, algo));
    if (c.env != o.sampler.env) {
      throw checkpoint_error(text(errors::checkpoint_mismatch, file, "env", c.env, o.sampler.env));
    }
    if (c.network != signature) {
      throw checkpoint_error(text(errors::checkpoint_mismatch, file, "network", c.network, signature));
    }
    if (c.seed != o.sampler.seed) {
      throw checkpoint_error(text(errors::checkpoint_mismatch, file, "seed", c.seed, o.sampler.seed));
    }
    return {std::move(c), listed.file};
  }
  if (first_error) throw checkpoint_error(*first_error);
  throw config_error(text(errors::no_checkpoint, o.checkpoint_dir));
}

namespace {

/// The env steps of a metrics row (its second column), if it is a whole row.
std::optional<std::uint64_t> row_env_steps(std::string_view row) {
  const auto first = row.find(',');
  if (first == std::string_view::npos) return std::nullopt;
  const auto second = row.find(',', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  const auto field = row.substr(first + 1, second - first - 1);
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec != std::errc() || end != field.data() + field.size()) return std::nullopt;
  return v;
}

}  // namespace

metrics_file::metrics_file(const std::string& run_dir, std::string_view header, bool append,
                           std::uint64_t resumed_steps) {
  if (run_dir.empty()) return;
  dir_ = run_dir;
  const auto file = dir_ / "metrics.csv";
  auto mode = std::ios::out | std::ios::trunc;
  bool new_file = true;
  if (append) {
    std::ifstream old(file, std::ios::binary);
    std::string first;
    if (old && std::getline(old, first)) {
      if (first != header) throw config_error(text(errors::metrics_header_differs, file.string()));
      // The rows of this lineage up to the checkpoint resumed from: a killed
      // run's rows past it (which this run trains again) and a cut last row
      // go, so that env steps only grow down the file.
      std::string kept = first + '\n';
      std::string row;
      while (std::getline(old, row)) {
        if (old.eof()) break;  // no newline: a row cut by a kill
        const auto steps = row_env_steps(row);
        if (steps && *steps <= resumed_steps) kept += row + '\n';
      }
      old.close();
      const auto temporary = dir_ / "metrics.csv.tmp";
      {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        out << kept;
        out.flush();
        if (!out) throw config_error(text(errors::dir_unusable, "--run-dir", run_dir, "cannot rewrite metrics.csv"));
      }
      std::error_code ec;
      fs::rename(temporary, file, ec);
      if (ec) throw config_error(text(errors::dir_unusable, "--run-dir", run_dir, ec.message()));
      mode = std::ios::out | std::ios::app;
      new_file = false;
    }
  }
  errno = 0;
  csv_.open(file, mode);
  if (!csv_) throw config_error(text(errors::dir_unusable, "--run-dir", run_dir, std::strerror(errno)));
  if (new_file) csv_ << header << '\n';
  csv_.flush();
  if (!csv_) failed(errno);
}

void metrics_file::write_row(std::string_view row) {
  if (!csv_.is_open() || !error_.empty()) return;
  errno = 0;
  csv_ << row << '\n';
  csv_.flush();  // rows are few (one per update or per thousand steps); a reader sees each at once
  if (!csv_) failed(errno);
}

void metrics_file::failed(int error_number) {
  if (error_.empty()) error_ = error_number != 0 ? std::strerror(error_number) : "write failed";
}

bool metrics_file::close(std::ostream& warnings) {
  if (!csv_.is_open()) return false;
  errno = 0;
  csv_.close();
  if (csv_.fail()) failed(errno);
  if (!error_.empty()) {
    warnings << text(errors::metrics_write_failed, (dir_ / "metrics.csv").string(), error_) << '\n';
    return false;
  }
  plot_learning_curve(dir_, warnings);
  return true;
}

void plot_learning_curve(const fs::path& dir, std::ostream& warnings) {
  auto warn_failed = [&](const std::string& why) { warnings << text(errors::gnuplot_failed, why) << '\n'; };
  {
    // File names relative to `dir`, where gnuplot runs: no path of the
    // user's is ever quoted into the script.
    std::ofstream gp(dir / "learning_curve.gp", std::ios::trunc);
    gp << "set terminal pngcairo size 900,500 noenhanced\n"
       << "set output 'learning_curve.png'\n"
       << "set datafile separator ','\n"
       << "set key autotitle columnhead left top\n"
       << "set xlabel 'env steps'\n"
       << "set ylabel 'mean return (last 100 episodes)'\n"
       << "set grid\n"
       << "plot 'metrics.csv' using 2:5 with lines lw 2 title 'mean return'\n";
    gp.close();
    if (!gp) {
      warn_failed("cannot write learning_curve.gp");
      return;
    }
  }
  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0) {
    warn_failed("cannot spawn");
    return;
  }
  const bool prepared = posix_spawn_file_actions_addchdir_np(&actions, dir.c_str()) == 0 &&
                        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) == 0 &&
                        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0) == 0 &&
                        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) == 0;
  char program[] = "gnuplot";
  char script[] = "learning_curve.gp";
  char* argv[] = {program, script, nullptr};
  pid_t pid = 0;
  const int spawned = prepared ? posix_spawnp(&pid, program, &actions, nullptr, argv, environ) : EINVAL;
  posix_spawn_file_actions_destroy(&actions);
  if (spawned == ENOENT) {
    warnings << errors::gnuplot_not_found << '\n';
    return;
  }
  if (spawned != 0) {
    warn_failed(std::strerror(spawned));
    return;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      warn_failed(std::strerror(errno));
      return;
    }
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  warn_failed(WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                : fmt::format("killed by signal {}", WTERMSIG(status)));
}

}  // namespace coral::training::detail
