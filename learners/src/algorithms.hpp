#pragma once
// Private: the built-in algorithms' registrations (train.cpp makes them).

namespace coral::learners {

/// Registers `--algo ppo` (ppo.cpp).
void register_ppo();
/// Registers `--algo dqn` (dqn.cpp).
void register_dqn();
/// `--algo r2d2` (r2d2.cpp).
void register_r2d2();

}  // namespace coral::learners
