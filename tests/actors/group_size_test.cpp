#include "coral/actors/sampler_options.hpp"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <tuple>

#include <catch2/catch.hpp>

#include "coral/actors/sampler.hpp"
#include "coral/core/error.hpp"
#include "coral/envs/cartpole.hpp"
#include "coral/envs/registry.hpp"

#include "../support/watchdog.hpp"

using namespace coral::actors;
using namespace std::chrono_literals;

namespace {

/// `test-held`: cartpole whose every step waits while the test holds the
/// door shut, counting the instances built. A probe that waited for a
/// stalled step would hang (the test's watchdog ends it); one built at all
/// shows in the count. Neither needs a clock.
struct held_door {
  std::mutex mutex;
  std::condition_variable opened;
  bool shut = false;
  std::atomic<int> built{0};

  void set(bool to_shut) {
    {
      std::lock_guard lock(mutex);
      shut = to_shut;
    }
    opened.notify_all();
  }
};
held_door& door() {
  static auto* d = new held_door;  // outlives any probe thread left waiting at exit
  return *d;
}

class held_env final : public coral::envs::env {
 public:
  explicit held_env(coral::env_seed seed)
      : inner_(coral::envs::env_config(coral::envs::cartpole::name, coral::envs::cartpole::config_keys(), {}), seed) {
    door().built.fetch_add(1);
  }
  void reset(const coral::envs::env_rows& rows) override { inner_.reset(rows); }
  void step(const coral::envs::env_rows& rows) override {
    auto& d = door();
    std::unique_lock lock(d.mutex);
    d.opened.wait(lock, [&] { return !d.shut; });
    lock.unlock();
    inner_.step(rows);
  }
  [[nodiscard]] const coral::envs::space& observation_space() const noexcept override {
    return inner_.observation_space();
  }
  [[nodiscard]] const coral::envs::space& action_space() const noexcept override { return inner_.action_space(); }

 private:
  coral::envs::cartpole inner_;
};

void register_held_env() {
  auto& r = coral::envs::registry::global();
  if (r.contains("test-held")) return;
  r.add({.name = "test-held",
         .description = "test env: cartpole whose steps wait while the test holds them",
         .keys = {},
         .factory = [](const coral::envs::env_config&, coral::env_seed s) -> std::unique_ptr<coral::envs::env> {
           return std::make_unique<held_env>(s);
         }});
}

// Auto (envs_per_group 0), as the defaults leave it.
sampler_options size_opts(topology t, std::size_t envs, std::size_t batch, std::size_t threads) {
  sampler_options o;
  std::tie(o.topo, o.num_envs, o.batch_size, o.threads) = std::tie(t, envs, batch, threads);
  return o;
}
}  // namespace

TEST_CASE("auto picks the smallest group whose step reaches the target, else the largest the wiring takes",
          "[actors][group_size]") {
  // A 2 ns env: no group size reaches 50 us, so the largest that divides
  // the batch and leaves a group per thread.
  CHECK(choose_group_size(size_opts(topology::pool, 8, 4, 2), 2e-9) == 4);
  CHECK(choose_group_size(size_opts(topology::pool, 64, 32, 2), 2e-9) == 32);
  CHECK(choose_group_size(size_opts(topology::pool, 8, 4, 4), 2e-9) == 2);  // 4 groups for 4 threads
  CHECK(choose_group_size(size_opts(topology::sync, 16, 0, 2), 2e-9) == 8);
  CHECK(choose_group_size(size_opts(topology::sync, 16, 0, 1), 2e-9) == 16);
  CHECK(choose_group_size(size_opts(topology::double_buffer, 16, 0, 2), 2e-9) == 8);
  // Default pool batch for groups of one: a quarter (2 of 8), fixed before the choice.
  CHECK(choose_group_size(size_opts(topology::pool, 8, 0, 2), 2e-9) == 2);
  // 10 us: 5 envs reach 50 us; 5 does not divide 8, 8 does.
  CHECK(choose_group_size(size_opts(topology::pool, 16, 8, 2), 10e-6) == 8);
  CHECK(choose_group_size(size_opts(topology::pool, 64, 32, 2), 10e-6) == 8);
  // 30 us: 2 envs reach it.
  CHECK(choose_group_size(size_opts(topology::pool, 16, 8, 2), 30e-6) == 2);
  // Heavy envs (MuJoCo, 250-350 us) stay one per group.
  CHECK(choose_group_size(size_opts(topology::pool, 8, 4, 2), 300e-6) == 1);
  // More threads than envs: groups of one.
  CHECK(choose_group_size(size_opts(topology::sync, 4, 0, 8), 2e-9) == 1);
  // An odd env count: only what divides it.
  CHECK(choose_group_size(size_opts(topology::sync, 7, 0, 1), 2e-9) == 7);
  CHECK(choose_group_size(size_opts(topology::sync, 7, 0, 2), 2e-9) == 1);
  // The single executor has one thread, whatever --threads says.
  auto single = size_opts(topology::sync, 16, 0, 2);
  single.executor = coral::executor_mode::single;
  CHECK(choose_group_size(single, 2e-9) == 16);
}

TEST_CASE("auto is checked as groups of one before any probe, and then leaves every other option as it was",
          "[actors][group_size]") {
  // The flags' own errors come first, as for an explicit size.
  CHECK_THROWS_MATCHES(resolve_auto(size_opts(topology::pool, 8, 16, 2)), coral::config_error,
                       Catch::Message("--batch-size: 16 is invalid: the pool topology batches the first envs to "
                                      "finish: it must be below --num-envs (8); use --topology sync for all"));
  auto o = size_opts(topology::pool, 8, 0, 2);
  o.env = "noop";
  const auto r = resolve_auto(o);
  CHECK(r.envs_per_group >= 1);
  CHECK(r.batch_size == 2);  // the default, made explicit
  CHECK(resolve_wiring(r).batch_size == 2);
  CHECK(r.spin != spin_auto);  // resolved: 0 or auto_spin, by the probe's timing
  auto given = o;
  given.envs_per_group = 1;
  given.spin = 20us;
  CHECK(resolve_auto(given).envs_per_group == 1);
  CHECK(resolve_auto(given).batch_size == 0);  // untouched
  CHECK(resolve_auto(given).spin == 20us);
}

TEST_CASE("auto spin: none when a group's step is cheaper than a hand-off between cores, 50 us otherwise",
          "[actors][group_size]") {
  CHECK(choose_spin(0.0, 2) == 0us);
  CHECK(choose_spin(4 * 30e-9, 2) == 0us);  // noop in groups of 4
  CHECK(choose_spin(0.49e-6, 16) == 0us);
  CHECK(choose_spin(auto_spin_below_seconds, 2) == auto_spin);
  CHECK(choose_spin(1e-6, 2) == 50us);     // delay 1 us, groups of one
  CHECK(choose_spin(300e-6, 2) == 50us);   // MuJoCo
  // One thread has nobody to take its work: it keeps the spin that spares
  // it slow wake-ups from the learner and the gates.
  CHECK(choose_spin(4 * 30e-9, 1) == 50us);
  CHECK(choose_spin(0.0, 1) == auto_spin);
  auto lone = size_opts(topology::pool, 8, 4, 1);
  lone.env = "noop";
  CHECK(resolve_auto(lone).spin == auto_spin);  // one sampling thread
  auto single = size_opts(topology::pool, 8, 4, 2);
  single.env = "noop";
  single.executor = coral::executor_mode::single;
  CHECK(resolve_auto(single).spin == auto_spin);  // one thread for everything

  // From the group size resolved, explicit or auto: an env of 1 ms is past
  // the threshold in any group (the probe only measures longer under load).
  auto o = size_opts(topology::pool, 8, 4, 2);
  o.env = "delay";
  o.env_args = {{"mean_us", "1000"}, {"std_us", "0"}};
  CHECK(resolve_auto(o).spin == auto_spin);
  o.envs_per_group = 2;
  CHECK(resolve_auto(o).spin == auto_spin);

  // A probe that fails leaves the spin every release had.
  o.env = "faulty";
  o.env_args = {{"env", "8"}, {"throw_reset", "1"}};
  CHECK(resolve_auto(o).spin == auto_spin);

  // Both given: no probe at all (no instance of the env is built).
  register_held_env();
  o.env = "test-held";
  o.env_args = {};
  o.spin = 0us;
  const int built = door().built.load();
  const auto r = resolve_auto(o);
  CHECK(door().built.load() == built);
  CHECK(r.spin == 0us);
  CHECK(r.envs_per_group == 2);
  o.spin = spin_auto;  // the spin left to auto: the probe builds its env
  (void)resolve_auto(o);
  CHECK(door().built.load() > built);
}

TEST_CASE("the probe measures an env's step on an env of its own, and gives up on one that stalls or fails",
          "[actors][group_size]") {
  coral::test::watchdog dog("the probe and a stalled step", 120s);
  auto o = size_opts(topology::pool, 8, 4, 2);
  o.env = "delay";
  o.env_args = {{"mean_us", "1000"}, {"std_us", "0"}};
  const auto slow = measure_step_seconds(o);
  REQUIRE(slow);
  CHECK(*slow >= 0.9e-3);  // a busy-wait of 1 ms per step (longer only under load)
  CHECK(choose_group_size(o, *slow) == 1);

  // A first step held up for 5 ms (a preemption, cold memory) is one round
  // of three: cartpole still measures fast. With one mean over the 2 ms
  // budget it was the only step measured, and cartpole got groups of one.
  o.env = "faulty";
  o.env_args = {{"env", "8"}, {"stall_step", "1"}, {"stall_ms", "5"}};
  const auto held_up = measure_step_seconds(o);
  REQUIRE(held_up);
  CHECK(*held_up < auto_group_seconds);
  CHECK(choose_group_size(o, *held_up) == 4);  // the largest group the batch of 4 takes

  o.env_args = {{"env", "8"}, {"throw_reset", "1"}};  // env 8: the probe's, one past the run's
  CHECK_FALSE(measure_step_seconds(o).has_value());
  {
    // A step that waits until the door opens: the probe answers after its
    // patience, with the step still waiting (a probe that waited for it
    // would hang here), and its thread ends once the door opens.
    register_held_env();
    auto held = o;
    held.env = "test-held";
    held.env_args = {};
    door().set(true);
    const auto stalled = measure_step_seconds(held, 2ms, 100ms);
    door().set(false);
    REQUIRE(stalled);
    CHECK(*stalled == 0.1);  // "at least the patience"
  }
  // The run's own envs (0..7) were never touched: a sampler still builds and
  // picks groups for them.
  o.env_args = {{"env", "8"}, {"throw_step", "1"}};
  sampler s(o);
  CHECK(s.options().envs_per_group == 1);  // the probe failed: groups of one
  CHECK(s.wires().groups == 8);
}

TEST_CASE("a sampler built with the default options picks its group size itself", "[actors][group_size]") {
  auto o = size_opts(topology::pool, 8, 4, 2);
  o.env = "noop";
  sampler s(o);
  // A noop step is nanoseconds: the largest group the wiring takes.
  CHECK(s.options().envs_per_group == 4);
  CHECK(s.wires().groups == 2);
  CHECK(s.options().spin != spin_auto);  // and its spin
}

TEST_CASE("auto shards: one per thread where the envs and the batch split evenly, else the largest count that does",
          "[actors][group_size][shards]") {
  CHECK(choose_shards(size_opts(topology::pool, 8, 4, 2)) == 2);
  CHECK(choose_shards(size_opts(topology::pool, 128, 64, 16)) == 16);
  CHECK(choose_shards(size_opts(topology::sync, 16, 0, 4)) == 4);
  CHECK(choose_shards(size_opts(topology::double_buffer, 16, 0, 2)) == 2);
  // The default pool batch of 8 envs is 2: two shards of a batch of one.
  CHECK(choose_shards(size_opts(topology::pool, 8, 0, 4)) == 2);
  // 6 envs on 4 threads: 2 shards of 3 envs, 2 threads each.
  CHECK(choose_shards(size_opts(topology::pool, 6, 2, 4)) == 2);
  // Nothing splits: one shard.
  CHECK(choose_shards(size_opts(topology::pool, 7, 3, 2)) == 1);
  CHECK(choose_shards(size_opts(topology::pool, 8, 4, 1)) == 1);
  // An explicit group size is kept: 2 groups of 4 cannot feed 2 shards' batches of 2.
  auto groups_of_4 = size_opts(topology::pool, 8, 4, 2);
  groups_of_4.envs_per_group = 4;
  CHECK(choose_shards(groups_of_4) == 1);
  // The single executor has one thread.
  auto single = size_opts(topology::pool, 8, 4, 2);
  single.executor = coral::executor_mode::single;
  CHECK(choose_shards(single) == 1);
  // --inference-thread asks for one batcher thread.
  auto inference = size_opts(topology::pool, 8, 4, 2);
  inference.inference_thread = true;
  CHECK(choose_shards(inference) == 1);
}

TEST_CASE("auto resolves the shards first and then picks the group size and spin for one shard",
          "[actors][group_size][shards]") {
  auto o = size_opts(topology::pool, 8, 4, 2);
  o.env = "noop";
  o.shards = shards_auto;
  const auto r = resolve_auto(o);
  CHECK(r.shards == 2);
  CHECK(r.batch_size == 4);  // the batch of all shards, as given
  // A shard has 4 envs and a batch of 2: at most groups of 2 (a noop step is far below 50 us).
  CHECK(r.envs_per_group == 2);
  CHECK(r.spin == auto_spin);  // a shard's lone thread: nothing to hand work to
  const auto w = resolve_wiring(r);
  CHECK(w.shards == 2);
  CHECK(w.batch_size == 2);
  auto defaults = size_opts(topology::pool, 8, 0, 2);
  defaults.env = "noop";
  defaults.shards = shards_auto;
  CHECK(resolve_auto(defaults).batch_size == 2);  // the default, made explicit: a shard's batch is 1
  CHECK(resolve_auto(defaults).shards == 2);
  auto one = o;
  one.shards = 1;
  CHECK(resolve_auto(one).shards == 1);  // given: kept
  // A heavy env (a step of 400 us) gets shards too, in groups of one.
  auto heavy = size_opts(topology::pool, 8, 4, 2);
  heavy.env = "delay";
  heavy.env_args = {{"mean_us", "400"}, {"std_us", "0"}};
  heavy.shards = shards_auto;
  const auto h = resolve_auto(heavy);
  CHECK(h.shards == 2);
  CHECK(h.envs_per_group == 1);
  CHECK(h.batch_size == 4);
  auto heavy_given = heavy;
  heavy_given.shards = 1;
  CHECK(resolve_auto(heavy_given).shards == 1);  // given: kept
  // The shard count needs no probe: an env the probe cannot make still gets
  // shards when the group size and the spin are given (the run meets the
  // env's failure itself), and the other settings stay as given.
  auto unprobed = size_opts(topology::pool, 8, 4, 2);
  unprobed.env = "no-such-env";
  unprobed.envs_per_group = 1;
  unprobed.spin = std::chrono::microseconds{7};
  unprobed.shards = shards_auto;
  const auto u = resolve_auto(unprobed);
  CHECK(u.shards == 2);
  CHECK(u.envs_per_group == 1);
  CHECK(u.spin == std::chrono::microseconds{7});
}
