#pragma once
// Encoding of what crosses between ranks: plain values and arrays appended
// to a byte buffer in this machine's byte order (every rank of an MPI job
// runs the same binary, and coral builds only for little-endian x86-64 and
// arm64), read back with every length checked.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/distributed/errors.hpp"

namespace coral::distributed::wire {

/// Appends to a buffer.
class writer {
 public:
  explicit writer(std::vector<std::byte>& out) : out_(&out) {}

  template <class T>
    requires std::is_trivially_copyable_v<T>
  void put(const T& v) {
    const auto at = out_->size();
    out_->resize(at + sizeof(T));
    std::memcpy(out_->data() + at, &v, sizeof(T));
  }
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void put_array(std::span<const T> values) {
    put<std::uint64_t>(values.size());
    const auto at = out_->size();
    out_->resize(at + values.size_bytes());
    if (!values.empty()) std::memcpy(out_->data() + at, values.data(), values.size_bytes());
  }
  template <class T>
  void put_vector(const std::vector<T>& values) {
    put_array(std::span<const T>(values));
  }
  void put_text(std::string_view text) { put_array(std::span<const char>(text.data(), text.size())); }

 private:
  std::vector<std::byte>* out_;
};

/// Reads a buffer; throws error naming `from` (the sender) and the field
/// when the buffer ends early or an array is longer than what is left.
class reader {
 public:
  reader(std::span<const std::byte> in, std::string from) : in_(in), from_(std::move(from)) {}

  template <class T>
    requires std::is_trivially_copyable_v<T>
  T get(std::string_view field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void get_vector(std::vector<T>& out, std::string_view field) {
    const auto n = get<std::uint64_t>(field);
    if (n > (in_.size() - at_) / sizeof(T)) bad(field);
    out.resize(n);
    if (n != 0) std::memcpy(out.data(), in_.data() + at_, n * sizeof(T));
    at_ += n * sizeof(T);
  }
  std::string get_text(std::string_view field) {
    std::vector<char> chars;
    get_vector(chars, field);
    return {chars.begin(), chars.end()};
  }
  /// Throws unless every byte was read.
  void finish(std::string_view what) {
    if (at_ != in_.size()) bad(fmt::format("{} ({} bytes left over)", what, in_.size() - at_));
  }
  [[noreturn]] void bad(std::string_view field) const {
    throw error(fmt::format(fmt::runtime(errors::wire_malformed), from_, field));
  }

 private:
  void need(std::size_t n, std::string_view field) const {
    if (in_.size() - at_ < n) bad(field);
  }

  std::span<const std::byte> in_;
  std::string from_;
  std::size_t at_ = 0;
};

}  // namespace coral::distributed::wire
