// `coral train`: the built-in algorithms registered, then the one training
// composition (training_run.cpp) runs whichever --algo names.

#include "coral/learners/train.hpp"

#include <mutex>

#include <fmt/format.h>

#include "algorithms.hpp"
#include "coral/core/json.hpp"
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
    register_r2d2();
  });
}

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
      solved, interrupted, json::quote(o.sampler.env), json::quote(o.algo), json::quote(actors::to_string(o.sampler.topo)),
      json::quote(o.sampler.executor == executor_mode::single ? "single" : "threads"), o.sampler.seed, env_steps,
      json::number(wall_seconds), json::number(mean_return), json::number(mean_length), episodes, updates,
      target_return ? json::number(*target_return) : "null", checkpoint.empty() ? "null" : json::quote(checkpoint),
      resumed_from.empty() ? "null" : json::quote(resumed_from));
}

}  // namespace coral::learners
