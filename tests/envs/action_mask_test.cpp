#include "coral/envs/env_slice.hpp"

#include <memory>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/envs/errors.hpp"
#include "harness.hpp"

using namespace coral::envs;
using coral::envs::testing::harness;

namespace {

// Two slots, actions MultiDiscrete(3, 2); declares a mask of `declared`
// bytes; writes `legal` into every active row's mask; slot i is in team
// `teams[i]` of `team_count`.
class masked_env final : public env {
 public:
  masked_env(std::size_t declared, std::vector<std::uint8_t> legal, std::vector<std::size_t> teams = {0, 0},
             std::size_t team_count = 1)
      : legal_(std::move(legal)), declared_(declared), teams_(std::move(teams)), team_count_(team_count) {}
  void reset(const env_rows& rows) override { write(rows); }
  void step(const env_rows& rows) override {
    for (std::size_t r = 0; r < rows.size(); ++r) rows.reward(r) = 0.0F;
    write(rows);
  }
  [[nodiscard]] const space& observation_space() const noexcept override { return obs_; }
  [[nodiscard]] const space& action_space() const noexcept override { return act_; }
  [[nodiscard]] std::size_t max_agents() const noexcept override { return 2; }
  [[nodiscard]] std::size_t action_mask_size() const noexcept override { return declared_; }
  [[nodiscard]] std::size_t team_count() const noexcept override { return team_count_; }
  [[nodiscard]] std::size_t team_of(std::size_t slot) const noexcept override { return teams_[slot]; }

  std::vector<std::uint8_t> legal_;

 private:
  void write(const env_rows& rows) const {
    for (std::size_t r = 0; r < rows.size(); ++r) {
      auto m = rows.action_mask(r);
      std::copy(legal_.begin(), legal_.end(), m.begin());
    }
  }
  std::size_t declared_;
  std::vector<std::size_t> teams_;
  std::size_t team_count_;
  space obs_ = space::box({1}, 0.0F, 1.0F);
  space act_ = space::multi_discrete({3, 2});
};

std::vector<std::unique_ptr<env>> one(std::unique_ptr<env> e) {
  std::vector<std::unique_ptr<env>> v;
  v.push_back(std::move(e));
  return v;
}

}  // namespace

TEST_CASE("an action mask has one byte per value of each discrete component", "[envs][mask]") {
  CHECK(action_mask_size(space::discrete(9)) == 9);
  CHECK(action_mask_size(space::multi_discrete({3, 2})) == 5);
  CHECK(action_mask_size(space::box({4}, -1.0F, 1.0F)) == 0);
  CHECK(action_mask_size(space::dict({{"move", space::discrete(4)}, {"aim", space::box({2}, 0.0F, 1.0F)},
                                      {"pick", space::multi_discrete({2, 3})}})) == 9);
  CHECK(discrete_counts(space::tuple({space::discrete(4), space::multi_discrete({2, 3})})) ==
        std::vector<std::int32_t>{4, 2, 3});
}

TEST_CASE("an env's mask rows reach the batch, and envs that do not mask leave every action legal",
          "[envs][mask]") {
  harness plain("race", {}, 1);
  CHECK_FALSE(plain.batch.has_action_masks());
  plain.slice.reset_all();
  for (std::size_t r = 0; r < plain.batch.rows(); ++r) {
    CHECK(plain.batch.action_masks()(r, 0) == 1);
    CHECK(plain.batch.action_masks()(r, 1) == 1);
  }

  harness masked(one(std::make_unique<masked_env>(5, std::vector<std::uint8_t>{0, 1, 0, 1, 0})));
  CHECK(masked.batch.has_action_masks());
  masked.slice.reset_all();
  auto row = masked.batch.action_masks().row(1);
  CHECK(std::vector<std::uint8_t>(row.begin(), row.end()) == std::vector<std::uint8_t>{0, 1, 0, 1, 0});
}

TEST_CASE("an env whose mask width does not fit its action space is refused, naming it", "[envs][mask][errors]") {
  auto made = one(std::make_unique<masked_env>(6, std::vector<std::uint8_t>(6, 1)));
  env_batch batch(2, made.front()->observation_space(), made.front()->action_space());
  CHECK_THROWS_MATCHES(env_slice(batch, 0, std::move(made)), coral::usage_error,
                       Catch::Message(fmt::format(fmt::runtime(errors::mask_width), "#0", 6,
                                                  "MultiDiscrete([3, 2])", 5)));
}

TEST_CASE("an active row whose mask leaves a component no legal action is an env fault naming the row",
          "[envs][mask][errors]") {
  auto e = std::make_unique<masked_env>(5, std::vector<std::uint8_t>{1, 0, 0, 1, 1});
  auto* raw = e.get();
  harness h(one(std::move(e)));
  h.slice.reset_all();
  raw->legal_ = {1, 1, 1, 0, 0};  // the second component has no legal value
  try {
    h.slice.step_all();
    FAIL("no fault");
  } catch (const env_failed& f) {
    CHECK(f.index() == 0);
    CHECK(std::string(f.what()) == fmt::format(fmt::runtime(errors::all_actions_masked), 0, 1));
  }
  // reset() is checked the same way.
  raw->legal_ = {0, 0, 0, 0, 0};
  CHECK_THROWS_AS(h.slice.reset_all(), env_failed);
}

TEST_CASE("teams reach the batch's teams column, and a team id out of range is refused, naming it",
          "[envs][teams][errors]") {
  harness two(one(std::make_unique<masked_env>(0, std::vector<std::uint8_t>{}, std::vector<std::size_t>{0, 1}, 2)));
  CHECK(two.batch.teams()[0] == 0);
  CHECK(two.batch.teams()[1] == 1);
  auto made = one(std::make_unique<masked_env>(0, std::vector<std::uint8_t>{}, std::vector<std::size_t>{0, 2}, 2));
  env_batch batch(2, made.front()->observation_space(), made.front()->action_space());
  CHECK_THROWS_MATCHES(env_slice(batch, 0, std::move(made)), coral::usage_error,
                       Catch::Message(fmt::format(fmt::runtime(errors::team_out_of_range), "#0", 1, 2, 2)));
}
