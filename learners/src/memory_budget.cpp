#include "memory_budget.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/replay/sequence_buffer.hpp"

namespace coral::learners::detail {
namespace {

// A tanh MLP in -> hidden... -> out: weights and biases, and the sum of its
// layer widths (one float per width and sample for activations).
double mlp_parameters(double in, const std::vector<std::size_t>& hidden, double out) {
  double params = 0;
  double width = in;
  for (auto h : hidden) {
    params += (width + 1) * static_cast<double>(h);
    width = static_cast<double>(h);
  }
  return params + (width + 1) * out;
}

double mlp_widths(double in, const std::vector<std::size_t>& hidden, double out) {
  double sum = in + out;
  for (auto h : hidden) sum += static_cast<double>(h);
  return sum;
}

// Bytes per network parameter: the parameter, its gradient and Adam's two
// moments (16), plus the flat copies that travel to the policy: the
// learner's flat weights, the published cell and the acting policy's (12).
constexpr double ppo_bytes_per_parameter = 16 + 12;
// DQN adds its target network.
constexpr double dqn_bytes_per_parameter = ppo_bytes_per_parameter + 4;

void add_ppo(actors::memory_estimate& e, const train_options& o, const actors::env_shape& s) {
  const double rows = static_cast<double>(o.sampler.num_envs) * static_cast<double>(s.agents);
  const double horizon = static_cast<double>(o.horizon);
  const double d = static_cast<double>(s.obs_dim) * static_cast<double>(std::max<std::size_t>(o.frames, 1));
  const double nd = static_cast<double>(s.discrete_action_dim);
  const double nc = static_cast<double>(s.continuous_action_dim);
  // One segment: T + 1 observations per row, then per step the actions, log
  // probability, value, reward (floats), two flags and the policy version.
  const double segment = rows * ((horizon + 1) * 4 * d + horizon * (4 * nd + 4 * nc + 4 + 4 + 4 + 1 + 1 + 8));
  // Segments open under the lag gate: up to max_policy_lag + 1 (counted
  // without the learner's, to stay a lower bound), never more than the run has.
  const double run_segments = std::ceil(static_cast<double>(o.total_steps) / std::max(1.0, rows * horizon));
  const double live = std::min(static_cast<double>(o.max_policy_lag) + 1, std::max(1.0, run_segments));
  e.add("rollout segments", live * segment);
  const double samples = rows * horizon;
  // The update's tensors: observations, advantages, returns, order (int64)
  // and actions as int64.
  e.add("PPO update tensors", samples * (4 * d + 4 + 4 + 8 + 8 * nd + 4 * nc));
  if (o.frames > 1) e.add("frame stacks", 2 * rows * 4 * d);
  const double heads = static_cast<double>(s.action_choices) + nc;
  const double minibatch = std::min(static_cast<double>(o.ppo.minibatch_size), samples);
  if (o.lstm > 0) {
    // One trunk: the encoder (the hidden layers), the cell (4H gates over
    // its input and h, two biases) and two linear heads.
    const double h = static_cast<double>(o.lstm);
    const double enc = static_cast<double>(o.hidden.back());
    const std::vector<std::size_t> inner(o.hidden.begin(), o.hidden.end() - 1);
    const double params = mlp_parameters(d, inner, enc) + 4 * h * (enc + h + 2) + (h + 1) * (heads + 1) + nc;
    e.add("network", params * ppo_bytes_per_parameter);
    // The policy's state and its copy per row; each segment's initial states.
    e.add("recurrent state", 2 * rows * 2 * h * 4 + live * rows * 2 * h * 4);
    // The update's unroll over every step without gradient (h and c kept),
    // and a minibatch's with it (input, gates, h and c per step, twice for
    // backward); at least one whole row per minibatch.
    const double rows_steps = std::max(minibatch, horizon);
    e.add("activations", (samples * 2 * h + rows_steps * 2 * (enc + 6 * h) + 2 * rows * (enc + 4 * h)) * 4);
    return;
  }
  const double actor = mlp_parameters(d, o.hidden, heads) + nc;
  const double critic = mlp_parameters(d, o.hidden, 1);
  e.add("network", (actor + critic) * ppo_bytes_per_parameter);
  const double widths = mlp_widths(d, o.hidden, heads) + mlp_widths(d, o.hidden, 1);
  // Forward and backward of a minibatch, and the acting batch's forward.
  e.add("activations", (3 * minibatch + 2 * rows) * widths * 4);
}

void add_dqn(actors::memory_estimate& e, const train_options& o, const actors::env_shape& s) {
  const auto& q = o.dqn;
  const double rows = static_cast<double>(o.sampler.num_envs) * static_cast<double>(s.agents);
  const double d = static_cast<double>(s.obs_dim);
  const double nd = static_cast<double>(s.discrete_action_dim);
  const double nc = static_cast<double>(s.continuous_action_dim);
  // Slots: the capacity rounded up to whole streams; per slot the
  // observation and action, return, discount (floats), steps (uint16),
  // state (byte), pending priority (double) and the priority tree's leaf
  // (float). Generations and the tree's inner nodes are left out: their
  // pages are touched lazily (measured: 49.5 bytes a slot on cartpole, this
  // counts 43).
  const double slots = std::ceil(static_cast<double>(q.replay_capacity) / std::max(1.0, rows)) * std::max(1.0, rows);
  e.add("replay", slots * (4 * d + 4 * nd + 4 * nc + 4 + 4 + 2 + 1 + 8 + 4));
  const double batch = static_cast<double>(q.batch_size);
  // Prefetched batches and the one being learned from: observation and next
  // observation, action, return, discount, weight, key and probability.
  e.add("replay batches", (static_cast<double>(q.prefetch) + 1) * batch * (8 * d + 4 * nd + 4 * nc + 4 + 4 + 4 + 16 + 8));
  e.add("n-step assembly", rows * (static_cast<double>(q.n_step) + 1) * (4 * d + 16));
  const double out = static_cast<double>(s.action_choices);
  e.add("network", mlp_parameters(d, o.hidden, out) * dqn_bytes_per_parameter);
  // Online network on o and o', target on o': forward and backward.
  e.add("activations", (6 * batch + 2 * rows) * mlp_widths(d, o.hidden, out) * 4);
}

void add_r2d2(actors::memory_estimate& e, const train_options& o, const actors::env_shape& s) {
  const auto& q = o.dqn;
  const double rows = static_cast<double>(o.sampler.num_envs) * static_cast<double>(s.agents);
  const double d = static_cast<double>(s.obs_dim);
  const double len = static_cast<double>(o.r2d2.seq_len);
  const double h = static_cast<double>(o.lstm);
  // The sequence buffer's own figure; a batch holds the same per sequence.
  replay::sequence_buffer_config buffer;
  buffer.layout = {.length = o.r2d2.seq_len, .burn_in = 0, .overlap = 0, .obs_dim = s.obs_dim, .discrete_dim = 1,
                   .state_dim = 2 * o.lstm};
  buffer.capacity = q.replay_capacity;
  e.add("replay", replay::sequence_buffer::memory_bytes(buffer));
  buffer.capacity = 1;
  const double sequence = replay::sequence_buffer::memory_bytes(buffer);
  const double batch = static_cast<double>(q.batch_size) * static_cast<double>(o.r2d2.prefetch_batches);
  e.add("replay batches", (static_cast<double>(q.prefetch) + 1) * batch * (sequence + 4 + 16));
  // The feeder's ring of the last seq-len steps per row, and the states of its open sequences.
  e.add("sequence assembly", rows * len * (4 * d + 9) + rows * 4 * 2 * h * 4);
  // The online and target networks: the trunk and a linear Q head.
  const double enc = o.hidden.empty() ? d : static_cast<double>(o.hidden.back());
  const std::vector<std::size_t> inner(o.hidden.begin(), o.hidden.empty() ? o.hidden.end() : o.hidden.end() - 1);
  const double out = static_cast<double>(s.action_choices);
  const double params = (o.hidden.empty() ? 0.0 : mlp_parameters(d, inner, enc)) + 4 * h * (enc + h + 2) + (h + 1) * out;
  e.add("network", params * dqn_bytes_per_parameter);
  // Both networks unrolled over every slot of a batch (the online one kept
  // for backward: input, gates, h and c per slot), and the acting state.
  e.add("activations", 3 * batch * (len + 1) * (enc + 6 * h + out) * 4 + 2 * rows * 2 * h * 4);
}

std::string join(const std::vector<std::size_t>& values) { return fmt::format("{}", fmt::join(values, " ")); }

}  // namespace

actors::memory_estimate estimate_memory(const train_options& o, const actors::env_shape& shape) {
  actors::memory_estimate e;
  actors::add_sampler_memory(e, o.sampler, shape);
  if (o.algo == "r2d2") {
    add_r2d2(e, o, shape);
  } else if (o.algo == "dqn") {
    add_dqn(e, o, shape);
  } else {
    add_ppo(e, o, shape);
  }
  return e;
}

void check_memory_budget(const train_options& o) {
  const auto shape = actors::probe_env_shape(o.sampler);
  const auto estimate = estimate_memory(o, shape);
  const double available = actors::available_memory();
  if (estimate.total() <= available) return;
  // Which flag is at fault: the one whose default saves the most.
  const train_options defaults;
  std::vector<actors::sizing_flag> flags;
  auto flag = [&](std::string name, std::string value, const std::function<void(train_options&)>& reset) {
    train_options changed = o;
    reset(changed);
    flags.push_back({std::move(name), std::move(value), estimate_memory(changed, shape).total()});
  };
  flag("--num-envs", fmt::format("{}", o.sampler.num_envs),
       [&](train_options& c) { c.sampler.num_envs = defaults.sampler.num_envs; });
  flag("--hidden", join(o.hidden), [&](train_options& c) { c.hidden = defaults.hidden; });
  if (o.algo == "r2d2") {
    flag("--replay-capacity", fmt::format("{}", o.dqn.replay_capacity),
         [&](train_options& c) { c.dqn.replay_capacity = 20'000; });
    flag("--seq-len", fmt::format("{}", o.r2d2.seq_len), [&](train_options& c) { c.r2d2.seq_len = defaults.r2d2.seq_len; });
    flag("--lstm", fmt::format("{}", o.lstm), [&](train_options& c) { c.lstm = 64; });
    flag("--replay-batch", fmt::format("{}", o.dqn.batch_size), [&](train_options& c) { c.dqn.batch_size = 32; });
    flag("--prefetch", fmt::format("{}", o.dqn.prefetch), [&](train_options& c) { c.dqn.prefetch = defaults.dqn.prefetch; });
  } else if (o.algo == "dqn") {
    flag("--replay-capacity", fmt::format("{}", o.dqn.replay_capacity),
         [&](train_options& c) { c.dqn.replay_capacity = defaults.dqn.replay_capacity; });
    flag("--replay-batch", fmt::format("{}", o.dqn.batch_size),
         [&](train_options& c) { c.dqn.batch_size = defaults.dqn.batch_size; });
    flag("--prefetch", fmt::format("{}", o.dqn.prefetch), [&](train_options& c) { c.dqn.prefetch = defaults.dqn.prefetch; });
    flag("--n-step", fmt::format("{}", o.dqn.n_step), [&](train_options& c) { c.dqn.n_step = defaults.dqn.n_step; });
  } else {
    flag("--horizon", fmt::format("{}", o.horizon), [&](train_options& c) { c.horizon = defaults.horizon; });
    flag("--max-policy-lag", fmt::format("{}", o.max_policy_lag),
         [&](train_options& c) { c.max_policy_lag = defaults.max_policy_lag; });
    flag("--frames", fmt::format("{}", o.frames), [&](train_options& c) { c.frames = defaults.frames; });
    flag("--lstm", fmt::format("{}", o.lstm), [&](train_options& c) { c.lstm = defaults.lstm; });
    flag("--minibatch-size", fmt::format("{}", o.ppo.minibatch_size),
         [&](train_options& c) { c.ppo.minibatch_size = defaults.ppo.minibatch_size; });
  }
  actors::check_memory(estimate, flags, available);
}

}  // namespace coral::learners::detail
