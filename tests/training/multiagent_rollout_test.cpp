#include "coral/training/rollout.hpp"

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/turns_chains.hpp"
#include "../support/turns_env.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/errors.hpp"
#include "coral/envs/registry.hpp"
#include "coral/training/agents_in_play.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/errors.hpp"
#include "coral/training/training_run.hpp"

using namespace coral;
using namespace coral::training;

using test::action_of;
using test::expected_chains;
using test::show;
using test::slot_step;

TEST_CASE("each slot's segment chain holds its own steps, a waiting slot's outcome on its last move",
          "[training][rollout][multi-agent]") {
  constexpr std::size_t T = 2;  // short segments: a waiting slot crosses every boundary
  constexpr std::int64_t steps = 40;
  std::vector<std::unique_ptr<envs::env>> made;
  made.push_back(std::make_unique<test::turns_env>());
  const test::turns_env schedule;  // the same schedule, for the expectations
  envs::env_batch batch(3, made.front()->observation_space(), made.front()->action_space());
  envs::env_slice slice(batch, 0, std::move(made));
  std::vector<std::pair<double, double>> episodes;
  rollout_assembler assembler(batch, {actors::row_range{0, 3}},
                              [&](double r, double l) { episodes.emplace_back(r, l); },
                              rollout_assembler::options{.horizon = T, .segments_in_flight = 64});
  slice.reset_all();
  std::vector<float> log_probs(3), values(3);
  const std::vector<actors::row_range> ranges{{0, 3}};
  for (std::int64_t n = 0; n <= steps; ++n) {
    assembler.arrived(0, static_cast<std::uint64_t>(n));
    if (n == steps) break;
    for (std::size_t s = 0; s < 3; ++s) {
      // Inactive rows get poison: nothing of them may reach a segment's acted steps.
      const bool on = batch.active()[s] != 0;
      batch.discrete_actions().row(s)[0] = on ? action_of(schedule, s, n) : 1;
      log_probs[s] = on ? static_cast<float>(n) : std::nanf("");
      values[s] = on ? static_cast<float>(100 * s + static_cast<std::size_t>(n)) : std::nanf("");
    }
    assembler.consume(actors::step_batch{.batch = batch,
                                         .ranges = ranges,
                                         .log_probs = log_probs,
                                         .values = values,
                                         .policy_version = static_cast<std::uint64_t>(n) / T + 1,
                                         .batch_index = static_cast<std::uint64_t>(n)});
    slice.step_all();
  }
  assembler.close();
  std::vector<std::unique_ptr<rollout_segment>> segments;
  while (auto seg = assembler.segments().try_receive()) segments.push_back(std::move(*seg));
  REQUIRE(segments.size() == static_cast<std::size_t>(steps) / T);

  // Every acted step, segment after segment, in each row's order.
  std::vector<std::vector<slot_step>> chains(3);
  std::vector<std::vector<std::int64_t>> bootstrap_of(3);  // per row: n the open chain continues from, or -1
  for (const auto& seg : segments) {
    REQUIRE(seg->mask_dim == 3);
    for (std::size_t r = 0; r < 3; ++r) {
      std::int64_t open = -1;
      for (std::size_t t = 0; t < T; ++t) {
        const std::size_t i = r * T + t;
        if (seg->acted[i] == 0) continue;
        const float* obs = seg->observations.data() + (r * (T + 1) + t) * 4;
        // The step's own observation, log probability and value.
        CHECK(obs[0] == static_cast<float>(r));
        CHECK(seg->log_probs[i] == obs[1]);
        CHECK(seg->values[i] == 100.0F * static_cast<float>(r) + obs[1]);
        slot_step st;
        st.n = static_cast<std::int64_t>(obs[1]);
        st.reward = seg->rewards[i];
        st.terminated = seg->terminated[i];
        st.truncated = seg->truncated[i];
        st.action = seg->discrete_actions[i];
        for (unsigned a = 0; a < 3; ++a) st.mask |= static_cast<unsigned>(seg->action_masks[i * 3 + a] != 0) << a;
        chains[r].push_back(st);
        open = (st.terminated | st.truncated) == 0 ? st.n : -1;
      }
      if (open >= 0) {
        // The chain goes on after the segment: its bootstrap observation is
        // the one the slot acts on next (checked against the chain below).
        const float* boot = seg->observations.data() + (r * (T + 1) + T) * 4;
        CHECK(boot[0] == static_cast<float>(r));
        bootstrap_of[r].push_back(static_cast<std::int64_t>(boot[1]));
      }
    }
  }
  const auto expected = expected_chains(schedule, steps);
  for (std::size_t r = 0; r < 3; ++r) {
    INFO("slot " << r << "\n got      " << show(chains[r]) << "\n expected " << show(expected[r]));
    // The steps still open when sampling stopped are the last ones; each
    // segment of the run holds the steps whose outcomes arrived.
    REQUIRE(chains[r].size() <= expected[r].size());
    REQUIRE(chains[r].size() + 2 >= expected[r].size());
    for (std::size_t j = 0; j < chains[r].size(); ++j) {
      INFO("step " << j);
      CHECK(chains[r][j].n == expected[r][j].n);
      CHECK(chains[r][j].reward == Approx(expected[r][j].reward));
      CHECK(chains[r][j].terminated == expected[r][j].terminated);
      CHECK(chains[r][j].truncated == expected[r][j].truncated);
      CHECK(chains[r][j].action == expected[r][j].action);
      CHECK(chains[r][j].mask == expected[r][j].mask);
    }
    // Each open chain's bootstrap is its next step's observation.
    for (const auto boot : bootstrap_of[r]) {
      bool follows = false;
      for (std::size_t j = 0; j + 1 < expected[r].size(); ++j) {
        const bool open = (expected[r][j].terminated | expected[r][j].truncated) == 0;
        follows = follows || (open && expected[r][j + 1].n == boot);
      }
      CHECK(follows);
    }
  }
  // Slot 1 acts on one move a game and loses it while waiting: every step of
  // its chain moved across a boundary (T = 2) or ended in its segment.
  REQUIRE_FALSE(chains[1].empty());
  for (const auto& st : chains[1]) CHECK(st.terminated == 1);
  // Episodes per agent: a game (slot 0: two moves, +1 and a little; slot
  // 1: one move, −1 and a little) and a visit of slot 2 (three steps, 0.7).
  std::map<std::pair<long, long>, int> kinds;
  for (const auto& [ret, len] : episodes) ++kinds[{std::lround(ret * 100), std::lround(len)}];
  for (const auto& [kind, count] : kinds) {
    INFO("return x100 " << kind.first << " length " << kind.second);
    const bool slot0 = kind.second == 2 && kind.first > 100 && kind.first <= 103;
    const bool slot1 = kind.second == 1 && kind.first >= -99 && kind.first < -96;
    const bool slot2 = kind.second == 3 && kind.first == 70;
    CHECK((slot0 || slot1 || slot2));
  }
  CHECK(kinds[{70, 3}] == static_cast<int>(steps / 5));
}

namespace {

/// Counts what the gate asks of it; lets group 1 through only.
struct recording_gate final : actors::gate_policy {
  void arrived(std::uint32_t g, std::uint64_t) override { arrivals.push_back(g); }
  bool may_step(std::uint32_t g, std::uint64_t, std::size_t) override { return g == 1; }
  void stepped(std::uint32_t g, std::uint64_t, std::size_t) override { stepped_groups.push_back(g); }
  std::vector<std::uint32_t> arrivals;
  std::vector<std::uint32_t> stepped_groups;
};

}  // namespace

TEST_CASE("agents in play are the active rows of each group as it last arrived", "[training][multi-agent]") {
  envs::env_batch batch(6, 1, 1, 0);
  recording_gate inner;
  agents_in_play count(inner, batch, {actors::row_range{0, 3}, actors::row_range{3, 3}});
  CHECK(count.total() == 0);
  auto active = batch.active();
  std::fill(active.begin(), active.end(), std::uint8_t{0});
  active[0] = active[2] = 1;
  count.arrived(0, 0);
  CHECK(count.total() == 2);
  active[4] = 1;
  count.arrived(1, 0);
  CHECK(count.total() == 3);
  active[0] = 0;  // group 0's first agent left
  count.arrived(0, 1);
  CHECK(count.total() == 2);
  // Everything else is the wrapped policy's.
  CHECK_FALSE(count.may_step(0, 1, 3));
  CHECK(count.may_step(1, 1, 3));
  count.stepped(1, 1, 3);
  CHECK(inner.arrivals == std::vector<std::uint32_t>{0, 1, 0});
  CHECK(inner.stepped_groups == std::vector<std::uint32_t>{1});
}

namespace {

/// Discrete(3) actions, a declared mask of `mask` bytes, two slots in teams 0 and `team`.
class ill_bound_env final : public envs::env {
 public:
  ill_bound_env(std::size_t mask, std::size_t team) : mask_(mask), team_(team) {}
  void reset(const envs::env_rows&) override {}
  void step(const envs::env_rows&) override {}
  [[nodiscard]] const envs::space& observation_space() const noexcept override { return obs_; }
  [[nodiscard]] const envs::space& action_space() const noexcept override { return act_; }
  [[nodiscard]] std::size_t max_agents() const noexcept override { return 2; }
  [[nodiscard]] std::size_t action_mask_size() const noexcept override { return mask_; }
  [[nodiscard]] std::size_t team_count() const noexcept override { return 2; }
  [[nodiscard]] std::size_t team_of(std::size_t slot) const noexcept override { return slot == 0 ? 0 : team_; }

 private:
  std::size_t mask_, team_;
  envs::space obs_ = envs::space::box({1}, 0.0F, 1.0F);
  envs::space act_ = envs::space::discrete(3);
};

void register_ill_bound(const char* name, std::size_t mask, std::size_t team) {
  auto& r = envs::registry::global();
  if (r.contains(name)) return;
  r.add(envs::env_spec{.name = name,
                       .description = "test env: bound to batch rows, it is refused",
                       .keys = {},
                       .factory = [mask, team](const envs::env_config&, coral::env_seed) -> std::unique_ptr<envs::env> {
                         return std::make_unique<ill_bound_env>(mask, team);
                       }});
}

}  // namespace

TEST_CASE("an env whose mask or team ids do not fit is refused before the run, naming the env",
          "[training][multi-agent][errors]") {
  register_ill_bound("test-wide-mask", 5, 1);
  register_ill_bound("test-team-out", 3, 2);
  // An algorithm that is never made: the env is refused first.
  register_algorithm("test-never-made", [](const train_options&, actors::sampler&) -> std::unique_ptr<algorithm> {
    throw coral::usage_error("made");
  });
  train_options o;
  o.algo = "test-never-made";
  o.progress_seconds = 0;
  o.sampler.env = "test-wide-mask";
  CHECK_THROWS_MATCHES(training_run::validate(o), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(coral::training::errors::env_not_trainable), "test-wide-mask",
                                                  fmt::format(fmt::runtime(envs::errors::mask_width), "#0", 5,
                                                              "Discrete(3)", 3))));
  o.sampler.env = "test-team-out";
  CHECK_THROWS_MATCHES(training_run::validate(o), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(coral::training::errors::env_not_trainable), "test-team-out",
                                                  fmt::format(fmt::runtime(envs::errors::team_out_of_range), "#0", 1,
                                                              2, 2))));
  unregister_algorithm("test-never-made");
}
