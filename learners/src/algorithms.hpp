#pragma once
// Private: the built-in algorithms' registrations (train.cpp makes them),
// and what their factories share.

#include <memory>

#include "coral/learners/network.hpp"
#include "coral/training/algorithm.hpp"

namespace coral::learners {

/// Registers `--algo ppo` (ppo.cpp).
void register_ppo();
/// Registers `--algo dqn` (dqn.cpp).
void register_dqn();
/// `--algo r2d2` (r2d2.cpp).
void register_r2d2();

/// The factory of a torch learner's plug-in `Plugin`: torch on one thread
/// (the sampling side has the other cores), then `Plugin(options, sampler)`.
template <class Plugin>
training::algorithm_factory torch_plugin() {
  return [](const training::train_options& o, actors::sampler& s) -> std::unique_ptr<training::algorithm> {
    use_one_torch_thread();
    return std::make_unique<Plugin>(o, s);
  };
}

}  // namespace coral::learners
