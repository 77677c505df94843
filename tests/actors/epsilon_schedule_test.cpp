#include "coral/actors/epsilon_schedule.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include <catch2/catch.hpp>

#include "../support/watchdog.hpp"

using coral::actors::ape_x_epsilon;
using coral::actors::epsilon_schedule;
using namespace std::chrono_literals;

TEST_CASE("the Ape-X ladder runs from base for env 0 to base^(1 + alpha) for the last env", "[actors][epsilon]") {
  CHECK(ape_x_epsilon(0, 8, 0.4, 7) == Approx(0.4));
  CHECK(ape_x_epsilon(7, 8, 0.4, 7) == Approx(std::pow(0.4, 8)));
  CHECK(ape_x_epsilon(3, 8, 0.4, 7) == Approx(std::pow(0.4, 4)));
  CHECK(ape_x_epsilon(0, 1, 0.4, 7) == Approx(0.4));
}

TEST_CASE("every row's epsilon falls linearly from 1 to its rung over the decay steps, then stays",
          "[actors][epsilon]") {
  epsilon_schedule s(4, 0.5, 3, 100);
  CHECK(s.rows() == 4);
  CHECK(s.steps() == 0);
  for (std::size_t r = 0; r < 4; ++r) {
    CAPTURE(r);
    const double rung = std::pow(0.5, 1.0 + static_cast<double>(r));
    CHECK(s.rung(r) == Approx(rung));
    CHECK(s.epsilon(r) == Approx(1.0));
    CHECK(s.epsilon(r, 25) == Approx(rung + (1 - rung) * 0.75));
    CHECK(s.epsilon(r, 100) == Approx(rung));
    CHECK(s.epsilon(r, 1'000'000) == Approx(rung));
  }
  s.advance(30);
  s.advance(20);
  CHECK(s.steps() == 50);
  CHECK(s.epsilon(0) == Approx(0.75));

  // A resumed run starts where it was; no decay means the rungs at once.
  const epsilon_schedule resumed(4, 0.5, 3, 100, 50);
  CHECK(resumed.epsilon(0) == Approx(0.75));
  const epsilon_schedule flat(2, 0.1, 7, 0);
  CHECK(flat.epsilon(0) == Approx(0.1));
  CHECK(flat.epsilon(1) == Approx(std::pow(0.1, 8)));
}

namespace {

/// One thread advances the schedule batch by batch (as a policy on its
/// batcher does) while another reads the rates (as the progress line does):
/// every read is a value the schedule went through.
void advance_while_reading(std::uint64_t batches) {
  constexpr std::uint64_t rows = 8;
  epsilon_schedule s(rows, 0.05, 7, batches * rows / 2);
  std::atomic<bool> done{false};
  std::uint64_t reads = 0;
  std::uint64_t bad = 0;
  std::thread reader([&] {
    std::uint64_t last_steps = 0;
    double last_high = 1.0;
    bool finished = false;
    while (!finished) {
      finished = done.load(std::memory_order_acquire);  // one more read after the writer ended
      const auto t = s.steps();
      const double high = s.epsilon(0);
      const double low = s.epsilon(rows - 1);
      if (t < last_steps || t % rows != 0 || high > last_high || low > high || low < s.rung(rows - 1)) ++bad;
      last_steps = t;
      last_high = high;
      ++reads;
    }
    if (last_steps != batches * rows) ++bad;
  });
  for (std::uint64_t b = 0; b < batches; ++b) s.advance(rows);
  done.store(true, std::memory_order_release);
  reader.join();
  CHECK(bad == 0);
  CHECK(reads > 0);
  CHECK(s.steps() == batches * rows);
  CHECK(s.epsilon(0) == Approx(s.rung(0)));
}

}  // namespace

TEST_CASE("the exploration rates can be read from another thread while the acting side advances them",
          "[actors][epsilon]") {
  coral::test::watchdog dog("epsilon schedule read while advancing", 30s);
  advance_while_reading(20'000);
}

TEST_CASE("the exploration rates can be read from another thread while the acting side advances them, at length",
          "[actors][epsilon][stress]") {
  coral::test::watchdog dog("epsilon schedule read while advancing (stress)", 120s);
  advance_while_reading(2'000'000);
}
