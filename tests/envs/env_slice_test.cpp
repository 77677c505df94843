#include "coral/envs/env_slice.hpp"

#include <iterator>
#include <limits>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/envs/errors.hpp"
#include "harness.hpp"

using namespace coral::envs;
using coral::envs::testing::harness;

namespace {

// Observation (episode number, step in episode); reward = the action; the
// episode ends after `length` steps, terminated or truncated as asked.
// Remembers every (episode, action) it was given.
class scripted final : public env {
 public:
  scripted(int length, bool truncate) : length_(length), truncate_(truncate) {}

  void reset(const env_rows& rows) override {
    ++episode_;
    t_ = 0;
    write(rows);
  }
  void step(const env_rows& rows) override {
    received.emplace_back(episode_, rows.action());
    ++t_;
    write(rows);
    rows.reward() = static_cast<float>(rows.action());
    rows.terminated() = static_cast<std::uint8_t>(!truncate_ && t_ == length_);
    rows.truncated() = static_cast<std::uint8_t>(truncate_ && t_ == length_);
  }
  [[nodiscard]] const space& observation_space() const noexcept override { return obs_; }
  [[nodiscard]] const space& action_space() const noexcept override { return act_; }

  std::vector<std::pair<int, int>> received;

 private:
  void write(const env_rows& rows) const {
    rows.observation()[0] = static_cast<float>(episode_);
    rows.observation()[1] = static_cast<float>(t_);
  }
  space obs_ = space::box({2}, 0.0F, 1000.0F);
  space act_ = space::discrete(10);
  int length_;
  bool truncate_;
  int episode_ = 0;
  int t_ = 0;
};

harness scripted_harness(int length, bool truncate, std::size_t count = 1) {
  std::vector<std::unique_ptr<env>> envs;
  for (std::size_t i = 0; i < count; ++i) envs.push_back(std::make_unique<scripted>(length, truncate));
  return harness(std::move(envs));
}

scripted& script(harness& h, std::size_t i = 0) { return dynamic_cast<scripted&>(h.slice.at(i)); }

}  // namespace

TEST_CASE("reset_all writes first observations and clears rewards, flags and episode columns",
          "[envs][slice][autoreset]") {
  auto h = scripted_harness(3, false);
  h.batch.rewards()[0] = 7.0F;
  h.batch.terminated()[0] = 1;
  h.batch.episode_returns()[0] = 5.0F;
  h.batch.episode_lengths()[0] = 2;
  h.slice.reset_all();
  CHECK(h.obs() == std::vector<float>{1.0F, 0.0F});
  CHECK(h.batch.rewards()[0] == 0.0F);
  CHECK(h.batch.terminated()[0] == 0);
  CHECK(h.batch.truncated()[0] == 0);
  CHECK(h.batch.active()[0] == 1);
  CHECK(h.batch.episode_returns()[0] == 0.0F);
  CHECK(h.batch.episode_lengths()[0] == 0);
}

TEST_CASE("the step that ends an episode shows its final observation, return and length, and the next "
          "episode's first observation",
          "[envs][slice][autoreset]") {
  auto h = scripted_harness(3, false);
  h.slice.reset_all();
  h.act(2);
  h.slice.step_all();
  CHECK(h.obs() == std::vector<float>{1.0F, 1.0F});
  CHECK(h.batch.episode_returns()[0] == 2.0F);  // running totals on ordinary steps
  CHECK(h.batch.episode_lengths()[0] == 1);
  h.act(3);
  h.slice.step_all();
  h.act(4);
  h.slice.step_all();  // third step: the episode ends

  CHECK(h.batch.terminated()[0] == 1);
  CHECK(h.batch.truncated()[0] == 0);
  CHECK(h.batch.rewards()[0] == 4.0F);                            // the final step's reward
  CHECK(h.final_obs() == std::vector<float>{1.0F, 3.0F});        // last observation of episode 1
  CHECK(h.batch.episode_returns()[0] == 2.0F + 3.0F + 4.0F);
  CHECK(h.batch.episode_lengths()[0] == 3);
  CHECK(h.obs() == std::vector<float>{2.0F, 0.0F});              // first observation of episode 2
}

TEST_CASE("the action given after an auto-reset is applied to the new episode, never discarded",
          "[envs][slice][autoreset]") {
  auto h = scripted_harness(2, false);
  h.slice.reset_all();
  for (int a : {1, 2, 3, 4, 5}) {
    h.act(a);
    h.slice.step_all();
  }
  CHECK(script(h).received == std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 3}, {2, 4}, {3, 5}});
  // Episode 2 was (3, 4): its return and length were shown on the step that ended it;
  // the step after restarted the totals for episode 3.
  CHECK(h.batch.episode_returns()[0] == 5.0F);
  CHECK(h.batch.episode_lengths()[0] == 1);
}

TEST_CASE("a truncated episode is auto-reset like a terminated one and the flags stay distinct",
          "[envs][slice][autoreset]") {
  auto h = scripted_harness(1, true);
  h.slice.reset_all();
  h.act(6);
  h.slice.step_all();
  CHECK(h.batch.truncated()[0] == 1);
  CHECK(h.batch.terminated()[0] == 0);
  CHECK(h.final_obs() == std::vector<float>{1.0F, 1.0F});
  CHECK(h.obs() == std::vector<float>{2.0F, 0.0F});
  CHECK(h.batch.episode_returns()[0] == 6.0F);
  h.slice.step_all();
  CHECK(h.batch.truncated()[0] == 1);
  CHECK(h.batch.episode_returns()[0] == 6.0F);  // a fresh one-step episode, not 12
  CHECK(h.batch.episode_lengths()[0] == 1);
}

TEST_CASE("next-step auto-reset keeps the last observation on the ending step and resets on the next, "
          "ignoring its action",
          "[envs][slice][autoreset]") {
  auto h = scripted_harness(2, false);
  h.slice.set_next_step_autoreset(true);
  h.slice.reset_all();
  h.act(1);
  h.slice.step_all();
  h.act(2);
  h.slice.step_all();  // the episode ends
  CHECK(h.batch.terminated()[0] == 1);
  CHECK(h.batch.rewards()[0] == 2.0F);
  CHECK(h.obs() == std::vector<float>{1.0F, 2.0F});  // still the ended episode's last observation
  CHECK(h.batch.episode_returns()[0] == 3.0F);
  CHECK(h.batch.episode_lengths()[0] == 2);
  CHECK(h.batch.commands()[0] == row_command::reset);

  h.act(9);
  h.slice.step_all();  // the reset step
  CHECK(h.obs() == std::vector<float>{2.0F, 0.0F});
  CHECK(h.batch.rewards()[0] == 0.0F);
  CHECK(h.batch.terminated()[0] == 0);
  CHECK(h.batch.truncated()[0] == 0);
  CHECK(h.batch.episode_returns()[0] == 0.0F);
  CHECK(h.batch.episode_lengths()[0] == 0);
  CHECK(h.batch.commands()[0] == row_command::step);

  h.act(3);
  h.slice.step_all();
  // Action 9 was never applied: the new episode's first action is 3.
  CHECK(script(h).received == std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 3}});
  CHECK(h.batch.episode_returns()[0] == 3.0F);
  CHECK(h.batch.episode_lengths()[0] == 1);
}

TEST_CASE("without auto-reset an ended env keeps its last observation and flags until a reset command",
          "[envs][slice][autoreset]") {
  auto h = scripted_harness(2, true);
  h.slice.set_autoreset(false);
  h.slice.reset_all();
  h.act(1);
  h.slice.step_all();
  h.act(2);
  h.slice.step_all();  // the episode ends, truncated
  CHECK(h.batch.truncated()[0] == 1);
  CHECK(h.obs() == std::vector<float>{1.0F, 2.0F});
  CHECK(h.batch.commands()[0] == row_command::step);  // no reset pending: the caller decides
  h.batch.commands()[0] = row_command::hold;
  h.slice.step_all();  // held: nothing changes
  CHECK(h.batch.truncated()[0] == 1);
  CHECK(h.obs() == std::vector<float>{1.0F, 2.0F});
  h.batch.commands()[0] = row_command::reset;
  h.slice.step_all();
  CHECK(h.obs() == std::vector<float>{2.0F, 0.0F});
  CHECK(h.batch.truncated()[0] == 0);
  h.act(4);
  h.slice.step_all();
  CHECK(script(h).received == std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 4}});
}

TEST_CASE("a reset command starts a new episode instead of a step, and a hold command leaves the env as it is",
          "[envs][slice][commands]") {
  auto h = scripted_harness(5, false, 2);
  h.slice.reset_all();
  h.act(1);
  h.slice.step_all();
  REQUIRE(h.batch.episode_lengths()[1] == 1);

  h.batch.commands()[0] = row_command::reset;
  h.batch.commands()[1] = row_command::hold;
  h.act(4);
  h.slice.step_all();
  CHECK(script(h, 0).received == std::vector<std::pair<int, int>>{{1, 1}});  // reset, not stepped
  CHECK(h.batch.observations().row(0)[0] == 2.0F);                            // episode 2, step 0
  CHECK(h.batch.observations().row(0)[1] == 0.0F);
  CHECK(h.batch.episode_lengths()[0] == 0);
  CHECK(script(h, 1).received == std::vector<std::pair<int, int>>{{1, 1}});  // held
  CHECK(h.batch.observations().row(1)[1] == 1.0F);
  CHECK(h.batch.episode_lengths()[1] == 1);
  CHECK(h.batch.commands()[0] == row_command::step);
  CHECK(h.batch.commands()[1] == row_command::step);

  SECTION("a held env keeps a pending reset for the step after") {
    h.batch.commands()[1] = row_command::reset | row_command::hold;
    h.slice.step_all();
    CHECK(h.batch.commands()[1] == row_command::reset);
    CHECK(h.batch.observations().row(1)[0] == 1.0F);
    h.slice.step_all();
    CHECK(h.batch.observations().row(1)[0] == 2.0F);
    CHECK(script(h, 1).received.size() == 1);
  }
}

namespace {
// Its first observation is NaN: a broken reset.
class nan_reset final : public env {
 public:
  void reset(const env_rows& rows) override { rows.observation()[0] = std::numeric_limits<float>::quiet_NaN(); }
  void step(const env_rows& rows) override { rows.observation()[0] = 0.0F; }
  [[nodiscard]] const space& observation_space() const noexcept override { return obs_; }
  [[nodiscard]] const space& action_space() const noexcept override { return act_; }

 private:
  space obs_ = space::box({1}, -1.0F, 1.0F);
  space act_ = space::discrete(2);
};
}  // namespace

TEST_CASE("a reset that writes a non-finite observation is a failure of that env, unless the checks are off",
          "[envs][slice][errors]") {
  std::vector<std::unique_ptr<env>> made;
  made.push_back(std::make_unique<nan_reset>());
  harness h(std::move(made));
  try {
    h.slice.reset_all();
    FAIL("reset_all accepted a NaN first observation");
  } catch (const env_failed& e) {
    CHECK(e.index() == 0);
    CHECK(std::string(e.what()) ==
          fmt::format(fmt::runtime(errors::reset_failed),
                      fmt::format(fmt::runtime(errors::non_finite_observation), 0, std::numeric_limits<float>::quiet_NaN())));
  }
  h.slice.check_finite(false);
  CHECK_NOTHROW(h.slice.reset_all());
}

namespace {
// A wide observation (wider than any vector register) whose step writes, in
// order: extreme but finite values everywhere, then `bad` at element `at`.
class wide_obs final : public env {
 public:
  static constexpr std::size_t width = 37;
  wide_obs(std::size_t at, float bad) : at_(at), bad_(bad) {}
  void reset(const env_rows& rows) override { fill(rows); }
  void step(const env_rows& rows) override {
    fill(rows);
    rows.observation()[at_] = bad_;
  }
  [[nodiscard]] const space& observation_space() const noexcept override { return obs_; }
  [[nodiscard]] const space& action_space() const noexcept override { return act_; }

 private:
  static void fill(const env_rows& rows) {
    const auto obs = rows.observation();
    for (std::size_t k = 0; k < obs.size(); ++k) {
      // The largest float, the smallest subnormal, -0 and a plain value.
      constexpr float finite[] = {std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                                  std::numeric_limits<float>::denorm_min(), -0.0F, 1.5F};
      obs[k] = finite[k % std::size(finite)];
    }
  }
  std::size_t at_;
  float bad_;
  space obs_ = space::box({width}, -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity());
  space act_ = space::discrete(2);
};

std::string step_failure(std::size_t at, float bad) {
  std::vector<std::unique_ptr<env>> made;
  made.push_back(std::make_unique<wide_obs>(0, 0.0F));
  made.push_back(std::make_unique<wide_obs>(at, bad));
  harness h(std::move(made));
  h.slice.reset_all();
  try {
    h.slice.step_all();
  } catch (const env_failed& e) {
    CHECK(e.index() == 1);
    return e.what();
  }
  return "no failure";
}
}  // namespace

TEST_CASE("a non-finite element anywhere in a wide observation is found and named; extreme finite values pass",
          "[envs][slice][errors][finite]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Element 0 of env #1 is overwritten with 0: every value finite.
  CHECK(step_failure(0, 0.0F) == "no failure");
  for (const std::size_t at : {std::size_t{1}, std::size_t{31}, std::size_t{32}, wide_obs::width - 1}) {
    for (const float bad : {inf, -inf, nan, -nan}) {
      INFO("element " << at << " = " << bad);
      CHECK(step_failure(at, bad) == fmt::format(fmt::runtime(errors::non_finite_observation), at, bad));
    }
  }
}

TEST_CASE("the envs of a slice own consecutive rows starting at its first row", "[envs][slice]") {
  std::vector<std::unique_ptr<env>> envs;
  for (int i = 0; i < 3; ++i) envs.push_back(std::make_unique<scripted>(i + 1, false));
  env_batch batch(5, space::box({2}, 0.0F, 1000.0F), space::discrete(10));
  env_slice slice(batch, 2, std::move(envs));
  CHECK(slice.size() == 3);
  CHECK(slice.first_row() == 2);
  CHECK(slice.row_count() == 3);
  CHECK(slice.first_row_of(1) == 3);
  slice.reset_all();
  slice.step_all();  // env 0 (length 1) ends, env 1 and 2 run on
  CHECK(batch.terminated()[2] == 1);
  CHECK(batch.terminated()[3] == 0);
  CHECK(batch.terminated()[4] == 0);
  CHECK(batch.observations()(0, 0) == 0.0F);  // rows before the slice are untouched
  CHECK(batch.observations()(2, 0) == 2.0F);  // env 0 is in its second episode
  CHECK(batch.observations()(3, 0) == 1.0F);
}

TEST_CASE("a slice rejects envs that do not fit its batch", "[envs][slice][errors]") {
  {
    std::vector<std::unique_ptr<env>> envs;
    envs.push_back(std::make_unique<scripted>(1, false));
    env_batch narrow(1, 3, 1, 0);
    CHECK_THROWS_MATCHES(env_slice(narrow, 0, std::move(envs)), coral::usage_error,
                         Catch::Message("env '#0' does not fit the batch: observation width 2 != batch obs_dim 3"));
  }
  {
    std::vector<std::unique_ptr<env>> envs;
    envs.push_back(std::make_unique<scripted>(1, false));
    envs.push_back(std::make_unique<scripted>(1, false));
    env_batch small(2, 2, 1, 0);
    CHECK_THROWS_MATCHES(env_slice(small, 1, std::move(envs)), coral::usage_error,
                         Catch::Message("env '#1' does not fit the batch: its rows run past the end of the batch"));
  }
}
