#include "coral/replay/nstep_assembler.hpp"

#include <vector>

#include <catch2/catch.hpp>

#include "coral/core/error.hpp"

using coral::replay::nstep_assembler;
using coral::replay::nstep_config;
using coral::replay::transition;

namespace {

/// A copy of an emitted transition (the views die at the next push).
struct emitted {
  float observation;
  float n_step_return;
  float discount;
  std::uint32_t steps;
  float next_observation;
  bool last;
};

/// Pushes steps t = 0 .. rewards.size() - 1 with o_t = 10 t and a_t = t;
/// the last step ends the episode as asked, with final observation 99.
std::vector<std::vector<emitted>> run_episode(nstep_assembler& a, const std::vector<float>& rewards,
                                              bool terminated, bool truncated) {
  std::vector<std::vector<emitted>> per_push;
  for (std::size_t t = 0; t < rewards.size(); ++t) {
    const bool end = t + 1 == rewards.size();
    const float obs = 10.0f * static_cast<float>(t);
    const float next = end ? 99.0f : obs + 10.0f;
    const std::int32_t action = static_cast<std::int32_t>(t);
    std::vector<emitted> out;
    for (const transition& x : a.push({&obs, 1}, {&action, 1}, {}, rewards[t], end && terminated, end && truncated,
                                      {&next, 1})) {
      REQUIRE(x.discrete_action[0] == static_cast<std::int32_t>(x.observation[0] / 10.0f));
      out.push_back({x.observation[0], x.n_step_return, x.discount, x.steps, x.next_observation[0], x.last_of_episode});
    }
    per_push.push_back(out);
  }
  return per_push;
}

}  // namespace

TEST_CASE("n-step returns within an episode and at a terminated end cut the bootstrap", "[replay][nstep]") {
  nstep_assembler a(nstep_config{1, 1, 0, 3, 0.5});
  const auto out = run_episode(a, {1, 2, 4, 8, 16}, true, false);
  REQUIRE(out.size() == 5);
  CHECK(out[0].empty());
  CHECK(out[1].empty());
  // t = 0: 1 + 0.5·2 + 0.25·4 = 3, bootstrap from o_3 with 0.5^3.
  REQUIRE(out[2].size() == 1);
  CHECK(out[2][0].observation == 0.0f);
  CHECK(out[2][0].n_step_return == 3.0f);
  CHECK(out[2][0].discount == 0.125f);
  CHECK(out[2][0].steps == 3);
  CHECK(out[2][0].next_observation == 30.0f);
  CHECK_FALSE(out[2][0].last);
  // t = 1: 2 + 0.5·4 + 0.25·8 = 6, from o_4.
  REQUIRE(out[3].size() == 1);
  CHECK(out[3][0].n_step_return == 6.0f);
  CHECK(out[3][0].next_observation == 40.0f);
  // Terminated at t = 4: the rest flush with discount 0.
  REQUIRE(out[4].size() == 3);
  CHECK(out[4][0].observation == 20.0f);
  CHECK(out[4][0].n_step_return == 12.0f);  // 4 + 0.5·8 + 0.25·16
  CHECK(out[4][0].steps == 3);
  CHECK(out[4][1].observation == 30.0f);
  CHECK(out[4][1].n_step_return == 16.0f);  // 8 + 0.5·16
  CHECK(out[4][1].steps == 2);
  CHECK(out[4][2].observation == 40.0f);
  CHECK(out[4][2].n_step_return == 16.0f);
  CHECK(out[4][2].steps == 1);
  for (const auto& x : out[4]) {
    CHECK(x.discount == 0.0f);
    CHECK(x.next_observation == 99.0f);
  }
  CHECK_FALSE(out[4][0].last);
  CHECK_FALSE(out[4][1].last);
  CHECK(out[4][2].last);
  CHECK(a.pending() == 0);
}

TEST_CASE("a truncated end ends the n-step sum but still bootstraps from the final observation", "[replay][nstep]") {
  nstep_assembler a(nstep_config{1, 1, 0, 3, 0.5});
  const auto out = run_episode(a, {1, 2, 4, 8, 16}, false, true);
  REQUIRE(out[4].size() == 3);
  CHECK(out[4][0].n_step_return == 12.0f);
  CHECK(out[4][0].discount == 0.125f);
  CHECK(out[4][1].n_step_return == 16.0f);
  CHECK(out[4][1].discount == 0.25f);
  CHECK(out[4][2].n_step_return == 16.0f);
  CHECK(out[4][2].discount == 0.5f);
  for (const auto& x : out[4]) CHECK(x.next_observation == 99.0f);
}

TEST_CASE("an episode shorter than n flushes every step, and the next episode starts clean", "[replay][nstep]") {
  nstep_assembler a(nstep_config{1, 1, 0, 3, 0.5});
  auto out = run_episode(a, {1, 2}, true, false);
  CHECK(out[0].empty());
  REQUIRE(out[1].size() == 2);
  CHECK(out[1][0].n_step_return == 2.0f);  // 1 + 0.5·2
  CHECK(out[1][0].steps == 2);
  CHECK(out[1][1].n_step_return == 2.0f);
  CHECK(out[1][1].steps == 1);
  // A one-step truncated episode right after: no reward of the last one leaks in.
  out = run_episode(a, {5}, false, true);
  REQUIRE(out[0].size() == 1);
  CHECK(out[0][0].observation == 0.0f);
  CHECK(out[0][0].n_step_return == 5.0f);
  CHECK(out[0][0].discount == 0.5f);
  CHECK(out[0][0].last);
}

TEST_CASE("one-step assembly emits every step at once with gamma as its discount", "[replay][nstep]") {
  nstep_assembler a(nstep_config{1, 1, 0, 1, 0.9});
  const auto out = run_episode(a, {1, 2, 3}, false, false);
  for (std::size_t t = 0; t < 3; ++t) {
    REQUIRE(out[t].size() == 1);
    CHECK(out[t][0].n_step_return == static_cast<float>(t + 1));
    CHECK(out[t][0].discount == 0.9f);
    CHECK(out[t][0].next_observation == (t == 2 ? 99.0f : 10.0f * static_cast<float>(t + 1)));
  }
}

TEST_CASE("an assembler rejects n of zero and gamma outside [0, 1] with exact messages", "[replay][nstep][errors]") {
  CHECK_THROWS_MATCHES(nstep_assembler(nstep_config{1, 1, 0, 0, 0.5}), coral::config_error,
                       Catch::Message("n_step must be at least 1"));
  CHECK_THROWS_MATCHES(nstep_assembler(nstep_config{1, 1, 0, 2, 1.5}), coral::config_error,
                       Catch::Message("gamma 1.5 must be in [0, 1]"));
}
