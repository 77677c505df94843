#include "coral/actors/memory_budget.hpp"

#include <cstdlib>
#include <optional>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"

namespace am = coral::actors::messages;

namespace {

/// Sets CORAL_MEMORY_AVAILABLE for one scope and puts back what was there.
class memory_override {
 public:
  explicit memory_override(const char* value) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  memory_override(const memory_override&) = delete;
  memory_override& operator=(const memory_override&) = delete;
  ~memory_override() {
    if (old_) {
      ::setenv(name, old_->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }

 private:
  static constexpr const char* name = "CORAL_MEMORY_AVAILABLE";
  std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("CORAL_MEMORY_AVAILABLE replaces the available memory", "[actors][memory]") {
  const memory_override set("3GiB");
  CHECK(coral::actors::available_memory() == 3.0 * 1024 * 1024 * 1024);
}

TEST_CASE("a CORAL_MEMORY_AVAILABLE that is not a size is rejected naming the value", "[actors][memory][errors]") {
  const auto* bad = GENERATE("lots", "12 GB", "-1", "");
  const memory_override set(bad);
  CHECK_THROWS_MATCHES(coral::actors::available_memory(), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(am::bad_memory_override), bad)));
}
