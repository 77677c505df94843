#include "coral/core/json.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <catch2/catch.hpp>

using namespace std::string_view_literals;

TEST_CASE("quote escapes quotes, backslashes and every control character", "[core][json]") {
  CHECK(coral::json::quote("") == R"("")");
  CHECK(coral::json::quote("cartpole") == R"("cartpole")");
  CHECK(coral::json::quote(R"(say "hi" \ bye)") == R"("say \"hi\" \\ bye")");
  CHECK(coral::json::quote("a\bb\fc\nd\re\tf") == R"("a\bb\fc\nd\re\tf")");
  CHECK(coral::json::quote("\x01\x1f"sv) == R"("\u0001\u001f")");
  CHECK(coral::json::quote("nul\0here"sv) == R"("nul\u0000here")");
  // DEL and / need no escape in JSON.
  CHECK(coral::json::quote("\x7f/"sv) == "\"\x7f/\"");
}

TEST_CASE("quote copies well-formed UTF-8 as it is", "[core][json]") {
  // é (2 bytes), € (3 bytes), 𝄞 (4 bytes), U+10FFFF, and U+2028, which JSON allows raw.
  const std::string_view text = "\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e \xf4\x8f\xbf\xbf \xe2\x80\xa8";
  CHECK(coral::json::quote(text) == "\"" + std::string(text) + "\"");
}

TEST_CASE("quote replaces each byte that is not well-formed UTF-8 with U+FFFD", "[core][json]") {
  CHECK(coral::json::quote("a\xff" "b"sv) == R"("a\ufffdb")");                // never in UTF-8
  CHECK(coral::json::quote("\x80"sv) == R"("\ufffd")");                       // a stray continuation byte
  CHECK(coral::json::quote("\xc3"sv) == R"("\ufffd")");                       // cut short by the end
  CHECK(coral::json::quote("\xe2\x82x"sv) == R"("\ufffd\ufffdx")");            // cut short by an ASCII byte
  CHECK(coral::json::quote("\xc0\xaf"sv) == R"("\ufffd\ufffd")");              // an overlong '/'
  CHECK(coral::json::quote("\xed\xa0\x80"sv) == R"("\ufffd\ufffd\ufffd")");    // a surrogate, U+D800
  CHECK(coral::json::quote("\xf4\x90\x80\x80"sv) == R"("\ufffd\ufffd\ufffd\ufffd")");  // above U+10FFFF
  CHECK(coral::json::quote("\xc3\xa9\xff\n\xc3\xa9"sv) == "\"\xc3\xa9\\ufffd\\n\xc3\xa9\"");
}

TEST_CASE("well_formed_utf8_length stops at the first byte that is not UTF-8 text", "[core][json]") {
  CHECK(coral::json::well_formed_utf8_length("") == 0);
  CHECK(coral::json::well_formed_utf8_length("ab\0c"sv) == 4);
  CHECK(coral::json::well_formed_utf8_length("a\xc3\xa9" "b"sv) == 4);
  CHECK(coral::json::well_formed_utf8_length("ab\xe2\x82"sv) == 2);
  CHECK(coral::json::well_formed_utf8_length("\xf8\x88\x80\x80\x80"sv) == 0);
}

TEST_CASE("number writes the shortest exact form, and null for NaN and infinities", "[core][json]") {
  CHECK(coral::json::number(0) == "0");
  CHECK(coral::json::number(-0.0) == "-0");
  CHECK(coral::json::number(3) == "3");
  CHECK(coral::json::number(0.1) == "0.1");
  CHECK(coral::json::number(-2.5) == "-2.5");
  CHECK(coral::json::number(1.0 / 3) == "0.3333333333333333");
  CHECK(coral::json::number(1e20) == "1e+20");
  CHECK(coral::json::number(1e-7) == "1e-07");
  CHECK(coral::json::number(std::numeric_limits<double>::max()) == "1.7976931348623157e+308");
  CHECK(coral::json::number(std::numeric_limits<double>::quiet_NaN()) == "null");
  CHECK(coral::json::number(std::numeric_limits<double>::infinity()) == "null");
  CHECK(coral::json::number(-std::numeric_limits<double>::infinity()) == "null");
}

TEST_CASE("arrays of floats and integers, non-finite floats as null", "[core][json]") {
  const std::array<float, 5> floats{0.1f, -1.0f, std::numeric_limits<float>::quiet_NaN(),
                                    std::numeric_limits<float>::infinity(), 3.5e-6f};
  CHECK(coral::json::array(std::span<const float>(floats)) == "[0.1,-1,null,null,3.5e-06]");
  CHECK(coral::json::array(std::span<const float>()) == "[]");
  const std::array<std::int32_t, 3> ints{0, -7, 2147483647};
  CHECK(coral::json::array(std::span<const std::int32_t>(ints)) == "[0,-7,2147483647]");
  CHECK(coral::json::array(std::span<const std::int32_t>()) == "[]");
}
