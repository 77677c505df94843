#include "coral/replay/replay_actor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/errors.hpp"

namespace coral::replay {
namespace {

// The env steps the sampling side may always have on the way on top of the
// inserts: one group being let through, and what the batcher keeps waiting
// for a full batch (unknown: every stream but one group).
std::uint64_t in_flight_of(const replay_actor_config& c) {
  const std::size_t group = std::max<std::size_t>(c.max_group_steps, 1);
  const std::size_t streams = c.buffer.num_streams;
  const std::size_t hold = c.batcher_hold.value_or(streams > group ? streams - group : 0);
  return group + hold;
}

double error_buffer_of(const replay_actor_config& c) {
  const double needed =
      static_cast<double>(c.batch_size) + static_cast<double>(in_flight_of(c)) * c.samples_per_insert;
  return c.error_buffer > 0 ? c.error_buffer : needed;
}

rate_limiter_config limiter_config(const replay_actor_config& c) {
  if (c.batch_size == 0) throw config_error(std::string(errors::zero_batch));
  if (c.prefetch == 0) throw config_error(std::string(errors::zero_prefetch));
  if (!(c.beta_start >= 0 && c.beta_start <= 1)) {
    throw config_error(fmt::format(fmt::runtime(errors::bad_exponent), "beta", c.beta_start));
  }
  if (!(c.beta_end >= 0 && c.beta_end <= 1)) {
    throw config_error(fmt::format(fmt::runtime(errors::bad_exponent), "beta", c.beta_end));
  }
  return {.samples_per_insert = c.samples_per_insert, .min_size_to_sample = std::max<std::uint64_t>(c.min_size, 1),
          .error_buffer = error_buffer_of(c)};
}

// Every forwarded env step can be in the inbox at most once, and the feeder
// forwards no more than the allowance: min_size + 2 × error_buffer / ratio
// steps are in flight at most (see replay_feeder; the floor while nothing is
// sampleable, max_group_steps + batcher_hold, is below error_buffer / ratio),
// each block holding at least one. The channel never refuses a block for
// want of room.
std::size_t inbox_capacity(const replay_actor_config& c) {
  const double window = 2.0 * error_buffer_of(c) / c.samples_per_insert;
  return static_cast<std::size_t>(c.min_size) + static_cast<std::size_t>(std::ceil(window)) + c.max_group_steps +
         c.prefetch + 16;
}

}  // namespace

void insert_block::clear() noexcept {
  env_steps = 0;
  streams.clear();
  observations.clear();
  next_observations.clear();
  discrete.clear();
  continuous.clear();
  returns.clear();
  discounts.clear();
  steps.clear();
  last_of_episode.clear();
  cuts.clear();
}

void insert_block::push(std::uint32_t stream, const transition& t) {
  streams.push_back(stream);
  observations.insert(observations.end(), t.observation.begin(), t.observation.end());
  next_observations.insert(next_observations.end(), t.next_observation.begin(), t.next_observation.end());
  discrete.insert(discrete.end(), t.discrete_action.begin(), t.discrete_action.end());
  continuous.insert(continuous.end(), t.continuous_action.begin(), t.continuous_action.end());
  returns.push_back(t.n_step_return);
  discounts.push_back(t.discount);
  steps.push_back(t.steps);
  last_of_episode.push_back(t.last_of_episode ? 1 : 0);
}

replay_actor::replay_actor(const replay_actor_config& config)
    : config_(config),
      limiter_config_(limiter_config(config)),
      buffer_(config.buffer),
      limiter_(limiter_config_),
      rng_(envs::env_seed{config.seed ^ 0x7265706C6179ULL, 0}),  // "replay": apart from the envs' streams
      inbox_(inbox_capacity(config)),
      samples_(config.prefetch),
      free_blocks_(inbox_capacity(config)),
      snapshots_(1),
      in_flight_(in_flight_of(config)) {
  raise_allowance();
}

std::unique_ptr<sample_batch> replay_actor::make_request() const {
  auto b = std::make_unique<sample_batch>();
  const auto n = config_.batch_size;
  b->observations.reserve(n * config_.buffer.obs_dim);
  b->next_observations.reserve(n * config_.buffer.obs_dim);
  b->discrete.reserve(n * config_.buffer.discrete_action_dim);
  b->continuous.reserve(n * config_.buffer.continuous_action_dim);
  b->returns.reserve(n);
  b->discounts.reserve(n);
  b->weights.reserve(n);
  b->keys.reserve(n);
  b->td_errors.reserve(n);
  return b;
}

void replay_actor::close() noexcept {
  inbox_.close();
  samples_.close();
  free_blocks_.close();
  snapshots_.close();
}

double replay_actor::beta() const noexcept {
  if (config_.beta_steps == 0) return config_.beta_end;
  const double done = std::min(1.0, static_cast<double>(limiter_.inserts()) / static_cast<double>(config_.beta_steps));
  return config_.beta_start + (config_.beta_end - config_.beta_start) * done;
}

bool replay_actor::wait_for_allowance(std::uint64_t needed) noexcept {
  wanted_.store(needed);
  if (allowance_.load() < needed) return false;
  wanted_.store(0);
  return true;
}

// Why one side can always move. Write I for the env steps inserted (the
// limiter's count), S for the transitions sampled, F for the env steps the
// gate let through, A for the allowance (F <= A), k = max_group_steps,
// h = batcher_hold, m = max(min_size, 1), r = samples_per_insert and
// e = error_buffer = batch + (k + h) r, so the limiter's window is
// [r m − e, r m + e]. The gate lets the group at the front through when
// F + k <= A; the actor serves a waiting request when the buffer holds a
// sampleable transition, I >= m and I r − S − batch >= r m − e.
//
// Take a state where nothing is on the way: every env step let through was
// either inserted or is kept by the batcher waiting for a full batch (at
// most h, batcher_hold()), the learner holds no batch (it hands each one
// back) and the inbox is empty. Suppose neither side can move.
// - Nothing sampleable: the last insert set A >= I + k + h (the floor
//   below), so F + k > A gives F − I > h: more than h steps on the way.
// - I < m: then no sample was ever served (the count only grows), S = 0 and
//   A >= floor((r m + e) / r) >= m + k + h, so F − I > m + h − I > h.
// - Otherwise the window refuses the batch: S > I r − batch − r m + e, and
//   A >= floor((S + r m + e) / r) > I + (2e − batch) / r − 1
//          = I + batch / r + 2 (k + h) − 1,
//   so F > A − k > I + 2h + k − 1 + batch / r >= I + h.
// Each case contradicts "at most h on the way": one side can always move.
// A batcher that acts on every group at once (h = 0) and the first inserts
// (nothing sampleable for the first 2 n + 1 steps of a stream: a transition
// completes when the one n steps later is written) were where it failed
// before: with a small min_size the window closed before any transition was
// sampleable, and neither side ever moved again.
void replay_actor::raise_allowance() noexcept {
  // inserts × ratio − samples <= max_diff  <=>  inserts <= (samples + max_diff) / ratio
  // Both bounds saturate at 2^64 - 1 instead of wrapping (or, for the
  // double, converting out of range: undefined): only counters loaded from a
  // crafted or damaged state get there, and the actor must still run.
  constexpr std::uint64_t most = std::numeric_limits<std::uint64_t>::max();
  constexpr double two_to_64 = 18446744073709551616.0;
  const double allowed = (static_cast<double>(limiter_.samples()) + limiter_.max_diff()) / config_.samples_per_insert;
  auto a = allowed >= two_to_64 ? most : static_cast<std::uint64_t>(std::max(0.0, allowed));
  // Nothing to sample yet: the learner cannot move, so the sampling side must.
  if (buffer_.size() == 0) {
    const std::uint64_t inserts = limiter_.inserts();
    a = std::max(a, inserts > most - in_flight_ ? most : inserts + in_flight_);
  }
  grant(a);
}

void replay_actor::grant(std::uint64_t a) noexcept {
  a = std::max(a, allowance_.load());
  allowance_.store(a);
  // The gate stores what it waits for, then reads the allowance; we store
  // the allowance, then read what it waits for (both sequentially
  // consistent): one of the two sees the other, so no wake-up is lost. This
  // needs one waiter: the gate asks about its held groups in order and stops
  // at the first it holds (rate_limit_gate::in_order()). Asking about a later
  // group would clear the note of the held one, and its wake-up would be lost.
  std::uint64_t w = wanted_.load();
  if (w != 0 && a >= w && wanted_.compare_exchange_strong(w, 0) && waker_ != nullptr) {
    (void)waker_->try_send(actors::gate_msg(actors::allowance_raised{}));  // full: notes are queued
  }
}

void replay_actor::insert(insert_block& block) {
  for (const auto stream : block.cuts) buffer_.cut(stream);
  stats_.cuts.fetch_add(block.cuts.size(), std::memory_order_relaxed);
  // The feeder writes each row's transitions one after the other: insert
  // them as runs, so the buffer refreshes its tree once per run.
  const std::size_t n = block.size();
  const std::size_t od = block.obs_dim;
  const std::size_t dd = block.discrete_dim;
  const std::size_t cd = block.continuous_dim;
  for (std::size_t first = 0; first < n;) {
    const std::uint32_t stream = block.streams[first];
    std::size_t end = first + 1;
    while (end < n && block.streams[end] == stream) ++end;
    const std::size_t k = end - first;
    transition_batch run;
    run.count = k;
    run.observations = std::span<const float>(block.observations).subspan(first * od, k * od);
    run.next_observations = std::span<const float>(block.next_observations).subspan(first * od, k * od);
    run.discrete_actions = std::span<const std::int32_t>(block.discrete).subspan(first * dd, k * dd);
    run.continuous_actions = std::span<const float>(block.continuous).subspan(first * cd, k * cd);
    run.n_step_returns = std::span<const float>(block.returns).subspan(first, k);
    run.discounts = std::span<const float>(block.discounts).subspan(first, k);
    run.steps = std::span<const std::uint32_t>(block.steps).subspan(first, k);
    run.last_of_episode = std::span<const std::uint8_t>(block.last_of_episode).subspan(first, k);
    buffer_.insert(stream, run);
    first = end;
  }
  limiter_.record_insert(block.env_steps);
  stats_.env_steps.fetch_add(block.env_steps, std::memory_order_relaxed);
  stats_.transitions.fetch_add(n, std::memory_order_relaxed);
  stats_.size.store(buffer_.size(), std::memory_order_relaxed);
}

void replay_actor::fill(sample_batch& b) {
  const auto started = std::chrono::steady_clock::now();
  const std::size_t n = config_.batch_size;
  if (config_.prioritized) {
    buffer_.sample_prioritized(rng_, n, beta(), scratch_);
  } else {
    buffer_.sample_uniform(rng_, n, scratch_);
  }
  const std::size_t od = config_.buffer.obs_dim;
  const std::size_t dd = config_.buffer.discrete_action_dim;
  const std::size_t cd = config_.buffer.continuous_action_dim;
  b.size = n;
  b.observations.resize(n * od);
  b.next_observations.resize(n * od);
  b.discrete.resize(n * dd);
  b.continuous.resize(n * cd);
  b.returns.resize(n);
  b.discounts.resize(n);
  b.weights.assign(scratch_.weights.begin(), scratch_.weights.end());
  b.keys.assign(scratch_.keys.begin(), scratch_.keys.end());
  b.td_errors.clear();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t slot = scratch_.keys[i].slot;
    std::ranges::copy(buffer_.observation(slot), b.observations.begin() + static_cast<std::ptrdiff_t>(i * od));
    std::ranges::copy(buffer_.next_observation(slot), b.next_observations.begin() + static_cast<std::ptrdiff_t>(i * od));
    std::ranges::copy(buffer_.discrete_action(slot), b.discrete.begin() + static_cast<std::ptrdiff_t>(i * dd));
    std::ranges::copy(buffer_.continuous_action(slot), b.continuous.begin() + static_cast<std::ptrdiff_t>(i * cd));
    b.returns[i] = buffer_.n_step_return(slot);
    b.discounts[i] = buffer_.discount(slot);
  }
  b.sequence = served_++;
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started);
  stats_.sample_ns.fetch_add(static_cast<std::uint64_t>(ns.count()), std::memory_order_relaxed);
}

void replay_actor::serve_waiting() {
  const std::size_t n = config_.batch_size;
  while (!waiting_.empty() && buffer_.size() > 0 && limiter_.can_sample(n)) {
    auto b = std::move(waiting_.front());
    waiting_.pop_front();
    fill(*b);
    limiter_.record_sample(n);
    stats_.sampled.fetch_add(n, std::memory_order_relaxed);
    stats_.batches.fetch_add(1, std::memory_order_relaxed);
    // The learner keeps at most `prefetch` requests out, and samples() holds
    // that many: it cannot be full. Closed: the run is stopping.
    if (!samples_.try_send(std::move(b))) {
      if (samples_.is_closed()) return;
      throw usage_error("replay_actor: more sample requests in flight than --prefetch");
    }
    raise_allowance();
  }
  stats_.waiting_requests.store(waiting_.size(), std::memory_order_relaxed);
}

void replay_actor::handle(replay_msg& msg) {
  if (auto* block = std::get_if<std::unique_ptr<insert_block>>(&msg)) {
    insert(**block);
    (*block)->clear();
    (void)free_blocks_.try_send(std::move(*block));  // full or closed: let it go
    if (buffer_.size() == 0) raise_allowance();
  } else if (auto* ask = std::get_if<snapshot_request>(&msg)) {
    replay_snapshot answer{.tag = ask->tag, .state = {}};
    save(answer.state);
    if (!snapshots_.try_send(std::move(answer)) && !snapshots_.is_closed()) {
      throw usage_error(std::string(errors::snapshot_unclaimed));
    }
  } else {
    auto& b = std::get<std::unique_ptr<sample_batch>>(msg);
    if (!b->td_errors.empty()) {
      const std::size_t applied = buffer_.update_priorities(b->keys, b->td_errors);
      stats_.priority_updates.fetch_add(applied, std::memory_order_relaxed);
      stats_.stale_updates.fetch_add(b->keys.size() - applied, std::memory_order_relaxed);
      b->td_errors.clear();
    }
    waiting_.push_back(std::move(b));
  }
}

asio::awaitable<void> replay_actor::run() {
  raise_allowance();
  for (;;) {
    auto msg = co_await inbox_.async_receive();
    if (!msg) break;
    handle(*msg);
    serve_waiting();
    if (samples_.is_closed()) break;
  }
}

void replay_actor::drain() {
  while (auto msg = inbox_.try_receive()) {
    if (std::holds_alternative<snapshot_request>(*msg)) continue;  // the run is over; nobody waits for it
    handle(*msg);
  }
}

}  // namespace coral::replay
