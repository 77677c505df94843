#include "coral/envs/space.hpp"

#include <limits>

#include <catch2/catch.hpp>

#include "coral/core/error.hpp"
#include "coral/envs/errors.hpp"

using coral::envs::space;
using coral::envs::space_kind;
using coral::envs::space_value;

namespace {

// Dict(pos: Box((2,)), goal: Discrete(5), inner: Tuple(MultiDiscrete([3, 4]), Box((2, 2))))
space nested() {
  return space::dict({{"pos", space::box({2}, -1.0F, 1.0F)},
                      {"goal", space::discrete(5)},
                      {"inner", space::tuple({space::multi_discrete({3, 4}), space::box({2, 2}, 0.0F, 10.0F)})}});
}

space_value nested_value() {
  space_value pos{.box = {0.5F, -0.25F}};
  space_value goal{.discrete = {4}};
  space_value md{.discrete = {2, 0}};
  space_value grid{.box = {1.0F, 2.0F, 3.0F, 9.5F}};
  space_value inner{.children = {md, grid}};
  return space_value{.children = {pos, goal, inner}};
}

}  // namespace

TEST_CASE("spaces know their flat widths", "[envs][space]") {
  CHECK(space::box({4}, -1.0F, 1.0F).flat_size() == 4);
  CHECK(space::box({2, 3}, -1.0F, 1.0F).flat_size() == 6);
  CHECK(space::box({}, -1.0F, 1.0F).flat_size() == 1);
  CHECK(space::discrete(7).flat_size() == 1);
  CHECK(space::multi_discrete({2, 3, 4}).flat_size() == 3);
  const space s = nested();
  CHECK(s.kind() == space_kind::dict);
  CHECK(s.flat_size() == 2 + 1 + 2 + 4);
  CHECK(s.discrete_size() == 1 + 2);
  CHECK(s.continuous_size() == 2 + 4);
  CHECK(s.flat_offset("pos") == 0);
  CHECK(s.flat_offset("goal") == 2);
  CHECK(s.flat_offset("inner") == 3);
}

TEST_CASE("spaces print like Gymnasium's", "[envs][space]") {
  CHECK(space::box({4}, -1.0F, 1.0F).to_string() == "Box(-1, 1, (4,))");
  CHECK(space::box({2, 3}, 0.0F, std::numeric_limits<float>::infinity()).to_string() == "Box(0, inf, (2, 3))");
  CHECK(space::box({2}, {-1.0F, -2.0F}, {1.0F, 2.0F}).to_string() == "Box([-1, -2], [1, 2], (2,))");
  CHECK(space::discrete(2).to_string() == "Discrete(2)");
  CHECK(space::multi_discrete({2, 3}).to_string() == "MultiDiscrete([2, 3])");
  CHECK(nested().to_string() ==
        "Dict(pos: Box(-1, 1, (2,)), goal: Discrete(5), "
        "inner: Tuple(MultiDiscrete([3, 4]), Box(0, 10, (2, 2))))");
}

TEST_CASE("flatten then unflatten is the identity for nested spaces", "[envs][space][flatten]") {
  const space s = nested();
  const space_value v = nested_value();
  REQUIRE(contains(s, v));
  std::vector<float> row(s.flat_size());
  flatten(s, v, row);
  CHECK(row == std::vector<float>{0.5F, -0.25F, 4.0F, 2.0F, 0.0F, 1.0F, 2.0F, 3.0F, 9.5F});
  CHECK(unflatten(s, row) == v);

  const space deeper = space::tuple({s, space::dict({{"again", s}}), space::discrete(3)});
  const space_value dv{.children = {v, space_value{.children = {v}}, space_value{.discrete = {1}}}};
  REQUIRE(contains(deeper, dv));
  std::vector<float> deep_row(deeper.flat_size());
  flatten(deeper, dv, deep_row);
  CHECK(unflatten(deeper, deep_row) == dv);
}

TEST_CASE("flatten_action puts discrete leaves in the int32 part and Box leaves in the float part",
          "[envs][space][flatten]") {
  const space s = nested();
  const space_value v = nested_value();
  std::vector<std::int32_t> ints(s.discrete_size());
  std::vector<float> floats(s.continuous_size());
  flatten_action(s, v, ints, floats);
  CHECK(ints == std::vector<std::int32_t>{4, 2, 0});
  CHECK(floats == std::vector<float>{0.5F, -0.25F, 1.0F, 2.0F, 3.0F, 9.5F});
  CHECK(contains_action(s, ints, floats));
  CHECK(unflatten_action(s, ints, floats) == v);

  ints[0] = 5;  // goal is Discrete(5)
  CHECK_FALSE(contains_action(s, ints, floats));
  ints[0] = 4;
  floats[5] = 10.5F;  // grid is in [0, 10]
  CHECK_FALSE(contains_action(s, ints, floats));
}

TEST_CASE("contains rejects values outside a space or of the wrong structure", "[envs][space]") {
  CHECK(contains(space::discrete(3), space_value{.discrete = {2}}));
  CHECK_FALSE(contains(space::discrete(3), space_value{.discrete = {3}}));
  CHECK_FALSE(contains(space::discrete(3), space_value{.discrete = {-1}}));
  CHECK_FALSE(contains(space::box({2}, 0.0F, 1.0F), space_value{.box = {0.5F}}));
  CHECK_FALSE(contains(space::box({1}, 0.0F, 1.0F), space_value{.box = {std::numeric_limits<float>::quiet_NaN()}}));
  CHECK_FALSE(contains(space::multi_discrete({2, 2}), space_value{.discrete = {1, 2}}));
  CHECK_FALSE(contains(nested(), space_value{.children = {space_value{.box = {0.0F, 0.0F}}}}));
}

TEST_CASE("invalid spaces are rejected with a reason", "[envs][space][errors]") {
  CHECK_THROWS_MATCHES(space::discrete(0), coral::usage_error, Catch::Message("Discrete: n must be at least 1"));
  CHECK_THROWS_MATCHES(space::multi_discrete({}), coral::usage_error,
                       Catch::Message("MultiDiscrete: needs at least one component"));
  CHECK_THROWS_MATCHES(space::box({1}, 1.0F, 0.0F), coral::usage_error,
                       Catch::Message("Box: every low bound must be at most its high bound"));
  CHECK_THROWS_MATCHES(space::dict({{"a", space::discrete(2)}, {"a", space::discrete(3)}}), coral::usage_error,
                       Catch::Message("Dict: duplicate key 'a'"));
  CHECK_THROWS_MATCHES(space::multi_discrete({3, 0}), coral::usage_error,
                       Catch::Message(fmt::format(fmt::runtime(coral::envs::errors::bad_space), "MultiDiscrete",
                                                  "every component count must be at least 1")));
}

TEST_CASE("flatten rejects a row of the wrong width and a value of the wrong structure", "[envs][space][errors]") {
  std::vector<float> row(3);
  CHECK_THROWS_MATCHES(flatten(space::box({2}, 0.0F, 1.0F), space_value{.box = {0.0F, 0.0F}}, row),
                       coral::usage_error, Catch::Message("flatten: row has 3 elements, expected 2"));
  std::vector<float> two(2);
  CHECK_THROWS_MATCHES(flatten(space::box({2}, 0.0F, 1.0F), space_value{.discrete = {1}}, two), coral::usage_error,
                       Catch::Message("value does not match the space Box(0, 1, (2,))"));
}

TEST_CASE("sample_action stays inside the space and repeats for a seed", "[envs][space]") {
  const space s = space::tuple({space::discrete(3), space::box({2}, -0.5F, 0.5F),
                                space::box({1}, 0.0F, std::numeric_limits<float>::infinity()),
                                space::multi_discrete({2, 5})});
  coral::rng a(coral::env_seed{9, 0});
  coral::rng b(coral::env_seed{9, 0});
  std::vector<std::int32_t> ia(s.discrete_size()), ib(s.discrete_size());
  std::vector<float> fa(s.continuous_size()), fb(s.continuous_size());
  for (int i = 0; i < 1000; ++i) {
    sample_action(s, a, ia, fa);
    sample_action(s, b, ib, fb);
    REQUIRE(contains_action(s, ia, fa));
    CHECK(fa[2] <= 1.0F);  // an infinite bound samples within 1 of the finite one
    CHECK(ia == ib);
    CHECK(fa == fb);
  }
}
