#include "coral/training/sequence_feeder.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/errors.hpp"

namespace coral::training {

namespace {

void check_layout_fits(const replay::sequence_layout& layout, const envs::env_batch& batch) {
  if (layout.length == 0) throw config_error(std::string(replay::errors::zero_sequence_length));
  if (layout.burn_in >= layout.length) {
    throw config_error(
        fmt::format(fmt::runtime(replay::errors::sequence_part_too_long), "burn_in", layout.burn_in, layout.length));
  }
  if (layout.overlap >= layout.length) {
    throw config_error(
        fmt::format(fmt::runtime(replay::errors::sequence_part_too_long), "overlap", layout.overlap, layout.length));
  }
  const auto fits = [](const char* field, std::size_t ours, std::size_t theirs) {
    if (ours != theirs) {
      throw config_error(fmt::format(fmt::runtime(replay::errors::sequence_feeder_shape), field, ours, theirs));
    }
  };
  fits("obs_dim", layout.obs_dim, batch.obs_dim());
  fits("discrete_dim", layout.discrete_dim, batch.discrete_action_dim());
  // A sequence stores no continuous action part (R2D2 acts on discrete actions).
  fits("continuous action floats", 0, batch.continuous_action_dim());
  // Masks are the env's: a layout with them needs a batch that has them, as wide.
  if (layout.mask_dim > 0) fits("mask_dim", layout.mask_dim, batch.has_action_masks() ? batch.action_mask_dim() : 0);
}

}  // namespace

sequence_feeder::sequence_feeder(envs::env_batch& batch, const replay::sequence_layout& layout, sequence_sink sink,
                                 episode_callback on_episode)
    : batch_(&batch), layout_(layout), sink_(std::move(sink)), on_episode_(std::move(on_episode)) {
  check_layout_fits(layout_, batch);
  if (!sink_.send) throw config_error(std::string(replay::errors::sequence_feeder_no_send));
  const std::size_t rows = batch.rows();
  const std::size_t length = layout_.length;
  // Sequence k is open over the steps [start_k, start_k + length): at most
  // ceil(length / stride) starts fall in one such window, so that many
  // start states per row are enough (see record_step()).
  state_slots_ = (length + layout_.stride() - 1) / layout_.stride();
  rows_.resize(rows);
  ring_obs_.resize(rows * length * layout_.obs_dim);
  ring_actions_.resize(rows * length * layout_.discrete_dim);
  ring_rewards_.resize(rows * length);
  ring_flags_.resize(rows * length);
  ring_masks_.resize(rows * length * layout_.mask_dim);
  all_legal_.assign(layout_.mask_dim, 1);
  start_states_.resize(rows * state_slots_ * layout_.state_dim);
}

void sequence_feeder::record_states_from(std::span<const float> rows) {
  const std::size_t expected = batch_->rows() * layout_.state_dim;
  if (rows.size() != expected) {
    throw config_error(fmt::format(fmt::runtime(replay::errors::sequence_feeder_states_size), rows.size(), expected));
  }
  states_ = rows;
}

std::int64_t sequence_feeder::start_of(std::uint64_t k) const noexcept {
  return static_cast<std::int64_t>(k * layout_.stride()) - static_cast<std::int64_t>(layout_.burn_in);
}

replay::sequence_block& sequence_feeder::pending() {
  if (!pending_) {
    if (sink_.take_block) pending_ = sink_.take_block();
    if (!pending_) pending_ = std::make_unique<replay::sequence_block>();
    pending_->clear();
    pending_->layout = layout_;
  }
  return *pending_;
}

void sequence_feeder::record_step(const envs::env_batch& b, std::uint32_t r, std::uint64_t t) {
  const std::size_t length = layout_.length;
  const std::size_t od = layout_.obs_dim;
  const std::size_t dd = layout_.discrete_dim;
  const std::size_t md = layout_.mask_dim;
  const std::size_t slot = r * length + t % length;
  std::ranges::copy(b.observations().row(r), ring_obs_.begin() + static_cast<std::ptrdiff_t>(slot * od));
  if (dd > 0) {
    std::ranges::copy(b.discrete_actions().row(r), ring_actions_.begin() + static_cast<std::ptrdiff_t>(slot * dd));
  }
  if (md > 0) {
    std::ranges::copy(b.action_masks().row(r), ring_masks_.begin() + static_cast<std::ptrdiff_t>(slot * md));
  }
  ring_rewards_[slot] = 0.0f;
  ring_flags_[slot] = static_cast<std::uint8_t>(replay::slot_valid | (t == 0 ? replay::slot_first : 0));
  // Sequence k = (t + burn_in) / stride starts at this step when that
  // divides: keep the state the policy had before acting on it. Starts at
  // step 0 or before need none (their state is zeros).
  const std::size_t sd = layout_.state_dim;
  const std::uint64_t shifted = t + layout_.burn_in;
  if (sd > 0 && t > 0 && shifted % layout_.stride() == 0) {
    const std::uint64_t k = shifted / layout_.stride();
    const auto source = states_.subspan(r * sd, sd);
    std::ranges::copy(source,
                      start_states_.begin() + static_cast<std::ptrdiff_t>((r * state_slots_ + k % state_slots_) * sd));
  }
}

void sequence_feeder::emit(std::uint32_t r, std::uint64_t k, std::uint64_t last_step,
                           std::span<const float> next_obs, std::span<const std::uint8_t> next_mask) {
  replay::sequence_block& block = pending();
  const std::size_t length = layout_.length;
  const std::size_t od = layout_.obs_dim;
  const std::size_t dd = layout_.discrete_dim;
  const std::size_t sd = layout_.state_dim;
  const std::size_t md = layout_.mask_dim;
  const std::int64_t start = start_of(k);
  const auto last = static_cast<std::int64_t>(last_step);

  // New elements are zeros: the padding.
  block.streams.push_back(r);
  const std::size_t obs0 = block.observations.size();
  const std::size_t act0 = block.actions.size();
  const std::size_t slot0 = block.rewards.size();
  const std::size_t state0 = block.states.size();
  const std::size_t mask0 = block.masks.size();
  block.observations.resize(obs0 + (length + 1) * od);
  block.actions.resize(act0 + length * dd);
  block.rewards.resize(slot0 + length);
  block.flags.resize(slot0 + length);
  block.states.resize(state0 + sd);
  block.masks.resize(mask0 + (length + 1) * md);

  for (std::size_t i = 0; i < length; ++i) {
    const std::int64_t step = start + static_cast<std::int64_t>(i);
    if (step < 0) continue;
    if (step > last) break;
    const std::size_t ring = r * length + static_cast<std::uint64_t>(step) % length;
    std::copy_n(ring_obs_.begin() + static_cast<std::ptrdiff_t>(ring * od), od,
                block.observations.begin() + static_cast<std::ptrdiff_t>(obs0 + i * od));
    std::copy_n(ring_actions_.begin() + static_cast<std::ptrdiff_t>(ring * dd), dd,
                block.actions.begin() + static_cast<std::ptrdiff_t>(act0 + i * dd));
    block.rewards[slot0 + i] = ring_rewards_[ring];
    block.flags[slot0 + i] = ring_flags_[ring];
    std::copy_n(ring_masks_.begin() + static_cast<std::ptrdiff_t>(ring * md), md,
                block.masks.begin() + static_cast<std::ptrdiff_t>(mask0 + i * md));
  }
  // The observation after the last step: o_L of a sequence cut mid-episode,
  // or a truncated episode's final observation (empty when terminated),
  // and the actions legal there.
  const auto after = static_cast<std::size_t>(last - start + 1);
  if (!next_obs.empty()) {
    std::ranges::copy(next_obs, block.observations.begin() + static_cast<std::ptrdiff_t>(obs0 + after * od));
  }
  if (md > 0 && !next_mask.empty()) {
    std::ranges::copy(next_mask, block.masks.begin() + static_cast<std::ptrdiff_t>(mask0 + after * md));
  }
  if (sd > 0 && start > 0) {
    std::copy_n(start_states_.begin() + static_cast<std::ptrdiff_t>((r * state_slots_ + k % state_slots_) * sd), sd,
                block.states.begin() + static_cast<std::ptrdiff_t>(state0));
  }
}

void sequence_feeder::consume(const actors::step_batch& step) {
  const auto& b = step.batch;
  if (layout_.state_dim > 0 && states_.empty()) {
    throw usage_error(fmt::format(fmt::runtime(replay::errors::sequence_feeder_no_states), layout_.state_dim));
  }
  const std::size_t length = layout_.length;
  const std::size_t od = layout_.obs_dim;
  const std::size_t md = layout_.mask_dim;
  const std::uint64_t stride = layout_.stride();
  const auto active = b.active();
  replay::sequence_block& block = pending();
  for (const auto& range : step.ranges) {
    for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
      row_state& row = rows_[r];
      ++block.env_steps;  // every row's step counts, acted or not (the limiter counts rows)
      if (row.has_previous && b.failed()[r] != 0) {
        // This row's env failed and was reset (--on-env-error reset): the
        // episode ended with no outcome to record; its open sequences are
        // dropped, so none spans the reset.
        row = row_state{};
      }
      const bool acts = active[r] != 0;
      if (row.has_previous) {
        // The outcome of the slot's open step (its episode step t), or of
        // an env step the slot sat out since: its reward goes to step t.
        const std::uint64_t t = row.step;
        const bool terminated = b.terminated()[r] != 0;
        const bool truncated = !terminated && b.truncated()[r] != 0;
        const std::size_t slot = r * length + t % length;
        ring_rewards_[slot] += b.rewards()[r];
        if (terminated) ring_flags_[slot] |= replay::slot_terminated;
        if (truncated) ring_flags_[slot] |= replay::slot_truncated;
        if (terminated || truncated) {
          // A truncated episode's final observation; an agent that ended
          // while it waited has none (the env writes only the rows that
          // acted): the observation of its last step stands in, with its mask.
          std::span<const float> final_obs;
          std::span<const std::uint8_t> final_mask;
          if (truncated && row.waited) {
            final_obs = std::span<const float>(ring_obs_).subspan(slot * od, od);
            final_mask = std::span<const std::uint8_t>(ring_masks_).subspan(slot * md, md);
          } else if (truncated) {
            final_obs = b.final_observations().row(r);
            final_mask = all_legal_;  // the env gives no mask with a final observation
          }
          // Every open sequence with a step in its trained part, padded.
          for (std::uint64_t k = row.next_sequence; k * stride <= t; ++k) emit(r, k, t, final_obs, final_mask);
          if (on_episode_) on_episode_(b.episode_returns()[r], b.episode_lengths()[r]);
          row = row_state{};
        } else if (acts) {
          // The slot acts again: step t is complete, and the sequence whose
          // last slot it is, if one is, with this observation after it.
          if (start_of(row.next_sequence) + static_cast<std::int64_t>(length) - 1 == static_cast<std::int64_t>(t)) {
            emit(r, row.next_sequence, t, b.observations().row(r),
                 md > 0 ? b.action_masks().row(r) : std::span<const std::uint8_t>{});
            ++row.next_sequence;
          }
          row.step = t + 1;
        }
      }
      if (!acts) {
        // No agent acted in this slot (empty, or waiting for its turn):
        // nothing is recorded, and an open step keeps waiting.
        row.waited = row.has_previous;
        continue;
      }
      // The step just chosen waits for its outcome.
      record_step(b, r, row.step);
      row.has_previous = true;
      row.waited = false;
    }
  }
  // Every call's env steps go at once, sequences or not: the rate limiter
  // counts inserts from them, and a gate waiting for the allowance would
  // otherwise wait for steps held back here.
  if (block.size() > 0 || block.env_steps > 0) sink_.send(std::move(pending_));
}

}  // namespace coral::training
