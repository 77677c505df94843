#pragma once
// The body of basic_replay_actor<Storage>, included only by the .cpp files
// that instantiate it explicitly (replay_actor.cpp, sequence_replay_actor.cpp),
// so that the actor is compiled once per storage, in the library.
//
// A saved actor state: the storage's 8 magic bytes, the limiter's inserts
// and samples, the batches served, the sampling generator, then the
// storage's own blob.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/basic_replay_actor.hpp"
#include "coral/replay/errors.hpp"

namespace coral::replay::detail {

// The env steps the sampling side may always have on the way on top of the
// inserts: one group being let through, and what the batcher keeps waiting
// for a full batch (unknown: every stream but one group).
template <class Storage, class Config>
std::uint64_t in_flight_of(const Config& c) {
  const std::size_t group = std::max<std::size_t>(c.max_group_steps, 1);
  const std::size_t streams = Storage::streams(c.buffer);
  const std::size_t hold = c.batcher_hold.value_or(streams > group ? streams - group : 0);
  return group + hold;
}

// Sampled units per draw (the limiter's unit).
template <class Storage, class Config>
std::uint64_t units_per_draw_of(const Config& c) {
  return c.ratio_counts == ratio_unit::trained_steps ? Storage::trained_steps_per_draw(c.buffer) : 1;
}

template <class Storage, class Config>
double error_buffer_of(const Config& c) {
  const double batch_units = static_cast<double>(c.batch_size) * static_cast<double>(units_per_draw_of<Storage>(c));
  const double needed = batch_units + static_cast<double>(in_flight_of<Storage>(c)) * c.samples_per_insert;
  return c.error_buffer > 0 ? c.error_buffer : needed;
}

template <class Storage, class Config>
rate_limiter_config limiter_config_of(const Config& c) {
  if (c.batch_size == 0) throw config_error(std::string(errors::zero_batch));
  if (c.prefetch == 0) throw config_error(std::string(errors::zero_prefetch));
  if (!(c.beta_start >= 0 && c.beta_start <= 1)) {
    throw config_error(fmt::format(fmt::runtime(errors::bad_exponent), "beta", c.beta_start));
  }
  if (!(c.beta_end >= 0 && c.beta_end <= 1)) {
    throw config_error(fmt::format(fmt::runtime(errors::bad_exponent), "beta", c.beta_end));
  }
  return {.samples_per_insert = c.samples_per_insert, .min_size_to_sample = std::max<std::uint64_t>(c.min_size, 1),
          .error_buffer = error_buffer_of<Storage>(c)};
}

// Every forwarded env step can be in the inbox at most once, and the feeder
// forwards no more than the allowance: min_size + 2 × error_buffer / ratio
// steps are in flight at most (see replay_feeder; the floor while nothing is
// sampleable, max_group_steps + batcher_hold, is below error_buffer / ratio),
// each block holding at least one. The channel never refuses a block for
// want of room.
template <class Storage, class Config>
std::size_t inbox_capacity(const Config& c) {
  const double window = 2.0 * error_buffer_of<Storage>(c) / c.samples_per_insert;
  return static_cast<std::size_t>(c.min_size) + static_cast<std::size_t>(std::ceil(window)) + c.max_group_steps +
         c.prefetch + 16;
}

template <class T>
void put(std::vector<char>& out, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  const auto* p = reinterpret_cast<const char*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

template <class T>
T take(std::span<const char>& in, const char* what) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (in.size() < sizeof(T)) throw config_error(fmt::format(fmt::runtime(errors::actor_state_malformed), what));
  T v;
  std::memcpy(&v, in.data(), sizeof v);
  in = in.subspan(sizeof v);
  return v;
}

}  // namespace coral::replay::detail

namespace coral::replay {

template <class Storage>
basic_replay_actor<Storage>::basic_replay_actor(const config_type& config)
    : rate_limited_replay(detail::limiter_config_of<Storage>(config), detail::in_flight_of<Storage>(config)),
      config_(config),
      units_per_draw_(detail::units_per_draw_of<Storage>(config)),
      storage_(config.buffer),
      rng_(coral::env_seed{config.seed ^ 0x7265706C6179ULL, 0}),  // "replay": apart from the envs' streams
      inbox_(detail::inbox_capacity<Storage>(config)),
      samples_(config.prefetch),
      free_blocks_(detail::inbox_capacity<Storage>(config)),
      snapshots_(1) {
  raise_allowance(storage_.size() == 0);
}

template <class Storage>
std::unique_ptr<typename basic_replay_actor<Storage>::batch_type> basic_replay_actor<Storage>::make_request() const {
  auto b = std::make_unique<batch_type>();
  storage_.reserve(*b, config_.batch_size);
  return b;
}

template <class Storage>
void basic_replay_actor<Storage>::close() noexcept {
  inbox_.close();
  samples_.close();
  free_blocks_.close();
  snapshots_.close();
}

template <class Storage>
double basic_replay_actor<Storage>::beta() const noexcept {
  if (config_.beta_steps == 0) return config_.beta_end;
  const double done = std::min(1.0, static_cast<double>(limiter_.inserts()) / static_cast<double>(config_.beta_steps));
  return config_.beta_start + (config_.beta_end - config_.beta_start) * done;
}

template <class Storage>
void basic_replay_actor<Storage>::insert(block_type& block) {
  storage_.insert(block, stats_);
  limiter_.record_insert(block.env_steps);
  stats_.env_steps.fetch_add(block.env_steps, std::memory_order_relaxed);
  stats_.size.store(storage_.size(), std::memory_order_relaxed);
  storage_.publish(stats_);
}

template <class Storage>
void basic_replay_actor<Storage>::fill(batch_type& b) {
  const auto started = std::chrono::steady_clock::now();
  storage_.fill(b, config_.batch_size, config_.prioritized, beta(), rng_);
  b.sequence = served_++;
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started);
  stats_.sample_ns.fetch_add(static_cast<std::uint64_t>(ns.count()), std::memory_order_relaxed);
}

template <class Storage>
void basic_replay_actor<Storage>::serve_waiting() {
  const std::size_t n = config_.batch_size;
  const std::uint64_t units = n * units_per_draw_;
  while (!waiting_.empty() && storage_.size() > 0 && limiter_.can_sample(units)) {
    auto b = std::move(waiting_.front());
    waiting_.pop_front();
    fill(*b);
    limiter_.record_sample(units);
    stats_.sampled.fetch_add(n, std::memory_order_relaxed);
    stats_.batches.fetch_add(1, std::memory_order_relaxed);
    // The learner keeps at most `prefetch` requests out, and samples() holds
    // that many: it cannot be full. Closed: the run is stopping.
    if (!samples_.try_send(std::move(b))) {
      if (samples_.is_closed()) return;
      throw usage_error("replay_actor: more sample requests in flight than --prefetch");
    }
    raise_allowance(false);
  }
  stats_.waiting_requests.store(waiting_.size(), std::memory_order_relaxed);
}

template <class Storage>
void basic_replay_actor<Storage>::handle(message& msg) {
  if (auto* block = std::get_if<std::unique_ptr<block_type>>(&msg)) {
    insert(**block);
    (*block)->clear();
    (void)free_blocks_.try_send(std::move(*block));  // full or closed: let it go
    if (storage_.size() == 0) raise_allowance(true);
  } else if (auto* ask = std::get_if<snapshot_request>(&msg)) {
    replay_snapshot answer{.tag = ask->tag, .state = {}};
    save(answer.state);
    if (!snapshots_.try_send(std::move(answer)) && !snapshots_.is_closed()) {
      throw usage_error(std::string(errors::snapshot_unclaimed));
    }
  } else {
    auto& b = std::get<std::unique_ptr<batch_type>>(msg);
    const update_result r = storage_.apply_update(*b, config_.prioritized);
    if (r.applied + r.stale > 0) {
      stats_.priority_updates.fetch_add(r.applied, std::memory_order_relaxed);
      stats_.stale_updates.fetch_add(r.stale, std::memory_order_relaxed);
      storage_.publish(stats_);
    }
    waiting_.push_back(std::move(b));
  }
}

template <class Storage>
asio::awaitable<void> basic_replay_actor<Storage>::run() {
  raise_allowance(storage_.size() == 0);
  for (;;) {
    auto msg = co_await inbox_.async_receive();
    if (!msg) break;
    handle(*msg);
    serve_waiting();
    if (samples_.is_closed()) break;
  }
}

template <class Storage>
void basic_replay_actor<Storage>::drain() {
  while (auto msg = inbox_.try_receive()) {
    if (std::holds_alternative<snapshot_request>(*msg)) continue;  // the run is over; nobody waits for it
    handle(*msg);
  }
}

template <class Storage>
void basic_replay_actor<Storage>::save(std::vector<char>& out) const {
  out.insert(out.end(), std::begin(Storage::state_magic), std::end(Storage::state_magic));
  detail::put(out, limiter_.inserts());
  detail::put(out, limiter_.samples());
  detail::put(out, served_);
  detail::put(out, rng_);
  storage_.save(out);
}

template <class Storage>
void basic_replay_actor<Storage>::load(std::span<const char> in) {
  constexpr std::size_t magic_size = sizeof Storage::state_magic;
  if (in.size() < magic_size || std::memcmp(in.data(), Storage::state_magic, magic_size) != 0) {
    throw config_error(fmt::format(fmt::runtime(errors::actor_state_malformed), Storage::state_name));
  }
  in = in.subspan(magic_size);
  const auto inserts = detail::take<std::uint64_t>(in, "limiter inserts");
  const auto samples = detail::take<std::uint64_t>(in, "limiter samples");
  const auto served = detail::take<std::uint64_t>(in, "batches served");
  const auto rng = detail::take<coral::rng>(in, "generator");
  storage_.load(in);
  restore_limiter(inserts, samples);
  served_ = served;
  rng_ = rng;
  storage_.resumed();
  stats_.env_steps.store(inserts);
  stats_.sampled.store(samples / units_per_draw_);
  stats_.size.store(storage_.size());
  storage_.publish(stats_);
  raise_allowance(storage_.size() == 0);
}

}  // namespace coral::replay
