#include "coral/core/executor.hpp"

#include <atomic>
#include <future>
#include <set>
#include <thread>

#include <asio/post.hpp>
#include <catch2/catch.hpp>

#include "coral/core/error.hpp"

TEST_CASE("a thread pool runs posted work on its own threads", "[core][executor]") {
  coral::thread_pool pool({.name = "sampling", .threads = 2});
  pool.start();
  std::promise<std::thread::id> ran;
  asio::post(pool.get_executor(), [&] { ran.set_value(std::this_thread::get_id()); });
  auto fut = ran.get_future();
  REQUIRE(fut.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  CHECK(fut.get() != std::this_thread::get_id());
  pool.stop();
  pool.join();
}

TEST_CASE("a pool of zero threads is a config error naming the pool", "[core][executor]") {
  CHECK_THROWS_MATCHES(coral::thread_pool({.name = "learner", .threads = 0}), coral::config_error,
                       Catch::Message("executor 'learner': thread count must be at least 1"));
}

TEST_CASE("a pinned pool still runs its work", "[core][executor]") {
  coral::thread_pool pool({.name = "pinned", .threads = 1, .pin = true});
  pool.start();
  std::promise<void> ran;
  asio::post(pool.get_executor(), [&] { ran.set_value(); });
  REQUIRE(ran.get_future().wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  pool.stop();
  pool.join();
}

TEST_CASE("pinning to a core that does not exist is refused", "[core][executor]") {
  CHECK_FALSE(coral::pin_current_thread(100000));
}
