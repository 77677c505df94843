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
///
/// On Linux the large blocks are mapped straight from the kernel (mmap) and
/// unmapped when freed. Through malloc they could be memory an earlier buffer
/// had already touched (glibc raises its mmap threshold after a large free,
/// so the next block of that size comes from the heap): the advice then came
/// after the first touch, and the block stayed on 4 KiB pages. A benchmark
/// that builds one buffer after another saw exactly that.

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace coral {

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
    const std::size_t rounded = round_up(bytes);
#if defined(__linux__)
    // Map a huge page more than needed, then unmap what lies outside the
    // aligned block.
    void* mapped = ::mmap(nullptr, rounded + huge_page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) throw std::bad_alloc();
    auto* const first = static_cast<char*>(mapped);
    char* const aligned = first + (huge_page - reinterpret_cast<std::uintptr_t>(first) % huge_page) % huge_page;
    if (aligned > first) ::munmap(first, static_cast<std::size_t>(aligned - first));
    const std::size_t tail = static_cast<std::size_t>(first + rounded + huge_page - (aligned + rounded));
    if (tail > 0) ::munmap(aligned + rounded, tail);
    ::madvise(aligned, rounded, MADV_HUGEPAGE);  // advice only: failure just means 4 KiB pages
    return reinterpret_cast<T*>(aligned);
#else
    return static_cast<T*>(::operator new(rounded, std::align_val_t{huge_page}));
#endif
  }

  /// Frees what allocate(n) returned.
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < huge_page) {
      ::operator delete(p, std::align_val_t{line});
    } else {
#if defined(__linux__)
      ::munmap(p, round_up(bytes));
#else
      ::operator delete(p, std::align_val_t{huge_page});
#endif
    }
  }

  template <class U>
  bool operator==(const huge_page_allocator<U>&) const noexcept {
    return true;
  }

 private:
  static std::size_t round_up(std::size_t bytes) noexcept { return (bytes + huge_page - 1) / huge_page * huge_page; }
};

/// A vector whose storage comes from huge_page_allocator.
template <class T>
using huge_vector = std::vector<T, huge_page_allocator<T>>;

}  // namespace coral
