#include "coral/training/learner_activity.hpp"

#include <fmt/format.h>

namespace coral::training {

std::int64_t learner_activity::now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count();
}

void learner_activity::begin(std::uint64_t update, std::uint64_t planned) noexcept {
  const auto now = now_ns();
  update_.store(update, std::memory_order_relaxed);
  planned_.store(planned, std::memory_order_relaxed);
  step_in_update_.store(0, std::memory_order_relaxed);
  began_ns_.store(now, std::memory_order_relaxed);
  last_step_ns_.store(now, std::memory_order_relaxed);
  begun_.fetch_add(1, std::memory_order_acq_rel);
  busy_.store(true, std::memory_order_release);
}

bool learner_activity::step() noexcept {
  last_step_ns_.store(now_ns(), std::memory_order_relaxed);
  step_in_update_.fetch_add(1, std::memory_order_relaxed);
  steps_.fetch_add(1, std::memory_order_acq_rel);
  return !stopping();
}

void learner_activity::end() noexcept {
  ended_ns_.store(now_ns(), std::memory_order_relaxed);
  busy_.store(false, std::memory_order_release);
}

double learner_activity::seconds_in_step() const noexcept {
  if (!busy()) return 0;
  return 1e-9 * static_cast<double>(now_ns() - last_step_ns_.load(std::memory_order_relaxed));
}

std::string learner_activity::describe() const {
  const auto now = now_ns();
  const auto update = update_.load(std::memory_order_relaxed);
  if (!busy()) {
    if (begun() == 0) return "learner: waiting for its first update's data";
    return fmt::format("learner: between updates (update {} ended {:.1f} s ago)", update,
                       1e-9 * static_cast<double>(now - ended_ns_.load(std::memory_order_relaxed)));
  }
  const auto planned = planned_.load(std::memory_order_relaxed);
  return fmt::format("learner: busy in update {} for {:.1f} s, step {}{} (the last {:.2f} s ago)", update,
                     1e-9 * static_cast<double>(now - began_ns_.load(std::memory_order_relaxed)),
                     step_in_update_.load(std::memory_order_relaxed),
                     planned != 0 ? fmt::format(" of {}", planned) : std::string(),
                     1e-9 * static_cast<double>(now - last_step_ns_.load(std::memory_order_relaxed)));
}

}  // namespace coral::training
