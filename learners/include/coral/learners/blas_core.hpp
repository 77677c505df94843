#pragma once
/// \file
/// Which of OpenBLAS's kernel sets ("core types") suits this CPU, which one
/// the process runs, and choosing again where OpenBLAS chose badly.
///
/// OpenBLAS built for many CPUs (Debian's is) picks its kernels when it
/// loads, by the CPU's family and model number. Before 0.3.25 (Debian 12 has
/// 0.3.21) an Intel model it does not know gets its generic SSE3 kernels,
/// "Prescott", whatever the CPU can do (OpenBLAS issue 4267, fixed by pull
/// request 4268): a Raptor Lake, or the Emerald Rapids Xeon (model 207) this
/// project is developed on, runs its GEMMs without AVX, 5-6x slower than
/// with the AVX-512 kernels, and coral's training runs up to 1.6x slower
/// (BENCHMARKS.md, "OpenBLAS's kernels").
///
/// And how many threads OpenBLAS splits a product over: it starts one per
/// core, and a thread waiting on the others spins with sched_yield(), which
/// on a machine with other work (a build beside the tests, the envs' own
/// threads) hands the core away for a whole time slice. The learners run
/// one torch thread; with OpenBLAS's threads as well, a recurrent PPO run
/// took 3-5x as long beside two low-priority processes, and with one
/// OpenBLAS thread no longer than on a quiet machine (BENCHMARKS.md,
/// "One OpenBLAS thread").
///
/// Torch-free: the `coral` command calls set_up_blas() first thing in
/// main(); the learners log which
/// kernels run on how many threads, and advise where a host program
/// (Python) runs the generic ones.

#include <string>

#include "coral/core/cpu_features.hpp"

namespace coral::learners {

/// The `OPENBLAS_CORETYPE` for an Intel CPU with these features: SkylakeX
/// with AVX-512, Haswell with AVX2, the kernel sets OpenBLAS 0.3.21 gives
/// the Intel models it knows that have them, and that later releases give by
/// these features to the models they do not know. (It gives Cooper Lake and
/// Sapphire Rapids "Cooperlake", which adds bfloat16 GEMMs to SkylakeX's
/// kernels; the float GEMMs coral's learners call are the same, measured.)
/// nullptr where OpenBLAS's own choice stands: a CPU without AVX2, or one
/// not made by Intel (OpenBLAS tunes AMD's Zen cores apart).
const char* blas_core_for(const coral::cpu_features& cpu) noexcept;

/// The kernel set the OpenBLAS in this process runs ("SkylakeX",
/// "Prescott"); empty where the process has no OpenBLAS (another BLAS, or
/// none loaded).
std::string blas_core_in_use();

/// The kernel set to ask OpenBLAS for: blas_core_for() this CPU, where
/// OpenBLAS runs its generic kernels ("Prescott") and the user has not set
/// OPENBLAS_CORETYPE; nullptr otherwise (OpenBLAS's choice, or the user's,
/// stands).
const char* blas_core_to_ask_for();

/// Where blas_core_to_ask_for() names a kernel set: sets
/// OPENBLAS_CORETYPE to it and has OpenBLAS choose again, by
/// the steps its own constructor took when it loaded
/// (gotoblas_dynamic_quit(), then gotoblas_dynamic_init(), which reads the
/// variable; both looked up with dlsym, so nothing happens where they are
/// missing). Call it before any BLAS call and before other threads exist:
/// first thing in main(). Returns the kernel set running afterwards, empty
/// without OpenBLAS. Children inherit the variable.
std::string choose_blas_core();

/// OpenBLAS's thread count (openblas_get_num_threads()); 0 where the
/// process has no OpenBLAS.
int blas_threads_in_use();

/// Whether OPENBLAS_NUM_THREADS holds a thread count as OpenBLAS reads it
/// (atoi: "2x" is 2; OpenBLAS caps a count at the cores). Unset, empty, 0,
/// negative or not a number is OpenBLAS's "one per core", not a choice.
bool blas_threads_chosen();

/// Where the process has OpenBLAS and blas_threads_chosen() is false, has
/// it compute on the calling thread only (openblas_set_num_threads(1),
/// looked up with dlsym); a user's thread count stands. Like
/// choose_blas_core(), for main() before other threads exist: in a host
/// program the count is the host's (numpy shares the library). Returns the
/// thread count afterwards, 0 without OpenBLAS.
int use_one_blas_thread();

/// Once per process, what the learners' products run on: where OpenBLAS
/// runs its generic kernels and the user did not choose, a warning that says
/// what to set before the process starts (a host program: the `coral`
/// command does it itself); otherwise a debug line naming the kernels and
/// threads. Each backend calls it when its learner is made.
void report_blas_setup();

/// OpenBLAS as coral runs it: choose_blas_core(), then use_one_blas_thread().
/// For main() (or a static initialiser) before other threads exist.
void set_up_blas();

}  // namespace coral::learners
