// `coral train`: the built-in algorithms registered, then the one training
// composition (training_run.cpp) runs whichever --algo names.

#include "coral/learners/train.hpp"

#include <cmath>
#include <mutex>

#include <fmt/format.h>

#include "algorithms.hpp"
#include "coral/actors/topology.hpp"
#include "coral/learners/training_run.hpp"

namespace coral::learners {
namespace {

/// Registers the built-in algorithms once per process: one line each.
void register_builtin_algorithms() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_ppo();
    register_dqn();
  });
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string number(double x) { return std::isfinite(x) ? fmt::format("{}", x) : "null"; }

}  // namespace

void validate(const train_options& o) {
  register_builtin_algorithms();
  training_run::validate(o);
}

train_result train(const train_options& o, std::ostream& progress) {
  register_builtin_algorithms();
  training_run run(o, progress);
  return run.run();
}

std::string train_result::to_json(const train_options& o) const {
  return fmt::format(
      R"({{"solved":{},"interrupted":{},"env":{},"algo":{},"topology":{},"executor":{},"seed":{},"env_steps":{},)"
      R"("wall_seconds":{},"mean_return":{},"mean_length":{},"episodes":{},"updates":{},"target_return":{},)"
      R"("checkpoint":{},"resumed_from":{}}})",
      solved, interrupted, quote(o.sampler.env), quote(o.algo), quote(actors::to_string(o.sampler.topo)),
      quote(o.sampler.executor == executor_mode::single ? "single" : "threads"), o.sampler.seed, env_steps,
      number(wall_seconds), number(mean_return), number(mean_length), episodes, updates,
      target_return ? number(*target_return) : "null", checkpoint.empty() ? "null" : quote(checkpoint),
      resumed_from.empty() ? "null" : quote(resumed_from));
}

}  // namespace coral::learners
