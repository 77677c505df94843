#pragma once
/// \file
/// Test support: a message type that counts its constructions, copies, moves
/// and destructions, to show that a channel moves messages and leaks none.

#include <atomic>
#include <cstdint>

namespace coral::test {

struct counted {
  static inline std::atomic<long> default_constructed{0};
  static inline std::atomic<long> value_constructed{0};
  static inline std::atomic<long> copies{0};
  static inline std::atomic<long> moves{0};
  static inline std::atomic<long> constructed{0};  ///< by any constructor
  static inline std::atomic<long> destroyed{0};

  static void reset() {
    default_constructed = value_constructed = copies = moves = constructed = destroyed = 0;
  }
  /// Objects alive now (constructed minus destroyed).
  static long alive() { return constructed - destroyed; }

  std::int64_t id = -1;

  counted() noexcept {
    ++default_constructed;
    ++constructed;
  }
  explicit counted(std::int64_t i) noexcept : id(i) {
    ++value_constructed;
    ++constructed;
  }
  counted(const counted& o) noexcept : id(o.id) {
    ++copies;
    ++constructed;
  }
  counted(counted&& o) noexcept : id(o.id) {
    ++moves;
    ++constructed;
  }
  counted& operator=(const counted& o) noexcept {
    id = o.id;
    ++copies;
    return *this;
  }
  counted& operator=(counted&& o) noexcept {
    id = o.id;
    ++moves;
    return *this;
  }
  ~counted() { ++destroyed; }
};

}  // namespace coral::test
