#pragma once
/// \file
/// `huge_page_allocator`: the allocator of the replay buffer's large arrays.
///
/// Sampling and priority updates touch a million-slot buffer at random: with
/// 4 KiB pages nearly every access misses the TLB as well as the cache, and a
/// page walk delays even a prefetched line. Blocks of 2 MiB or more are
/// therefore 2 MiB-aligned and advised as transparent huge pages
/// (madvise(MADV_HUGEPAGE), Linux), before their first touch, so that the
/// kernel backs them with 2 MiB pages where it can (THP in "madvise" or
/// "always" mode); elsewhere the advice is a no-op. Smaller blocks are only
/// cache-line aligned.

#include <cstddef>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace coral::replay::detail {

/// A std::allocator replacement; stateless, all instances equal.
template <class T>
class huge_page_allocator {
 public:
  using value_type = T;

  /// Size and alignment of a huge page.
  static constexpr std::size_t huge_page = std::size_t{2} << 20;
  /// Alignment of smaller blocks: one cache line.
  static constexpr std::size_t line = 64;

  huge_page_allocator() noexcept = default;
  template <class U>
  huge_page_allocator(const huge_page_allocator<U>&) noexcept {}  // NOLINT: rebinding, as std::allocator

  /// n elements, aligned as described above.
  [[nodiscard]] T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < huge_page) return static_cast<T*>(::operator new(bytes, std::align_val_t{line}));
    const std::size_t rounded = (bytes + huge_page - 1) / huge_page * huge_page;
    void* p = ::operator new(rounded, std::align_val_t{huge_page});
#if defined(__linux__)
    ::madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure just means 4 KiB pages
#endif
    return static_cast<T*>(p);
  }

  /// Frees what allocate(n) returned.
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < huge_page) {
      ::operator delete(p, std::align_val_t{line});
    } else {
      ::operator delete(p, std::align_val_t{huge_page});
    }
  }

  template <class U>
  bool operator==(const huge_page_allocator<U>&) const noexcept {
    return true;
  }
};

/// A vector whose storage comes from huge_page_allocator.
template <class T>
using huge_vector = std::vector<T, huge_page_allocator<T>>;

}  // namespace coral::replay::detail
