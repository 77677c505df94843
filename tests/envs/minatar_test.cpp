#include "coral/envs/minatar.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <catch2/catch.hpp>

#include "coral/core/error.hpp"
#include "coral/envs/errors.hpp"
#include "coral/envs/minatar_breakout.hpp"
#include "harness.hpp"

using namespace coral::envs;
using coral::envs::testing::harness;

namespace {

minatar_breakout& breakout_env(harness& h) { return dynamic_cast<minatar_breakout&>(h.slice.at(0)); }

std::string minatar_config_error(const std::string& name, const config_args& args) {
  try {
    (void)registry::global().make(name, args, 1, 0);
  } catch (const coral::config_error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("each MinAtar game observes a 10x10 grid of its channels and acts with 6 actions or its minimal set",
          "[envs][minatar]") {
  struct expected {
    const char* name;
    std::size_t channels;
    std::int32_t minimal;
  };
  for (const auto& g : {expected{"minatar/asterix", 4, 5}, expected{"minatar/breakout", 4, 3},
                        expected{"minatar/freeway", 7, 3}, expected{"minatar/seaquest", 10, 6},
                        expected{"minatar/space_invaders", 6, 4}}) {
    INFO(g.name);
    auto full = registry::global().make(g.name, {}, 1, 0);
    CHECK(full->observation_space() == space::box({10, 10, g.channels}, 0.0F, 1.0F));
    CHECK(full->action_space() == space::discrete(6));
    CHECK_FALSE(full->optimal_return());
    auto minimal = registry::global().make(g.name, {{"minimal_actions", "true"}}, 1, 0);
    CHECK(minimal->action_space() == space::discrete(g.minimal));
  }
}

TEST_CASE("a MinAtar observation is 0 or 1 in every cell, channel last", "[envs][minatar]") {
  harness h("minatar/breakout", {}, 3);
  h.slice.reset_all();
  const auto obs = h.obs();
  REQUIRE(obs.size() == 400);
  const auto cell = [&](int y, int x, int c) { return obs[static_cast<std::size_t>((y * 10 + x) * 4 + c)]; };
  CHECK(cell(9, 4, 0) == 1.0F);  // the paddle
  float sum = 0;
  for (float v : obs) {
    CHECK((v == 0.0F || v == 1.0F));
    sum += v;
  }
  CHECK(sum == 1 + 1 + 1 + 30);  // paddle, ball, trail (on the ball at the start), 30 bricks
}

TEST_CASE("with sticky probability 1 the first action (the no-op) is repeated whatever is chosen",
          "[envs][minatar][sticky]") {
  harness h("minatar/breakout", {{"sticky_action_prob", "1"}}, 1);
  h.slice.reset_all();
  for (int t = 0; t < 3; ++t) {
    h.act(3);  // right
    h.slice.step_all();
    CHECK(breakout_env(h).game().current().paddle == 4);
    CHECK(breakout_env(h).last_action() == minatar::action::noop);
  }
}

TEST_CASE("with sticky probability 0 every chosen action is taken", "[envs][minatar][sticky]") {
  harness h("minatar/breakout", {{"sticky_action_prob", "0"}}, 1);
  h.slice.reset_all();
  h.act(3);
  h.slice.step_all();
  CHECK(breakout_env(h).game().current().paddle == 5);
  h.act(1);
  h.slice.step_all();
  CHECK(breakout_env(h).game().current().paddle == 4);
}

TEST_CASE("the default sticky probability repeats the previous action on about one step in ten",
          "[envs][minatar][sticky]") {
  // Alternate left and right: a step whose action differs from the chosen one was sticky.
  // 20,000 steps: the count of sticky steps is Binomial(20000, 0.1), 2000 ± 42.
  auto e = registry::global().make("minatar/breakout", {}, 11, 0);
  auto& b = dynamic_cast<minatar_breakout&>(*e);
  env_batch batch(1, e->observation_space(), e->action_space());
  const env_rows rows = batch.view(0, 1);
  e->reset(rows);
  int sticky = 0;
  for (int t = 0; t < 20000; ++t) {
    const std::int32_t chosen = t % 2 == 0 ? 1 : 3;
    batch.discrete_actions()(0, 0) = chosen;
    e->step(rows);
    if (static_cast<std::int32_t>(b.last_action()) != chosen) ++sticky;
    if (batch.terminated()[0] != 0) e->reset(rows);
  }
  CHECK(sticky > 2000 - 5 * 42);
  CHECK(sticky < 2000 + 5 * 42);
}

TEST_CASE("minimal actions map onto the game's subset of the full set", "[envs][minatar]") {
  harness h("minatar/breakout", {{"minimal_actions", "true"}, {"sticky_action_prob", "0"}}, 1);
  h.slice.reset_all();
  h.act(2);  // the third minimal action of Breakout: right
  h.slice.step_all();
  CHECK(breakout_env(h).last_action() == minatar::action::right);
  CHECK(breakout_env(h).game().current().paddle == 5);
}

TEST_CASE("a sticky probability outside [0, 1] is refused naming the key", "[envs][minatar][errors]") {
  CHECK(minatar_config_error("minatar/seaquest", {{"sticky_action_prob", "1.5"}}) ==
        fmt::format(fmt::runtime(errors::bad_config_value), "minatar/seaquest", "sticky_action_prob", "1.5",
                    "float in [0, 1]"));
  CHECK(minatar_config_error("minatar/breakout", {{"sticky_action_prob", "-0.1"}}) ==
        fmt::format(fmt::runtime(errors::bad_config_value), "minatar/breakout", "sticky_action_prob", "-0.1",
                    "float in [0, 1]"));
}

TEST_CASE("an unknown MinAtar game is refused listing the known envs", "[envs][minatar][errors]") {
  CHECK(minatar_config_error("minatar/pong", {}) == fmt::format(fmt::runtime(errors::unknown_env), "minatar/pong",
                                                              fmt::join(registry::global().names(), ", ")));
}

TEST_CASE("ramping is a key of the games that ramp and unknown to Breakout and Freeway", "[envs][minatar][errors]") {
  for (const char* name : {"minatar/asterix", "minatar/seaquest", "minatar/space_invaders"}) {
    INFO(name);
    CHECK_NOTHROW(registry::global().make(name, {{"ramping", "false"}}, 1, 0));
  }
  CHECK(minatar_config_error("minatar/breakout", {{"ramping", "false"}}) ==
        fmt::format(fmt::runtime(errors::unknown_key), "minatar/breakout", "ramping",
                    "sticky_action_prob, minimal_actions"));
  CHECK(minatar_config_error("minatar/freeway", {{"ramping", "true"}}) ==
        fmt::format(fmt::runtime(errors::unknown_key), "minatar/freeway", "ramping",
                    "sticky_action_prob, minimal_actions, time_limit"));
}

TEST_CASE("the same seed and actions give the same MinAtar trajectory", "[envs][minatar]") {
  for (const char* name :
       {"minatar/asterix", "minatar/breakout", "minatar/freeway", "minatar/seaquest", "minatar/space_invaders"}) {
    INFO(name);
    std::vector<float> runs[2];
    for (auto& out : runs) {
      harness h(name, {}, 9, 2);
      coral::rng actions(coral::env_seed{4, 4});
      h.slice.reset_all();
      for (int t = 0; t < 300; ++t) {
        for (std::size_t r = 0; r < 2; ++r) {
          h.batch.discrete_actions()(r, 0) = static_cast<std::int32_t>(actions.below(6));
        }
        h.slice.step_all();
        for (std::size_t r = 0; r < 2; ++r) {
          const auto o = h.obs(r);
          out.insert(out.end(), o.begin(), o.end());
          out.push_back(h.batch.rewards()[r]);
          out.push_back(h.batch.terminated()[r]);
        }
      }
    }
    CHECK(runs[0] == runs[1]);
  }
}
