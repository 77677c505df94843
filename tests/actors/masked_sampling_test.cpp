#include "coral/actors/random_policy.hpp"

#include <atomic>
#include <chrono>
#include <string>

#include <catch2/catch.hpp>

#include "../support/watchdog.hpp"
#include "coral/actors/builtin_policy.hpp"
#include "coral/actors/sampler.hpp"
#include "coral/core/runtime.hpp"
#include "coral/envs/registry.hpp"

using namespace coral::actors;
using namespace std::chrono_literals;
using coral::executor_mode;

namespace {

/// Sees every batch between the policy's act() and the env step: counts
/// the active rows acted for, and those whose action the mask forbids.
class mask_checker final : public step_consumer {
 public:
  void consume(const step_batch& step) override {
    const auto& b = step.batch;
    const auto counts = coral::envs::discrete_counts(action_space);
    for (const auto& range : step.ranges) {
      for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
        if (b.active()[r] == 0) continue;
        ++acted;
        const std::uint8_t* mask = b.action_masks().row(r).data();
        for (std::size_t c = 0; c < counts.size(); ++c) {
          if (mask[b.discrete_actions()(r, c)] == 0) ++illegal;
          mask += counts[c];
        }
      }
    }
  }
  coral::envs::space action_space;
  std::uint64_t acted = 0;
  std::uint64_t illegal = 0;
};

}  // namespace

TEST_CASE("the random policy never takes a masked action, in every topology and executor",
          "[actors][sampler][mask]") {
  coral::test::watchdog dog("masked sampling", 60s);
  auto t = GENERATE(topology::sync, topology::double_buffer, topology::pool);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  auto env = GENERATE(std::string("tictactoe"), std::string("connect4"), std::string("population"),
                      std::string("cover"));
  CAPTURE(to_string(t), coral::to_string(mode), env);
  sampler_options o;
  o.env = env;
  o.topo = t;
  o.num_envs = 8;
  o.envs_per_group = 2;
  o.threads = 2;
  o.executor = mode;
  o.spin = 20us;
  sampler s(o);
  CHECK(s.batch().has_action_masks());
  auto pol = make_builtin_policy("random", s.action_space(), s.rows(), 7);
  mask_checker check;
  check.action_space = s.action_space();
  coral::runtime rt({.mode = mode});
  s.spawn(rt, *pol, 20'000, &check);
  rt.run();
  CHECK(check.acted > 10'000);
  CHECK(check.illegal == 0);
}

TEST_CASE("the constant policy takes the lowest legal action where the env masks", "[actors][mask]") {
  coral::envs::env_batch batch(1, coral::envs::space::box({1}, 0.0F, 1.0F), coral::envs::space::discrete(4));
  batch.declare_action_masks();
  batch.action_masks()(0, 0) = 0;
  batch.action_masks()(0, 1) = 0;
  auto pol = make_builtin_policy("constant", coral::envs::space::discrete(4), 1, 0);
  const row_range all{0, 1};
  pol->act(policy_rows{batch, std::span(&all, 1), {}, {}});
  CHECK(batch.discrete_actions()(0, 0) == 2);
}
