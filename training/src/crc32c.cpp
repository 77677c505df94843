#include "crc32c.hpp"

#include <array>

namespace coral::training::detail {
namespace {

constexpr std::uint32_t castagnoli_reflected = 0x82F63B78U;

/// table[b]: the CRC register after shifting the byte `b` through it.
constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t r = b;
    for (int bit = 0; bit < 8; ++bit) r = (r & 1U) != 0 ? (r >> 1) ^ castagnoli_reflected : r >> 1;
    table[b] = r;
  }
  return table;
}

constexpr auto table = make_table();

}  // namespace

std::uint32_t crc32c(std::string_view bytes, std::uint32_t crc) noexcept {
  std::uint32_t r = ~crc;
  for (const char c : bytes) r = table[(r ^ static_cast<unsigned char>(c)) & 0xFFU] ^ (r >> 8);
  return ~r;
}

std::uint32_t masked_crc32c(std::string_view bytes) noexcept {
  const std::uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8U;
}

}  // namespace coral::training::detail
