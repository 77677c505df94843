#pragma once
/// \file
/// `coral train` in-process: the built-in algorithms (PPO, DQN, R2D2)
/// registered, then the one training composition (coral/training/) runs
/// whichever `train_options::algo` names. Tests and the Python binding call it.

#include <iostream>
#include <ostream>

#include "coral/training/train_options.hpp"

namespace coral::learners {

/// Whether this program has the torch learners (coral::learners_torch
/// linked). The `coral` command does not: it hands a run that needs them to
/// coral-torch, so that what never trains never loads libtorch.
[[nodiscard]] bool torch_linked() noexcept;

/// Whether a run with `options` needs the torch learners (at present: every
/// run of a built-in algorithm).
[[nodiscard]] bool needs_torch(const training::train_options& options);

/// Registers the built-in algorithms' descriptors (once per process; any thread).
void register_builtin_algorithms();

/// Checks every option, naming the flag at fault (config_error), before
/// anything starts: the sampler's flags (see resolve_wiring), --algo, the
/// settings every run has, the algorithm's own (its descriptor's check),
/// the memory the run would need, and --conv against the env's observation
/// (resolve_layers()).
void validate(const training::train_options& options);

/// Runs training to the end: solved (when stop_when_solved), total_steps,
/// or a signal (SIGINT/SIGTERM: a checkpoint is written and the run ends
/// normally). Progress lines go to `progress`, warnings to `warnings`. Before anything starts, the
/// run and checkpoint directories are created and test-written, and a fresh
/// run into a checkpoint directory holding checkpoints is refused. Throws
/// config_error for bad options or unusable directories, checkpoint_error for
/// a refused checkpoint, actor_failed if an actor failed.
training::train_result train(const training::train_options& options, std::ostream& progress,
                              std::ostream& warnings = std::cerr);

}  // namespace coral::learners
