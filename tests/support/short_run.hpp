#pragma once
/// \file
/// Test support: a short cartpole training run on one thread that leaves a
/// checkpoint behind, for the tests of what reads checkpoints (load_policy,
/// `coral eval`). Needs the torch learners linked.

#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>

#include "coral/learners/train.hpp"
#include "coral/training/train_options.hpp"

namespace coral::test {

/// `steps` env steps of `algo` on 4 cartpoles (sync, one thread, seed 11,
/// hidden [16]), checkpoints into `dir`, no run dir, no progress lines.
inline training::train_options short_run(const std::string& algo, const std::filesystem::path& dir,
                                         std::uint64_t steps) {
  training::train_options o;
  o.algo = algo;
  o.sampler.env = "cartpole";
  o.sampler.num_envs = 4;
  o.sampler.topo = actors::topology::sync;
  o.sampler.executor = executor_mode::single;
  o.sampler.seed = 11;
  o.total_steps = steps;
  o.progress_seconds = 0;
  o.stall_seconds = 0;
  o.hidden = {16};
  o.checkpoint_dir = dir.string();
  o.stop_when_solved = false;
  return o;
}

/// Runs `o` to its end, its lines and warnings dropped.
inline void train_quietly(const training::train_options& o) {
  std::ostringstream progress, warnings;
  (void)learners::train(o, progress, warnings);
}

}  // namespace coral::test
