#include "coral/actors/env_group.hpp"

#include "coral/actors/errors.hpp"
#include "coral/core/logging.hpp"

namespace coral::actors {

env_group::env_group(std::string name, std::uint32_t id, std::size_t first_env, envs::env_slice slice,
                     channel<ready_msg>& ready, env_error_policy on_error)
    : name_(std::move(name)),
      id_(id),
      first_env_(first_env),
      slice_(std::move(slice)),
      ready_(&ready),
      on_error_(on_error),
      log_(log::get(name_)) {}

row_range env_group::rows() const noexcept {
  return {static_cast<std::uint32_t>(slice_.first_row()), static_cast<std::uint32_t>(slice_.row_count())};
}

void env_group::step() {
  std::size_t from = 0;
  for (;;) {
    try {
      slice_.step_from(from);
      return;
    } catch (const envs::env_failed& e) {
      handle_failure(e);
      from = e.index() + 1;
    }
  }
}

void env_group::handle_failure(const envs::env_failed& e) {
  const auto env_index = first_env_ + e.index();
  if (on_error_ == env_error_policy::fail) {
    throw error(fmt::format(fmt::runtime(errors::env_failed), env_index, name_, e.what()));
  }
  failures_.fetch_add(1, std::memory_order_relaxed);
  if (failures_by_env_.empty()) failures_by_env_.resize(slice_.size());
  const auto n = ++failures_by_env_[e.index()];
  {
    std::lock_guard lock(failure_log_->mutex);  // failures are rare: no contention worth a lock-free path
    if (failure_log_->logged < max_logged_env_failures) {
      log_->warn(fmt::runtime(errors::env_reset), env_index, name_, n, e.what());
      if (++failure_log_->logged == max_logged_env_failures) {
        log_->warn(fmt::runtime(errors::env_failures_unlogged), max_logged_env_failures);
      }
    }
  }
  recover(e.index());
}

std::string_view env_group::where() const noexcept {
  switch (phase_.load(std::memory_order_relaxed)) {
    case phase::starting:
      return "resetting its envs";
    case phase::stepping:
      return "stepping its envs (in env code)";
    case phase::announcing:
      return "announcing it is ready";
    case phase::waiting:
      return "waiting for its actions";
    case phase::finished:
      return "finished";
  }
  return "?";
}

void env_group::recover(std::size_t i) {
  try {
    slice_.reset_one(i);
  } catch (const envs::env_failed& again) {
    // Nothing left to fall back on: the env cannot start a new episode.
    throw error(fmt::format(fmt::runtime(errors::env_unrecoverable), first_env_ + i, name_, again.what()));
  }
  // An explicit event for the consumers: the step failed, a new episode began.
  auto& batch = slice_.batch();
  std::fill_n(batch.failed().data() + slice_.first_row_of(i), slice_.at(i).max_agents(), std::uint8_t{1});
}

void env_group::reset_all() {
  for (std::size_t i = 0; i < slice_.size(); ++i) {
    try {
      slice_.reset_one(i);
    } catch (const envs::env_failed& e) {
      handle_failure(e);
    }
  }
  // Nothing was stepped yet: the first batch is a plain start, recovered or not.
  std::fill_n(slice_.batch().failed().data() + slice_.first_row(), slice_.row_count(), std::uint8_t{0});
}

asio::awaitable<void> env_group::run() {
  // Every co_await is a statement of its own: with GCC 12.2 this coroutine,
  // written as `if (!co_await ...) co_return;` and `while (co_await ...)`,
  // resumed a corrupt frame (a wild `this` at its first line).
  struct finish_guard {
    std::atomic<phase>& p;
    ~finish_guard() { p.store(phase::finished, std::memory_order_relaxed); }
  } on_exit{phase_};
  reset_all();
  for (;;) {
    phase_.store(phase::announcing, std::memory_order_relaxed);
    // The channels' frame-free forms (channel::wait_for_item): a step costs
    // no coroutine frame for a send that finds room (there is room for every
    // group) or for the receive, which nearly always waits.
    bool announced = gate_ != nullptr ? gate_->try_send(gate_msg(ready_msg{id_})) : ready_->try_send(ready_msg{id_});
    if (!announced) {
      if (gate_ != nullptr) {
        announced = co_await gate_->async_send(gate_msg(ready_msg{id_}));
      } else {
        announced = co_await ready_->async_send(ready_msg{id_});
      }
    }
    if (!announced) break;
    phase_.store(phase::waiting, std::memory_order_relaxed);
    std::optional<std::uint64_t> token;
    while (!(token = actions_.try_receive()) && !actions_.is_drained()) {
      channel_waiter w;
      co_await actions_.wait_for_item(w);
      w.throw_if_aborted();
    }
    if (!token) break;
    phase_.store(phase::stepping, std::memory_order_relaxed);
    step();
    steps_.store(steps_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // one writer
  }
}

}  // namespace coral::actors
