#include "coral/channels/channel.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "../support/watchdog.hpp"

// Stress tests: real threads, many coroutines, exact accounting. Every value
// sent is a distinct integer; receivers set its bit in a bitmap, so a
// duplicate is caught the moment it arrives and a loss shows as a bit left
// unset at the end.

namespace {

class bitmap {
 public:
  explicit bitmap(std::size_t bits) : words_((bits + 63) / 64) {
    for (auto& w : words_) w.store(0, std::memory_order_relaxed);
  }
  /// Sets bit i; returns false if it was already set.
  bool set(std::uint64_t i) {
    const auto mask = std::uint64_t{1} << (i % 64);
    return (words_[i / 64].fetch_or(mask, std::memory_order_relaxed) & mask) == 0;
  }
  [[nodiscard]] bool test(std::uint64_t i) const {
    return (words_[i / 64].load(std::memory_order_relaxed) >> (i % 64)) & 1U;
  }

 private:
  std::vector<std::atomic<std::uint64_t>> words_;
};

struct pool {
  asio::io_context ctx;
  std::vector<std::thread> threads;
  void run(unsigned n) {
    for (unsigned i = 0; i < n; ++i) threads.emplace_back([this] { ctx.run(); });
  }
  void join() {
    for (auto& t : threads) t.join();
  }
};

void rethrow(std::exception_ptr e) {
  if (e) std::rethrow_exception(e);
}

}  // namespace

TEST_CASE("8 producers and 8 consumers move millions of messages, none lost or duplicated",
          "[channels][stress]") {
  // Capacity 1024: 10 million messages, few waits. Capacity 1: 1 million,
  // and nearly every send and receive waits or wakes someone.
  const std::size_t capacity = GENERATE(std::size_t{1024}, std::size_t{1});
  CAPTURE(capacity);
  constexpr std::uint64_t producers = 8;
  constexpr std::uint64_t consumers = 8;
  const std::uint64_t total = capacity == 1 ? 1'000'000 : 10'000'000;
  const std::uint64_t per_producer = total / producers;
  coral::test::watchdog dog("millions-of-messages stress", std::chrono::minutes(10));

  coral::channel<std::uint64_t> ch(capacity);
  bitmap seen(total);
  std::atomic<std::uint64_t> duplicates{0};
  std::atomic<std::uint64_t> received{0};
  std::atomic<std::uint64_t> sum{0};
  std::atomic<std::uint64_t> producers_left{producers};

  // Producers and consumers on separate io_contexts: every wake crosses threads.
  pool send_side;
  pool receive_side;
  for (std::uint64_t p = 0; p < producers; ++p) {
    asio::co_spawn(send_side.ctx, [&, p]() -> asio::awaitable<void> {
      for (std::uint64_t i = 0; i < per_producer; ++i) {
        const std::uint64_t v = p * per_producer + i;
        if (p % 2 == 0) {
          if (!co_await ch.async_send(v)) throw std::runtime_error("send failed");
          continue;
        }
        // Half the producers use the frame-free form.
        while (!ch.try_send(v)) {
          if (ch.is_closed()) throw std::runtime_error("send failed");
          coral::channel_waiter w;
          co_await ch.wait_for_room(w);
          w.throw_if_aborted();
        }
      }
      if (producers_left.fetch_sub(1) == 1) ch.close();
    }, rethrow);
  }
  for (std::uint64_t c = 0; c < consumers; ++c) {
    asio::co_spawn(receive_side.ctx, [&, c]() -> asio::awaitable<void> {
      std::array<std::uint64_t, 64> buf{};
      std::uint64_t local_sum = 0;
      std::uint64_t local_count = 0;
      auto take = [&](std::uint64_t v) {
        if (!seen.set(v)) ++duplicates;
        local_sum += v;
        ++local_count;
      };
      // Half the consumers take one at a time, half take batches; of each
      // half, one in two uses the frame-free form (try, then wait_for_item).
      if (c % 4 == 0) {
        while (auto v = co_await ch.async_receive()) take(*v);
      } else if (c % 4 == 1) {
        while (auto n = co_await ch.async_receive_some(buf)) {
          for (std::size_t i = 0; i < n; ++i) take(buf[i]);
        }
      } else {
        for (;;) {
          std::size_t n = 0;
          if (c % 4 == 3) {
            n = ch.try_receive_some(buf);
          } else if (auto v = ch.try_receive()) {
            buf[0] = *v;
            n = 1;
          }
          for (std::size_t i = 0; i < n; ++i) take(buf[i]);
          if (n > 0) continue;
          if (ch.is_drained()) break;
          coral::channel_waiter w;
          co_await ch.wait_for_item(w);
          w.throw_if_aborted();
        }
      }
      sum += local_sum;
      received += local_count;
    }, rethrow);
  }
  send_side.run(2);
  receive_side.run(2);
  send_side.join();
  receive_side.join();

  CHECK(duplicates == 0);
  CHECK(received == total);
  CHECK(sum == total * (total - 1) / 2);
  std::uint64_t missing = 0;
  for (std::uint64_t i = 0; i < total; ++i) missing += seen.test(i) ? 0 : 1;
  CHECK(missing == 0);
  CHECK(ch.is_drained());
  CHECK(ch.waiting_receivers() == 0);
  CHECK(ch.waiting_senders() == 0);
  CHECK(ch.pages_from_heap() == 0);
}

TEST_CASE("closing in the middle of traffic delivers exactly the sends that succeeded",
          "[channels][stress][close]") {
  constexpr std::uint64_t producers = 8;
  constexpr std::uint64_t consumers = 8;
  constexpr std::uint64_t per_producer = 1'000'000;
  constexpr std::uint64_t close_after = 500'000;  // received items before the close
  coral::test::watchdog dog("close-under-traffic stress", std::chrono::minutes(5));

  coral::channel<std::uint64_t> ch(256);
  bitmap seen(producers * per_producer);
  std::atomic<std::uint64_t> duplicates{0};
  std::atomic<std::uint64_t> received{0};
  std::vector<std::uint64_t> accepted(producers, 0);  // each producer's successful sends

  pool send_side;
  pool receive_side;
  for (std::uint64_t p = 0; p < producers; ++p) {
    asio::co_spawn(send_side.ctx, [&, p]() -> asio::awaitable<void> {
      std::uint64_t i = 0;
      // Producers send until a send fails because of the close.
      while (i < per_producer && co_await ch.async_send(p * per_producer + i)) ++i;
      accepted[p] = i;
    }, rethrow);
  }
  for (std::uint64_t c = 0; c < consumers; ++c) {
    asio::co_spawn(receive_side.ctx, [&]() -> asio::awaitable<void> {
      while (auto v = co_await ch.async_receive()) {
        if (!seen.set(*v)) ++duplicates;
        if (received.fetch_add(1) + 1 == close_after) ch.close();
      }
    }, rethrow);
  }
  send_side.run(2);
  receive_side.run(2);
  send_side.join();
  receive_side.join();

  REQUIRE(ch.is_drained());
  CHECK(duplicates == 0);
  std::uint64_t total_accepted = 0;
  std::uint64_t wrong = 0;
  for (std::uint64_t p = 0; p < producers; ++p) {
    total_accepted += accepted[p];
    // Every accepted value was received; no rejected value was.
    for (std::uint64_t i = 0; i < per_producer; ++i) {
      if (seen.test(p * per_producer + i) != (i < accepted[p])) ++wrong;
    }
  }
  CHECK(wrong == 0);
  CHECK(received == total_accepted);
  CHECK(total_accepted >= close_after);
  CHECK(total_accepted < producers * per_producer);
}
