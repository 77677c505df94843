#pragma once
/// \file
/// What a check says of a bad input: the text of the config_error it throws,
/// or "(accepted)" when it throws none. Tests compare the text exactly.

#include <string>

#include "coral/core/error.hpp"

namespace coral::test {

/// The config_error text of `check()`, or "(accepted)".
template <class Check>
[[nodiscard]] std::string refusal_of(Check&& check) {
  try {
    check();
  } catch (const config_error& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace coral::test
