// The `auto` group size: how many envs one actor steps per message, chosen
// from the env's measured step time and the sampling thread count.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <exception>
#include <limits>
#include <vector>

#include "coral/actors/policy.hpp"
#include "coral/actors/random_policy.hpp"
#include "coral/actors/sampler_options.hpp"
#include "coral/core/interrupts.hpp"
#include "coral/core/logging.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"

namespace coral::actors {

namespace {

/// The probe itself, on the calling thread.
std::optional<double> probe_step_seconds(const sampler_options& o, std::chrono::microseconds budget) {
  using clock = std::chrono::steady_clock;
  try {
    auto made = envs::registry::global().make_many(o.env, o.env_args, o.seed, o.num_envs, 1);
    const envs::space obs = made.front()->observation_space();
    const envs::space act = made.front()->action_space();
    envs::env_batch batch(made.front()->max_agents(), obs, act);
    envs::env_slice slice(batch, 0, std::move(made));
    random_policy pol(act, batch.rows(), o.seed);
    const row_range all{0, static_cast<std::uint32_t>(batch.rows())};
    std::vector<float> log_probs(batch.rows());
    std::vector<float> values(batch.rows());
    slice.reset_all();
    // The budget in rounds, and the fastest round's mean: one preemption, or
    // a first step slowed by cold memory (a sanitizer's shadow pages), lands
    // in one round and cannot make a fast env look slow. With a single mean,
    // a first step held up past the whole budget was the only step measured:
    // cartpole then measured 2 ms and ran in groups of one.
    constexpr int rounds = 3;
    double fastest = std::numeric_limits<double>::infinity();
    for (int round = 0; round < rounds; ++round) {
      const auto start = clock::now();
      const auto until = start + budget / rounds;
      std::uint64_t steps = 0;
      // Ended episodes restart inside step_all (same-step auto-reset), so the
      // figure includes resets at the env's own rate, as a run sees them.
      do {
        pol.act(policy_rows{batch, std::span(&all, 1), log_probs, values});
        slice.step_all();
        ++steps;
      } while (clock::now() < until && steps < 1'000'000);
      const std::chrono::duration<double> elapsed = clock::now() - start;
      fastest = std::min(fastest, elapsed.count() / static_cast<double>(steps));
    }
    return fastest;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<double> measure_step_seconds(const sampler_options& o, std::chrono::microseconds budget,
                                           std::chrono::milliseconds patience) {
  // The probe runs on a thread of its own so that an env that stalls (its
  // step never returns) cannot hang the start, before any watchdog runs: past
  // `patience` the answer is "slow", which is all auto needs to know, and
  // the thread is left to finish (or not) on its own, owning what it uses.
  struct shared_state {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    std::optional<double> result;
  };
  auto state = std::make_shared<shared_state>();
  std::thread probe([state, o, budget] {
    auto r = probe_step_seconds(o, budget);
    std::lock_guard lock(state->mutex);
    state->result = r;
    state->done = true;
    state->done_cv.notify_all();
  });
  // A stop asked for meanwhile (SIGINT) need not wait out the patience:
  // the run it would size stops as soon as it starts.
  const auto deadline = std::chrono::steady_clock::now() + patience;
  std::unique_lock lock(state->mutex);
  while (!state->done && !interrupted() && std::chrono::steady_clock::now() < deadline) {
    state->done_cv.wait_for(lock, std::chrono::milliseconds(20));
  }
  if (!state->done) {
    lock.unlock();
    probe.detach();
    return std::chrono::duration<double>(patience).count();  // at least that slow
  }
  lock.unlock();
  probe.join();
  return state->result;
}

std::size_t choose_group_size(const sampler_options& options, double step_seconds) {
  auto o = options;
  o.envs_per_group = 1;
  o.batch_size = resolve_wiring(o).batch_size;  // fixed before any group size is tried
  // The single executor runs everything on one thread, whatever --threads says.
  const std::size_t threads = o.executor == executor_mode::single ? 1 : o.threads;
  std::size_t largest = 1;
  for (std::size_t k = 1; k <= o.batch_size; ++k) {  // K divides the batch (<= the envs)
    if (o.num_envs % k != 0 || o.batch_size % k != 0) continue;
    if (o.num_envs / k < threads) break;  // fewer groups than threads: one would idle
    o.envs_per_group = k;
    try {
      (void)resolve_wiring(o);
    } catch (const config_error&) {
      continue;  // e.g. double-buffer with an odd number of groups
    }
    if (static_cast<double>(k) * step_seconds >= auto_group_seconds) return k;
    largest = k;
  }
  return largest;
}

std::chrono::microseconds choose_spin(double group_step_seconds, std::size_t threads) {
  return threads > 1 && group_step_seconds < auto_spin_below_seconds ? std::chrono::microseconds{0} : auto_spin;
}

std::size_t choose_shards(const sampler_options& options) {
  if (options.executor == executor_mode::single) return 1;  // one thread, whatever --threads says
  // --inference-thread asks for one batcher thread; shards would each get one.
  if (options.inference_thread) return 1;
  auto o = options;
  if (o.envs_per_group == 0) o.envs_per_group = 1;  // an auto group size is then chosen per shard
  for (std::size_t shards = o.threads; shards > 1; --shards) {
    if (o.threads % shards != 0) continue;
    o.shards = shards;
    try {
      (void)resolve_wiring(o);
      return shards;
    } catch (const config_error&) {
      // the envs, groups or batch do not split this many ways
    }
  }
  return 1;
}

sampler_options resolve_auto(sampler_options o) {
  auto logger = log::get("sampler");
  const bool auto_shards = o.shards == shards_auto;
  const bool auto_group = o.envs_per_group == 0;
  const bool auto_spin_asked = o.spin == spin_auto;
  if (!auto_shards && !auto_group && !auto_spin_asked) return o;
  const auto w = resolve_wiring(o);  // the flags' own errors first (auto shards checked as one)
  const auto batch = w.all_shards_batch();  // of all shards
  if (auto_shards) {
    // For heavy envs too: their hand-offs are under 1% of a step, but a
    // shard keeps its envs on one core, and two shards measured level with
    // one pool or above it for MuJoCo humanoid and ant (BENCHMARKS.md).
    o.batch_size = batch;
    o.shards = choose_shards(o);
    logger->debug("--shards auto: {}", o.shards);
  }
  if (!auto_group && !auto_spin_asked) return o;
  const auto step = measure_step_seconds(o);
  if (auto_group) {
    o.batch_size = batch;
    o.envs_per_group = step ? choose_group_size(one_shard(o), *step) : 1;
    if (step) {
      logger->debug("--envs-per-group auto: {} (an env step took {:.3g} us)", o.envs_per_group, *step * 1e6);
    } else {
      logger->debug("--envs-per-group auto: 1 (the probe env failed)");
    }
  }
  if (auto_spin_asked) {
    const std::size_t threads = o.executor == executor_mode::single ? 1 : o.threads / o.shards;
    o.spin = step ? choose_spin(static_cast<double>(o.envs_per_group) * *step, threads) : auto_spin;
    logger->debug("--spin-us auto: {}", o.spin.count());
  }
  return o;
}

}  // namespace coral::actors
