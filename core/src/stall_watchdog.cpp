#include "coral/core/stall_watchdog.hpp"

#include <sys/resource.h>

#include <algorithm>

#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/core/runtime.hpp"

namespace coral {

using clock = std::chrono::steady_clock;

stall_watchdog::stall_watchdog(std::chrono::milliseconds limit) : limit_(limit) {
  if (limit_.count() < 0) throw usage_error("stall_watchdog: the limit must not be negative");
}

std::chrono::milliseconds stall_watchdog::limit_of(double seconds) {
  if (!(seconds > 0)) return std::chrono::milliseconds(0);
  return std::chrono::milliseconds(std::max<long long>(1, static_cast<long long>(seconds * 1e3)));
}

void stall_watchdog::spawn(runtime& rt) {
  if (limit_.count() == 0) return;
  rt.spawn_daemon("stall-watchdog", rt.pool("watchdog", 1), run());
}

void stall_watchdog::watch(std::string name, std::function<std::uint64_t()> counter) {
  counters_.push_back({std::move(name), std::move(counter), 0, clock::now()});
}

void stall_watchdog::describe(std::function<void(std::string&)> describer) {
  describers_.push_back(std::move(describer));
}

std::string stall_watchdog::report() const {
  std::string out = fmt::format(fmt::runtime(errors::run_stalled), 1e-3 * static_cast<double>(limit_.count()));
  const auto now = clock::now();
  for (const auto& c : counters_) {
    out += fmt::format("  {}: {} (last moved {:.1f} s ago)\n", c.name, c.last,
                       std::chrono::duration<double>(now - c.changed).count());
  }
  for (const auto& d : describers_) d(out);
  // Under `ulimit -v` an allocation can fail where memory is plentiful, and
  // a library that retries it stalls instead of failing: a run of PPO's
  // learner under 800 MB sat in OpenBLAS's allocation loop until this report.
  rlimit address_space{};
  if (::getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY) {
    out += fmt::format(fmt::runtime(errors::stall_address_space), address_space.rlim_cur >> 20);
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

asio::awaitable<void> stall_watchdog::run() {
  // A tenth of the limit, between 1 ms (a limit under 10 ms made it 0: a
  // busy loop) and 1 s.
  const auto period = std::clamp<clock::duration>(clock::duration(limit_) / 10, std::chrono::milliseconds(1),
                                                  std::chrono::seconds(1));
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto started = clock::now();
  for (auto& c : counters_) {
    c.last = c.read();
    c.changed = started;
  }
  for (;;) {
    timer.expires_after(period);
    co_await timer.async_wait(asio::use_awaitable);
    const auto now = clock::now();
    auto last_progress = started;
    for (auto& c : counters_) {
      const auto v = c.read();
      if (v != c.last) {
        c.last = v;
        c.changed = now;
      }
      last_progress = std::max(last_progress, c.changed);
    }
    if (now - last_progress >= limit_) throw stall_error(report());
  }
}

}  // namespace coral
