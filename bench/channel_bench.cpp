// Channel benchmarks: coral::channel<T> against Asio's concurrent_channel
// and a mutex + condition-variable queue, in one process so the figures are
// ratios taken on the same machine at the same time.
//
//   hop:        ping-pong between two parties over two channels of capacity 1
//               (coral: async_send/async_receive, and the frame-free forms);
//               ns_per_hop = wall time / (2 * round trips).
//   throughput: one producer sends N messages to one consumer through a
//               channel of capacity 1024; msgs_per_s.
// "1 thread": both parties are coroutines on one io_context on one thread.
// "2 threads": each party has its own io_context (or std::thread) and thread.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/concurrent_channel.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>
#include <benchmark/benchmark.h>

#include "coral/channels/channel.hpp"
#include "coral/core/executor.hpp"

namespace {

constexpr std::int64_t round_trips = 20'000;
constexpr std::int64_t messages = 200'000;
constexpr std::size_t capacity = 1024;

void check(std::exception_ptr e) {
  if (e) std::rethrow_exception(e);
}

/// Runs `a` on one io_context and `b` on another (or both on one when
/// `threads` is 1), each io_context on its own thread, until both finish.
/// `spin_us` > 0 makes idle threads poll that long before blocking (the
/// thread_pool option); 0 blocks at once, as io_context::run() does.
template <class A, class B>
void run_pair(int threads, A a, B b, long spin_us = 0) {
  asio::io_context ctx_a(1);
  asio::io_context ctx_b(1);
  asio::io_context& second = threads == 1 ? ctx_a : ctx_b;
  asio::co_spawn(ctx_a, a(), check);
  asio::co_spawn(second, b(), check);
  const std::chrono::microseconds spin(spin_us);
  if (threads == 1) {
    coral::run_with_spin(ctx_a, spin);
  } else {
    std::thread t([&] { coral::run_with_spin(ctx_b, spin); });
    coral::run_with_spin(ctx_a, spin);
    t.join();
  }
}

// A bounded queue under one mutex, two condition variables: the baseline
// every systems programmer writes first.
template <class T>
class mutex_queue {
 public:
  explicit mutex_queue(std::size_t cap) : cap_(cap) {}
  void push(T v) {
    std::unique_lock lock(m_);
    not_full_.wait(lock, [&] { return q_.size() < cap_; });
    q_.push_back(v);
    not_empty_.notify_one();
  }
  T pop() {
    std::unique_lock lock(m_);
    not_empty_.wait(lock, [&] { return !q_.empty(); });
    T v = q_.front();
    q_.pop_front();
    not_full_.notify_one();
    return v;
  }

 private:
  std::mutex m_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<T> q_;
  std::size_t cap_;
};

// ----------------------------------------------------------------------------
// one-hop latency

// Ping-pong over two coral channels of capacity 1, `round_trips` round trips
// per iteration: `side_a(ping, pong)` and `side_b(ping, pong)` make the two
// coroutines. Reports ns per one-way hop.
template <class SideA, class SideB>
void coral_hops(benchmark::State& state, SideA side_a, SideB side_b) {
  const int threads = static_cast<int>(state.range(0));
  const long spin_us = state.range(1);
  for (auto _ : state) {
    coral::channel<std::int64_t> ping(1);
    coral::channel<std::int64_t> pong(1);
    run_pair(
        threads, [&] { return side_a(ping, pong); }, [&] { return side_b(ping, pong); }, spin_us);
  }
  state.counters["ns_per_hop"] = benchmark::Counter(
      static_cast<double>(2 * round_trips * state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::OneK::kIs1000);
}

using hop_channel = coral::channel<std::int64_t>;

void bm_hop_coral(benchmark::State& state) {
  coral_hops(
      state,
      [](hop_channel& ping, hop_channel& pong) -> asio::awaitable<void> {
        for (std::int64_t i = 0; i < round_trips; ++i) {
          (void)co_await ping.async_send(i);
          (void)co_await pong.async_receive();
        }
      },
      [](hop_channel& ping, hop_channel& pong) -> asio::awaitable<void> {
        for (std::int64_t i = 0; i < round_trips; ++i) {
          auto v = co_await ping.async_receive();
          (void)co_await pong.async_send(*v);
        }
      });
}

// The same ping-pong written with the channel's frame-free forms: try first,
// and park in wait_for_item / wait_for_room only when the try fails (what
// coral's env groups, gate and batcher do per step).
void bm_hop_coral_frame_free(benchmark::State& state) {
  coral_hops(
      state,
      [](hop_channel& ping, hop_channel& pong) -> asio::awaitable<void> {
        for (std::int64_t i = 0; i < round_trips; ++i) {
          while (!ping.try_send(i) && !ping.is_closed()) {
            coral::channel_waiter w;
            co_await ping.wait_for_room(w);
            w.throw_if_aborted();
          }
          std::optional<std::int64_t> v;
          while (!(v = pong.try_receive()) && !pong.is_drained()) {
            coral::channel_waiter w;
            co_await pong.wait_for_item(w);
            w.throw_if_aborted();
          }
        }
      },
      [](hop_channel& ping, hop_channel& pong) -> asio::awaitable<void> {
        for (std::int64_t i = 0; i < round_trips; ++i) {
          std::optional<std::int64_t> v;
          while (!(v = ping.try_receive()) && !ping.is_drained()) {
            coral::channel_waiter w;
            co_await ping.wait_for_item(w);
            w.throw_if_aborted();
          }
          while (!pong.try_send(*v) && !pong.is_closed()) {
            coral::channel_waiter w;
            co_await pong.wait_for_room(w);
            w.throw_if_aborted();
          }
        }
      });
}

void bm_hop_asio(benchmark::State& state) {
  using chan = asio::experimental::concurrent_channel<void(asio::error_code, std::int64_t)>;
  const int threads = static_cast<int>(state.range(0));
  const long spin_us = state.range(1);
  for (auto _ : state) {
    asio::io_context channel_ctx;
    chan ping(channel_ctx, 1);
    chan pong(channel_ctx, 1);
    run_pair(
        threads,
        [&]() -> asio::awaitable<void> {
          for (std::int64_t i = 0; i < round_trips; ++i) {
            co_await ping.async_send(asio::error_code{}, i, asio::use_awaitable);
            (void)co_await pong.async_receive(asio::use_awaitable);
          }
        },
        [&]() -> asio::awaitable<void> {
          for (std::int64_t i = 0; i < round_trips; ++i) {
            auto v = co_await ping.async_receive(asio::use_awaitable);
            co_await pong.async_send(asio::error_code{}, v, asio::use_awaitable);
          }
        },
        spin_us);
  }
  state.counters["ns_per_hop"] = benchmark::Counter(
      static_cast<double>(2 * round_trips * state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::OneK::kIs1000);
}

void bm_hop_mutex_cv(benchmark::State& state) {
  // Two std::threads blocking on condition variables (2 threads only: one
  // thread cannot ping-pong with blocking calls).
  for (auto _ : state) {
    mutex_queue<std::int64_t> ping(1);
    mutex_queue<std::int64_t> pong(1);
    std::thread other([&] {
      for (std::int64_t i = 0; i < round_trips; ++i) pong.push(ping.pop());
    });
    for (std::int64_t i = 0; i < round_trips; ++i) {
      ping.push(i);
      benchmark::DoNotOptimize(pong.pop());
    }
    other.join();
  }
  state.counters["ns_per_hop"] = benchmark::Counter(
      static_cast<double>(2 * round_trips * state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::OneK::kIs1000);
}

// ----------------------------------------------------------------------------
// throughput

void bm_throughput_coral(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const bool batched = state.range(1) != 0;
  const long spin_us = state.range(2);
  std::int64_t checksum = 0;
  for (auto _ : state) {
    coral::channel<std::int64_t> ch(capacity);
    std::int64_t sum = 0;
    run_pair(
        threads,
        [&]() -> asio::awaitable<void> {
          for (std::int64_t i = 0; i < messages; ++i) (void)co_await ch.async_send(i);
          ch.close();
        },
        [&]() -> asio::awaitable<void> {
          if (batched) {
            std::array<std::int64_t, 256> buf{};
            while (auto n = co_await ch.async_receive_some(buf)) {
              for (std::size_t k = 0; k < n; ++k) sum += buf[k];
            }
          } else {
            while (auto v = co_await ch.async_receive()) sum += *v;
          }
        },
        spin_us);
    checksum = sum;
  }
  if (checksum != messages * (messages - 1) / 2) state.SkipWithError("checksum mismatch");
  state.counters["msgs_per_s"] = benchmark::Counter(
      static_cast<double>(messages * state.iterations()), benchmark::Counter::kIsRate);
}

void bm_throughput_asio(benchmark::State& state) {
  using chan = asio::experimental::concurrent_channel<void(asio::error_code, std::int64_t)>;
  const int threads = static_cast<int>(state.range(0));
  const long spin_us = state.range(1);
  std::int64_t checksum = 0;
  for (auto _ : state) {
    asio::io_context channel_ctx;
    chan ch(channel_ctx, capacity);
    std::int64_t sum = 0;
    run_pair(
        threads,
        [&]() -> asio::awaitable<void> {
          for (std::int64_t i = 0; i < messages; ++i) {
            co_await ch.async_send(asio::error_code{}, i, asio::use_awaitable);
          }
          // A sentinel ends the stream: Asio 1.22 drops buffered items on close.
          co_await ch.async_send(asio::error_code{}, -1, asio::use_awaitable);
        },
        [&]() -> asio::awaitable<void> {
          for (;;) {
            auto v = co_await ch.async_receive(asio::use_awaitable);
            if (v < 0) break;
            sum += v;
          }
        },
        spin_us);
    checksum = sum;
  }
  if (checksum != messages * (messages - 1) / 2) state.SkipWithError("checksum mismatch");
  state.counters["msgs_per_s"] = benchmark::Counter(
      static_cast<double>(messages * state.iterations()), benchmark::Counter::kIsRate);
}

void bm_throughput_mutex_cv(benchmark::State& state) {
  std::int64_t checksum = 0;
  for (auto _ : state) {
    mutex_queue<std::int64_t> q(capacity);
    std::int64_t sum = 0;
    std::thread consumer([&] {
      for (;;) {
        auto v = q.pop();
        if (v < 0) break;
        sum += v;
      }
    });
    for (std::int64_t i = 0; i < messages; ++i) q.push(i);
    q.push(-1);
    consumer.join();
    checksum = sum;
  }
  if (checksum != messages * (messages - 1) / 2) state.SkipWithError("checksum mismatch");
  state.counters["msgs_per_s"] = benchmark::Counter(
      static_cast<double>(messages * state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace

// spin_us: 0 = idle threads block at once; 50 = they poll 50 us first.
BENCHMARK(bm_hop_coral)->ArgNames({"threads", "spin_us"})->Args({1, 0})->Args({2, 0})->Args({2, 50})
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_hop_coral_frame_free)->ArgNames({"threads", "spin_us"})->Args({1, 0})->Args({2, 0})->Args({2, 50})
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_hop_asio)->ArgNames({"threads", "spin_us"})->Args({1, 0})->Args({2, 0})->Args({2, 50})
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_hop_mutex_cv)->ArgName("threads")->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_throughput_coral)->ArgNames({"threads", "batched", "spin_us"})
    ->ArgsProduct({{1, 2}, {0, 1}, {0}})->Args({2, 0, 50})->Args({2, 1, 50})
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_throughput_asio)->ArgNames({"threads", "spin_us"})->Args({1, 0})->Args({2, 0})->Args({2, 50})
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_throughput_mutex_cv)->ArgName("threads")->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
