#include "tfevents.hpp"

#include <bit>
#include <cstring>

#include "crc32c.hpp"

namespace coral::training::detail::tfevents {
namespace {

static_assert(std::endian::native == std::endian::little, "the record framing and protobuf fixed fields are little-endian");

// Protocol buffer wire types.
constexpr unsigned varint = 0;
constexpr unsigned fixed64 = 1;
constexpr unsigned length_delimited = 2;
constexpr unsigned fixed32 = 5;

constexpr std::uint64_t dt_string = 7;  // tensorflow.DataType

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_key(std::string& out, unsigned field, unsigned wire_type) { put_varint(out, (field << 3) | wire_type); }

template <class T>
void put_raw(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_bytes(std::string& out, unsigned field, std::string_view bytes) {
  put_key(out, field, length_delimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

/// An Event's wall_time and step; the caller adds what it holds.
std::string event_head(double wall_time, std::int64_t step) {
  std::string e;
  put_key(e, 1, fixed64);
  put_raw(e, wall_time);
  put_key(e, 2, varint);
  put_varint(e, static_cast<std::uint64_t>(step));  // int64: negative ones take ten bytes
  return e;
}

/// Reads protocol buffer fields off the front of a message.
class field_reader {
 public:
  explicit field_reader(std::string_view data) : rest_(data) {}

  struct field {
    unsigned number = 0;
    unsigned wire_type = 0;
    std::uint64_t value = 0;  ///< varint and fixed fields
    std::string_view bytes;   ///< length-delimited fields
  };

  /// The next field; nullopt at the end, and sets bad() on malformed input.
  std::optional<field> next() {
    if (rest_.empty()) return std::nullopt;
    const auto key = read_varint();
    if (!key || (*key >> 3) == 0) return fail();
    field f;
    f.number = static_cast<unsigned>(*key >> 3);
    f.wire_type = static_cast<unsigned>(*key & 7);
    switch (f.wire_type) {
      case varint: {
        const auto v = read_varint();
        if (!v) return fail();
        f.value = *v;
        break;
      }
      case fixed64:
      case fixed32: {
        const std::size_t n = f.wire_type == fixed64 ? 8 : 4;
        if (rest_.size() < n) return fail();
        std::memcpy(&f.value, rest_.data(), n);
        rest_.remove_prefix(n);
        break;
      }
      case length_delimited: {
        const auto n = read_varint();
        if (!n || *n > rest_.size()) return fail();
        f.bytes = rest_.substr(0, *n);
        rest_.remove_prefix(*n);
        break;
      }
      default: return fail();
    }
    return f;
  }

  [[nodiscard]] bool bad() const noexcept { return bad_; }

 private:
  std::optional<std::uint64_t> read_varint() {
    std::uint64_t v = 0;
    for (unsigned shift = 0; shift < 64 && !rest_.empty(); shift += 7) {
      const auto b = static_cast<unsigned char>(rest_.front());
      rest_.remove_prefix(1);
      v |= std::uint64_t{b & 0x7FU} << shift;
      if ((b & 0x80U) == 0) return v;
    }
    return std::nullopt;
  }

  std::optional<field> fail() {
    bad_ = true;
    rest_ = {};
    return std::nullopt;
  }

  std::string_view rest_;
  bool bad_ = false;
};

/// The length-delimited field `number` of `message` (the last one), if any;
/// nullopt also when the message is malformed.
std::optional<std::string_view> submessage(std::string_view message, unsigned number) {
  field_reader r(message);
  std::optional<std::string_view> found;
  while (const auto f = r.next()) {
    if (f->number == number && f->wire_type == length_delimited) found = f->bytes;
  }
  if (r.bad()) return std::nullopt;
  return found;
}

/// Whether the Summary.Value `value` belongs to the text plugin.
bool is_text_value(std::string_view value) {
  const auto metadata = submessage(value, 9);
  if (!metadata) return false;
  const auto plugin = submessage(*metadata, 1);
  if (!plugin) return false;
  const auto name = submessage(*plugin, 1);
  return name && *name == "text";
}

}  // namespace

std::string frame(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  put_raw(out, static_cast<std::uint64_t>(data.size()));
  put_raw(out, masked_crc32c(std::string_view(out.data(), 8)));
  out.append(data);
  put_raw(out, masked_crc32c(data));
  return out;
}

std::string version_event(double wall_time) {
  auto e = event_head(wall_time, 0);
  put_bytes(e, 3, file_version);
  return e;
}

std::string scalars_event(double wall_time, std::int64_t step, std::span<const scalar> scalars) {
  std::string summary;
  std::string value;
  for (const auto& s : scalars) {
    value.clear();
    put_bytes(value, 1, s.tag);
    put_key(value, 2, fixed32);
    put_raw(value, s.value);
    put_bytes(summary, 1, value);
  }
  auto e = event_head(wall_time, step);
  put_bytes(e, 5, summary);
  return e;
}

std::string text_event(double wall_time, std::int64_t step, std::string_view tag, std::string_view text) {
  std::string plugin;
  put_bytes(plugin, 1, "text");
  std::string metadata;
  put_bytes(metadata, 1, plugin);
  std::string tensor;
  put_key(tensor, 1, varint);
  put_varint(tensor, dt_string);
  put_bytes(tensor, 2, "");  // no dimensions: a scalar
  put_bytes(tensor, 8, text);
  std::string value;
  put_bytes(value, 1, tag);
  put_bytes(value, 8, tensor);
  put_bytes(value, 9, metadata);
  std::string summary;
  put_bytes(summary, 1, value);
  auto e = event_head(wall_time, step);
  put_bytes(e, 5, summary);
  return e;
}

std::optional<event_kind> inspect(std::string_view data) {
  event_kind k;
  field_reader r(data);
  while (const auto f = r.next()) {
    if (f->number == 2 && f->wire_type == varint) k.step = static_cast<std::int64_t>(f->value);
    if (f->number == 3 && f->wire_type == length_delimited) k.opens_file = true;
    if (f->number == 5 && f->wire_type == length_delimited) {
      field_reader values(f->bytes);
      while (const auto v = values.next()) {
        if (v->number == 1 && v->wire_type == length_delimited && is_text_value(v->bytes)) k.text = true;
      }
      if (values.bad()) return std::nullopt;
    }
  }
  if (r.bad()) return std::nullopt;
  return k;
}

bool read_record(std::istream& in, std::string& data) {
  char head[12];
  if (!in.read(head, sizeof head)) return false;
  std::uint64_t length = 0;
  std::uint32_t length_crc = 0;
  std::memcpy(&length, head, 8);
  std::memcpy(&length_crc, head + 8, 4);
  if (length_crc != masked_crc32c(std::string_view(head, 8)) || length > max_record_bytes) return false;
  data.resize(length);
  if (!in.read(data.data(), static_cast<std::streamsize>(length))) return false;
  char tail[4];
  if (!in.read(tail, sizeof tail)) return false;
  std::uint32_t data_crc = 0;
  std::memcpy(&data_crc, tail, 4);
  return data_crc == masked_crc32c(data);
}

}  // namespace coral::training::detail::tfevents
