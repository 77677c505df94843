#pragma once
/// \file
/// A replay buffer's sample keys in batches: each slot's generation, derived
/// from its stream's heads as replay_buffer::generation does, eight at a time
/// in AVX-512 where the CPU has it. The same numbers as the one-at-a-time
/// derivation; tests/replay/replay_buffer_test.cpp compares them.

#include <cstddef>
#include <cstdint>

#include "coral/replay/detail/isa.hpp"

namespace coral::replay::detail {

/// What a slot's generation is derived from.
struct stream_heads {
  const std::uint64_t* heads;       ///< items written to each stream
  const std::size_t* ring_heads;    ///< heads % stream_capacity: where each stream's next item goes
  std::uint64_t stream_capacity;    ///< slots per stream
  std::uint64_t magic;              ///< divider::magic() of stream_capacity; 0: no kernel (also where a slot may not fit in 32 bits)
  std::size_t streams;              ///< how many streams (entries of heads and ring_heads)
};

/// keys[2 i] = slots[i] and keys[2 i + 1] = its generation, for the first
/// i of [0, n) this isa has a kernel for, in eight-slot steps; returns how
/// many it wrote (the caller derives the rest one at a time). Every slot
/// must be below the buffer's capacity, and with a magic the capacity at
/// most 2^32.
std::size_t make_keys(isa which, const stream_heads& s, const std::size_t* slots, std::size_t n,
                      std::uint64_t* keys) noexcept;

}  // namespace coral::replay::detail
