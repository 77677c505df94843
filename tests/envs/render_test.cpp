#include "coral/envs/rgb_frame.hpp"

#include <array>
#include <cstdint>
#include <string>

#include <catch2/catch.hpp>

#include "coral/envs/cartpole.hpp"
#include "coral/envs/minatar_breakout.hpp"
#include "coral/envs/registry.hpp"
#include "harness.hpp"
#include "minatar_fixture.hpp"

using namespace coral::envs;
using coral::envs::testing::harness;

namespace {

std::array<std::uint8_t, 3> pixel(const rgb_frame& f, std::size_t y, std::size_t x) {
  const std::uint8_t* p = f.at(y, x);
  return {p[0], p[1], p[2]};
}

std::array<std::uint8_t, 3> colour_of(std::uint32_t hex) {
  return {static_cast<std::uint8_t>(hex >> 16), static_cast<std::uint8_t>(hex >> 8), static_cast<std::uint8_t>(hex)};
}

constexpr std::array<std::uint8_t, 3> white{255, 255, 255};
constexpr std::array<std::uint8_t, 3> black{0, 0, 0};

// The mean column of the pixels in row y whose colour is not white.
double mean_dark_column(const rgb_frame& f, std::size_t y) {
  double sum = 0;
  int count = 0;
  for (std::size_t x = 0; x < f.width(); ++x) {
    if (pixel(f, y, x) != white) {
      sum += static_cast<double>(x);
      ++count;
    }
  }
  return count == 0 ? -1 : sum / count;
}

}  // namespace

TEST_CASE("an rgb_frame keeps its buffer when resized to a size it has held", "[envs][render]") {
  rgb_frame f;
  CHECK(f.empty());
  f.resize(4, 5);
  CHECK(f.pixels().size() == 4 * 5 * 3);
  const std::uint8_t* data = f.pixels().data();
  f.resize(2, 3);
  f.resize(4, 5);
  CHECK(f.pixels().data() == data);
  CHECK(f.at(1, 2) == data + (1 * 5 + 2) * 3);
}

TEST_CASE("an env that does not render says so and leaves the frame as it was", "[envs][render]") {
  harness h("bandit", {}, 1);
  h.slice.reset_all();
  rgb_frame f;
  f.resize(2, 2);
  const std::uint8_t* data = f.pixels().data();
  CHECK_FALSE(h.slice.at(0).render(f));
  CHECK(f.height() == 2);
  CHECK(f.width() == 2);
  CHECK(f.pixels().data() == data);
}

TEST_CASE("cartpole draws a 400 x 600 frame: the cart where x is, the pole leaning as theta does",
          "[envs][render][cartpole]") {
  harness h("cartpole", {}, 1);
  h.slice.reset_all();
  auto& env = dynamic_cast<cartpole&>(h.slice.at(0));
  rgb_frame f;

  env.set_state({.x = 0, .theta = 0});
  REQUIRE(env.render(f));
  REQUIRE(f.height() == cartpole::frame_height);
  REQUIRE(f.width() == cartpole::frame_width);
  const std::uint8_t* data = f.pixels().data();
  const std::size_t track_y = 280;  // 0.7 of the height
  const std::size_t above_cart = track_y - 60;  // on the pole, half-way up
  CHECK(mean_dark_column(f, track_y - 5) == Approx(300).margin(1));  // the cart, centred
  CHECK(mean_dark_column(f, above_cart) == Approx(300).margin(1));  // an upright pole

  env.set_state({.x = 1.2, .theta = 0});
  REQUIRE(env.render(f));
  CHECK(mean_dark_column(f, track_y - 5) == Approx(300 + 1.2 * 125).margin(1));  // 125 px per metre

  env.set_state({.x = 0, .theta = 0.2});
  REQUIRE(env.render(f));
  CHECK(mean_dark_column(f, above_cart) > 305);  // leaning right
  env.set_state({.x = 0, .theta = -0.2});
  REQUIRE(env.render(f));
  CHECK(mean_dark_column(f, above_cart) < 295);  // leaning left
  CHECK(pixel(f, 5, 5) == white);
  CHECK(f.pixels().data() == data);  // the same buffer every frame
}

TEST_CASE("a MinAtar game draws each cell 16 px square in the colour of its highest channel",
          "[envs][render][minatar]") {
  coral::envs::testing::minatar_fixture<minatar_breakout> g;
  minatar::breakout::state s;  // no bricks: paddle at column 4, ball at (3, 0), trail there too
  s.ball_x = 2;
  s.ball_y = 5;
  s.last_x = 1;
  s.last_y = 4;
  s.bricks[1] = 1U << 7;  // one brick at (1, 7)
  g.rules().set_state(s);
  rgb_frame f;
  REQUIRE(g.h.slice.at(0).render(f));
  REQUIRE(f.height() == 160);
  REQUIRE(f.width() == 160);
  auto cell = [&](int y, int x, int dy, int dx) {
    return pixel(f, static_cast<std::size_t>(y * 16 + dy), static_cast<std::size_t>(x * 16 + dx));
  };
  for (auto [dy, dx] : {std::pair{0, 0}, std::pair{15, 15}, std::pair{7, 9}}) {
    CHECK(cell(9, 4, dy, dx) == colour_of(minatar::channel_colours[0]));  // paddle
    CHECK(cell(5, 2, dy, dx) == colour_of(minatar::channel_colours[1]));  // ball
    CHECK(cell(4, 1, dy, dx) == colour_of(minatar::channel_colours[2]));  // trail
    CHECK(cell(1, 7, dy, dx) == colour_of(minatar::channel_colours[3]));  // brick
    CHECK(cell(0, 0, dy, dx) == black);
  }
}

TEST_CASE("every MinAtar game renders a 160 x 160 frame", "[envs][render][minatar]") {
  for (const std::string name :
       {"minatar/asterix", "minatar/breakout", "minatar/freeway", "minatar/seaquest", "minatar/space_invaders"}) {
    INFO(name);
    harness h(name, {}, 3);
    h.slice.reset_all();
    rgb_frame f;
    REQUIRE(h.slice.at(0).render(f));
    CHECK(f.height() == 160);
    CHECK(f.width() == 160);
  }
}
