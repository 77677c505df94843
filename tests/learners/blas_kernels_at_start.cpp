// The learner test binaries start as the `coral` command does: before main()
// (one thread, no BLAS call yet; every shared library's constructor has
// run), OpenBLAS's kernels for this CPU where it chose its generic ones
// (learners/blas_core.hpp), and one OpenBLAS thread.

#include "coral/learners/blas_core.hpp"

namespace {

[[maybe_unused]] const std::string blas_kernels_at_start = coral::learners::choose_blas_core();
[[maybe_unused]] const int blas_threads_at_start = coral::learners::use_one_blas_thread();

}  // namespace
