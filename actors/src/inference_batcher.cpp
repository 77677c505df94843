#include "coral/actors/inference_batcher.hpp"

#include <algorithm>

#include <asio/use_awaitable.hpp>

#include "coral/core/error.hpp"

namespace coral::actors {
namespace {
using clock = std::chrono::steady_clock;

std::int64_t ns_since(clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t).count();
}
}  // namespace

inference_batcher::inference_batcher(std::vector<channel<ready_msg>*> ready, std::vector<env_group*> groups,
                                     policy& pol, envs::env_batch& batch, options opts,
                                     step_consumer* consumer, const latest<std::vector<float>>* weights)
    : ready_(std::move(ready)),
      groups_(std::move(groups)),
      policy_(&pol),
      batch_(&batch),
      options_(opts),
      consumer_(consumer),
      weights_(weights),
      group_size_(groups_.empty() ? 1 : groups_.front()->size()),
      first_group_(groups_.empty() ? 0 : groups_.front()->id()) {
  if (ready_.empty() || groups_.empty()) throw usage_error("inference_batcher: no ready channel or no group");
  for (std::size_t i = 0; i < groups_.size(); ++i) {
    if (groups_[i]->id() != first_group_ + i) throw usage_error("inference_batcher: group ids are not consecutive");
  }
  received_.resize(groups_.size());
  in_hand_.reserve(groups_.size());
  ranges_.reserve(groups_.size());
  log_probs_.resize(batch.rows());
  values_.resize(batch.rows());
}

void inference_batcher::close_all() noexcept {
  for (auto* ch : ready_) ch->close();
  for (auto* g : groups_) g->actions().close();
}

std::size_t inference_batcher::groups_min() const noexcept {
  const std::size_t groups_wanted = options_.batch_size / group_size_;
  return options_.min_batch_size == 0 ? groups_wanted : (options_.min_batch_size + group_size_ - 1) / group_size_;
}

bool inference_batcher::waits_with_deadline() const noexcept {
  return groups_min() < options_.batch_size / group_size_;
}

asio::awaitable<bool> inference_batcher::collect(channel<ready_msg>& ch) {
  const std::size_t groups_wanted = options_.batch_size / group_size_;
  const std::size_t groups_min = this->groups_min();
  in_hand_.clear();
  std::optional<clock::time_point> deadline;
  while (in_hand_.size() < groups_wanted) {
    std::span<ready_msg> room(received_.data(), groups_wanted - in_hand_.size());
    std::size_t n = ch.try_receive_some(room);
    if (n == 0) {
      const auto waited_from = clock::now();
      if (in_hand_.size() >= groups_min && groups_min < groups_wanted) {
        // Dynamic batching: enough envs for a batch; wait for more only
        // until the deadline set when the minimum was reached.
        if (!deadline) deadline = waited_from + options_.batch_timeout;
        if (waited_from >= *deadline) break;
        n = co_await ch.async_receive_some_until(room, *deadline);
        stats_.idle_ns.fetch_add(ns_since(waited_from), std::memory_order_relaxed);
        if (n == 0 && !ch.is_drained()) break;  // deadline passed; nothing taken, nothing lost
      } else {
        if (ch.is_drained()) co_return false;  // closed
        channel_waiter w;  // frame-free, as in env_group::run
        co_await ch.wait_for_item(w);
        w.throw_if_aborted();
        stats_.idle_ns.fetch_add(ns_since(waited_from), std::memory_order_relaxed);
        continue;  // take what came, if no other receiver took it first
      }
      if (n == 0) co_return false;  // closed
    }
    for (std::size_t i = 0; i < n; ++i) in_hand_.push_back(received_[i].group - first_group_);
  }
  co_return true;
}

asio::awaitable<void> inference_batcher::run() {
  const auto started = clock::now();
  std::uint64_t version = 0;
  std::uint64_t steps = 0;
  std::uint64_t allowed = 0;  // steps claimed from options_.budget
  std::uint64_t batch_index = 0;
  std::size_t cursor = 0;
  for (;;) {
    auto& ch = *ready_[cursor];
    cursor = cursor + 1 == ready_.size() ? 0 : cursor + 1;
    // A co_await of its own, never inside a condition (GCC 12, see env_group.cpp).
    const bool full = co_await collect(ch);
    if (!full) break;

    if (weights_ != nullptr) {
      if (auto w = weights_->read_newer(version)) {
        policy_->load_weights(*w->value);
        version = w->version;
        stats_.policy_version.store(version, std::memory_order_relaxed);
      }
    }

    // Rows in group order: what the policy and the consumer see does not
    // depend on which group happened to finish first.
    std::sort(in_hand_.begin(), in_hand_.end());
    ranges_.clear();
    std::size_t envs_in_batch = 0;
    for (auto g : in_hand_) {
      ranges_.push_back(groups_[g]->rows());
      envs_in_batch += groups_[g]->size();
    }
    policy_->act(policy_rows{*batch_, ranges_, log_probs_, values_});
    if (consumer_ != nullptr) {
      consumer_->consume(step_batch{*batch_, ranges_, log_probs_, values_, version, batch_index});
    }
    ++batch_index;
    steps += envs_in_batch;
    stats_.env_steps.store(steps, std::memory_order_relaxed);
    stats_.batches.store(batch_index, std::memory_order_relaxed);
    stats_.run_ns.store(ns_since(started), std::memory_order_relaxed);

    if (options_.max_env_steps != 0 && steps >= options_.max_env_steps) break;
    if (options_.budget != nullptr) {
      while (steps >= allowed) {
        const std::uint64_t more = options_.budget->claim(options_.batch_size);
        if (more == 0) break;
        allowed += more;
      }
      if (steps >= allowed) break;  // the budget is spent
    }
    for (auto g : in_hand_) {
      // The group is parked waiting for exactly this token: room is certain
      // unless the channel was closed by a stop.
      if (!groups_[g]->actions().try_send(batch_index)) {
        close_all();
        co_return;
      }
    }
  }
  stats_.run_ns.store(ns_since(started), std::memory_order_relaxed);
  close_all();
}

}  // namespace coral::actors
