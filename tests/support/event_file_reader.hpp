#pragma once
/// \file
/// Test support: a reader of TensorBoard event files written from the record
/// format alone, independent of coral's writer (training/src/tfevents.cpp):
/// TFRecord framing (uint64 length, masked CRC-32C of the length, data,
/// masked CRC-32C of the data) around `Event` protocol buffers, with the
/// fields TensorBoard's event.proto, summary.proto and tensor.proto give
/// them. Its CRC-32C is the bit-at-a-time definition, the reference that
/// coral's table-driven one is tested against.

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace coral::test::tfevents {

/// CRC-32C, one bit at a time (RFC 3720, appendix B.4's polynomial, reflected).
inline std::uint32_t reference_crc32c(std::string_view bytes) {
  std::uint32_t crc = 0xFFFFFFFFU;
  for (const char c : bytes) {
    crc ^= static_cast<unsigned char>(c);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78U & (0U - (crc & 1U)));
  }
  return crc ^ 0xFFFFFFFFU;
}

/// TFRecord's mask of a CRC.
inline std::uint32_t masked(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8U; }

/// One Summary.Value.
struct value {
  std::string tag;
  std::optional<float> simple_value;
  std::optional<std::string> plugin_name;  ///< metadata.plugin_data.plugin_name
  std::optional<std::uint64_t> dtype;      ///< tensor.dtype
  std::optional<std::size_t> dims;         ///< tensor.tensor_shape's dimensions
  std::vector<std::string> string_val;     ///< tensor.string_val
};

/// One Event.
struct event {
  std::optional<double> wall_time;
  std::int64_t step = 0;
  std::optional<std::string> file_version;
  std::vector<value> values;  ///< summary.value
};

/// A decoding failure: what, at which record.
struct bad_file : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace detail {

/// The fields of one protocol buffer message.
class message {
 public:
  explicit message(std::string_view bytes) : rest_(bytes) {}

  struct field {
    std::uint32_t number = 0;
    std::uint32_t wire = 0;
    std::uint64_t number_value = 0;  // wire 0, 1, 5
    std::string_view bytes;          // wire 2
  };

  bool next(field& f) {
    if (rest_.empty()) return false;
    const auto key = varint();
    f.number = static_cast<std::uint32_t>(key >> 3);
    f.wire = static_cast<std::uint32_t>(key & 7);
    f.number_value = 0;
    f.bytes = {};
    if (f.number == 0) throw bad_file("field number 0");
    if (f.wire == 0) {
      f.number_value = varint();
    } else if (f.wire == 1 || f.wire == 5) {
      const std::size_t n = f.wire == 1 ? 8 : 4;
      need(n);
      std::memcpy(&f.number_value, rest_.data(), n);  // little-endian host
      rest_.remove_prefix(n);
    } else if (f.wire == 2) {
      const auto n = varint();
      need(n);
      f.bytes = rest_.substr(0, n);
      rest_.remove_prefix(n);
    } else {
      throw bad_file("wire type " + std::to_string(f.wire));
    }
    return true;
  }

 private:
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      need(1);
      const auto b = static_cast<unsigned char>(rest_.front());
      rest_.remove_prefix(1);
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    throw bad_file("varint longer than ten bytes");
  }
  void need(std::uint64_t n) const {
    if (n > rest_.size()) throw bad_file("field runs past its message");
  }

  std::string_view rest_;
};

inline float as_float(std::uint64_t bits) {
  const auto b = static_cast<std::uint32_t>(bits);
  float f = 0;
  std::memcpy(&f, &b, 4);
  return f;
}

inline double as_double(std::uint64_t bits) {
  double d = 0;
  std::memcpy(&d, &bits, 8);
  return d;
}

inline value parse_value(std::string_view bytes) {
  value v;
  message m(bytes);
  message::field f;
  while (m.next(f)) {
    if (f.number == 1 && f.wire == 2) v.tag = std::string(f.bytes);
    if (f.number == 2 && f.wire == 5) v.simple_value = as_float(f.number_value);
    if (f.number == 9 && f.wire == 2) {  // SummaryMetadata
      message meta(f.bytes);
      message::field g;
      while (meta.next(g)) {
        if (g.number != 1 || g.wire != 2) continue;  // plugin_data
        message plugin(g.bytes);
        message::field h;
        while (plugin.next(h)) {
          if (h.number == 1 && h.wire == 2) v.plugin_name = std::string(h.bytes);
        }
      }
    }
    if (f.number == 8 && f.wire == 2) {  // TensorProto
      message tensor(f.bytes);
      message::field g;
      while (tensor.next(g)) {
        if (g.number == 1 && g.wire == 0) v.dtype = g.number_value;
        if (g.number == 2 && g.wire == 2) {  // TensorShapeProto: dim (2) per dimension
          std::size_t dims = 0;
          message shape(g.bytes);
          message::field h;
          while (shape.next(h)) dims += h.number == 2 ? 1 : 0;
          v.dims = dims;
        }
        if (g.number == 8 && g.wire == 2) v.string_val.emplace_back(g.bytes);
      }
    }
  }
  return v;
}

inline event parse_event(std::string_view bytes) {
  event e;
  message m(bytes);
  message::field f;
  while (m.next(f)) {
    if (f.number == 1 && f.wire == 1) e.wall_time = as_double(f.number_value);
    if (f.number == 2 && f.wire == 0) e.step = static_cast<std::int64_t>(f.number_value);
    if (f.number == 3 && f.wire == 2) e.file_version = std::string(f.bytes);
    if (f.number == 5 && f.wire == 2) {  // Summary: value (1) repeated
      message summary(f.bytes);
      message::field g;
      while (summary.next(g)) {
        if (g.number == 1 && g.wire == 2) e.values.push_back(parse_value(g.bytes));
      }
    }
  }
  return e;
}

template <class T>
T little_endian(std::string_view bytes) {
  T v{};
  std::memcpy(&v, bytes.data(), sizeof(T));
  return v;
}

}  // namespace detail

/// Every record of the event file at `path`, decoded. Throws bad_file at a
/// record cut short, a length or data CRC that does not match, or a record
/// that is not a well-formed Event: the whole file must read.
inline std::vector<event> read_event_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_file("cannot open " + path.string());
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<event> events;
  std::string_view rest = bytes;
  while (!rest.empty()) {
    const auto record = "record " + std::to_string(events.size()) + ": ";
    if (rest.size() < 12) throw bad_file(record + "header cut short");
    const auto length = detail::little_endian<std::uint64_t>(rest.substr(0, 8));
    if (detail::little_endian<std::uint32_t>(rest.substr(8, 4)) != masked(reference_crc32c(rest.substr(0, 8)))) {
      throw bad_file(record + "length CRC does not match");
    }
    if (rest.size() - 12 < length + 4) throw bad_file(record + "data cut short");
    const auto data = rest.substr(12, length);
    if (detail::little_endian<std::uint32_t>(rest.substr(12 + length, 4)) != masked(reference_crc32c(data))) {
      throw bad_file(record + "data CRC does not match");
    }
    events.push_back(detail::parse_event(data));
    rest.remove_prefix(12 + length + 4);
  }
  return events;
}

/// The event files (TensorBoard reads every name holding "tfevents") in `dir`.
inline std::vector<std::filesystem::path> event_files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().find("tfevents") != std::string::npos) out.push_back(entry.path());
  }
  return out;
}

}  // namespace coral::test::tfevents
