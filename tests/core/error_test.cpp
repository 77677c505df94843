#include "coral/core/error.hpp"

#include <catch2/catch.hpp>

#include "coral/core/executor.hpp"
#include "coral/core/logging.hpp"

TEST_CASE("actor_failed names the actor and the cause", "[core][error]") {
  coral::actor_failed e("env-group-3", "boom");
  CHECK(std::string(e.what()) == "actor 'env-group-3' failed: boom");
  CHECK(e.actor() == "env-group-3");
}

TEST_CASE("a bad --executor value is rejected naming the flag and allowed values", "[core][error]") {
  CHECK(coral::parse_executor_mode("single") == coral::executor_mode::single);
  CHECK(coral::parse_executor_mode("threads") == coral::executor_mode::threads);
  CHECK_THROWS_MATCHES(coral::parse_executor_mode("fibers"), coral::config_error,
                       Catch::Message("--executor: invalid value 'fibers' (allowed: threads, single)"));
}

TEST_CASE("a bad --log-level is rejected naming the flag", "[core][error]") {
  CHECK(coral::log::parse_level("debug") == spdlog::level::debug);
  CHECK(coral::log::parse_level("warn") == spdlog::level::warn);
  CHECK(coral::log::parse_level("error") == spdlog::level::err);
  CHECK_THROWS_MATCHES(
      coral::log::parse_level("loud"), coral::config_error,
      Catch::Message("--log-level: invalid value 'loud' (allowed: trace, debug, info, warn, error, critical, off)"));
}
