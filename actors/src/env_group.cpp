#include "coral/actors/env_group.hpp"

#include "coral/actors/messages.hpp"
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
      const auto env_index = first_env_ + e.index();
      if (on_error_ == env_error_policy::fail) {
        throw error(fmt::format(fmt::runtime(messages::env_failed), env_index, name_, e.what()));
      }
      const auto n = failures_.fetch_add(1, std::memory_order_relaxed) + 1;
      log_->warn(fmt::runtime(messages::env_reset), env_index, name_, n, e.what());
      slice_.reset_one(e.index());
      // The interrupted episode shows as cut short.
      auto& batch = slice_.batch();
      const auto first = slice_.first_row_of(e.index());
      const auto rows = slice_.at(e.index()).max_agents();
      std::fill_n(batch.truncated().data() + first, rows, std::uint8_t{1});
      from = e.index() + 1;
    }
  }
}

asio::awaitable<void> env_group::run() {
  // Every co_await is a statement of its own: with GCC 12.2 this coroutine,
  // written as `if (!co_await ...) co_return;` and `while (co_await ...)`,
  // resumed a corrupt frame (a wild `this` at its first line).
  slice_.reset_all();
  for (;;) {
    const bool announced = co_await ready_->async_send(ready_msg{id_});
    if (!announced) break;
    const auto token = co_await actions_.async_receive();
    if (!token) break;
    step();
  }
}

}  // namespace coral::actors
