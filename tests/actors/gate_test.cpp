#include "coral/actors/gate.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <catch2/catch.hpp>

#include "../support/watchdog.hpp"
#include "coral/actors/builtin_policy.hpp"
#include "coral/actors/sampler.hpp"
#include "coral/core/runtime.hpp"
#include "counter_env.hpp"

using namespace coral::actors;
using namespace std::chrono_literals;

namespace {

/// Lets step n of any group through while n < allowed; records every call.
class step_limit_policy final : public gate_policy {
 public:
  std::atomic<std::uint64_t> allowed{1};
  std::vector<std::pair<std::uint32_t, std::uint64_t>> arrivals;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> steps;

  void arrived(std::uint32_t g, std::uint64_t n) override { arrivals.emplace_back(g, n); }
  bool may_step(std::uint32_t, std::uint64_t n, std::size_t) override { return n < allowed.load(); }
  void stepped(std::uint32_t g, std::uint64_t n, std::size_t) override {
    // `allowed` only grows, so a step let through must still be below it.
    if (n >= allowed.load()) ++past_allowed;
    steps.emplace_back(g, n);
  }
  std::uint64_t past_allowed = 0;  // steps let through that the policy did not allow
  /// The most steps any group has been let through.
  [[nodiscard]] std::uint64_t most_steps() const {
    std::uint64_t most = 0;
    for (const auto& [g, n] : steps) most = std::max(most, n + 1);
    return most;
  }
};

std::vector<std::uint32_t> drain(coral::channel<ready_msg>& ch) {
  std::vector<std::uint32_t> out;
  while (auto m = ch.try_receive()) out.push_back(m->group);
  return out;
}

using steps_t = std::vector<std::pair<std::uint32_t, std::uint64_t>>;

}  // namespace

TEST_CASE("a gate forwards what its policy allows, holds the rest, and asks again after a note", "[actors][gate]") {
  asio::io_context io;
  gate g({{0, 1}, {1, 1}, {2, 2}}, {.max_env_steps = 0});
  step_limit_policy policy;
  coral::channel<ready_msg> batcher(3);
  int ends = 0;
  asio::co_spawn(io, g.run(policy, {&batcher}, [&](gate_end) { ++ends; }), asio::detached);
  for (std::uint32_t grp : {2U, 0U, 1U}) REQUIRE(g.inbox().try_send(gate_msg(ready_msg{grp})));
  io.poll();
  CHECK(drain(batcher) == std::vector<std::uint32_t>{2, 0, 1});  // step 0 of each, in arrival order
  CHECK(g.env_steps() == 4);                                      // group 2 has two rows
  // Step 1 of groups 1 and 0 is not allowed yet: held, in arrival order.
  REQUIRE(g.inbox().try_send(gate_msg(ready_msg{1})));
  REQUIRE(g.inbox().try_send(gate_msg(ready_msg{0})));
  io.poll();
  CHECK(drain(batcher).empty());
  CHECK(g.held() == 2);
  // A note without a change lets nothing through; after the change, both go.
  REQUIRE(g.inbox().try_send(gate_msg(allowance_raised{})));
  io.poll();
  CHECK(drain(batcher).empty());
  policy.allowed = 2;
  REQUIRE(g.inbox().try_send(gate_msg(weights_published{7})));
  io.poll();
  CHECK(drain(batcher) == std::vector<std::uint32_t>{1, 0});
  CHECK(g.held() == 0);
  CHECK(g.env_steps() == 6);
  CHECK(policy.arrivals == steps_t{{2, 0}, {0, 0}, {1, 0}, {1, 1}, {0, 1}});
  CHECK(policy.steps == policy.arrivals);
  CHECK(ends == 0);
  g.close();
  io.run();
  CHECK(ends == 0);  // closed, not ended
}

TEST_CASE("an in-order gate policy holds every group behind the first it holds, and is not asked about them",
          "[actors][gate]") {
  // Holds group 0 only; in order, group 1 behind it waits too.
  class front_holder final : public gate_policy {
   public:
    bool hold_zero = true;
    std::vector<std::uint32_t> asked;
    bool may_step(std::uint32_t g, std::uint64_t, std::size_t) override {
      asked.push_back(g);
      return !(hold_zero && g == 0);
    }
    bool in_order() const override { return true; }
  };
  asio::io_context io;
  gate g({{0, 1}, {1, 1}}, {});
  front_holder policy;
  coral::channel<ready_msg> batcher(2);
  asio::co_spawn(io, g.run(policy, {&batcher}, [](gate_end) {}), asio::detached);
  REQUIRE(g.inbox().try_send(gate_msg(ready_msg{0})));
  REQUIRE(g.inbox().try_send(gate_msg(ready_msg{1})));
  io.poll();
  CHECK(drain(batcher).empty());
  CHECK(g.held() == 2);
  CHECK(policy.asked == std::vector<std::uint32_t>{0, 0});  // once per message, never about group 1
  policy.hold_zero = false;
  REQUIRE(g.inbox().try_send(gate_msg(allowance_raised{})));
  io.poll();
  CHECK(drain(batcher) == std::vector<std::uint32_t>{0, 1});
  g.close();
  io.run();
}

TEST_CASE("a gate ends the run at its step limit and on request, once", "[actors][gate]") {
  asio::io_context io;
  step_limit_policy policy;
  policy.allowed = 100;
  coral::channel<ready_msg> batcher(2);
  std::vector<gate_end> ends;
  SECTION("step limit: the steps already done count") {
    gate g({{0, 1}, {1, 1}}, {.env_steps = 10, .max_env_steps = 13});
    asio::co_spawn(io, g.run(policy, {&batcher}, [&](gate_end why) { ends.push_back(why); }), asio::detached);
    for (int round = 0; round < 3; ++round) {
      for (std::uint32_t grp : {0U, 1U}) (void)g.inbox().try_send(gate_msg(ready_msg{grp}));
      io.poll();
      (void)drain(batcher);
    }
    io.run();
    CHECK(g.env_steps() == 13);
    CHECK(ends == std::vector<gate_end>{gate_end::step_limit});
  }
  SECTION("request_end: at the next message, before anything more is let through") {
    gate g({{0, 1}, {1, 1}}, {});
    asio::co_spawn(io, g.run(policy, {&batcher}, [&](gate_end why) { ends.push_back(why); }), asio::detached);
    REQUIRE(g.inbox().try_send(gate_msg(ready_msg{0})));
    io.poll();
    CHECK(drain(batcher).size() == 1);
    g.request_end();
    REQUIRE(g.inbox().try_send(gate_msg(ready_msg{1})));
    io.run();
    CHECK(drain(batcher).empty());
    CHECK(ends == std::vector<gate_end>{gate_end::requested});
  }
}

TEST_CASE("behind a gate, dynamic batching is switched on where held groups could starve a pool batch",
          "[actors][gate]") {
  sampler_options o;
  o.topo = topology::pool;
  o.num_envs = 8;
  o.batch_size = 2;
  o.executor = coral::executor_mode::single;
  auto bo = batcher_options_behind_gate(o, resolve_wiring(o));
  CHECK(bo.min_batch_size == 1);
  CHECK(bo.batch_timeout == 0us);
  o.executor = coral::executor_mode::threads;
  bo = batcher_options_behind_gate(o, resolve_wiring(o), 300us);
  CHECK(bo.batch_timeout == 300us);
  o.topo = topology::sync;
  o.batch_size = 0;
  bo = batcher_options_behind_gate(o, resolve_wiring(o));
  CHECK(bo.min_batch_size == 0);  // every group in each batch: nothing to starve
}

TEST_CASE("a sampler behind a gate steps exactly what a concurrent note sender allows, in every topology",
          "[actors][gate][concurrency]") {
  coral::test::watchdog dog("gate with a sampler", 60s);
  coral::test::counter_env::register_once();
  for (auto t : {topology::sync, topology::double_buffer, topology::pool}) {
    for (auto mode : {coral::executor_mode::threads, coral::executor_mode::single}) {
      INFO(to_string(t) << " " << coral::to_string(mode));
      sampler_options o;
      o.env = "test-counter";
      o.topo = t;
      o.num_envs = 8;
      o.envs_per_group = 2;
      o.batch_size = t == topology::pool ? 4 : 0;
      o.threads = 2;
      o.executor = mode;
      sampler s(o);
      gate g(s.group_rows(), {.max_env_steps = 8 * 40});
      step_limit_policy policy;  // each group may take one step per "round"; the note sender adds rounds
      s.announce_to(g.inbox());
      auto pol = make_builtin_policy("random", s.action_space(), s.rows(), 1);
      coral::runtime rt({.mode = mode});
      rt.on_stop([&] { g.close(); });
      s.spawn(rt, *pol, batcher_options_behind_gate(o, s.wires()));
      std::atomic<int> ended{-1};
      rt.spawn("gate", rt.pool("sampling", 2), g.run(policy, s.ready_channels(), [&](gate_end why) {
        ended = static_cast<int>(why);
        rt.request_stop();
      }));
      rt.spawn("notes", rt.pool("notes", 1), [&]() -> asio::awaitable<void> {
        asio::steady_timer timer(co_await asio::this_coro::executor);
        for (std::uint64_t round = 2; round < 100; ++round) {
          timer.expires_after(200us);
          co_await timer.async_wait(asio::use_awaitable);
          policy.allowed.store(round);
          const bool sent = co_await g.inbox().async_send(gate_msg(weights_published{round}));
          if (!sent) co_return;
        }
      });
      rt.run();
      CHECK(ended.load() == static_cast<int>(gate_end::step_limit));
      CHECK(g.env_steps() == 8 * 40);
      CHECK(policy.past_allowed == 0);
      CHECK(policy.most_steps() <= policy.allowed.load());  // no group ran ahead of the rounds allowed
      CHECK(s.stats().env_steps <= 8 * 40);
    }
  }
}
