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

/// A descriptor's needs_torch for an algorithm whose every network the
/// fused engine has: only `--backend torch` needs it.
inline bool torch_chosen(const training::train_options& o) {
  return parse_backend(o.backend) == network_backend::torch;
}

/// `config` with the run's `--backend`.
template <class Config>
Config with_backend(Config config, const training::train_options& o) {
  config.backend = parse_backend(o.backend);
  return config;
}

/// The name of the backend a learner of `config` runs on ("fused" or "torch").
template <class Config>
const char* backend_name(const Config& config) noexcept {
  return config.backend == network_backend::fused ? "fused" : "torch";
}

}  // namespace coral::learners
