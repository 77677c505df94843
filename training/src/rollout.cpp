#include "coral/training/rollout.hpp"

#include <algorithm>
#include <utility>

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
      policy_versions(rows_ * horizon_),
      acted(rows_ * horizon_, 1) {}

void rollout_segment::use_masks(std::size_t width) {
  mask_dim = width;
  action_masks.assign(rows * horizon * width, 1);
}

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
      scratch_(batch.obs_dim() * opts.frames),
      open_step_(batch.rows(), no_step),
      open_segment_(batch.rows(), 0),
      trained_episode_(batch.rows(), 0) {
  if (group_rows_.empty() || options_.horizon == 0) throw usage_error("rollout_assembler: no groups or horizon 0");
}

rollout_segment& rollout_assembler::segment(std::uint64_t k) {
  auto& slot = open_[k];
  if (!slot) {
    slot = std::make_unique<rollout_segment>(k, batch_->rows(), options_.horizon, frames_.width(),
                                             batch_->discrete_action_dim(), batch_->continuous_action_dim());
    slot->state_dim = options_.state_dim;
    slot->initial_states.resize(batch_->rows() * options_.state_dim);
    // Nothing acted until consume() says so.
    std::fill(slot->acted.begin(), slot->acted.end(), std::uint8_t{0});
    if (batch_->has_action_masks()) slot->use_masks(batch_->action_mask_dim());
  }
  return *slot;
}

void rollout_assembler::record_outcome(rollout_segment& seg, std::uint32_t r) {
  // The step this outcome belongs to: the row's own if it acted, else its
  // last acted one (a waiting slot's), in this segment (see carry()).
  const bool open = open_step_[r] != no_step && open_segment_[r] == seg.index;
  const std::size_t at = open ? open_step_[r] : no_step;
  const auto close = [&] {
    open_step_[r] = no_step;
    trained_episode_[r] = 0;
    frames_.restart(r);
  };
  if (batch_->failed()[r] != 0) {
    // The env threw on this step and was reset: the step has no outcome. A
    // reward equal to the step's own value estimate, with the chain cut,
    // gives it zero advantage and a value target equal to the estimate: it
    // teaches nothing. No episode is recorded.
    if (open) {
      seg.rewards[at] = seg.values[at];
      seg.terminated[at] = 1;
      seg.truncated[at] = 0;
    }
    close();
    return;
  }
  const auto term = batch_->terminated()[r];
  const auto trunc = batch_->truncated()[r];
  if (open) {
    seg.rewards[at] += batch_->rewards()[r];
    seg.terminated[at] = term;
    seg.truncated[at] = trunc;
  }
  if (term == 0 && trunc == 0) {
    // An open step of an earlier segment (the row acted for another policy
    // since) was trained on with the bootstrap it had: nothing reaches it now.
    if (!open) open_step_[r] = no_step;
    return;
  }
  if (open && term == 0) {
    frames_.peek(r, batch_->final_observations().row(r), scratch_);
    seg.truncated_steps.push_back(static_cast<std::uint32_t>(at));
    seg.truncated_observations.insert(seg.truncated_observations.end(), scratch_.begin(), scratch_.end());
  }
  if (on_episode_ && trained_episode_[r] != 0) on_episode_(batch_->episode_returns()[r], batch_->episode_lengths()[r]);
  close();
}

void rollout_assembler::carry(rollout_segment& from, rollout_segment& to, std::uint32_t r) {
  const std::size_t T = options_.horizon;
  const std::size_t p = open_step_[r];
  const std::size_t q = static_cast<std::size_t>(r) * T;  // position 0 of row r in `to`
  const std::size_t width = frames_.width();
  const auto obs_at = [&](rollout_segment& s, std::size_t step) {
    return s.observations.begin() + static_cast<std::ptrdiff_t>((r * (T + 1) + step) * width);
  };
  const auto moved = obs_at(from, p - q);
  std::copy_n(moved, width, obs_at(to, 0));
  std::copy_n(moved, width, obs_at(from, T));  // `from` bootstraps the row from the moved step
  const auto copy_rows = [](const auto& src, auto& dst, std::size_t a, std::size_t b, std::size_t n) {
    std::copy_n(src.begin() + static_cast<std::ptrdiff_t>(a * n), n, dst.begin() + static_cast<std::ptrdiff_t>(b * n));
  };
  copy_rows(from.discrete_actions, to.discrete_actions, p, q, from.discrete_dim);
  copy_rows(from.continuous_actions, to.continuous_actions, p, q, from.continuous_dim);
  copy_rows(from.action_masks, to.action_masks, p, q, from.mask_dim);
  to.log_probs[q] = from.log_probs[p];
  to.values[q] = from.values[p];
  to.policy_versions[q] = from.policy_versions[p];
  to.rewards[q] = from.rewards[p];
  to.acted[q] = 1;
  from.rewards[p] = 0;
  from.acted[p] = 0;
  open_step_[r] = q;
  open_segment_[r] = to.index;
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
  const auto active = std::as_const(*batch_).active();
  for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
    if (previous != nullptr) record_outcome(*previous, r);  // the outcome of step n - 1
    // Observation n: the input of step n, and the bootstrap of the segment before.
    frames_.push(r, batch_->observations().row(r));
    const auto in = frames_.row(r);
    std::copy(in.begin(), in.end(), seg.observations.begin() + static_cast<std::ptrdiff_t>((r * (T + 1) + t) * width));
    if (t == 0 && previous != nullptr) {
      std::copy(in.begin(), in.end(),
                previous->observations.begin() + static_cast<std::ptrdiff_t>((r * (T + 1) + T) * width));
      // A slot that waits across the boundary takes its open step along.
      if (open_step_[r] != no_step && open_segment_[r] == previous->index && active[r] == 0) carry(*previous, seg, r);
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
  const std::size_t md = batch_->has_action_masks() ? batch_->action_mask_dim() : 0;
  const auto active = step.batch.active();
  std::lock_guard lock(mutex_);
  for (const auto& range : step.ranges) {
    const std::size_t g = range.first / rows_per_group_;
    const std::uint64_t n = acted_[g]++;
    auto& seg = segment(n / T);
    const std::size_t t = n % T;
    for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
      const std::size_t i = r * T + t;
      if (t == 0 && options_.state_dim > 0 && !state_source_.empty()) {
        const auto st = state_source_.subspan(r * options_.state_dim, options_.state_dim);
        std::copy(st.begin(), st.end(),
                  seg.initial_states.begin() + static_cast<std::ptrdiff_t>(r * options_.state_dim));
      }
      // Only the learner's steps of agents in play are trained on.
      if (active[r] == 0 || (!acted_source_.empty() && acted_source_[r] == 0)) continue;
      seg.acted[i] = 1;
      open_step_[r] = i;
      open_segment_[r] = seg.index;
      trained_episode_[r] = 1;
      if (md > 0) {
        const auto m = step.batch.action_masks().row(r);
        std::copy(m.begin(), m.end(), seg.action_masks.begin() + static_cast<std::ptrdiff_t>(i * md));
      }
      if (dd > 0) {
        const auto a = step.batch.discrete_actions().row(r);
        std::copy(a.begin(), a.end(), seg.discrete_actions.begin() + static_cast<std::ptrdiff_t>(i * dd));
      }
      if (cd > 0) {
        const auto a = continuous_source_.empty() ? step.batch.continuous_actions().row(r)
                                                  : continuous_source_.subspan(r * cd, cd);
        std::copy(a.begin(), a.end(), seg.continuous_actions.begin() + static_cast<std::ptrdiff_t>(i * cd));
      }
      seg.log_probs[i] = step.log_probs.empty() ? 0.0f : step.log_probs[r];
      seg.values[i] = step.values.empty() ? 0.0f : step.values[r];
      seg.policy_versions[i] = step.policy_version;
    }
  }
}

}  // namespace coral::training
