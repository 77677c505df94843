#pragma once
// Private: CRC-32C (Castagnoli), the checksum of TensorBoard's record framing.

#include <cstdint>
#include <string_view>

namespace coral::training::detail {

/// CRC-32C of `bytes` (reflected polynomial 0x82F63B78, initial value and
/// final XOR 0xFFFFFFFF), continuing from `crc`, the CRC of the bytes before
/// them (0 for none): crc32c(b, crc32c(a)) == crc32c(a + b).
///
/// One table lookup per byte. Event files take a few hundred bytes per
/// metrics row, a row per update: a faster kernel (SSE4.2's crc32
/// instruction) would change nothing a run can measure, and would need a
/// reference twin and a run-time pick of its own.
[[nodiscard]] std::uint32_t crc32c(std::string_view bytes, std::uint32_t crc = 0) noexcept;

/// The masked CRC-32C that TFRecord framing stores: the CRC rotated right by
/// 15 bits plus 0xA282EAD8, so that a CRC stored inside checked data does
/// not check itself.
[[nodiscard]] std::uint32_t masked_crc32c(std::string_view bytes) noexcept;

}  // namespace coral::training::detail
