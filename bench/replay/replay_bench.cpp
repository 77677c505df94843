// Replay buffer micro-benchmarks: a 1,000,000-transition buffer of
// cartpole-sized transitions (4-float observation, 1 int32 action).
//
// - insert/B: inserts of B transitions at a time into a full buffer (every
//   insert overwrites), against a plain ring of vectors with a priority array
//   and no tree (insert_baseline/B).
// - sample_update/256: one stratified prioritized sample of 256 plus the
//   priority update of those 256, against a plain priority vector sampled by a
//   prefix-sum linear scan (sample_update_baseline/256), and against the
//   same work done the way the buffer did it before issue 15
//   (sample_update_reference/256: reference_tree.hpp, a uint64 generation
//   array, std::pow per draw and per update), on the same leaves;
//   sample_update_mid_ring/256 is the same with the ring's head half way
//   round instead of just past the wrap.
// - sequence_sample_update/64: R2D2's replay (issue 12): a prioritized
//   sample of 64 sequences of 80 slots gathered into a batch, plus their
//   priority update, from a sequence_buffer of 100,000 cartpole-sized
//   sequences with an LSTM-64 state (sequence_sample_only/64 without the
//   update).

#include <benchmark/benchmark.h>

#include <cmath>
#include <limits>
#include <span>
#include <cstdint>
#include <memory>
#include <vector>

#include "coral/core/rng.hpp"
#include "coral/replay/replay_buffer.hpp"
#include "coral/replay/sequence_buffer.hpp"
#include "reference_tree.hpp"

namespace {

using coral::replay::replay_buffer;
using coral::replay::replay_config;
using coral::replay::sampled_batch;
using coral::replay::transition_batch;

constexpr std::size_t capacity = 1'000'000;
constexpr std::size_t obs_dim = 4;
constexpr std::size_t n_step = 3;

replay_config config() {
  replay_config c;
  c.capacity = capacity;
  c.num_streams = 1;
  c.obs_dim = obs_dim;
  c.discrete_action_dim = 1;
  c.n_step = n_step;
  c.alpha = 0.6;
  return c;
}

/// B transitions of one stream, mid-episode (k = n), one episode end every
/// 200 steps (cartpole-like episodes).
struct batch_data {
  explicit batch_data(std::size_t b)
      : obs(b * obs_dim, 0.5f), next(b * obs_dim, 0.25f), actions(b, 1), returns(b, 1.0f), discounts(b, 0.97f),
        steps(b, n_step), last(b, 0) {
    for (std::size_t i = 199; i < b; i += 200) {
      last[i] = 1;
      steps[i] = 1;
    }
  }
  transition_batch view() const {
    return {steps.size(), obs, actions, {}, returns, discounts, steps, last, next};
  }
  std::vector<float> obs, next;
  std::vector<std::int32_t> actions;
  std::vector<float> returns, discounts;
  std::vector<std::uint32_t> steps;
  std::vector<std::uint8_t> last;
};

/// Full, its ring's head `head` slots past the wrap (a multiple of 1000).
std::unique_ptr<replay_buffer> full_buffer(std::size_t head = 1000) {
  auto buffer = std::make_unique<replay_buffer>(config());
  const batch_data data(1000);
  for (std::size_t i = 0; i < (capacity + head) / 1000; ++i) buffer->insert(0, data.view());
  return buffer;
}

void insert(benchmark::State& state) {
  const auto b = static_cast<std::size_t>(state.range(0));
  auto buffer = full_buffer();
  const batch_data data(b);
  const transition_batch view = data.view();
  for (auto _ : state) {
    buffer->insert(0, view);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(b));
}
BENCHMARK(insert)->Arg(256)->Arg(1024);

/// The same data into plain arrays: observation, action, return, discount,
/// steps and a max priority; no tree, no validation.
void insert_baseline(benchmark::State& state) {
  const auto b = static_cast<std::size_t>(state.range(0));
  std::vector<float> obs(capacity * obs_dim), returns(capacity), discounts(capacity);
  std::vector<std::int32_t> actions(capacity);
  std::vector<std::uint16_t> steps(capacity);
  std::vector<double> priorities(capacity);
  const batch_data data(b);
  std::size_t head = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < b; ++i) {
      const std::size_t slot = head;
      head = head + 1 == capacity ? 0 : head + 1;
      for (std::size_t d = 0; d < obs_dim; ++d) obs[slot * obs_dim + d] = data.obs[i * obs_dim + d];
      actions[slot] = data.actions[i];
      returns[slot] = data.returns[i];
      discounts[slot] = data.discounts[i];
      steps[slot] = static_cast<std::uint16_t>(data.steps[i]);
      priorities[slot] = 1.0;
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(b));
}
BENCHMARK(insert_baseline)->Arg(256)->Arg(1024);

/// A prioritized sample of the benchmark's batch from `buffer`, then the
/// update of its keys with random TD errors, per iteration.
void sample_then_update(benchmark::State& state, replay_buffer& buffer) {
  const auto b = static_cast<std::size_t>(state.range(0));
  coral::rng rng(42);
  sampled_batch out;
  std::vector<float> td(b);
  for (auto _ : state) {
    buffer.sample_prioritized(rng, b, 0.4, out);
    for (auto& x : td) x = static_cast<float>(rng.uniform(0.0, 2.0));
    benchmark::DoNotOptimize(buffer.update_priorities(out.keys, td));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(b));
}

void sample_update(benchmark::State& state) { sample_then_update(state, *full_buffer()); }
BENCHMARK(sample_update)->Arg(256)->Unit(benchmark::kMicrosecond);

/// sample_update with the ring's head half way round: a slot drawn at
/// random is then as likely to be behind the head (written in this lap) as
/// ahead of it (the lap before), as in a buffer that keeps filling, where
/// the head sits 1000 slots past the wrap in sample_update.
void sample_update_mid_ring(benchmark::State& state) { sample_then_update(state, *full_buffer(capacity / 2)); }
BENCHMARK(sample_update_mid_ring)->Arg(256)->Unit(benchmark::kMicrosecond);

/// The two halves of sample_update apart.
void sample_only(benchmark::State& state) {
  const auto b = static_cast<std::size_t>(state.range(0));
  auto buffer = full_buffer();
  coral::rng rng(42);
  sampled_batch out;
  for (auto _ : state) {
    buffer->sample_prioritized(rng, b, 0.4, out);
    benchmark::DoNotOptimize(out.keys.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(b));
}
BENCHMARK(sample_only)->Arg(256)->Unit(benchmark::kMicrosecond);

void update_only(benchmark::State& state) {
  const auto b = static_cast<std::size_t>(state.range(0));
  auto buffer = full_buffer();
  coral::rng rng(42);
  sampled_batch out;
  std::vector<float> td(b);
  std::vector<coral::replay::sample_key> keys(b);
  for (auto _ : state) {
    state.PauseTiming();
    // The keys of a prioritized draw, as a learner sends them back: the
    // draw has just read their tree and generation lines, as in sample_update.
    buffer->sample_prioritized(rng, b, 0.4, out);
    for (auto& x : td) x = static_cast<float>(rng.uniform(0.0, 2.0));
    state.ResumeTiming();
    benchmark::DoNotOptimize(buffer->update_priorities(out.keys, td));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(b));
}
BENCHMARK(update_only)->Arg(256)->Unit(benchmark::kMicrosecond);

/// The sample and update of replay_buffer as they were before issue 15
/// (sample_prioritized and update_priorities of commit 6951f21, with the
/// checks that cannot fail here left out), over reference_tree and a
/// generation array holding the same leaves and generations as the buffer
/// of sample_update: the old path, timed in the same run as the new one.
class reference_path {
 public:
  explicit reference_path(const replay_buffer& buffer)
      : tree_(buffer.capacity()), generations_(buffer.capacity()), capacity_(buffer.capacity()) {
    for (std::size_t slot = 0; slot < capacity_; ++slot) {
      tree_.leaf_data()[slot] = buffer.sampleable(slot) ? static_cast<float>(buffer.priority(slot)) : 0.0f;
      generations_[slot] = buffer.generation(slot);
    }
    tree_.refresh(0, capacity_);
  }

  void sample(coral::rng& rng, std::size_t batch, double beta, sampled_batch& out) {
    out.keys.resize(batch);
    out.probabilities.resize(batch);
    out.weights.resize(batch);
    const double total = tree_.total();
    const double stratum = total / static_cast<double>(batch);
    const double min_leaf = tree_.min();
    const auto neg_beta = static_cast<float>(-beta);
    for (std::size_t i = 0; i < batch; ++i) out.probabilities[i] = (static_cast<double>(i) + rng.uniform()) * stratum;
    slots_.resize(batch);
    const std::uint64_t* generations = generations_.data();
    tree_.find_prefix_many(out.probabilities, slots_,
                           [generations](std::size_t slot) { __builtin_prefetch(generations + slot); });
    const double inv_total = 1.0 / total;
    const double inv_min_leaf = 1.0 / min_leaf;
    for (std::size_t i = 0; i < batch; ++i) {
      const double leaf = tree_.get(slots_[i]);
      out.probabilities[i] = leaf * inv_total;
      out.weights[i] = std::pow(static_cast<float>(leaf * inv_min_leaf), neg_beta);
    }
    for (std::size_t i = 0; i < batch; ++i) out.keys[i] = {slots_[i], generations[slots_[i]]};
  }

  std::size_t update(std::span<const coral::replay::sample_key> keys, std::span<const float> td_errors) {
    slots_.resize(keys.size());
    values_.resize(keys.size());
    const auto alpha = static_cast<float>(0.6);
    for (const auto& key : keys) {
      if (key.slot < capacity_) {
        __builtin_prefetch(generations_.data() + key.slot);
        tree_.prefetch(key.slot);
      }
    }
    std::size_t applied = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const auto key = keys[i];
      if (key.slot >= capacity_ || generations_[key.slot] != key.generation || !(tree_.get(key.slot) > 0.0f)) continue;
      const double priority = std::abs(static_cast<double>(td_errors[i])) + 1e-6;
      const float leaf = std::max(std::pow(static_cast<float>(priority), alpha), std::numeric_limits<float>::min());
      if (priority > max_priority_) max_priority_ = priority;
      slots_[applied] = key.slot;
      values_[applied] = leaf;
      ++applied;
    }
    tree_.set_many(std::span(slots_).first(applied), std::span(values_).first(applied));
    return applied;
  }

 private:
  coral::replay::bench::reference_tree tree_;
  coral::huge_vector<std::uint64_t> generations_;
  std::size_t capacity_;
  std::vector<std::size_t> slots_;
  std::vector<float> values_;
  double max_priority_ = 1.0;
};

void sample_update_reference(benchmark::State& state) {
  const auto b = static_cast<std::size_t>(state.range(0));
  reference_path path(*full_buffer());
  coral::rng rng(42);
  sampled_batch out;
  std::vector<float> td(b);
  for (auto _ : state) {
    path.sample(rng, b, 0.4, out);
    for (auto& x : td) x = static_cast<float>(rng.uniform(0.0, 2.0));
    benchmark::DoNotOptimize(path.update(out.keys, td));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(b));
}
BENCHMARK(sample_update_reference)->Arg(256)->Unit(benchmark::kMicrosecond);

/// A plain vector of priority^alpha: stratified sampling by one prefix-sum
/// scan over all of it, updates by direct writes.
void sample_update_baseline(benchmark::State& state) {
  const auto b = static_cast<std::size_t>(state.range(0));
  std::vector<double> leaves(capacity, 1.0);
  coral::rng rng(42);
  std::vector<std::size_t> picked(b);
  for (auto _ : state) {
    double total = 0.0;
    for (const double x : leaves) total += x;
    const double stratum = total / static_cast<double>(b);
    double prefix = 0.0;
    std::size_t slot = 0;
    for (std::size_t i = 0; i < b; ++i) {
      const double mass = (static_cast<double>(i) + rng.uniform()) * stratum;
      while (slot + 1 < capacity && prefix + leaves[slot] <= mass) prefix += leaves[slot++];
      picked[i] = slot;
    }
    for (const std::size_t s : picked) leaves[s] = std::pow(rng.uniform(0.0, 2.0) + 1e-6, 0.6);
    benchmark::DoNotOptimize(picked.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(b));
}
BENCHMARK(sample_update_baseline)->Arg(256)->Unit(benchmark::kMicrosecond);

}  // namespace

/// A full sequence buffer of 100,000 sequences of 80 (burn-in 40), cartpole
/// observations and an LSTM-64 state (128 floats).
std::unique_ptr<coral::replay::sequence_buffer> full_sequences() {
  coral::replay::sequence_buffer_config c;
  c.layout = {.length = 80, .burn_in = 40, .overlap = 40, .obs_dim = obs_dim, .discrete_dim = 1, .state_dim = 128};
  c.capacity = 100'000;
  c.num_streams = 8;
  c.alpha = 0.9;
  auto buffer = std::make_unique<coral::replay::sequence_buffer>(c);
  coral::replay::sequence_block block;
  block.layout = c.layout;
  constexpr std::size_t per_block = 1000;
  for (std::size_t i = 0; i < per_block; ++i) block.streams.push_back(static_cast<std::uint32_t>(i % 8));
  block.observations.assign(per_block * c.layout.observation_floats(), 0.5f);
  block.actions.assign(per_block * 80, 1);
  block.rewards.assign(per_block * 80, 1.0f);
  block.flags.assign(per_block * 80, 1);
  block.states.assign(per_block * 128, 0.1f);
  block.env_steps = per_block * 40;
  for (std::size_t i = 0; i < c.capacity / per_block; ++i) buffer->insert(block);
  return buffer;
}

void sequence_sample_update(benchmark::State& state) {
  const auto b = static_cast<std::size_t>(state.range(0));
  auto buffer = full_sequences();
  coral::rng rng(42);
  coral::replay::sequence_batch out;
  std::vector<float> priorities(b);
  for (auto _ : state) {
    buffer->sample(b, 0.6, rng, out);
    for (auto& x : priorities) x = static_cast<float>(rng.uniform(0.0, 2.0));
    benchmark::DoNotOptimize(buffer->update_priorities(out.keys, priorities));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(b));
}
BENCHMARK(sequence_sample_update)->Arg(64)->Unit(benchmark::kMicrosecond);

void sequence_sample_only(benchmark::State& state) {
  const auto b = static_cast<std::size_t>(state.range(0));
  auto buffer = full_sequences();
  coral::rng rng(42);
  coral::replay::sequence_batch out;
  for (auto _ : state) {
    buffer->sample(b, 0.6, rng, out);
    benchmark::DoNotOptimize(out.observations.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(b));
}
BENCHMARK(sequence_sample_only)->Arg(64)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
