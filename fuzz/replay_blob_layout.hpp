#pragma once
/// \file
/// The layout of a replay buffer's blob (replay_buffer::save), as far as the
/// targets that load one need it: to repair its length and checksum, so
/// that the fuzzer reaches blobs that are internally consistent but invalid,
/// as a crafted file would be, and to read the shape it claims.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

#include "coral/replay/replay_buffer.hpp"

namespace coral::fuzz {

// A 24-byte header (magic, version, byte order, total length at offset 16),
// then sections of a 24-byte header and their elements; the first ones are
// the u64 scalars capacity, streams, obs_dim, disc_dim, cont_dim, n_step and
// the double alpha, and the last 8 bytes are the checksum of everything
// before them.
inline constexpr std::size_t blob_length_offset = 16;
inline constexpr std::size_t blob_first_scalar = 24 + 24;
inline constexpr std::size_t blob_scalar_stride = 24 + 8;

/// Scalar number `index` of `blob`, if the blob is long enough to hold it.
template <class T>
std::optional<T> blob_scalar(std::span<const char> blob, std::size_t index) {
  const std::size_t at = blob_first_scalar + index * blob_scalar_stride;
  if (blob.size() < at + sizeof(T)) return std::nullopt;
  T v;
  std::memcpy(&v, blob.data() + at, sizeof v);
  return v;
}

/// Rewrites the length field and the checksum of `blob` to match its bytes
/// (nothing if it is too short to have both).
inline void repair_blob(std::span<char> blob) {
  if (blob.size() < blob_length_offset + 8 + 8) return;
  const std::uint64_t length = blob.size();
  std::memcpy(blob.data() + blob_length_offset, &length, sizeof length);
  const std::uint64_t sum = replay::saved_state_checksum(blob.first(blob.size() - 8));
  std::memcpy(blob.data() + blob.size() - 8, &sum, sizeof sum);
}

/// The shape `blob` claims, if it is one the targets build (small, so that
/// a run stays fast and within libFuzzer's memory limit); alpha is left at
/// its default.
inline std::optional<replay::replay_config> blob_shape(std::span<const char> blob) {
  const auto capacity = blob_scalar<std::uint64_t>(blob, 0);
  const auto streams = blob_scalar<std::uint64_t>(blob, 1);
  const auto obs = blob_scalar<std::uint64_t>(blob, 2);
  const auto disc = blob_scalar<std::uint64_t>(blob, 3);
  const auto cont = blob_scalar<std::uint64_t>(blob, 4);
  const auto n = blob_scalar<std::uint64_t>(blob, 5);
  if (!n || *capacity > 512 || *streams > 64 || *obs > 16 || *disc > 4 || *cont > 4 || *n > 16) return std::nullopt;
  replay::replay_config c;
  c.capacity = *capacity;
  c.num_streams = *streams;
  c.obs_dim = *obs;
  c.discrete_action_dim = *disc;
  c.continuous_action_dim = *cont;
  c.n_step = *n;
  return c;
}

}  // namespace coral::fuzz
