#include "coral/replay/detail/saved_state.hpp"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/errors.hpp"

namespace coral::replay {

// A 64-bit hash that catches corruption, not adversaries: every step is a
// bijection of the running value, so any one changed word changes the result.
std::uint64_t saved_state_checksum(std::span<const char> bytes) noexcept {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ bytes.size();
  const auto mix = [&h](std::uint64_t w) {
    h = (h ^ w) * 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
  };
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i, 8);
    mix(w);
  }
  if (i < bytes.size()) {
    std::uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i, bytes.size() - i);
    mix(w);
  }
  return h;
}

namespace detail {
namespace {

constexpr std::uint32_t byte_order_mark = 0x01020304;

template <class T>
void put(std::vector<char>& out, const T& value) {
  const auto* p = reinterpret_cast<const char*>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

}  // namespace

state_writer::state_writer(std::vector<char>& out, const blob_kind& kind) : out_(out), start_(out.size()) {
  out_.insert(out_.end(), std::begin(kind.magic), std::end(kind.magic));
  put(out_, kind.version);
  put(out_, byte_order_mark);
  put(out_, std::uint64_t{0});  // total length, filled in by finish()
}

void state_writer::finish() {
  const auto length = static_cast<std::uint64_t>(out_.size() - start_ + checksum_size);
  std::memcpy(out_.data() + start_ + 16, &length, 8);
  section_header("checksum", 8, 1);
  put(out_, saved_state_checksum({out_.data() + start_, out_.size() - start_}));
}

void state_writer::section_header(std::string_view name, std::size_t element_size, std::size_t count) {
  char tag[8] = {};
  std::copy_n(name.data(), std::min<std::size_t>(name.size(), 8), tag);
  out_.insert(out_.end(), tag, tag + 8);
  put(out_, static_cast<std::uint32_t>(element_size));
  put(out_, std::uint32_t{0});
  put(out_, static_cast<std::uint64_t>(count));
}

state_reader::state_reader(std::span<const char> in, const blob_kind& kind) : kind_(&kind) {
  if (in.size() < state_header_size + checksum_size) {
    malformed(fmt::format(fmt::runtime(errors::state_truncated), in.size(), state_header_size + checksum_size));
  }
  if (!std::equal(std::begin(kind.magic), std::end(kind.magic), in.data())) malformed(kind.bad_magic);
  if (get_at<std::uint32_t>(in.data() + 12) != byte_order_mark) malformed(errors::state_byte_order);
  const auto version = get_at<std::uint32_t>(in.data() + 8);
  if (version != kind.version) {
    throw config_error(fmt::format(fmt::runtime(kind.unsupported_version), version, kind.version));
  }
  const auto length = get_at<std::uint64_t>(in.data() + 16);
  if (length > in.size()) malformed(fmt::format(fmt::runtime(errors::state_truncated), in.size(), length));
  if (length < in.size()) malformed(fmt::format(fmt::runtime(errors::state_trailing), in.size(), length));
  const std::span<const char> checked_part = in.first(in.size() - 8);
  if (saved_state_checksum(checked_part) != get_at<std::uint64_t>(in.data() + in.size() - 8)) {
    malformed(errors::state_checksum);
  }
  body_ = in.subspan(state_header_size);
}

const char* state_reader::section_of(std::string_view name, std::size_t count, std::size_t element_size) {
  std::string_view found = "";
  std::uint32_t size = 0;
  std::uint64_t found_count = 0;
  if (body_.size() - pos_ >= section_header_size) {
    const char* h = body_.data() + pos_;
    found = std::string_view(h, 8);
    found = found.substr(0, found.find('\0'));
    size = get_at<std::uint32_t>(h + 8);
    found_count = get_at<std::uint64_t>(h + 16);
  }
  if (found != name || size != element_size || found_count != count ||
      (body_.size() - pos_ - section_header_size) / element_size < count) {
    malformed(fmt::format(fmt::runtime(errors::state_bad_section), found, found_count, size, name, count, element_size));
  }
  const char* data = body_.data() + pos_ + section_header_size;
  pos_ += section_header_size + count * element_size;
  return data;
}

bool state_reader::next_is(std::string_view name) const noexcept {
  if (body_.size() - pos_ < section_header_size) return false;
  const std::string_view found(body_.data() + pos_, 8);
  return found.substr(0, found.find('\0')) == name;
}

void state_reader::finish() {
  (void)scalar<std::uint64_t>("checksum");  // compared by the constructor
  if (pos_ != body_.size()) malformed(fmt::format(fmt::runtime(errors::state_extra), body_.size() - pos_));
}

void state_reader::check_shape(const char* field, std::uint64_t saved, std::size_t mine) const {
  if (saved != mine) throw config_error(fmt::format(fmt::runtime(kind_->shape_mismatch), field, saved, mine));
}

void state_reader::malformed(std::string_view reason) const {
  throw config_error(fmt::format(fmt::runtime(kind_->malformed), reason));
}

}  // namespace detail
}  // namespace coral::replay
