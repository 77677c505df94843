#include "coral/envs/registry.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/core/error.hpp"
#include "harness.hpp"

using namespace coral::envs;
using coral::envs::testing::harness;

namespace {

const std::vector<std::string> builtin_names = {
    "bandit",           "cartpole",         "connect4",        "cover",           "delay",           "faulty",
    "memory",
    "minatar/asterix",  "minatar/breakout", "minatar/freeway", "minatar/seaquest", "minatar/space_invaders",
    "noop", "password", "population", "race", "repeat_first", "repeat_previous", "squared", "stochastic",
    "tictactoe"};
// Every registered name, sorted: the MuJoCo envs too when they are built
// (they have their own tests in mujoco_test.cpp).
#ifdef CORAL_WITH_MUJOCO
const std::vector<std::string> registered_names = {
    "ant",      "bandit", "cartpole", "connect4", "cover", "delay", "faulty",   "halfcheetah", "hopper",     "humanoid",
    "inverted_pendulum", "memory", "minatar/asterix", "minatar/breakout", "minatar/freeway", "minatar/seaquest",
    "minatar/space_invaders", "noop", "password", "population", "race", "repeat_first", "repeat_previous", "squared",
    "stochastic", "tictactoe", "walker2d"};
#else
const std::vector<std::string> registered_names = builtin_names;
#endif

// Args that keep every built-in env fast (delay would otherwise wait 100 µs a step).
config_args quick_args(const std::string& name) {
  if (name == "delay") return {{"mean_us", "0"}};
  return {};
}

class coin final : public env {
 public:
  coin(const env_config& c, env_seed s) : rng_(s), length_(c.get_int("length")) {}
  void reset(const env_rows& rows) override {
    t_ = 0;
    rows.observation()[0] = 0.0F;
  }
  void step(const env_rows& rows) override {
    const auto flip = static_cast<std::int32_t>(rng_.below(2));
    rows.observation()[0] = static_cast<float>(flip);
    rows.reward() = rows.action() == flip ? 1.0F : 0.0F;
    rows.terminated() = static_cast<std::uint8_t>(++t_ == length_);
    rows.truncated() = 0;
  }
  [[nodiscard]] const space& observation_space() const noexcept override { return obs_; }
  [[nodiscard]] const space& action_space() const noexcept override { return act_; }

 private:
  space obs_ = space::box({1}, 0.0F, 1.0F);
  space act_ = space::discrete(2);
  rng rng_;
  std::int64_t length_;
  std::int64_t t_ = 0;
};

env_spec coin_spec() {
  return {.name = "coin",
          .description = "guess a coin",
          .keys = {{.name = "length", .type = config_type::integer, .default_value = "3", .description = "steps",
                    .min = 1}},
          .factory = [](const env_config& c, env_seed s) { return std::make_unique<coin>(c, s); }};
}

// Steps `h` for `steps` steps with actions from an rng seeded by `action_seed`;
// returns every observation, reward and flag in order.
std::vector<float> trajectory(harness& h, const space& action_space, std::uint64_t action_seed, int steps) {
  rng actions(env_seed{action_seed, 99});
  std::vector<float> out;
  h.slice.reset_all();
  for (int t = 0; t < steps; ++t) {
    for (std::size_t r = 0; r < h.batch.rows(); ++r) {
      sample_action(action_space, actions, h.batch.discrete_actions().row(r), h.batch.continuous_actions().row(r));
    }
    h.slice.step_all();
    for (std::size_t r = 0; r < h.batch.rows(); ++r) {
      for (float x : h.batch.observations().row(r)) out.push_back(x);
      out.push_back(h.batch.rewards()[r]);
      out.push_back(h.batch.terminated()[r]);
      out.push_back(h.batch.truncated()[r]);
      out.push_back(h.batch.active()[r]);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("every built-in env is registered and builds with its default config", "[envs][registry]") {
  CHECK(registry::global().names() == registered_names);
  for (const auto& name : registered_names) {
    INFO(name);
    const env_spec& spec = registry::global().find(name);
    CHECK(spec.name == name);
    CHECK_FALSE(spec.description.empty());
    CHECK_FALSE(spec.keys.empty());
    auto e = registry::global().make(name, {}, 1, 0);
    REQUIRE(e != nullptr);
    CHECK(e->max_agents() >= 1);
  }
}

TEST_CASE("the sanity envs and cartpole state their optimal and solved returns, the MinAtar games none", "[envs][registry]") {
  for (const auto& name : builtin_names) {
    INFO(name);
    auto e = registry::global().make(name, quick_args(name), 1, 0);
    if (name == "noop" || name == "delay" || name.starts_with("minatar/")) {
      CHECK_FALSE(e->solved_return().has_value());
      continue;
    }
    if (name == "tictactoe" || name == "connect4") {
      // Two-player games: the figure is a game value (a draw for tic-tac-toe), no solved bar.
      CHECK_FALSE(e->solved_return().has_value());
      continue;
    }
    REQUIRE(e->optimal_return().has_value());
    REQUIRE(e->solved_return().has_value());
    CHECK(*e->solved_return() <= *e->optimal_return());
  }
  CHECK(registry::global().make("cartpole", {}, 1, 0)->optimal_return() == 500.0);
  CHECK(registry::global().make("cartpole", {}, 1, 0)->solved_return() == 475.0);
}

TEST_CASE("an unknown env name is rejected listing the known ones", "[envs][registry][errors]") {
  CHECK_THROWS_MATCHES(registry::global().make("cartpol", {}, 1, 0), coral::config_error,
                       Catch::Message(fmt::format("unknown env 'cartpol' (known: {})", fmt::join(registered_names, ", "))));
  registry own;
  own.add({.name = "a", .description = "", .keys = {}, .factory = {}});
  own.add({.name = "b", .description = "", .keys = {}, .factory = {}});
  CHECK_THROWS_MATCHES(own.make("c", {}, 1, 0), coral::config_error, Catch::Message("unknown env 'c' (known: a, b)"));
}

TEST_CASE("bad built-in config is rejected naming the key", "[envs][registry][errors]") {
  CHECK_THROWS_MATCHES(registry::global().make("noop", {{"episode_length", "-1"}}, 1, 0), coral::config_error,
                       Catch::Message("env 'noop': config key 'episode_length': invalid value '-1' (expected int >= 1)"));
  CHECK_THROWS_MATCHES(registry::global().make("cartpole", {{"length", "3"}}, 1, 0), coral::config_error,
                       Catch::Message("env 'cartpole': unknown config key 'length' (known: max_steps, velocities)"));
  CHECK_THROWS_MATCHES(registry::global().make("delay", {{"std_us", "-2"}}, 1, 0), coral::config_error,
                       Catch::Message("env 'delay': config key 'std_us': invalid value '-2' (expected float in [0, "
                                      "10000000])"));
  CHECK_THROWS_MATCHES(registry::global().make("race", {{"agents", "2"}, {"min_agents", "3"}}, 1, 0),
                       coral::config_error,
                       Catch::Message("env 'race': config key 'min_agents': must be at most agents"));
  CHECK_THROWS_MATCHES(registry::global().make("squared", {{"size", "3"}, {"targets", "9"}}, 1, 0),
                       coral::config_error,
                       Catch::Message("env 'squared': config key 'targets': more targets than the edge of the grid "
                                      "has cells (4 * (size - 1))"));
}

TEST_CASE("a user env registers without editing coral and is made by name", "[envs][registry]") {
  registry r;
  r.add(coin_spec());
  CHECK(r.names() == std::vector<std::string>{"coin"});
  auto e = r.make("coin", {{"length", "2"}}, 5, 0);
  harness h(r.make_many("coin", {{"length", "2"}}, 5, 0, 2));
  h.slice.reset_all();
  h.act(1);
  h.slice.step_all();
  h.slice.step_all();
  CHECK(h.batch.terminated()[0] == 1);
  CHECK(h.batch.episode_lengths()[1] == 2);
  CHECK_THROWS_MATCHES(r.add(coin_spec()), coral::usage_error, Catch::Message("env 'coin' is already registered"));
}

TEST_CASE("every built-in env keeps its observations inside its observation space", "[envs][spaces]") {
  for (const auto& name : builtin_names) {
    INFO(name);
    harness h(name, quick_args(name), 3, 2);
    const space& obs_space = h.slice.at(0).observation_space();
    const space& act_space = h.slice.at(0).action_space();
    rng actions(env_seed{3, 1000});
    auto check_rows = [&] {
      for (std::size_t r = 0; r < h.batch.rows(); ++r) {
        if (h.batch.active()[r] == 0) continue;
        REQUIRE(contains(obs_space, unflatten(obs_space, h.batch.observations().row(r))));
        if (h.done(r)) REQUIRE(contains(obs_space, unflatten(obs_space, h.batch.final_observations().row(r))));
      }
    };
    h.slice.reset_all();
    check_rows();
    for (int t = 0; t < 300; ++t) {
      for (std::size_t r = 0; r < h.batch.rows(); ++r) {
        sample_action(act_space, actions, h.batch.discrete_actions().row(r), h.batch.continuous_actions().row(r));
      }
      h.slice.step_all();
      check_rows();
    }
  }
}

TEST_CASE("every built-in env repeats its trajectory for a seed", "[envs][determinism]") {
  for (const auto& name : builtin_names) {
    INFO(name);
    harness a(name, quick_args(name), 11, 3);
    harness b(name, quick_args(name), 11, 3);
    const space& act_space = a.slice.at(0).action_space();
    CHECK(trajectory(a, act_space, 5, 200) == trajectory(b, act_space, 5, 200));
  }
}

TEST_CASE("envs with random dynamics follow a different trajectory for a different seed or env index",
          "[envs][determinism]") {
  // bandit, stochastic, password and noop have no randomness of their own (their
  // solutions are fixed by design); delay's randomness is only in its timing.
  for (const std::string name : {"cartpole", "memory", "squared", "race", "repeat_first", "repeat_previous"}) {
    INFO(name);
    harness a(name, {}, 11, 1);
    harness b(name, {}, 12, 1);
    const space& act_space = a.slice.at(0).action_space();
    CHECK(trajectory(a, act_space, 5, 200) != trajectory(b, act_space, 5, 200));
    harness a_again(name, {}, 11, 1);
    harness index_1(registry::global().make_many(name, {}, 11, 1, 1));  // same seed, env index 1
    CHECK(trajectory(a_again, act_space, 5, 200) != trajectory(index_1, act_space, 5, 200));
  }
}
