#include "coral/core/slab.hpp"

#include <cstdint>

#include <catch2/catch.hpp>

TEST_CASE("a slab starts zeroed and aligned to a cache line", "[core][slab]") {
  coral::slab<float> s(5, 3);
  CHECK(s.rows() == 5);
  CHECK(s.cols() == 3);
  CHECK(s.size() == 15);
  CHECK(reinterpret_cast<std::uintptr_t>(s.data()) % coral::slab<float>::alignment == 0);
  for (std::size_t i = 0; i < s.size(); ++i) CHECK(s.data()[i] == 0.0F);
}

TEST_CASE("rows of a slab are packed, so a range of rows is one contiguous block", "[core][slab]") {
  coral::slab<std::int32_t> s(4, 2);
  for (std::size_t r = 0; r < 4; ++r) {
    for (std::size_t c = 0; c < 2; ++c) s(r, c) = static_cast<std::int32_t>(10 * r + c);
  }
  CHECK(s.row(2).data() == s.data() + 4);
  CHECK(s.row(2)[1] == 21);
  const auto block = s.block(1, 2);
  REQUIRE(block.size() == 4);
  CHECK(block[0] == 10);
  CHECK(block[1] == 11);
  CHECK(block[2] == 20);
  CHECK(block[3] == 21);
}

TEST_CASE("a slab with zero columns has empty rows and no storage", "[core][slab]") {
  coral::slab<float> s(8, 0);
  CHECK(s.rows() == 8);
  CHECK(s.data() == nullptr);
  CHECK(s.row(3).empty());
  CHECK(s.block(0, 8).empty());
}

TEST_CASE("moving a slab hands over its storage and leaves the source empty", "[core][slab]") {
  coral::slab<float> a(2, 2);
  a.fill(1.5F);
  const float* storage = a.data();
  coral::slab<float> b(std::move(a));
  CHECK(b.data() == storage);
  CHECK(b(1, 1) == 1.5F);
  CHECK(a.size() == 0);  // NOLINT(bugprone-use-after-move): moved-from state is specified
  coral::slab<float> c;
  c = std::move(b);
  CHECK(c.data() == storage);
  CHECK(c.rows() == 2);
}
