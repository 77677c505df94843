#include "coral/actors/gate.hpp"

#include <variant>

#include <fmt/format.h>

#include "coral/core/error.hpp"

namespace coral::actors {

gate::gate(std::vector<row_range> group_rows, options opts)
    : group_rows_(std::move(group_rows)),
      options_(opts),
      // Every group has at most one announcement in flight.
      inbox_(group_rows_.size() + opts.note_room),
      arrivals_(group_rows_.size(), 0),
      env_steps_(opts.env_steps) {
  if (group_rows_.empty()) throw usage_error("gate: no groups");
}

asio::awaitable<void> gate::run(gate_policy& policy, std::vector<channel<ready_msg>*> batcher_ready,
                                std::function<void(gate_end)> on_end) {
  std::vector<waiting> held;  // in arrival order
  held.reserve(group_rows_.size());
  for (;;) {
    std::optional<gate_msg> msg;  // frame-free, as in env_group::run
    while (!(msg = inbox_.try_receive()) && !inbox_.is_drained()) {
      channel_waiter w;
      co_await inbox_.wait_for_item(w);
      w.throw_if_aborted();
    }
    if (!msg) break;
    // A ready announcement joins the held groups; a note only makes the
    // gate ask again about the groups it holds.
    if (const auto* ready = std::get_if<ready_msg>(&*msg)) {
      const std::uint32_t g = ready->group;
      const std::uint64_t n = arrivals_[g]++;
      policy.arrived(g, n);
      held.push_back({g, n});
    }
    if (end_requested_.load(std::memory_order_acquire)) {
      on_end(gate_end::requested);
      co_return;
    }
    const bool in_order = policy.in_order();
    bool holding = false;  // in order: a group was held, so are all after it
    auto keep = held.begin();
    for (auto it = held.begin(); it != held.end(); ++it) {
      const std::size_t rows = group_rows_[it->group].count;
      if (holding || !policy.may_step(it->group, it->step, rows)) {
        holding = in_order;
        *keep++ = *it;
        continue;
      }
      if (options_.max_env_steps != 0 && env_steps_.load(std::memory_order_relaxed) >= options_.max_env_steps) {
        on_end(gate_end::step_limit);
        co_return;
      }
      policy.stepped(it->group, it->step, rows);
      env_steps_.store(env_steps_.load(std::memory_order_relaxed) + rows, std::memory_order_relaxed);  // one writer
      // Room for every group: a forward never waits; it fails only when closed.
      if (!batcher_ready[it->group % batcher_ready.size()]->try_send(ready_msg{it->group})) co_return;
    }
    held.erase(keep, held.end());
    held_count_.store(held.size(), std::memory_order_relaxed);
  }
}

void gate::describe(std::string& out) const {
  out += fmt::format("  gate: {} env group(s) held, {} message(s) in its inbox, {} env steps let through\n", held(),
                     inbox_.size(), env_steps());
}

inference_batcher::options batcher_options_behind_gate(const sampler_options& o, const wiring& w,
                                                       std::chrono::microseconds threads_timeout) {
  inference_batcher::options bo;
  bo.batch_size = w.batch_size;
  bo.min_batch_size = o.min_batch_size;
  bo.batch_timeout = o.batch_timeout;
  const std::size_t groups_per_channel = w.groups / w.ready_channels;
  const std::size_t groups_per_batch = w.batch_size / w.envs_per_group;
  if (bo.min_batch_size == 0 && groups_per_batch > 1 && groups_per_batch < groups_per_channel) {
    bo.min_batch_size = w.envs_per_group;
    bo.batch_timeout = o.executor == executor_mode::single ? std::chrono::microseconds(0) : threads_timeout;
  }
  return bo;
}

}  // namespace coral::actors
