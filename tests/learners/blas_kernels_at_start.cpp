// The learner test binaries start as the `coral` command does: before main()
// (one thread, no BLAS call yet; every shared library's constructor has
// run), OpenBLAS's kernels for this CPU where it chose its generic ones
// (learners/blas_core.hpp), and one OpenBLAS thread.

#include "coral/learners/blas_core.hpp"

namespace {

[[maybe_unused]] const bool blas_set_up_at_start = (coral::learners::set_up_blas(), true);

}  // namespace
