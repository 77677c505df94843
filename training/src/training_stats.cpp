#include "coral/training/training_stats.hpp"

namespace coral::training {

double training_stats::add_episode(double episode_return, double episode_length, bool* window_full) {
  std::lock_guard lock(mutex_);
  returns_.push_back(episode_return);
  lengths_.push_back(episode_length);
  return_sum_ += episode_return;
  length_sum_ += episode_length;
  if (returns_.size() > window_) {
    return_sum_ -= returns_.front();
    length_sum_ -= lengths_.front();
    returns_.pop_front();
    lengths_.pop_front();
  }
  if (returns_.size() == window_) {
    // Resum now and then: the running sums would drift over millions of episodes.
    if (s_.episodes % 1024 == 0) {
      return_sum_ = 0;
      length_sum_ = 0;
      for (auto r : returns_) return_sum_ += r;
      for (auto l : lengths_) length_sum_ += l;
    }
  }
  ++s_.episodes;
  s_.window = returns_.size();
  s_.mean_return = return_sum_ / static_cast<double>(returns_.size());
  s_.mean_length = length_sum_ / static_cast<double>(lengths_.size());
  if (window_full != nullptr) *window_full = returns_.size() == window_;
  return s_.mean_return;
}

void training_stats::set_env_steps(std::uint64_t steps) {
  std::lock_guard lock(mutex_);
  s_.env_steps = steps;
}

void training_stats::record_update(const update_stats& s, std::uint64_t updates) {
  std::lock_guard lock(mutex_);
  s_.last_update = s;
  s_.learner_seconds += s.seconds;
  if (s.max_policy_lag > s_.max_policy_lag) s_.max_policy_lag = s.max_policy_lag;
  s_.updates = updates;
}

stats_snapshot training_stats::read() const {
  std::lock_guard lock(mutex_);
  return s_;
}

}  // namespace coral::training
