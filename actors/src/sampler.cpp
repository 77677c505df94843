#include "coral/actors/sampler.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <latch>
#include <new>
#include <thread>

#include <fmt/format.h>

#include "coral/actors/errors.hpp"
#include "coral/core/error.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"

namespace coral::actors {
namespace {

/// Builds envs [first, first + count) of the options' env. A failure past
/// the config (memory, most often: MuJoCo's "Could not allocate memory")
/// names the env and how many of the run's envs were built before it.
std::vector<std::unique_ptr<envs::env>> make_envs(const sampler_options& o, std::size_t first, std::size_t count) {
  std::vector<std::unique_ptr<envs::env>> made;
  made.reserve(count);
  const auto& registry = envs::registry::global();
  auto built_then = [&](std::string_view what) {
    return error(fmt::format(fmt::runtime(errors::envs_not_built), o.env, first + made.size(), o.num_envs, what));
  };
  try {
    for (std::size_t i = 0; i < count; ++i) made.push_back(registry.make(o.env, o.env_args, o.seed, first + i));
  } catch (const config_error&) {
    throw;  // the config: the same for every env, said as it is
  } catch (const std::bad_alloc&) {
    throw built_then("out of memory");
  } catch (const std::exception& e) {
    throw built_then(e.what());
  }
  return made;
}

}  // namespace

sampler::sampler(sampler_options options) : sampler(std::move(options), nullptr) {}

sampler::sampler(sampler_options options, std::shared_ptr<envs::env_batch> rows)
    : options_(resolve_auto(std::move(options))), wiring_(resolve_wiring(options_)) {
  const std::size_t k = options_.envs_per_group;
  std::vector<std::vector<std::unique_ptr<envs::env>>> envs_by_group;
  envs_by_group.reserve(wiring_.groups);
  for (std::size_t g = 0; g < wiring_.groups; ++g) envs_by_group.push_back(make_envs(options_, g * k, k));

  const envs::env& probe = *envs_by_group.front().front();
  observation_space_ = probe.observation_space();
  action_space_ = probe.action_space();
  const std::size_t agents = probe.max_agents();
  const std::size_t per_shard = wiring_.groups / wiring_.shards;
  const std::size_t shard_rows = per_shard * k * agents;
  // Shard s's rows start at s × stride (see shard_row_alignment).
  const std::size_t stride = wiring_.shards == 1
                                 ? shard_rows
                                 : (shard_rows + shard_row_alignment - 1) / shard_row_alignment * shard_row_alignment;
  const std::size_t batch_rows = (wiring_.shards - 1) * stride + shard_rows;
  if (rows == nullptr) {
    batch_ = std::make_shared<envs::env_batch>(batch_rows, observation_space_, action_space_);
  } else if (rows->rows() != batch_rows || rows->obs_dim() != observation_space_.flat_size() ||
             rows->discrete_action_dim() != action_space_.discrete_size() ||
             rows->continuous_action_dim() != action_space_.continuous_size()) {
    throw usage_error("sampler: the rows given do not fit this env's spaces and count");
  } else {
    batch_ = std::move(rows);
  }

  for (std::size_t c = 0; c < wiring_.ready_channels * wiring_.shards; ++c) {
    // Room for every group of its shard: a ready announcement never waits.
    ready_.push_back(std::make_unique<channel<ready_msg>>(per_shard));
  }
  for (std::size_t g = 0; g < wiring_.groups; ++g) {
    const std::size_t first_row = (g / per_shard) * stride + (g % per_shard) * k * agents;
    envs::env_slice slice(*batch_, first_row, std::move(envs_by_group[g]));
    slice.check_finite(options_.check_finite);
    slice.set_next_step_autoreset(options_.next_step_autoreset);
    slice.set_autoreset(options_.autoreset);
    const std::size_t channel = (g / per_shard) * wiring_.ready_channels + (g % per_shard) % wiring_.ready_channels;
    groups_.push_back(std::make_unique<env_group>("env-group-" + std::to_string(g), static_cast<std::uint32_t>(g),
                                                  g * k, std::move(slice), *ready_[channel],
                                                  options_.on_env_error));
    groups_.back()->share_failure_log(logged_env_failures_);
  }
}

sampler::~sampler() = default;

void sampler::spawn(runtime& rt, policy& pol, std::uint64_t max_env_steps, step_consumer* consumer,
                    const latest<std::vector<float>>* weights) {
  inference_batcher::options bo;
  bo.batch_size = wiring_.batch_size;
  bo.min_batch_size = options_.min_batch_size / wiring_.shards;  // resolve_wiring checked it divides
  bo.batch_timeout = options_.batch_timeout;
  bo.max_env_steps = max_env_steps;
  spawn(rt, pol, bo, consumer, weights);
}

void sampler::spawn(runtime& rt, policy& pol, const inference_batcher::options& batcher_options,
                    step_consumer* consumer, const latest<std::vector<float>>* weights) {
  if (!batchers_.empty()) throw usage_error("sampler::spawn() called twice");
  const std::size_t shards = wiring_.shards;
  if (shards > 1) {
    auto refuse = [shards](std::string_view what) {
      throw usage_error(fmt::format("sampler: {} shards run {} batchers at once, {}", shards, shards, what));
    };
    if (!pol.acts_concurrently()) refuse("and this policy acts on one batch at a time (use one shard)");
    if (consumer != nullptr && !consumer->consumes_concurrently()) {
      refuse("and this step consumer takes the batches of one at a time");
    }
    if (weights != nullptr) refuse("and a policy that loads weights serves one");
    if (gated_) refuse("and a gate holds back the groups of one");
  }
  const std::size_t per_shard = groups_.size() / shards;
  const std::size_t threads = options_.threads / shards;
  auto bo = batcher_options;
  if (shards > 1 && bo.max_env_steps != 0 && bo.budget == nullptr) {
    budget_ = std::make_unique<step_budget>(bo.max_env_steps, shards);
    bo.budget = budget_.get();
    bo.max_env_steps = 0;
  }
  for (std::size_t s = 0; s < shards; ++s) {
    const auto first = ready_.begin() + static_cast<std::ptrdiff_t>(s * wiring_.ready_channels);
    std::vector<channel<ready_msg>*> ready;
    for (auto it = first; it != first + static_cast<std::ptrdiff_t>(wiring_.ready_channels); ++it) {
      ready.push_back(it->get());
    }
    std::vector<env_group*> groups;
    for (std::size_t g = s * per_shard; g < (s + 1) * per_shard; ++g) groups.push_back(groups_[g].get());
    batchers_.push_back(
        std::make_unique<inference_batcher>(std::move(ready), std::move(groups), pol, *batch_, bo, consumer, weights));
  }

  for (std::size_t s = 0; s < shards; ++s) {
    const std::string suffix = shards == 1 ? "" : "-" + std::to_string(s);
    auto ex = rt.pool(pool_options{.name = "sampling" + suffix,
                                   .threads = threads,
                                   .pin = options_.pin,
                                   .first_core = s * threads,
                                   .spin = options_.spin});
    auto* b = batchers_[s].get();
    rt.on_stop([b] { b->close_all(); });
    // Env groups await their channels only, and close_all() closes every one
    // of them at a stop: no strand (see actor_waits).
    for (std::size_t g = s * per_shard; g < (s + 1) * per_shard; ++g) {
      rt.spawn(groups_[g]->name(), ex, groups_[g]->run(), actor_waits::channels_only);
    }
    auto batcher_ex = ex;
    if (options_.inference_thread) {
      batcher_ex = rt.pool(pool_options{.name = "inference" + suffix, .threads = 1, .spin = options_.spin});
    }
    rt.spawn("inference-batcher" + suffix, batcher_ex, b->run(),
             b->waits_with_deadline() ? actor_waits::anything : actor_waits::channels_only);
  }
}

void sampler::announce_to(channel<gate_msg>& gate_inbox) noexcept {
  gated_ = true;
  for (auto& g : groups_) g->announce_to(gate_inbox);
}

std::vector<channel<ready_msg>*> sampler::ready_channels() const {
  std::vector<channel<ready_msg>*> out;
  for (const auto& c : ready_) out.push_back(c.get());
  return out;
}

std::vector<row_range> sampler::group_rows() const {
  std::vector<row_range> out;
  for (const auto& g : groups_) out.push_back(g->rows());
  return out;
}

std::vector<std::uint64_t> sampler::row_streams() const {
  const std::size_t used = options_.num_envs * first_env().max_agents();
  std::vector<std::uint64_t> out(rows());
  for (std::size_t r = 0; r < out.size(); ++r) out[r] = used + r;  // unused rows: past every env's
  std::uint64_t next = 0;
  for (const auto& g : groups_) {
    const auto range = g->rows();
    for (std::uint32_t i = 0; i < range.count; ++i) out[range.first + i] = next++;
  }
  return out;
}

sampler_stats sampler::stats() const {
  if (batchers_.empty()) throw usage_error("sampler::stats() before spawn()");
  sampler_stats out;
  std::int64_t idle = 0;
  std::int64_t run = 0;
  for (const auto& b : batchers_) {
    const auto& st = b->stats();
    out.env_steps += st.env_steps.load(std::memory_order_relaxed);
    out.batches += st.batches.load(std::memory_order_relaxed);
    const auto r = st.run_ns.load(std::memory_order_relaxed);
    out.run_ns = std::max(out.run_ns, r);
    run += r;
    idle += st.idle_ns.load(std::memory_order_relaxed);
  }
  out.idle_fraction = run > 0 ? static_cast<double>(idle) / static_cast<double>(run) : 0.0;
  return out;
}

std::uint64_t sampler::env_failures() const noexcept {
  std::uint64_t n = 0;
  for (const auto& g : groups_) n += g->env_failures();
  return n;
}

void sampler::watch_by(stall_watchdog& watchdog) const {
  watchdog.watch("env steps", [this] { return stats().env_steps; });
  watchdog.describe([this](std::string& out) { describe(out); });
}

void sampler::describe(std::string& out) const {
  for (const auto& g : groups_) {
    out += fmt::format("  actor '{}': {} steps, {}\n", g->name(), g->steps(), g->where());
  }
  for (std::size_t c = 0; c < ready_.size(); ++c) {
    out += fmt::format("  ready channel {}: {} of {} buffered, {} receiver(s) parked\n", c, ready_[c]->size(),
                       ready_[c]->capacity(), ready_[c]->waiting_receivers());
  }
  for (std::size_t s = 0; s < batchers_.size(); ++s) {
    const auto& st = batchers_[s]->stats();
    out += fmt::format("  actor 'inference-batcher{}': {} batches, {} env steps in {:.3f} s\n",
                       batchers_.size() == 1 ? "" : "-" + std::to_string(s), st.batches.load(),
                       st.env_steps.load(), static_cast<double>(st.run_ns.load()) * 1e-9);
  }
}

std::vector<std::string> sampler::batcher_names() const {
  std::vector<std::string> out;
  for (std::size_t s = 0; s < batchers_.size(); ++s) {
    out.push_back(batchers_.size() == 1 ? std::string("inference-batcher") : fmt::format("inference-batcher-{}", s));
  }
  return out;
}

void sampler::chart(actor_graph& graph) const {
  if (batchers_.empty()) throw usage_error("sampler::chart() before spawn()");
  const auto batchers = batcher_names();
  const std::size_t shards = batchers_.size();
  const std::size_t per_shard = groups_.size() / shards;
  const std::size_t per_channel = wiring_.ready_channels;
  for (std::size_t c = 0; c < ready_.size(); ++c) {
    const std::size_t shard = c / per_channel;
    std::vector<std::string> senders;
    if (gated_) {
      senders.emplace_back("gate");
    } else {
      // Shard s's group i announces on its shard's channel i % per_channel.
      for (std::size_t i = 0; i < per_shard; ++i) {
        if (i % per_channel == c % per_channel) senders.push_back(groups_[shard * per_shard + i]->name());
      }
    }
    graph.add_channel(fmt::format("ready-{}", c), std::move(senders), {batchers[shard]}, *ready_[c]);
  }
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    auto* group = groups_[g].get();
    graph.add_channel(group->name() + " actions", {batchers[g / per_shard]}, {group->name()}, group->actions());
    graph.add_activity(group->name(), [group] { return group->busy(); });
  }
  for (std::size_t s = 0; s < shards; ++s) {
    const auto* st = &batchers_[s]->stats();
    graph.add_busy_time(batchers[s], [st] { return st->idle_ns.load(std::memory_order_relaxed); });
  }
}

namespace {

/// One plain loop over envs [first, first + count): its envs, batch and
/// policy, built on the caller's thread.
class plain_loop {
 public:
  plain_loop(const sampler_options& options, std::size_t first, std::size_t count) {
    auto envs = make_envs(options, first, count);
    const envs::space obs = envs.front()->observation_space();
    const envs::space act = envs.front()->action_space();
    const std::size_t agents = envs.front()->max_agents();
    batch_ = std::make_unique<envs::env_batch>(count * agents, obs, act);
    slice_ = std::make_unique<envs::env_slice>(*batch_, 0, std::move(envs));
    slice_->check_finite(options.check_finite);
    everything_ = row_range{0, static_cast<std::uint32_t>(batch_->rows())};
    log_probs_.resize(batch_->rows());
    values_.resize(batch_->rows());
    envs_ = count;
  }

  [[nodiscard]] std::size_t rows() const noexcept { return batch_->rows(); }
  void reset() { slice_->reset_all(); }
  /// One turn: act on every row, step every env; the env steps done.
  std::uint64_t turn(policy& pol) {
    pol.act(policy_rows{*batch_, std::span(&everything_, 1), log_probs_, values_});
    slice_->step_all();
    return envs_;
  }

 private:
  std::unique_ptr<envs::env_batch> batch_;
  std::unique_ptr<envs::env_slice> slice_;
  row_range everything_{};
  std::vector<float> log_probs_;
  std::vector<float> values_;
  std::size_t envs_ = 0;
};

}  // namespace

loop_result run_plain_loops(const sampler_options& options, std::size_t loops, const loop_policy_factory& make_policy,
                            std::uint64_t env_steps, bool (*stop)() noexcept) {
  if (loops == 0 || options.num_envs % loops != 0) {
    throw usage_error(fmt::format("run_plain_loops: {} loops do not split {} envs evenly", loops, options.num_envs));
  }
  const std::size_t each = options.num_envs / loops;
  std::vector<std::unique_ptr<plain_loop>> all;
  std::vector<std::unique_ptr<policy>> policies;
  for (std::size_t k = 0; k < loops; ++k) {
    all.push_back(std::make_unique<plain_loop>(options, k * each, each));
    policies.push_back(make_policy(k * all.back()->rows(), all.back()->rows()));
    all.back()->reset();
  }
  const std::uint64_t share = (env_steps + loops - 1) / loops;

  std::atomic<bool> done{false};  // one loop did its share, one failed, or stop() said so
  std::latch ready(static_cast<std::ptrdiff_t>(loops) + 1);
  std::vector<std::uint64_t> steps(loops, 0);
  std::vector<double> seconds(loops, 0.0);
  std::vector<std::exception_ptr> errors(loops);
  std::chrono::steady_clock::time_point start;
  auto run = [&](std::size_t k) {
    ready.arrive_and_wait();
    try {
      std::uint64_t n = 0;
      while (!done.load(std::memory_order_relaxed)) {
        n += all[k]->turn(*policies[k]);
        if (n >= share || (stop != nullptr && stop())) done.store(true, std::memory_order_relaxed);
      }
      steps[k] = n;
    } catch (...) {
      errors[k] = std::current_exception();
      done.store(true, std::memory_order_relaxed);
    }
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    seconds[k] = elapsed.count();
  };
  {
    std::vector<std::jthread> threads;
    threads.reserve(loops);
    try {
      for (std::size_t k = 1; k < loops; ++k) threads.emplace_back(run, k);
    } catch (...) {  // no thread: those started see done, and are joined
      done.store(true, std::memory_order_relaxed);
      ready.count_down(static_cast<std::ptrdiff_t>(loops + 1 - threads.size()));
      throw;
    }
    start = std::chrono::steady_clock::now();  // before the latch opens: every thread reads it after
    ready.count_down();
    run(0);
  }  // joins
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  loop_result out;
  for (std::size_t k = 0; k < loops; ++k) {
    out.env_steps += steps[k];
    out.seconds = std::max(out.seconds, seconds[k]);
  }
  return out;
}

}  // namespace coral::actors
