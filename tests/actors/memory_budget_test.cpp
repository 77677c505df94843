#include "coral/actors/memory_budget.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/scoped_env.hpp"
#include "coral/core/error.hpp"

namespace am = coral::actors::errors;

TEST_CASE("CORAL_MEMORY_AVAILABLE replaces the available memory", "[actors][memory]") {
  const coral::test::scoped_env set("CORAL_MEMORY_AVAILABLE", "3GiB");
  CHECK(coral::actors::available_memory() == 3.0 * 1024 * 1024 * 1024);
}

TEST_CASE("a CORAL_MEMORY_AVAILABLE that is not a size is rejected naming the value", "[actors][memory][errors]") {
  const auto* bad = GENERATE("lots", "12 GB", "-1", "");
  const coral::test::scoped_env set("CORAL_MEMORY_AVAILABLE", bad);
  CHECK_THROWS_MATCHES(coral::actors::available_memory(), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(am::bad_memory_override), bad)));
}
