#pragma once
/// \file
/// The final JSON line of a training run, for comparing two runs: the
/// fields that differ between identical runs taken out.

#include <string>

namespace coral::test {

/// `json` (train_result::to_json()) without its wall-clock field.
[[nodiscard]] inline std::string without_wall_time(std::string json) {
  const auto at = json.find(R"("wall_seconds":)");
  if (at == std::string::npos) return json;
  return json.erase(at, json.find(',', at) - at + 1);
}

}  // namespace coral::test
