#pragma once
/// \file
/// The saved-state blob the replay storages write and read (replay_buffer,
/// sequence_buffer): a header (8 magic bytes, format version, byte order
/// mark, total length), then named sections, each a 24-byte section header
/// (an 8-byte name padded with zeros, element size, zero, element count)
/// followed by its elements, and last a "checksum" section over every byte
/// before it. Written in this machine's byte order.
///
/// Each storage names its blob kind (magic, version and the texts of its
/// errors), so that a blob of one is refused by the other with the owner's
/// own message.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace coral::replay {

/// The checksum that ends a saved state (its last 8 bytes) over the bytes
/// before it; load() refuses a state whose checksum differs. It catches
/// damage, not adversaries: the fuzz target and the tests of load()'s checks
/// behind it use it to craft states that pass.
[[nodiscard]] std::uint64_t saved_state_checksum(std::span<const char> bytes) noexcept;

}  // namespace coral::replay

namespace coral::replay::detail {

/// What tells one storage's blobs from another's, and how it words a refusal.
struct blob_kind {
  char magic[8];                         ///< first 8 bytes of every blob of this kind
  std::uint32_t version;                 ///< the format version this build writes and reads
  std::string_view malformed;            ///< fmt text with {}: the state_* reason
  std::string_view unsupported_version;  ///< fmt text: the blob's version, this build's
  std::string_view shape_mismatch;       ///< fmt text: field, saved value, this storage's value
  std::string_view bad_magic;            ///< the reason for a blob of another kind
};

/// Bytes of the blob header.
inline constexpr std::size_t state_header_size = 8 + 4 + 4 + 8;  // magic, version, byte order, total length
/// Bytes of a section header.
inline constexpr std::size_t section_header_size = 8 + 4 + 4 + 8;
/// Bytes of the closing checksum section.
inline constexpr std::size_t checksum_size = section_header_size + 8;

/// memcpy, but an empty slab's null data pointer is fine.
inline void copy_bytes(void* to, const char* from, std::size_t bytes) noexcept {
  if (bytes > 0) std::memcpy(to, from, bytes);
}

/// The T stored (unaligned) at p.
template <class T>
[[nodiscard]] T get_at(const char* p) noexcept {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

/// Appends one blob of `kind` to a byte vector, section by section.
class state_writer {
 public:
  /// Writes the header (its length is filled in by finish()).
  state_writer(std::vector<char>& out, const blob_kind& kind);

  /// Appends a section `name` (at most 8 characters) holding `values`.
  template <class T>
  void section(std::string_view name, std::span<const T> values) {
    section_header(name, sizeof(T), values.size());
    const auto* p = reinterpret_cast<const char*>(values.data());
    out_.insert(out_.end(), p, p + values.size_bytes());
  }

  /// Appends a section `name` holding one value.
  template <class T>
  void scalar(std::string_view name, T value) {
    section(name, std::span<const T>(&value, 1));
  }

  /// Ends the blob: its length into the header, then the checksum section,
  /// whose value covers every byte before it.
  void finish();

 private:
  void section_header(std::string_view name, std::size_t element_size, std::size_t count);

  std::vector<char>& out_;
  std::size_t start_;
};

/// Reads one blob of `kind`. The constructor checks the header, the length
/// and the checksum; the sections are then read in the order they were
/// written, each checked for its name, element size and count. Every
/// refusal is a coral::config_error in the kind's own words.
class state_reader {
 public:
  /// Checks `in` as a whole: size, magic, byte order, version, length, checksum.
  state_reader(std::span<const char> in, const blob_kind& kind);

  /// The elements of the next section, which must be `name` with `count` Ts.
  template <class T>
  const char* section(std::string_view name, std::size_t count) {
    return section_of(name, count, sizeof(T));
  }

  /// The one value of the next section, which must be `name` with one T.
  template <class T>
  [[nodiscard]] T scalar(std::string_view name) {
    return get_at<T>(section<T>(name, 1));
  }

  /// Whether the next section is called `name` (a section only some blobs have).
  [[nodiscard]] bool next_is(std::string_view name) const noexcept;

  /// Reads the checksum section (compared by the constructor) and checks
  /// that nothing follows it.
  void finish();

  /// Throws the kind's shape mismatch when `saved` differs from `mine`.
  void check_shape(const char* field, std::uint64_t saved, std::size_t mine) const;

  /// Throws the kind's malformed-state error with `reason`.
  [[noreturn]] void malformed(std::string_view reason) const;

 private:
  const char* section_of(std::string_view name, std::size_t count, std::size_t element_size);

  std::span<const char> body_;
  const blob_kind* kind_;
  std::size_t pos_ = 0;
};

}  // namespace coral::replay::detail
