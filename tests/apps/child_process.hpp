#pragma once
/// \file
/// Test support: runs programs as child processes, several at a time, and
/// collects each one's exit code, stdout and stderr. A child still alive at
/// its deadline is killed (SIGKILL) and reported as such, so a hang shows as
/// a failure, never as a hung test. It waits on the events themselves
/// (poll() on the output pipes and on a pidfd per child), it never sleeps.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace coral::test {

/// One program to run.
struct invocation {
  std::vector<std::string> argv;         ///< argv[0] is the program's path
  std::vector<std::string> extra_env;    ///< `NAME=value` added to this process's environment
  std::vector<std::string> removed_env;  ///< `NAME`s taken out of it (before extra_env is added)
  std::string cwd;                       ///< working directory; empty: this process's
};

/// How a child ended.
struct outcome {
  int exit_code = -1;      ///< the exit status, or 128 + signal when a signal ended it
  std::string out;
  std::string err;
  double seconds = 0;      ///< from start to exit
  bool killed = false;     ///< still alive at its deadline, so killed
};

namespace detail {

struct running {
  pid_t pid = -1;
  int pidfd = -1;
  int out = -1;
  int err = -1;
  bool exited = false;
  std::chrono::steady_clock::time_point started;
  std::chrono::steady_clock::time_point deadline;
  outcome result;
};

inline void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
}

inline running start(const invocation& inv, std::chrono::milliseconds limit) {
  int out[2];
  int err[2];
  check(::pipe2(out, O_CLOEXEC) == 0, "pipe2");
  check(::pipe2(err, O_CLOEXEC) == 0, "pipe2");
  // Everything the child needs is built before fork(): after it, only
  // async-signal-safe calls.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  for (const auto& name : inv.removed_env) {
    std::erase_if(env_strings, [&](const std::string& s) { return s.starts_with(name + "="); });
  }
  for (const auto& e : inv.extra_env) {
    const auto name = e.substr(0, e.find('=') + 1);
    std::erase_if(env_strings, [&](const std::string& s) { return s.starts_with(name); });
    env_strings.push_back(e);
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = inv.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  running r;
  r.started = std::chrono::steady_clock::now();
  r.deadline = r.started + limit;
  r.pid = ::fork();
  check(r.pid >= 0, "fork");
  if (r.pid == 0) {
    if (::dup2(out[1], 1) < 0 || ::dup2(err[1], 2) < 0) ::_exit(126);
    if (!inv.cwd.empty() && ::chdir(inv.cwd.c_str()) != 0) ::_exit(126);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  r.out = out[0];
  r.err = err[0];
  r.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, r.pid, 0));
  check(r.pidfd >= 0, "pidfd_open");
  return r;
}

// Reads what is there; closes the pipe at its end.
inline void drain(int& fd, std::string& into) {
  char buffer[65536];
  const ssize_t n = ::read(fd, buffer, sizeof buffer);
  if (n > 0) {
    into.append(buffer, static_cast<std::size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    ::close(fd);
    fd = -1;
  }
}

inline void reap(running& r) {
  int status = 0;
  if (::waitpid(r.pid, &status, WNOHANG) != r.pid) return;
  r.exited = true;
  r.result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - r.started).count();
  r.result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  ::close(r.pidfd);
  r.pidfd = -1;
}

}  // namespace detail

/// Runs every invocation, at most `parallel` at a time, each killed if it
/// lives longer than `limit`. Returns the outcomes in the order given.
inline std::vector<outcome> run_children(const std::vector<invocation>& all, std::size_t parallel,
                                         std::chrono::milliseconds limit) {
  std::vector<outcome> results(all.size());
  std::vector<std::pair<std::size_t, detail::running>> active;
  std::size_t next = 0;
  while (next < all.size() || !active.empty()) {
    while (next < all.size() && active.size() < parallel) {
      active.emplace_back(next, detail::start(all[next], limit));
      ++next;
    }
    std::vector<pollfd> fds;
    std::vector<std::pair<std::size_t, int>> owners;  // (active index, which: 0 out, 1 err, 2 pidfd)
    auto now = std::chrono::steady_clock::now();
    auto wake = now + limit;
    for (std::size_t i = 0; i < active.size(); ++i) {
      auto& r = active[i].second;
      if (r.out >= 0) fds.push_back({r.out, POLLIN, 0}), owners.emplace_back(i, 0);
      if (r.err >= 0) fds.push_back({r.err, POLLIN, 0}), owners.emplace_back(i, 1);
      if (r.pidfd >= 0) fds.push_back({r.pidfd, POLLIN, 0}), owners.emplace_back(i, 2);
      if (!r.exited) wake = std::min(wake, r.deadline);
    }
    const auto wait_ms = std::max<long long>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1);
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(wait_ms));
    if (n < 0 && errno != EINTR) detail::check(false, "poll");
    for (std::size_t k = 0; n > 0 && k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      auto& r = active[owners[k].first].second;
      if (owners[k].second == 0) detail::drain(r.out, r.result.out);
      if (owners[k].second == 1) detail::drain(r.err, r.result.err);
      if (owners[k].second == 2) detail::reap(r);
    }
    now = std::chrono::steady_clock::now();
    for (auto& [index, r] : active) {
      if (now < r.deadline || r.result.killed) continue;
      // Past its deadline: killed if alive, and its output no longer read
      // (a process it started could hold the pipes open).
      if (!r.exited) ::kill(r.pid, SIGKILL);
      r.result.killed = true;
      for (int* fd : {&r.out, &r.err}) {
        if (*fd >= 0) ::close(*fd);
        *fd = -1;
      }
    }
    // A child is done once it exited and both pipes reached their end.
    for (auto it = active.begin(); it != active.end();) {
      auto& r = it->second;
      if (r.exited && r.out < 0 && r.err < 0) {
        results[it->first] = std::move(r.result);
        it = active.erase(it);
      } else {
        ++it;
      }
    }
  }
  return results;
}

/// One child driven step by step: read its output until a text appears,
/// send it signals, wait for its end. Killed (SIGKILL) at its limit, and by
/// the destructor if still alive.
class child {
 public:
  child(const invocation& inv, std::chrono::milliseconds limit) : r_(detail::start(inv, limit)) {}
  child(const child&) = delete;
  child& operator=(const child&) = delete;
  ~child() {
    if (!r_.exited) {
      ::kill(r_.pid, SIGKILL);
      ::waitpid(r_.pid, nullptr, 0);
    }
    for (int fd : {r_.out, r_.err, r_.pidfd}) {
      if (fd >= 0) ::close(fd);
    }
  }

  /// Reads until `text` appears in stdout + stderr: true; false if the child
  /// ended or its limit passed first.
  bool wait_for_output(std::string_view text) {
    return wait_until([text](const std::string& out) { return out.find(text) != std::string::npos; });
  }

  /// Reads until `done(stdout + stderr so far)` holds (checked after every
  /// read, and at least once a second): true; false if the child ended or
  /// its limit passed first.
  template <class Done>
  bool wait_until(Done&& done) {
    for (;;) {
      if (done(seen())) return true;
      if ((r_.out < 0 && r_.err < 0) || std::chrono::steady_clock::now() >= r_.deadline) return false;
      pump();
    }
  }

  /// What the child wrote so far, stdout then stderr.
  [[nodiscard]] std::string output() const { return seen(); }

  /// Sends `signo` to the child.
  void signal(int signo) { ::kill(r_.pid, signo); }
  /// The child's process id.
  [[nodiscard]] pid_t pid() const noexcept { return r_.pid; }

  /// Waits for the end (killing the child at its limit) and returns the outcome.
  outcome finish() {
    while (!(r_.exited && r_.out < 0 && r_.err < 0)) {
      if (std::chrono::steady_clock::now() >= r_.deadline && !r_.result.killed) {
        if (!r_.exited) ::kill(r_.pid, SIGKILL);
        r_.result.killed = true;
      }
      pump();
    }
    return r_.result;
  }

  /// Seconds since the child started.
  [[nodiscard]] double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - r_.started).count();
  }

 private:
  std::string seen() const { return r_.result.out + r_.result.err; }

  void pump() {
    std::vector<pollfd> fds;
    std::vector<int> which;
    if (r_.out >= 0) fds.push_back({r_.out, POLLIN, 0}), which.push_back(0);
    if (r_.err >= 0) fds.push_back({r_.err, POLLIN, 0}), which.push_back(1);
    if (r_.pidfd >= 0) fds.push_back({r_.pidfd, POLLIN, 0}), which.push_back(2);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(r_.deadline - std::chrono::steady_clock::now());
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(left.count() + 1, 0, 1000)));
    if (n < 0 && errno != EINTR) detail::check(false, "poll");
    for (std::size_t k = 0; n > 0 && k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      if (which[k] == 0) detail::drain(r_.out, r_.result.out);
      if (which[k] == 1) detail::drain(r_.err, r_.result.err);
      if (which[k] == 2) detail::reap(r_);
    }
    if (r_.result.killed) {
      for (int* fd : {&r_.out, &r_.err}) {
        if (*fd >= 0) ::close(*fd);
        *fd = -1;
      }
    }
  }

  detail::running r_;
};

/// The last line of a child's output that is not empty (none when all are).
inline std::string last_line(const std::string& text) {
  const auto end = text.find_last_not_of('\n');
  if (end == std::string::npos) return {};
  const auto start = text.rfind('\n', end);
  const auto from = start == std::string::npos ? 0 : start + 1;
  return text.substr(from, end - from + 1);
}

/// How many times `part` occurs in `text` (occurrences that do not overlap).
inline std::size_t count_of(const std::string& text, std::string_view part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

}  // namespace coral::test
