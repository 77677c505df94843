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

/// The factory of the plug-in `Plugin`: `Plugin(options, sampler)`.
template <class Plugin>
training::algorithm_factory plugin() {
  return [](const training::train_options& o, actors::sampler& s) -> std::unique_ptr<training::algorithm> {
    return std::make_unique<Plugin>(o, s);
  };
}

/// A descriptor's needs_torch for an algorithm whose learner is torch's alone.
inline bool always_torch(const training::train_options&) { return true; }

}  // namespace coral::learners
