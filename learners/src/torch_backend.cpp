// The torch backends handed to the learners' front ends (learner_backends.hpp)
// when coral::learners_torch is linked, and torch's thread count.

#include <cstdlib>
#include <mutex>

#include "actor_critic.hpp"
#include "coral/core/logging.hpp"
#include "coral/learners/blas_core.hpp"
#include "coral/learners/network.hpp"
#include "learner_backends.hpp"

namespace coral::learners {

void use_one_torch_thread() {
  static std::once_flag once;
  std::call_once(once, [] {
    torch::set_num_threads(1);
    try {
      torch::set_num_interop_threads(1);
    } catch (const c10::Error&) {
      // Torch refuses once its inter-op pool has started (a host program ran
      // inter-op work first). coral never submits inter-op work, so the
      // pool's size does not matter to it.
      log::get("learners")->debug("torch inter-op threads already set; left as they are");
    }
    // OpenBLAS's kernels: the `coral` command has OpenBLAS choose again
    // first thing in main() where it chose its generic ones (blas_core.hpp).
    // Here, with threads running, that is no longer safe: a host program
    // (Python, an app of the user's) is told what to set instead.
    if (const char* better = blas_core_to_ask_for(); better != nullptr) {
      log::get("learners")->warn(
          "OpenBLAS does not know this CPU and runs its generic SSE3 kernels (Prescott): updates are slower. "
          "Set OPENBLAS_CORETYPE={} before the process starts (the coral command does this itself)",
          better);
    } else if (const std::string core = blas_core_in_use(); !core.empty()) {
      const char* chosen = std::getenv("OPENBLAS_CORETYPE");
      const char* threads = std::getenv("OPENBLAS_NUM_THREADS");
      log::get("learners")->debug("OpenBLAS runs its {} kernels on {} thread(s) (OPENBLAS_CORETYPE {}, "
                                  "OPENBLAS_NUM_THREADS {})",
                                  core, blas_threads_in_use(), chosen != nullptr ? chosen : "unset",
                                  threads != nullptr ? threads : "unset");
    }
  });
}

namespace {

// Torch on one thread first: the sampling side has the other cores.
std::unique_ptr<ppo_learner::backend> torch_ppo(const network_spec& spec, const ppo_config& config, std::uint64_t seed,
                                                std::uint64_t total_steps) {
  use_one_torch_thread();
  return detail::make_torch_ppo(spec, config, seed, total_steps);
}
std::unique_ptr<dqn_learner::backend> torch_dqn(const network_spec& spec, const dqn_config& config,
                                                std::uint64_t seed) {
  use_one_torch_thread();
  return detail::make_torch_dqn(spec, config, seed);
}
std::unique_ptr<r2d2_learner::backend> torch_r2d2(const network_spec& spec, const dqn_config& dqn,
                                                  const r2d2_config& config, std::uint64_t seed) {
  use_one_torch_thread();
  return detail::make_torch_r2d2(spec, dqn, config, seed);
}

const torch_learners table{&torch_ppo, &torch_dqn, &torch_r2d2};

// Before main(): the table is there before any learner is made.
[[maybe_unused]] const bool provided = [] {
  provide_torch_backend(&table);
  return true;
}();

}  // namespace

}  // namespace coral::learners

// Named by coral::learners_torch's link option (-u): the linker takes this
// file from the archive, and with it the initialiser above, into every
// program that links the library.
extern "C" void coral_learners_torch_anchor() {}
