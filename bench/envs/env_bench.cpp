// Steps per second of each built-in env on one core, in two plain loops
// (the MuJoCo envs too, when built):
//  - env_step:  env::step() on one env's rows, resetting by hand when an
//               episode ends (the bare cost of the env and one virtual call);
//  - slice_step: env_slice::step_all() over K envs (what an env group runs:
//               auto-reset, episode bookkeeping, final observations).
// Actions are drawn up front from a seeded rng and replayed, so action
// sampling is not measured. items_per_second is env steps per second.
//
// Run: build/release/bench/envs/env_bench --benchmark_min_time=1

#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "coral/envs/env_batch.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"

namespace {

using namespace coral::envs;
using coral::env_seed;
using coral::rng;

constexpr std::size_t plan_steps = 4096;

config_args bench_args(const std::string& name) {
  if (name == "delay") return {{"mean_us", "10"}, {"std_us", "0"}};
  return {};
}

// plan_steps batches of `rows` uniform random actions (discrete and continuous parts).
struct action_plan {
  action_plan(const env& e, std::size_t rows)
      : discrete_width(e.action_space().discrete_size() * rows),
        continuous_width(e.action_space().continuous_size() * rows),
        discrete(plan_steps * discrete_width),
        continuous(plan_steps * continuous_width) {
    rng r(env_seed{1, 12345});
    const std::size_t nd = e.action_space().discrete_size();
    const std::size_t nc = e.action_space().continuous_size();
    for (std::size_t i = 0; i < plan_steps * rows; ++i) {
      sample_action(e.action_space(), r, std::span(discrete).subspan(i * nd, nd),
                    std::span(continuous).subspan(i * nc, nc));
    }
  }
  // Writes the actions of step t into the batch's action rows.
  void apply(std::size_t t, env_batch& batch) const {
    const std::size_t k = t % plan_steps;
    std::copy_n(discrete.data() + k * discrete_width, discrete_width, batch.discrete_actions().data());
    std::copy_n(continuous.data() + k * continuous_width, continuous_width, batch.continuous_actions().data());
  }
  std::size_t discrete_width, continuous_width;
  std::vector<std::int32_t> discrete;
  std::vector<float> continuous;
};

void env_step(benchmark::State& state, const std::string& name) {
  auto e = registry::global().make(name, bench_args(name), 1, 0);
  const std::size_t rows = e->max_agents();
  env_batch batch(rows, e->observation_space(), e->action_space());
  const action_plan plan(*e, rows);
  env_rows view = batch.view(0, rows);
  std::fill(batch.active().begin(), batch.active().end(), std::uint8_t{1});
  e->reset(view);
  std::size_t t = 0;
  for (auto _ : state) {
    plan.apply(t, batch);
    e->step(view);
    bool live = false;
    for (std::size_t r = 0; r < rows; ++r) {
      live = live || (batch.active()[r] != 0 && batch.terminated()[r] == 0 && batch.truncated()[r] == 0);
    }
    if (!live) {
      std::fill(batch.active().begin(), batch.active().end(), std::uint8_t{1});
      e->reset(view);
    }
    ++t;
    benchmark::DoNotOptimize(batch.observations().data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void slice_step(benchmark::State& state, const std::string& name) {
  const auto k = static_cast<std::size_t>(state.range(0));
  auto envs = registry::global().make_many(name, bench_args(name), 1, 0, k);
  std::size_t rows = 0;
  for (const auto& e : envs) rows += e->max_agents();
  env_batch batch(rows, envs.front()->observation_space(), envs.front()->action_space());
  const action_plan plan(*envs.front(), rows);
  env_slice slice(batch, 0, std::move(envs));
  slice.reset_all();
  std::size_t t = 0;
  for (auto _ : state) {
    plan.apply(t, batch);
    slice.step_all();
    ++t;
    benchmark::DoNotOptimize(batch.observations().data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * static_cast<std::int64_t>(k)));
}

const bool registered = [] {
  for (const auto& name : registry::global().names()) {
    benchmark::RegisterBenchmark(("env_step/" + name).c_str(), env_step, name);
    benchmark::RegisterBenchmark(("slice_step/" + name).c_str(), slice_step, name)->Arg(1)->Arg(64);
  }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
