#include "coral/training/rollout.hpp"

#include <algorithm>

#include "coral/core/error.hpp"

namespace coral::training {

rollout_segment::rollout_segment(std::uint64_t idx, std::size_t rows_, std::size_t horizon_, std::size_t obs_dim_,
                                 std::size_t discrete_dim_, std::size_t continuous_dim_)
    : index(idx),
      rows(rows_),
      horizon(horizon_),
      obs_dim(obs_dim_),
      discrete_dim(discrete_dim_),
      continuous_dim(continuous_dim_),
      observations(rows_ * (horizon_ + 1) * obs_dim_),
      discrete_actions(rows_ * horizon_ * discrete_dim_),
      continuous_actions(rows_ * horizon_ * continuous_dim_),
      log_probs(rows_ * horizon_),
      values(rows_ * horizon_),
      rewards(rows_ * horizon_),
      terminated(rows_ * horizon_),
      truncated(rows_ * horizon_),
      policy_versions(rows_ * horizon_) {}

rollout_assembler::rollout_assembler(envs::env_batch& batch, std::vector<actors::row_range> group_rows,
                                     episode_callback on_episode, options opts)
    : batch_(&batch),
      group_rows_(std::move(group_rows)),
      on_episode_(std::move(on_episode)),
      options_(opts),
      rows_per_group_(group_rows_.empty() ? 0 : group_rows_.front().count),
      segments_(std::max<std::size_t>(opts.segments_in_flight, 1)),
      frames_(batch.rows(), batch.obs_dim(), opts.frames),
      acted_(group_rows_.size(), 0),
      scratch_(batch.obs_dim() * opts.frames) {
  if (group_rows_.empty() || options_.horizon == 0) throw usage_error("rollout_assembler: no groups or horizon 0");
}

rollout_segment& rollout_assembler::segment(std::uint64_t k) {
  auto& slot = open_[k];
  if (!slot) {
    slot = std::make_unique<rollout_segment>(k, batch_->rows(), options_.horizon, frames_.width(),
                                             batch_->discrete_action_dim(), batch_->continuous_action_dim());
    slot->state_dim = options_.state_dim;
    slot->initial_states.resize(batch_->rows() * options_.state_dim);
  }
  return *slot;
}

void rollout_assembler::record_outcome(rollout_segment& seg, std::size_t i, std::uint32_t r) {
  if (batch_->failed()[r] != 0) {
    // The env threw on this step and was reset: the step has no outcome. A
    // reward equal to the step's own value estimate, with the chain cut,
    // gives it zero advantage and a value target equal to the estimate: it
    // teaches nothing. No episode is recorded.
    seg.rewards[i] = seg.values[i];
    seg.terminated[i] = 1;
    seg.truncated[i] = 0;
    frames_.restart(r);
    return;
  }
  seg.rewards[i] = batch_->rewards()[r];
  const auto term = batch_->terminated()[r];
  const auto trunc = batch_->truncated()[r];
  seg.terminated[i] = term;
  seg.truncated[i] = trunc;
  if (term == 0 && trunc == 0) return;
  if (term == 0) {
    frames_.peek(r, batch_->final_observations().row(r), scratch_);
    seg.truncated_steps.push_back(static_cast<std::uint32_t>(i));
    seg.truncated_observations.insert(seg.truncated_observations.end(), scratch_.begin(), scratch_.end());
  }
  if (on_episode_) on_episode_(batch_->episode_returns()[r], batch_->episode_lengths()[r]);
  frames_.restart(r);
}

void rollout_assembler::arrived(std::uint32_t g, std::uint64_t n) {
  const auto range = group_rows_[g];
  const std::size_t T = options_.horizon;
  const std::size_t width = frames_.width();
  const std::uint64_t k = n / T;  // segment of step n
  const std::size_t t = n % T;
  std::unique_lock lock(mutex_);
  rollout_segment* previous = n > 0 ? &segment((n - 1) / T) : nullptr;  // segment of step n - 1
  const std::size_t tp = n > 0 ? (n - 1) % T : 0;
  auto& seg = segment(k);
  for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
    if (previous != nullptr) record_outcome(*previous, r * T + tp, r);  // the outcome of step n - 1
    // Observation n: the input of step n, and the bootstrap of the segment before.
    frames_.push(r, batch_->observations().row(r));
    const auto in = frames_.row(r);
    std::copy(in.begin(), in.end(), seg.observations.begin() + static_cast<std::ptrdiff_t>((r * (T + 1) + t) * width));
    if (t == 0 && previous != nullptr) {
      std::copy(in.begin(), in.end(),
                previous->observations.begin() + static_cast<std::ptrdiff_t>((r * (T + 1) + T) * width));
    }
  }
  if (previous != nullptr && tp == T - 1) {
    const std::uint64_t kp = (n - 1) / T;
    if (++groups_done_[kp] == group_rows_.size()) {
      groups_done_.erase(kp);
      auto it = open_.find(kp);
      done_.push_back(std::move(it->second));
      open_.erase(it);
    }
  }
  lock.unlock();
  for (auto& seg : done_) {
    if (!segments_.try_send(std::move(seg)) && !segments_.is_closed()) {
      throw usage_error("rollout_assembler: the segments channel is full: the gate let more segments through than "
                        "the learner can hold");
    }
  }
  done_.clear();
}

void rollout_assembler::consume(const actors::step_batch& step) {
  const std::size_t T = options_.horizon;
  const std::size_t dd = batch_->discrete_action_dim();
  const std::size_t cd = batch_->continuous_action_dim();
  std::lock_guard lock(mutex_);
  for (const auto& range : step.ranges) {
    const std::size_t g = range.first / rows_per_group_;
    const std::uint64_t n = acted_[g]++;
    auto& seg = segment(n / T);
    const std::size_t t = n % T;
    for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
      const std::size_t i = r * T + t;
      if (dd > 0) {
        const auto a = step.batch.discrete_actions().row(r);
        std::copy(a.begin(), a.end(), seg.discrete_actions.begin() + static_cast<std::ptrdiff_t>(i * dd));
      }
      if (cd > 0) {
        const auto a = continuous_source_.empty() ? step.batch.continuous_actions().row(r)
                                                  : continuous_source_.subspan(r * cd, cd);
        std::copy(a.begin(), a.end(), seg.continuous_actions.begin() + static_cast<std::ptrdiff_t>(i * cd));
      }
      if (t == 0 && options_.state_dim > 0 && !state_source_.empty()) {
        const auto st = state_source_.subspan(r * options_.state_dim, options_.state_dim);
        std::copy(st.begin(), st.end(),
                  seg.initial_states.begin() + static_cast<std::ptrdiff_t>(r * options_.state_dim));
      }
      seg.log_probs[i] = step.log_probs.empty() ? 0.0f : step.log_probs[r];
      seg.values[i] = step.values.empty() ? 0.0f : step.values[r];
      seg.policy_versions[i] = step.policy_version;
    }
  }
}

}  // namespace coral::training
