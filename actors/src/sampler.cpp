#include "coral/actors/sampler.hpp"

#include <chrono>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"

namespace coral::actors {
namespace {

/// Builds envs [first, first + count) of the options' env.
std::vector<std::unique_ptr<envs::env>> make_envs(const sampler_options& o, std::size_t first, std::size_t count) {
  return envs::registry::global().make_many(o.env, o.env_args, o.seed, first, count);
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
  if (rows == nullptr) {
    batch_ = std::make_shared<envs::env_batch>(options_.num_envs * agents, observation_space_, action_space_);
  } else if (rows->rows() != options_.num_envs * agents || rows->obs_dim() != observation_space_.flat_size() ||
             rows->discrete_action_dim() != action_space_.discrete_size() ||
             rows->continuous_action_dim() != action_space_.continuous_size()) {
    throw usage_error("sampler: the rows given do not fit this env's spaces and count");
  } else {
    batch_ = std::move(rows);
  }

  for (std::size_t c = 0; c < wiring_.ready_channels; ++c) {
    // Room for every group: a ready announcement never waits.
    ready_.push_back(std::make_unique<channel<ready_msg>>(wiring_.groups));
  }
  for (std::size_t g = 0; g < wiring_.groups; ++g) {
    envs::env_slice slice(*batch_, g * k * agents, std::move(envs_by_group[g]));
    slice.check_finite(options_.check_finite);
    slice.set_next_step_autoreset(options_.next_step_autoreset);
    groups_.push_back(std::make_unique<env_group>("env-group-" + std::to_string(g), static_cast<std::uint32_t>(g),
                                                  g * k, std::move(slice), *ready_[g % ready_.size()],
                                                  options_.on_env_error));
  }
}

sampler::~sampler() = default;

void sampler::spawn(runtime& rt, policy& pol, std::uint64_t max_env_steps, step_consumer* consumer,
                    const latest<std::vector<float>>* weights) {
  inference_batcher::options bo;
  bo.batch_size = wiring_.batch_size;
  bo.min_batch_size = options_.min_batch_size;
  bo.batch_timeout = options_.batch_timeout;
  bo.max_env_steps = max_env_steps;
  spawn(rt, pol, bo, consumer, weights);
}

void sampler::spawn(runtime& rt, policy& pol, const inference_batcher::options& batcher_options,
                    step_consumer* consumer, const latest<std::vector<float>>* weights) {
  if (batcher_) throw usage_error("sampler::spawn() called twice");
  std::vector<env_group*> groups;
  for (auto& g : groups_) groups.push_back(g.get());
  batcher_ = std::make_unique<inference_batcher>(ready_channels(), std::move(groups), pol, *batch_,
                                                 batcher_options, consumer, weights);

  auto ex = rt.pool(pool_options{.name = "sampling",
                                 .threads = options_.threads,
                                 .pin = options_.pin,
                                 .first_core = 0,
                                 .spin = options_.spin});
  auto* b = batcher_.get();
  rt.on_stop([b] { b->close_all(); });
  // Env groups await their channels only, and close_all() closes every one
  // of them at a stop: no strand (see actor_waits).
  for (auto& g : groups_) rt.spawn(g->name(), ex, g->run(), actor_waits::channels_only);
  auto batcher_ex = ex;
  if (options_.inference_thread) {
    batcher_ex = rt.pool(pool_options{.name = "inference", .threads = 1, .spin = options_.spin});
  }
  rt.spawn("inference-batcher", batcher_ex, b->run(),
           b->waits_with_deadline() ? actor_waits::anything : actor_waits::channels_only);
}

void sampler::announce_to(channel<gate_msg>& gate_inbox) noexcept {
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

const batcher_stats& sampler::stats() const {
  if (!batcher_) throw usage_error("sampler::stats() before spawn()");
  return batcher_->stats();
}

std::uint64_t sampler::env_failures() const noexcept {
  std::uint64_t n = 0;
  for (const auto& g : groups_) n += g->env_failures();
  return n;
}

void sampler::watch_by(stall_watchdog& watchdog) const {
  watchdog.watch("env steps", [this] { return stats().env_steps.load(); });
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
  if (batcher_) {
    const auto& st = batcher_->stats();
    out += fmt::format("  actor 'inference-batcher': {} batches, {} env steps\n", st.batches.load(),
                       st.env_steps.load());
  }
}

loop_result run_plain_loop(const sampler_options& options, policy& pol, std::uint64_t env_steps,
                           bool (*stop)() noexcept) {
  auto all = make_envs(options, 0, options.num_envs);
  const envs::space obs = all.front()->observation_space();
  const envs::space act = all.front()->action_space();
  const std::size_t agents = all.front()->max_agents();
  envs::env_batch batch(options.num_envs * agents, obs, act);
  envs::env_slice slice(batch, 0, std::move(all));
  slice.check_finite(options.check_finite);
  const row_range everything{0, static_cast<std::uint32_t>(batch.rows())};
  std::vector<float> log_probs(batch.rows());
  std::vector<float> values(batch.rows());

  slice.reset_all();
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t steps = 0;
  while (steps < env_steps && (stop == nullptr || !stop())) {
    pol.act(policy_rows{batch, std::span(&everything, 1), log_probs, values});
    slice.step_all();
    steps += options.num_envs;
  }
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return {steps, elapsed.count()};
}

}  // namespace coral::actors
