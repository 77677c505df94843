// Cross-thread wake-up benchmark: how long one thread takes to wake another,
// by mechanism, in one process so the figures are ratios taken on the same
// machine at the same time (performance issue #15).
//
// Every mechanism is a ping-pong between two threads, A (the main thread) and
// B: A signals B, B wakes and signals A, A wakes; that is one round trip.
//   one-way latency = wall time / (2 * round trips)
//   CPU per round trip = process user+sys time (getrusage) / round trips
//   switches per round trip = voluntary+involuntary context switches / round
//     trips (about 2 when both sides really sleep in the kernel, near 0 when
//     they spin).
//
// Mechanisms (the waiting side sleeps in the kernel unless the scheme spins):
//   eventfd           blocking read()/write() on two eventfds
//   futex             FUTEX_WAIT/FUTEX_WAKE (private) on two 32-bit words; the
//                     waker always makes the FUTEX_WAKE call
//   spin-park S       spin with `pause` for S us checking the word, then
//                     FUTEX_WAIT; the waker calls FUTEX_WAKE only when the
//                     sleeper announced that it parked (a waiter bit)
//   mutex+cv          std::mutex + std::condition_variable
//   asio run          two io_contexts, one thread each, each side posts to
//                     the other's context; io_context::run() (coral's pools
//                     with --spin-us 0). "cv": no reactor, an idle thread
//                     waits on Asio's condition variable; "epoll": a timer
//                     service exists, so the idle thread waits in epoll_wait
//                     and a post interrupts it (how a pool that has used a
//                     steady_timer waits)
//   asio spin 50us    the same with coral::run_with_spin(ctx, 50us)
//   asio spin 50us, poll/1us
//                     a variant of run_with_spin kept here, not in coral:
//                     while idle it calls poll() once a microsecond rather
//                     than once a `pause` (see run_with_spaced_polls)
//
// Usage: wakeup_bench [--round-trips N] [--reps R] [--seconds S]
//                     [--placement any|split|same] [--only SUBSTRING]
//   --round-trips N  round trips per run; 0 (default): each run lasts
//                    --seconds of wall time instead
//   --reps R         runs per mechanism (default 3); the table shows the
//                    median and the min-max of the one-way latency
//   --seconds S      wall time per run without --round-trips (default 0.3)
//   --placement P    any (default): the scheduler places both threads;
//                    split: A on core 0, B on core 1; same: both on core 0
//                    (where spinning can only delay the thread it waits for)
//   --only SUBSTRING run only the mechanisms whose name contains it
// Repetitions are interleaved (rep 1 of every mechanism, then rep 2, ...) so
// that a change of load on a shared machine hits all mechanisms alike.

#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include "coral/core/executor.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

/// Prints what failed and ends the process: a syscall that cannot fail in a
/// correct ping-pong failed, and going on could only hang or lie.
[[noreturn]] void fatal(const char* what) {
  std::fprintf(stderr, "wakeup_bench: %s: %s\n", what, std::strerror(errno));
  std::fflush(stderr);
  std::_Exit(3);
}

void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Process-wide CPU time and context switches, from getrusage(RUSAGE_SELF).
struct usage {
  double cpu_s = 0;
  long switches = 0;
};

usage usage_now() {
  rusage r{};
  if (getrusage(RUSAGE_SELF, &r) != 0) fatal("getrusage");
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return {seconds(r.ru_utime) + seconds(r.ru_stime), r.ru_nvcsw + r.ru_nivcsw};
}

/// What one run measured.
struct sample {
  double wall_s = 0;
  double cpu_s = 0;
  long switches = 0;
  std::int64_t round_trips = 0;
  [[nodiscard]] double one_way_us() const { return wall_s * 1e6 / (2.0 * round_trips); }
  [[nodiscard]] double cpu_us_per_round_trip() const { return cpu_s * 1e6 / round_trips; }
  [[nodiscard]] double switches_per_round_trip() const {
    return static_cast<double>(switches) / round_trips;
  }
};

/// When a run ends: after a fixed number of round trips, or else once its
/// wall time passes `seconds` (the clock is read every 8 round trips, so
/// the check costs a few ns per round trip on a vDSO clock).
class stop_rule {
 public:
  stop_rule(std::int64_t round_trips, double seconds, clock_type::time_point start)
      : round_trips_(round_trips),
        deadline_(start + std::chrono::duration_cast<clock_type::duration>(
                              std::chrono::duration<double>(seconds))) {}
  /// True once `done` round trips are enough; never for 0.
  [[nodiscard]] bool done(std::int64_t trips) const {
    if (trips == 0) return false;
    if (round_trips_ > 0) return trips >= round_trips_;
    return trips % 8 == 0 && clock_type::now() >= deadline_;
  }

 private:
  std::int64_t round_trips_;
  clock_type::time_point deadline_;
};

/// Where the two threads run.
enum class placement { any, split, same };

struct options {
  std::int64_t round_trips = 0;  // 0: run for `seconds`
  int reps = 3;
  double seconds = 0.3;
  placement where = placement::any;
  std::string only;
};

/// Pins the calling thread, side 0 (A) or 1 (B), as `where` says.
void place(placement where, std::size_t side) {
  if (where == placement::any) return;
  const std::size_t core = where == placement::split ? side : 0;
  if (!coral::pin_current_thread(core)) {
    std::fprintf(stderr, "wakeup_bench: could not pin a thread to core %zu\n", core);
  }
}

// ---------------------------------------------------------------- futex

long futex_wait(std::uint32_t* word, std::uint32_t expected) noexcept {
  return syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void futex_wake_one(std::uint32_t* word) noexcept {
  if (syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0) < 0) {
    fatal("FUTEX_WAKE");
  }
}

/// FUTEX_WAIT that only returns on a wake, a changed word, or a signal;
/// anything else is a bug.
void futex_wait_checked(std::uint32_t* word, std::uint32_t expected) noexcept {
  if (futex_wait(word, expected) != 0 && errno != EAGAIN && errno != EINTR) fatal("FUTEX_WAIT");
}

// ---------------------------------------------------------------- links
//
// A link is a pair of one-way doorbells: signal(k, last) rings side k's
// bell; wait(k) (called only by side k's thread) returns once side k's bell
// has rung since side k last returned from wait(k), and says whether that
// ring was marked `last`. The mark travels with the ring (in the eventfd
// value, or written before the release that the waiter acquires), so the
// waiter cannot miss it. In a ping-pong at most one ring is outstanding per
// bell, so no ring is lost or counted twice.

/// Blocking read()/write() on one eventfd per side.
class eventfd_link {
 public:
  eventfd_link() {
    for (int& fd : fd_) {
      fd = eventfd(0, EFD_CLOEXEC);
      if (fd < 0) fatal("eventfd");
    }
  }
  eventfd_link(const eventfd_link&) = delete;
  eventfd_link& operator=(const eventfd_link&) = delete;
  ~eventfd_link() {
    for (int fd : fd_) close(fd);
  }

  // A ring adds 1, a last ring 2; the read returns the sum and resets it.
  void signal(int side, bool last) noexcept {
    const std::uint64_t value = last ? 2 : 1;
    while (write(fd_[side], &value, sizeof value) != sizeof value) {
      if (errno != EINTR) fatal("eventfd write");
    }
  }
  bool wait(int side) noexcept {
    std::uint64_t count = 0;
    while (read(fd_[side], &count, sizeof count) != sizeof count) {
      if (errno != EINTR) fatal("eventfd read");
    }
    return count >= 2;
  }

 private:
  int fd_[2] = {-1, -1};
};

/// A 32-bit futex word alone on its cache line, and the receiver's private
/// copy of the last value it saw, on another line.
struct alignas(64) bell {
  std::uint32_t word = 0;
  std::atomic<bool> last{false};  // written before the ring that carries it
};
struct alignas(64) seen_value {
  std::uint32_t value = 0;
};

/// FUTEX_WAIT/FUTEX_WAKE on a counter; the waker always calls FUTEX_WAKE.
class futex_link {
 public:
  void signal(int side, bool last) noexcept {
    bell_[side].last.store(last, std::memory_order_relaxed);
    std::atomic_ref<std::uint32_t>(bell_[side].word).fetch_add(1, std::memory_order_release);
    futex_wake_one(&bell_[side].word);
  }
  bool wait(int side) noexcept {
    std::atomic_ref<std::uint32_t> word(bell_[side].word);
    std::uint32_t& seen = seen_[side].value;
    std::uint32_t now = word.load(std::memory_order_acquire);
    while (now == seen) {
      futex_wait_checked(&bell_[side].word, seen);
      now = word.load(std::memory_order_acquire);
    }
    seen = now;
    return bell_[side].last.load(std::memory_order_relaxed);
  }

 private:
  bell bell_[2];
  seen_value seen_[2];
};

/// Spin for `spin`, then park on a futex. The word holds a message counter
/// in bits 1..31 and a "receiver parked" bit in bit 0. The receiver sets the
/// bit with a CAS before FUTEX_WAIT; the sender bumps the counter and clears
/// the bit in one CAS, and calls FUTEX_WAKE only if the bit was set. Both
/// CASes are on the same word, so either the sender sees the bit (and wakes)
/// or the receiver's CAS fails on the new counter (and it does not sleep):
/// no wake-up is lost, and a spinning receiver costs the sender no syscall.
class spin_park_link {
 public:
  explicit spin_park_link(std::chrono::microseconds spin) : spin_(spin) {}

  void signal(int side, bool last) noexcept {
    bell_[side].last.store(last, std::memory_order_relaxed);
    std::atomic_ref<std::uint32_t> word(bell_[side].word);
    std::uint32_t old = word.load(std::memory_order_relaxed);
    while (!word.compare_exchange_weak(old, (old & ~1u) + 2u, std::memory_order_acq_rel,
                                       std::memory_order_relaxed)) {
    }
    if ((old & 1u) != 0) futex_wake_one(&bell_[side].word);
  }

  bool wait(int side) noexcept {
    std::atomic_ref<std::uint32_t> word(bell_[side].word);
    std::uint32_t& seen = seen_[side].value;
    std::uint32_t now = word.load(std::memory_order_acquire);
    if ((now >> 1) == seen && spin_.count() > 0) {
      const auto deadline = clock_type::now() + spin_;
      do {
        cpu_relax();
        now = word.load(std::memory_order_acquire);
      } while ((now >> 1) == seen && clock_type::now() < deadline);
    }
    while ((now >> 1) == seen) {
      if ((now & 1u) == 0) {
        // On failure `now` is reloaded and the loop re-checks the counter.
        if (!word.compare_exchange_weak(now, now | 1u, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
          continue;
        }
        now |= 1u;
      }
      futex_wait_checked(&bell_[side].word, now);
      now = word.load(std::memory_order_acquire);
    }
    seen = now >> 1;
    return bell_[side].last.load(std::memory_order_relaxed);
  }

 private:
  std::chrono::microseconds spin_;
  bell bell_[2];
  seen_value seen_[2];
};

/// std::mutex + std::condition_variable per side, the textbook baseline.
class condvar_link {
 public:
  void signal(int side, bool last) {
    {
      std::lock_guard lock(bell_[side].mutex);
      ++bell_[side].count;
      bell_[side].last = last;
    }
    bell_[side].ready.notify_one();
  }
  bool wait(int side) {
    std::uint64_t& seen = seen_[side].value;
    std::unique_lock lock(bell_[side].mutex);
    bell_[side].ready.wait(lock, [&] { return bell_[side].count != seen; });
    seen = bell_[side].count;
    return bell_[side].last;
  }

 private:
  struct alignas(64) side_bell {
    std::mutex mutex;
    std::condition_variable ready;
    std::uint64_t count = 0;
    bool last = false;
  };
  struct alignas(64) side_seen {
    std::uint64_t value = 0;
  };
  side_bell bell_[2];
  side_seen seen_[2];
};

/// Ping-pong over a link until `rule` says done: A (this thread) rings B
/// and waits for B's answer; B (a new thread) answers every ring until one
/// is marked last. A sends that mark after the timed loop, so B's loop ends
/// after it; B is joined before returning.
template <class Link>
sample ping_pong(Link& link, const options& opt) {
  std::latch ready(2);
  std::thread b([&] {
    place(opt.where, 1);
    ready.arrive_and_wait();
    while (!link.wait(1)) link.signal(0, false);
  });
  place(opt.where, 0);
  ready.arrive_and_wait();
  const usage u0 = usage_now();
  const auto t0 = clock_type::now();
  const stop_rule rule(opt.round_trips, opt.seconds, t0);
  std::int64_t trips = 0;
  while (!rule.done(trips)) {
    link.signal(1, false);
    (void)link.wait(0);  // B never marks a ring last
    ++trips;
  }
  const auto t1 = clock_type::now();
  link.signal(1, true);
  b.join();
  const usage u1 = usage_now();
  return {std::chrono::duration<double>(t1 - t0).count(), u1.cpu_s - u0.cpu_s,
          u1.switches - u0.switches, trips};
}

// ---------------------------------------------------------------- asio

/// How a thread runs an io_context, with a spin time.
using run_loop = void (*)(asio::io_context&, std::chrono::microseconds);

/// Like coral::run_with_spin, except that while idle it calls poll() once a
/// microsecond instead of after every `pause`. poll() takes the io_context's
/// mutex, which every post from another thread takes too; polling in a tight
/// loop makes a poster find the mutex held and sleep on it in the kernel.
/// For comparison only; coral does not use it.
void run_with_spaced_polls(asio::io_context& context, std::chrono::microseconds spin) {
  constexpr std::chrono::microseconds poll_gap(1);
  auto last_work = clock_type::now();
  while (!context.stopped()) {
    if (context.poll() > 0) {
      last_work = clock_type::now();
      continue;
    }
    const auto now = clock_type::now();
    if (now - last_work < spin) {
      const auto next_poll = now + poll_gap;
      while (clock_type::now() < next_poll) cpu_relax();
      continue;
    }
    if (context.run_one() == 0) break;  // stopped, or out of work
    last_work = clock_type::now();
  }
}

/// Ping-pong between two io_contexts, one thread each, run by
/// `loop` (coral::run_with_spin: spin 0 is plain run()): a handler on A
/// posts one to B, which posts one back to A. The A handler that completes
/// the last round trip stops both contexts, so both run loops return; B's
/// thread is joined before returning. Work guards keep a context running
/// while the only handler in flight is on the other one.
sample asio_ping_pong(const options& opt, run_loop loop, std::chrono::microseconds spin,
                      bool with_reactor) {
  // Concurrency hint 1, as coral's one-thread pools construct theirs.
  asio::io_context ctx_a(1);
  asio::io_context ctx_b(1);
  auto guard_a = asio::make_work_guard(ctx_a);
  auto guard_b = asio::make_work_guard(ctx_b);
  if (with_reactor) {
    // Creating a timer creates the timer service, which starts the epoll
    // reactor as the scheduler's task; it stays for the context's life.
    asio::steady_timer timer_a(ctx_a);
    asio::steady_timer timer_b(ctx_b);
  }
  // The handlers are small lambdas holding a pointer, so a post allocates
  // nothing beyond Asio's own (recycled) operation memory.
  struct rally {
    asio::io_context& a;
    asio::io_context& b;
    stop_rule rule;
    std::int64_t trips = 0;  // touched only by handlers on A
    void start() {
      asio::post(b, [this] { on_b(); });
    }
    void on_a() {
      ++trips;
      if (rule.done(trips)) {
        a.stop();
        b.stop();
        return;
      }
      asio::post(b, [this] { on_b(); });
    }
    void on_b() {
      asio::post(a, [this] { on_a(); });
    }
  };

  std::latch ready(2);
  std::thread b([&] {
    place(opt.where, 1);
    ready.arrive_and_wait();
    loop(ctx_b, spin);
  });
  place(opt.where, 0);
  ready.arrive_and_wait();
  const usage u0 = usage_now();
  const auto t0 = clock_type::now();
  rally play{ctx_a, ctx_b, stop_rule(opt.round_trips, opt.seconds, t0)};
  asio::post(ctx_a, [&play] { play.start(); });
  loop(ctx_a, spin);
  const auto t1 = clock_type::now();
  b.join();
  const usage u1 = usage_now();
  return {std::chrono::duration<double>(t1 - t0).count(), u1.cpu_s - u0.cpu_s,
          u1.switches - u0.switches, play.trips};
}

// ---------------------------------------------------------------- harness

struct mechanism {
  std::string name;
  std::function<sample(const options&)> run;
};

template <class MakeLink>
mechanism link_mechanism(std::string name, MakeLink make) {
  return {std::move(name), [make](const options& opt) {
            auto link = make();
            return ping_pong(*link, opt);
          }};
}

std::vector<mechanism> all_mechanisms() {
  using std::chrono::microseconds;
  std::vector<mechanism> list;
  list.push_back(link_mechanism("eventfd", [] { return std::make_unique<eventfd_link>(); }));
  list.push_back(link_mechanism("futex", [] { return std::make_unique<futex_link>(); }));
  for (int s : {0, 5, 20, 50}) {
    list.push_back(link_mechanism("spin-park " + std::to_string(s) + "us",
                                  [s] { return std::make_unique<spin_park_link>(microseconds(s)); }));
  }
  list.push_back(link_mechanism("mutex+cv", [] { return std::make_unique<condvar_link>(); }));
  struct asio_variant {
    const char* name;
    run_loop loop;
    int spin_us;
  };
  const asio_variant variants[] = {{"asio run", coral::run_with_spin, 0},
                                   {"asio spin 50us", coral::run_with_spin, 50},
                                   {"asio spin 50us,poll/1us", run_with_spaced_polls, 50}};
  for (bool reactor : {false, true}) {
    for (const asio_variant& v : variants) {
      std::string name = std::string(v.name) + (reactor ? " (epoll)" : " (cv)");
      list.push_back({std::move(name), [v, reactor](const options& opt) {
                        return asio_ping_pong(opt, v.loop, microseconds(v.spin_us), reactor);
                      }});
    }
  }
  return list;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

[[noreturn]] void usage_error(const std::string& text) {
  std::fprintf(stderr,
               "wakeup_bench: %s\nusage: wakeup_bench [--round-trips N>=0] [--reps R>=1] "
               "[--seconds S>0] [--placement any|split|same] [--only SUBSTRING]\n",
               text.c_str());
  std::exit(2);
}

template <class T>
T parse_number(std::string_view flag, std::string_view text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) {
    usage_error(std::string(flag) + ": not a number: '" + std::string(text) + "'");
  }
  return value;
}

options parse_options(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    auto value = [&]() -> std::string_view {
      if (i + 1 >= argc) usage_error(std::string(flag) + " needs a value");
      return argv[++i];
    };
    if (flag == "--round-trips") {
      o.round_trips = parse_number<std::int64_t>(flag, value());
      if (o.round_trips < 0) usage_error("--round-trips must be >= 0 (0: run for --seconds)");
    } else if (flag == "--reps") {
      o.reps = parse_number<int>(flag, value());
      if (o.reps < 1) usage_error("--reps must be >= 1");
    } else if (flag == "--seconds") {
      o.seconds = parse_number<double>(flag, value());
      if (!(o.seconds > 0)) usage_error("--seconds must be > 0");
    } else if (flag == "--placement") {
      const std::string_view v = value();
      if (v == "any") {
        o.where = placement::any;
      } else if (v == "split") {
        o.where = placement::split;
      } else if (v == "same") {
        o.where = placement::same;
      } else {
        usage_error("--placement: '" + std::string(v) + "' (allowed: any, split, same)");
      }
    } else if (flag == "--only") {
      o.only = value();
    } else {
      usage_error("unknown flag '" + std::string(flag) +
                  "' (allowed: --round-trips, --reps, --seconds, --placement, --only)");
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const options opt = parse_options(argc, argv);
  std::vector<mechanism> list;
  for (auto& m : all_mechanisms()) {
    if (opt.only.empty() || m.name.find(opt.only) != std::string::npos) list.push_back(std::move(m));
  }
  if (list.empty()) usage_error("--only '" + opt.only + "' matches no mechanism");

  std::vector<std::vector<sample>> samples(list.size());
  for (int rep = 0; rep < opt.reps; ++rep) {
    for (std::size_t i = 0; i < list.size(); ++i) samples[i].push_back(list[i].run(opt));
  }

  char length[64];
  if (opt.round_trips > 0) {
    std::snprintf(length, sizeof length, "%lld round trips", static_cast<long long>(opt.round_trips));
  } else {
    std::snprintf(length, sizeof length, "%g s", opt.seconds);
  }
  std::printf("wakeup_bench: %d reps of %s each, %s; one-way = wall / (2 x round trips); "
              "medians, latency also min-max\n",
              opt.reps, length,
              opt.where == placement::any     ? "placed by the scheduler"
              : opt.where == placement::split ? "A on core 0, B on core 1"
                                              : "A and B on core 0");
  std::printf("%-31s %10s %12s %21s %14s %10s %14s\n", "mechanism", "round_trips",
              "one-way_us", "min-max_us", "cpu_us/trip", "cpu_%", "switches/trip");
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::vector<double> lat, cpu, cpu_pct, sw, trips;
    for (const sample& s : samples[i]) {
      trips.push_back(static_cast<double>(s.round_trips));
      lat.push_back(s.one_way_us());
      cpu.push_back(s.cpu_us_per_round_trip());
      cpu_pct.push_back(100.0 * s.cpu_s / s.wall_s);
      sw.push_back(s.switches_per_round_trip());
    }
    const auto [lo, hi] = std::minmax_element(lat.begin(), lat.end());
    char range[64];
    std::snprintf(range, sizeof range, "%.3f-%.3f", *lo, *hi);
    std::printf("%-31s %10lld %12.3f %21s %14.3f %10.0f %14.2f\n", list[i].name.c_str(),
                static_cast<long long>(median(trips)), median(lat), range, median(cpu),
                median(cpu_pct), median(sw));
  }
  return 0;
}
