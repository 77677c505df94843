#include "coral/channels/latest.hpp"

#include <thread>
#include <vector>

#include <catch2/catch.hpp>

TEST_CASE("latest starts empty at version 0", "[channels][latest]") {
  coral::latest<std::vector<float>> cell;
  CHECK(cell.version() == 0);
  auto v = cell.read();
  CHECK(v.value == nullptr);
  CHECK(v.version == 0);
  CHECK_FALSE(cell.read_newer(0));
}

TEST_CASE("each publish bumps the version and readers see the newest value", "[channels][latest]") {
  coral::latest<std::vector<float>> cell;
  CHECK(cell.publish({1.0F}) == 1);
  CHECK(cell.publish({2.0F, 3.0F}) == 2);
  auto v = cell.read();
  REQUIRE(v.value);
  CHECK(*v.value == std::vector<float>{2.0F, 3.0F});
  CHECK(v.version == 2);
  CHECK_FALSE(cell.read_newer(2));
  auto newer = cell.read_newer(1);
  REQUIRE(newer);
  CHECK(newer->version == 2);
}

TEST_CASE("a reader's snapshot stays valid after newer publishes", "[channels][latest]") {
  coral::latest<std::vector<int>> cell;
  cell.publish({1, 2, 3});
  auto old = cell.read();
  cell.publish({4});
  CHECK(*old.value == std::vector<int>{1, 2, 3});
  CHECK(*cell.read().value == std::vector<int>{4});
}

TEST_CASE("concurrent writers and readers see whole values and rising versions", "[channels][latest][stress]") {
  // Each published vector holds its own version in every element, so a torn
  // or mismatched read shows up as an element that differs from the version.
  coral::latest<std::vector<std::uint64_t>> cell;
  constexpr int writers = 4;
  constexpr int per_writer = 20000;
  std::atomic<bool> stop{false};
  std::atomic<long> bad{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&] {
      std::uint64_t last = 0;
      while (!stop.load()) {
        auto v = cell.read();
        if (v.version < last) ++bad;
        last = v.version;
        if (v.value && (*v.value)[0] != (*v.value)[63]) ++bad;
      }
    });
  }
  std::vector<std::thread> pubs;
  for (int w = 0; w < writers; ++w) {
    pubs.emplace_back([&, w] {
      for (int i = 0; i < per_writer; ++i) {
        cell.publish(std::vector<std::uint64_t>(64, static_cast<std::uint64_t>(w * per_writer + i)));
      }
    });
  }
  for (auto& t : pubs) t.join();
  stop = true;
  for (auto& t : threads) t.join();
  CHECK(bad == 0);
  CHECK(cell.version() == writers * per_writer);
}

TEST_CASE("latest publishes at a given version, skipping versions, and refuses an older one", "[channels][latest]") {
  coral::latest<std::vector<float>> cell;
  CHECK(cell.publish({1.0f}, 5));
  CHECK(cell.version() == 5);
  CHECK(cell.read().value->at(0) == 1.0f);
  CHECK_FALSE(cell.publish({2.0f}, 5));  // not newer
  CHECK_FALSE(cell.publish({2.0f}, 3));
  CHECK(cell.read().value->at(0) == 1.0f);
  CHECK(cell.publish({3.0f}) == 6);  // the plain publish goes on from there
  CHECK(cell.publish({4.0f}, 9));
  const auto seen = cell.read_newer(6);
  REQUIRE(seen);
  CHECK(seen->version == 9);
  CHECK(seen->value->at(0) == 4.0f);
}
