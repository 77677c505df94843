// Private header under test: CRC-32C, the checksum of TensorBoard's record framing.
#include "../../training/src/crc32c.hpp"

#include <cstdint>
#include <string>

#include <catch2/catch.hpp>

#include "../support/event_file_reader.hpp"

using coral::training::detail::crc32c;
using coral::training::detail::masked_crc32c;
using coral::test::tfevents::reference_crc32c;

namespace {

std::string bytes_of(std::initializer_list<unsigned> values) {
  std::string s;
  for (auto v : values) s.push_back(static_cast<char>(v));
  return s;
}

}  // namespace

TEST_CASE("CRC-32C gives RFC 3720's test vectors and the usual check value", "[training][tensorboard][crc32c]") {
  std::string increasing, decreasing;
  for (unsigned i = 0; i < 32; ++i) {
    increasing.push_back(static_cast<char>(i));
    decreasing.push_back(static_cast<char>(31 - i));
  }
  // The iSCSI read command PDU of RFC 3720, B.4.
  const auto pdu = bytes_of({0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
                             0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
                             0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00});
  const struct {
    std::string bytes;
    std::uint32_t crc;
  } vectors[] = {
      {std::string(32, '\0'), 0x8A9136AAU},
      {std::string(32, '\xff'), 0x62A8AB43U},
      {increasing, 0x46DD794EU},
      {decreasing, 0x113FDB5CU},
      {pdu, 0xD9963A56U},
      {"123456789", 0xE3069283U},
      {"", 0x00000000U},
  };
  for (const auto& v : vectors) {
    CAPTURE(v.bytes.size());
    CHECK(crc32c(v.bytes) == v.crc);
    CHECK(reference_crc32c(v.bytes) == v.crc);  // the tests' decoder checks with the right CRC too
  }
}

TEST_CASE("CRC-32C continues over pieces and agrees with the bit-at-a-time definition", "[training][tensorboard][crc32c]") {
  std::string bytes;
  std::uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (int i = 0; i < 1000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    bytes.push_back(static_cast<char>(x));
  }
  for (std::size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 999, 1000}) {
    const auto head = std::string_view(bytes).substr(0, n);
    CAPTURE(n);
    CHECK(crc32c(head) == reference_crc32c(head));
    for (std::size_t cut : {std::size_t{0}, n / 3, n}) {
      CHECK(crc32c(head.substr(cut), crc32c(head.substr(0, cut))) == crc32c(head));
    }
  }
}

TEST_CASE("the masked CRC is TFRecord's: rotated right by 15 bits plus 0xA282EAD8", "[training][tensorboard][crc32c]") {
  // 0xE3069283 rotated right by 15: 0x2507C60D; plus 0xA282EAD8: 0xC78AB0E5.
  CHECK(masked_crc32c("123456789") == 0xC78AB0E5U);
  CHECK(masked_crc32c("123456789") == coral::test::tfevents::masked(0xE3069283U));
}
