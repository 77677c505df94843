#include "coral/envs/repeat_first.hpp"

#include <algorithm>
#include <deque>

#include <catch2/catch.hpp>

#include "coral/core/error.hpp"
#include "coral/envs/cartpole.hpp"
#include "coral/envs/memory.hpp"
#include "coral/envs/repeat_previous.hpp"
#include "harness.hpp"

// The memory envs that recurrent agents are tested on (issue 12): repeat_first,
// repeat_previous, positions-only cartpole and memory with long delays.

using namespace coral::envs;
using coral::envs::testing::harness;

namespace {

// The suit a card observation shows (its one-hot element among the first
// `suits`), or -1 if it shows none.
int suit_of(const std::vector<float>& obs) {
  const auto suits = obs.size() - 1;
  const auto hot = std::find(obs.begin(), obs.begin() + static_cast<std::ptrdiff_t>(suits), 1.0F);
  return hot == obs.begin() + static_cast<std::ptrdiff_t>(suits) ? -1 : static_cast<int>(hot - obs.begin());
}

// Checks that `obs` is a well-formed card: exactly one suit set, the flag as given.
void check_card(const std::vector<float>& obs, bool first) {
  const auto suits = obs.size() - 1;
  CHECK(std::count(obs.begin(), obs.begin() + static_cast<std::ptrdiff_t>(suits), 1.0F) == 1);
  CHECK(std::count(obs.begin(), obs.begin() + static_cast<std::ptrdiff_t>(suits), 0.0F) ==
        static_cast<std::ptrdiff_t>(suits) - 1);
  CHECK(obs.back() == (first ? 1.0F : 0.0F));
}

// Mean return over `episodes` episodes of env 0 of `h`, acting with `policy(h)` before each step.
template <class Policy>
double mean_return(harness& h, int episodes, Policy policy) {
  h.slice.reset_all();
  double total = 0;
  for (int e = 0; e < episodes;) {
    h.act(policy(h));
    h.slice.step_all();
    if (h.done()) {
      total += h.batch.episode_returns()[0];
      ++e;
    }
  }
  return total / episodes;
}

}  // namespace

TEST_CASE("repeat_first shows one-hot cards, flags the first and scores every later answer against it",
          "[envs][memory_envs][repeat_first]") {
  harness h("repeat_first", {{"suits", "3"}, {"length", "4"}}, 7);
  auto& env = dynamic_cast<repeat_first&>(h.slice.at(0));
  CHECK(env.observation_space() == space::box({4}, 0.0F, 1.0F));
  CHECK(env.action_space() == space::discrete(3));
  h.slice.reset_all();
  check_card(h.obs(), true);
  const int first = suit_of(h.obs());
  CHECK(env.answer() == -1);  // a_0 is not scored
  h.act((first + 1) % 3);     // wrong, but unscored
  h.slice.step_all();
  CHECK(h.batch.rewards()[0] == 0.0F);
  check_card(h.obs(), false);
  CHECK(env.answer() == first);
  h.act(first);  // right: +1/(length - 1)
  h.slice.step_all();
  CHECK(h.batch.rewards()[0] == Approx(1.0 / 3.0));
  check_card(h.obs(), false);
  h.act((first + 2) % 3);  // wrong: -1/(length - 1)
  h.slice.step_all();
  CHECK(h.batch.rewards()[0] == Approx(-1.0 / 3.0));
  CHECK(h.batch.terminated()[0] == 0);
  h.act(first);
  h.slice.step_all();
  CHECK(h.batch.rewards()[0] == Approx(1.0 / 3.0));
  CHECK(h.batch.terminated()[0] == 1);
  CHECK(h.batch.truncated()[0] == 0);
  CHECK(h.final_obs() == std::vector<float>{0, 0, 0, 0});  // no card after the last step
  CHECK(h.batch.episode_lengths()[0] == 4);
  CHECK(h.batch.episode_returns()[0] == Approx(1.0 / 3.0));
  check_card(h.obs(), true);  // the next episode's first card
}

TEST_CASE("repeat_first's optimum is 1 and a memoryless policy gets 2/suits - 1", "[envs][memory_envs][repeat_first]") {
  harness h("repeat_first", {}, 3);
  auto& env = dynamic_cast<repeat_first&>(h.slice.at(0));
  CHECK(env.optimal_return() == 1.0);
  CHECK(env.solved_return() == 0.95);
  // An oracle that reads the env's hidden card, and one that remembers o_0 itself.
  CHECK(mean_return(h, 100, [&](harness&) { return std::max(env.answer(), 0); }) == Approx(1.0));
  int remembered = 0;
  CHECK(mean_return(h, 100, [&](harness& x) {
          if (x.obs().back() == 1.0F) remembered = suit_of(x.obs());
          return remembered;
        }) == Approx(1.0));
  // Memoryless: uniform guesses, or naming the card on show; both 2/4 - 1 = -0.5.
  rng guesses(env_seed{3, 99});
  CHECK(mean_return(h, 4000, [&](harness&) { return static_cast<std::int32_t>(guesses.below(4)); }) ==
        Approx(-0.5).margin(0.02));
  CHECK(mean_return(h, 4000, [&](harness& x) { return suit_of(x.obs()); }) == Approx(-0.5).margin(0.02));
}

TEST_CASE("repeat_previous scores the card shown k steps back from step k on", "[envs][memory_envs][repeat_previous]") {
  harness h("repeat_previous", {{"suits", "4"}, {"length", "6"}, {"k", "2"}}, 9);
  auto& env = dynamic_cast<repeat_previous&>(h.slice.at(0));
  CHECK(env.observation_space() == space::box({5}, 0.0F, 1.0F));
  CHECK(env.action_space() == space::discrete(4));
  h.slice.reset_all();
  std::vector<int> shown;
  const std::vector<bool> right = {false, true, true, false, true, true};
  for (std::size_t t = 0; t < 6; ++t) {
    check_card(h.obs(), t == 0);
    shown.push_back(suit_of(h.obs()));
    if (t < 2) {
      CHECK(env.answer() == -1);
      h.act(shown[t]);  // the card on show: unscored before step k
    } else {
      CHECK(env.answer() == shown[t - 2]);
      h.act(right[t] ? shown[t - 2] : (shown[t - 2] + 1) % 4);
    }
    h.slice.step_all();
    // Scored steps earn ±1/(length - k) = ±1/4.
    CHECK(h.batch.rewards()[0] == (t < 2 ? 0.0F : right[t] ? 0.25F : -0.25F));
    CHECK(h.batch.terminated()[0] == (t == 5 ? 1 : 0));
  }
  CHECK(h.final_obs() == std::vector<float>{0, 0, 0, 0, 0});
  CHECK(h.batch.episode_returns()[0] == Approx(0.5));  // 3 right, 1 wrong
  CHECK(h.batch.episode_lengths()[0] == 6);
}

TEST_CASE("repeat_previous's optimum is 1 and a memoryless policy gets 2/suits - 1",
          "[envs][memory_envs][repeat_previous]") {
  harness h("repeat_previous", {}, 4);
  auto& env = dynamic_cast<repeat_previous&>(h.slice.at(0));
  CHECK(env.optimal_return() == 1.0);
  CHECK(env.solved_return() == 0.95);
  CHECK(mean_return(h, 100, [&](harness&) { return std::max(env.answer(), 0); }) == Approx(1.0));
  // An oracle with its own queue of the last k + 1 = 5 cards.
  std::deque<int> recent;
  CHECK(mean_return(h, 100, [&](harness& x) {
          if (x.obs().back() == 1.0F) recent.clear();
          recent.push_back(suit_of(x.obs()));
          if (recent.size() > 5) recent.pop_front();
          return recent.size() == 5 ? recent.front() : 0;
        }) == Approx(1.0));
  rng guesses(env_seed{4, 99});
  CHECK(mean_return(h, 4000, [&](harness&) { return static_cast<std::int32_t>(guesses.below(4)); }) ==
        Approx(-0.5).margin(0.02));
  CHECK(mean_return(h, 4000, [&](harness& x) { return suit_of(x.obs()); }) == Approx(-0.5).margin(0.02));
  harness two_suits("repeat_previous", {{"suits", "2"}, {"k", "1"}}, 4);
  CHECK(mean_return(two_suits, 4000, [&](harness& x) { return suit_of(x.obs()); }) == Approx(0.0).margin(0.02));
}

TEST_CASE("repeat_first and repeat_previous repeat their cards for a seed and differ across seeds",
          "[envs][memory_envs][determinism]") {
  for (const std::string name : {"repeat_first", "repeat_previous"}) {
    INFO(name);
    auto cards = [&](std::uint64_t seed, std::uint64_t index) {
      harness h(registry::global().make_many(name, {{"length", "5"}}, seed, index, 1));
      h.slice.reset_all();
      std::vector<int> shown;
      for (int t = 0; t < 50; ++t) {
        shown.push_back(suit_of(h.obs()));
        h.act(t % 4);
        h.slice.step_all();
      }
      return shown;
    };
    CHECK(cards(1, 0) == cards(1, 0));
    CHECK(cards(1, 0) != cards(2, 0));
    CHECK(cards(1, 0) != cards(1, 1));
  }
}

TEST_CASE("the card envs reject suits, length and k out of range, naming the key and the range",
          "[envs][memory_envs][errors]") {
  auto rejects = [](std::string_view name, const config_args& args, const std::string& message) {
    CHECK_THROWS_MATCHES(registry::global().make(name, args, 1, 0), coral::config_error, Catch::Message(message));
  };
  rejects("repeat_first", {{"suits", "1"}},
          "env 'repeat_first': config key 'suits': invalid value '1' (expected int in [2, 1024])");
  rejects("repeat_first", {{"length", "1"}},
          "env 'repeat_first': config key 'length': invalid value '1' (expected int in [2, 1048576])");
  rejects("repeat_first", {{"length", "1048577"}},
          "env 'repeat_first': config key 'length': invalid value '1048577' (expected int in [2, 1048576])");
  rejects("repeat_previous", {{"suits", "1025"}},
          "env 'repeat_previous': config key 'suits': invalid value '1025' (expected int in [2, 1024])");
  rejects("repeat_previous", {{"k", "0"}},
          "env 'repeat_previous': config key 'k': invalid value '0' (expected int in [1, 1048575])");
  rejects("repeat_previous", {{"k", "16"}}, "env 'repeat_previous': config key 'k': must be less than length");
  rejects("repeat_previous", {{"length", "8"}, {"k", "9"}},
          "env 'repeat_previous': config key 'k': must be less than length");
  CHECK_NOTHROW(registry::global().make("repeat_previous", {{"length", "8"}, {"k", "7"}}, 1, 0));
  CHECK_NOTHROW(registry::global().make("repeat_first", {{"length", "1048576"}, {"suits", "1024"}}, 1, 0));
}

TEST_CASE("repeat_previous with k = length - 1 scores only the last answer, against the first card",
          "[envs][memory_envs][repeat_previous]") {
  harness h("repeat_previous", {{"length", "5"}, {"k", "4"}}, 2);
  h.slice.reset_all();
  const int first = suit_of(h.obs());
  for (int t = 0; t < 5; ++t) {
    h.act(first);
    h.slice.step_all();
    CHECK(h.batch.rewards()[0] == (t == 4 ? 1.0F : 0.0F));
  }
  CHECK(h.batch.terminated()[0] == 1);
}

TEST_CASE("positions-only cartpole shows cartpole's x and theta for the same seed and actions",
          "[envs][memory_envs][cartpole]") {
  harness full("cartpole", {}, 13);
  harness positions("cartpole", {{"velocities", "false"}}, 13);
  CHECK(positions.slice.at(0).observation_space().to_string() ==
        "Box([-4.8, -0.41887903], [4.8, 0.41887903], (2,))");
  CHECK(positions.slice.at(0).optimal_return() == 500.0);
  CHECK(positions.slice.at(0).solved_return() == 475.0);
  full.slice.reset_all();
  positions.slice.reset_all();
  rng actions(env_seed{13, 5});
  int episodes = 0;
  for (int t = 0; t < 600; ++t) {
    const auto f = full.obs();
    REQUIRE(positions.obs() == std::vector<float>{f[0], f[2]});
    const auto a = static_cast<std::int32_t>(actions.below(2));
    full.act(a);
    positions.act(a);
    full.slice.step_all();
    positions.slice.step_all();
    REQUIRE(positions.batch.rewards()[0] == full.batch.rewards()[0]);
    REQUIRE(positions.batch.terminated()[0] == full.batch.terminated()[0]);
    REQUIRE(positions.batch.truncated()[0] == full.batch.truncated()[0]);
    if (full.done()) {
      ++episodes;
      const auto ff = full.final_obs();
      REQUIRE(positions.final_obs() == std::vector<float>{ff[0], ff[2]});
      REQUIRE(positions.batch.episode_returns()[0] == full.batch.episode_returns()[0]);
    }
  }
  CHECK(episodes > 5);  // random actions end episodes (and auto-resets) often
}

TEST_CASE("positions-only cartpole still truncates at max_steps under a controller that sees the state",
          "[envs][memory_envs][cartpole]") {
  harness h("cartpole", {{"velocities", "false"}}, 21);
  auto& pole = dynamic_cast<cartpole&>(h.slice.at(0));
  h.slice.reset_all();
  int steps = 0;
  while (!h.done()) {
    const auto& s = pole.current();  // the hidden velocities, as a perfect memory would recover them
    h.act(s.theta + 0.5 * s.theta_dot + 0.01 * s.x + 0.1 * s.x_dot > 0 ? 1 : 0);
    h.slice.step_all();
    ++steps;
    REQUIRE(steps <= 500);
  }
  CHECK(h.batch.truncated()[0] == 1);
  CHECK(h.batch.episode_returns()[0] == 500.0F);
}

TEST_CASE("a memoryless push toward the lean does not balance positions-only cartpole", "[envs][memory_envs][cartpole]") {
  // The header's figure: about 43 steps on average (it cannot see θ_dot).
  harness h("cartpole", {{"velocities", "false"}}, 23);
  const double mean = mean_return(h, 200, [](harness& x) { return x.obs()[1] > 0 ? 1 : 0; });
  CHECK(mean > 20.0);
  CHECK(mean < 100.0);
}

TEST_CASE("faulty does not offer cartpole's velocities key (its faults write the full observation)",
          "[envs][memory_envs][faulty]") {
  CHECK_THROWS_MATCHES(registry::global().make("faulty", {{"velocities", "false"}}, 1, 0), coral::config_error,
                       Catch::Message("env 'faulty': unknown config key 'velocities' (known: max_steps, env, "
                                      "throw_step, throw_reset, nan_reward, nan_obs, inf_obs, stall_step, stall_ms, "
                                      "alloc_step, alloc_mb, reward_scale, repeat)"));
}

TEST_CASE("memory recites after long delays", "[envs][memory_envs][memory]") {
  // The setting (length 4, delay 16) and much longer delays, with the
  // most bits a uint64 holds.
  for (const auto& [length, delay] : std::vector<std::pair<int, int>>{{4, 16}, {4, 256}, {64, 1000}}) {
    INFO("length " << length << ", delay " << delay);
    harness h("memory", {{"length", std::to_string(length)}, {"delay", std::to_string(delay)}}, 17);
    auto& m = dynamic_cast<memory&>(h.slice.at(0));
    for (int episode = 0; episode < 2; ++episode) {
      if (episode == 0) h.slice.reset_all();
      std::vector<int> shown;
      for (int t = 0; t < 2 * length + delay; ++t) {
        const auto o = h.obs();
        if (t < length) {
          shown.push_back(o[0] > 0 ? 1 : 0);
          REQUIRE(shown.back() == m.bit(static_cast<std::size_t>(t)));
          h.act(0);
        } else if (t < length + delay) {
          REQUIRE(o == std::vector<float>{0.0F, 0.0F});
          h.act(1);
        } else {
          REQUIRE(o == std::vector<float>{0.0F, 1.0F});
          h.act(shown[static_cast<std::size_t>(t - length - delay)]);
        }
        h.slice.step_all();
        REQUIRE(h.batch.terminated()[0] == (t == 2 * length + delay - 1 ? 1 : 0));
      }
      CHECK(h.batch.episode_returns()[0] == Approx(1.0).epsilon(1e-5));
      CHECK(h.batch.episode_lengths()[0] == 2 * length + delay);
    }
  }
}

TEST_CASE("memory rejects more bits than a uint64 holds and delays beyond 2^20", "[envs][memory_envs][memory]") {
  CHECK_THROWS_MATCHES(registry::global().make("memory", {{"length", "65"}}, 1, 0), coral::config_error,
                       Catch::Message("env 'memory': config key 'length': invalid value '65' (expected int in [1, "
                                      "64])"));
  CHECK_THROWS_MATCHES(registry::global().make("memory", {{"delay", "1048577"}}, 1, 0), coral::config_error,
                       Catch::Message("env 'memory': config key 'delay': invalid value '1048577' (expected int in [0, "
                                      "1048576])"));
  CHECK_NOTHROW(registry::global().make("memory", {{"length", "64"}, {"delay", "1048576"}}, 1, 0));
}
