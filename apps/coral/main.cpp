#include <csignal>
#include <iostream>

#include "coral/cli.hpp"
#ifdef CORAL_HAVE_TRAIN
#include "coral/learners/blas_core.hpp"
#endif

int main(int argc, char** argv) {
  // A closed pipe on stdout (`coral train | head -1`, a dead tee) is EPIPE on
  // the next write, which a run takes as a stop (checkpoint written), not a
  // death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
#ifdef CORAL_HAVE_TRAIN
  // Before any thread or BLAS call: OpenBLAS's kernels for this CPU, where
  // it chose its generic ones, and one OpenBLAS thread, as torch has
  // (learners/blas_core.hpp).
  coral::learners::set_up_blas();
#endif
  coral::cli::run_hooks hooks;
#if defined(CORAL_HAVE_TRAIN) && !defined(CORAL_TORCH_PROGRAM)
  // `coral` links no libtorch: a run that needs it continues in coral-torch.
  hooks.hand_over = [argv] { coral::cli::hand_over_to_torch(argv); };
#endif
  return coral::cli::run(argc, argv, std::cout, std::cerr, hooks);
}
