// `coral train`: the built-in algorithms registered, then the one training
// composition (training_run.cpp) runs whichever --algo names.

#include "coral/learners/train.hpp"

#include <mutex>

#include "algorithms.hpp"
#include "coral/actors/memory_budget.hpp"
#include "coral/learners/network.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/training_run.hpp"

namespace coral::learners {

/// One line each.
void register_builtin_algorithms() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_ppo();
    register_dqn();
    register_r2d2();
  });
}

bool needs_torch(const training::train_options& o) {
  register_builtin_algorithms();
  const auto d = training::find_algorithm(o.algo);
  return d != nullptr && d->needs_torch && d->needs_torch(o);
}

void validate(const training::train_options& o) {
  register_builtin_algorithms();
  (void)parse_backend(o.backend);
  training::training_run::validate(o);
  // --conv and --hidden against the env's observation: a convolution that
  // does not fit it is refused here, before anything starts.
  (void)resolve_layers(o.hidden, o.conv, actors::probe_env_shape(o.sampler).obs_shape);
}

training::train_result train(const training::train_options& o, std::ostream& progress, std::ostream& warnings) {
  register_builtin_algorithms();
  training::training_run run(o, progress, warnings);
  return run.run();
}

}  // namespace coral::learners
