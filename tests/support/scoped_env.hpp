#pragma once
/// \file
/// Test support: sets an environment variable for one scope and puts back
/// what was there (or unsets it). Not thread safe: use it where no other
/// thread of the test reads the environment.

#include <cstdlib>
#include <optional>
#include <string>

namespace coral::test {

/// Sets variable `name` to `value` until the end of the scope.
class scoped_env {
 public:
  scoped_env(std::string name, const std::string& value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    ::setenv(name_.c_str(), value.c_str(), 1);
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;
  ~scoped_env() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace coral::test
