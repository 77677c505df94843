#pragma once
/// \file
/// The one JSON writer of coral: the pieces of the one-object-per-line output
/// of the `coral` command and of a training run's result. Torch-free, so that
/// every layer and app can use it.
///
/// Everything written is valid JSON text (RFC 8259): strings are UTF-8 with
/// the characters JSON forbids raw escaped, and numbers that JSON cannot
/// write (NaN, infinities) are `null`.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace coral::json {

/// `s` as a JSON string literal, quotes included. `"` and `\` are escaped;
/// the control characters U+0000 to U+001F are written `\b`, `\f`, `\n`,
/// `\r`, `\t` or `\u00XX` (lower-case hex); well-formed UTF-8 is copied as
/// it is; each byte that is not part of well-formed UTF-8 (a stray
/// continuation byte, a sequence cut short, an overlong form, a surrogate,
/// a code point above U+10FFFF) becomes `\ufffd`, the replacement
/// character, so that the result is always valid UTF-8.
[[nodiscard]] std::string quote(std::string_view s);

/// `x` in the shortest form that reads back as exactly `x` (`0.1`, `3`,
/// `1e+20`, `-0`); `null` if it is NaN or infinite.
[[nodiscard]] std::string number(double x);

/// A JSON array of floats, each in the shortest form that reads back as
/// exactly that float (`0.1` for 0.1f); NaN and infinities as null.
[[nodiscard]] std::string array(std::span<const float> xs);

/// A JSON array of integers.
[[nodiscard]] std::string array(std::span<const std::int32_t> xs);

/// The length in bytes of the longest prefix of `s` that is well-formed
/// UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above
/// U+10FFFF; a sequence cut short by the end of `s` is not part of it).
/// `s.size()` when all of `s` is well-formed. NUL is well-formed UTF-8.
[[nodiscard]] std::size_t well_formed_utf8_length(std::string_view s) noexcept;

}  // namespace coral::json
