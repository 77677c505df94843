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
  const std::size_t slot = r * length + t % length;
  std::ranges::copy(b.observations().row(r), ring_obs_.begin() + static_cast<std::ptrdiff_t>(slot * od));
  if (dd > 0) {
    std::ranges::copy(b.discrete_actions().row(r), ring_actions_.begin() + static_cast<std::ptrdiff_t>(slot * dd));
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
                           std::span<const float> next_obs) {
  replay::sequence_block& block = pending();
  const std::size_t length = layout_.length;
  const std::size_t od = layout_.obs_dim;
  const std::size_t dd = layout_.discrete_dim;
  const std::size_t sd = layout_.state_dim;
  const std::int64_t start = start_of(k);
  const auto last = static_cast<std::int64_t>(last_step);

  // New elements are zeros: the padding.
  block.streams.push_back(r);
  const std::size_t obs0 = block.observations.size();
  const std::size_t act0 = block.actions.size();
  const std::size_t slot0 = block.rewards.size();
  const std::size_t state0 = block.states.size();
  block.observations.resize(obs0 + (length + 1) * od);
  block.actions.resize(act0 + length * dd);
  block.rewards.resize(slot0 + length);
  block.flags.resize(slot0 + length);
  block.states.resize(state0 + sd);

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
  }
  // The observation after the last step: o_L of a sequence cut mid-episode,
  // or a truncated episode's final observation (empty when terminated).
  if (!next_obs.empty()) {
    const auto after = static_cast<std::size_t>(last - start + 1);
    std::ranges::copy(next_obs, block.observations.begin() + static_cast<std::ptrdiff_t>(obs0 + after * od));
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
  const std::uint64_t stride = layout_.stride();
  replay::sequence_block& block = pending();
  for (const auto& range : step.ranges) {
    for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
      row_state& row = rows_[r];
      if (row.has_previous && b.failed()[r] != 0) {
        // This row's env failed and was reset (--on-env-error reset): the
        // episode ended with no outcome to record; its open sequences are
        // dropped, so none spans the reset.
        row = row_state{};
      }
      if (row.has_previous) {
        // The outcome of the row's previous step (episode step t) is in the row now.
        const std::uint64_t t = row.step;
        const bool terminated = b.terminated()[r] != 0;
        const bool truncated = !terminated && b.truncated()[r] != 0;
        const std::size_t slot = r * length + t % length;
        ring_rewards_[slot] = b.rewards()[r];
        if (terminated) ring_flags_[slot] |= replay::slot_terminated;
        if (truncated) ring_flags_[slot] |= replay::slot_truncated;
        if (terminated || truncated) {
          const auto final_obs = truncated ? b.final_observations().row(r) : std::span<const float>{};
          // Every open sequence with a step in its trained part, padded.
          for (std::uint64_t k = row.next_sequence; k * stride <= t; ++k) emit(r, k, t, final_obs);
          if (on_episode_) on_episode_(b.episode_returns()[r], b.episode_lengths()[r]);
          row = row_state{};
        } else {
          // The sequence whose last slot is step t, if one is, is complete.
          if (start_of(row.next_sequence) + static_cast<std::int64_t>(length) - 1 == static_cast<std::int64_t>(t)) {
            emit(r, row.next_sequence, t, b.observations().row(r));
            ++row.next_sequence;
          }
          row.step = t + 1;
        }
      }
      // The step just chosen waits for its outcome.
      record_step(b, r, row.step);
      row.has_previous = true;
      ++block.env_steps;
    }
  }
  // Every call's env steps go at once, sequences or not: the rate limiter
  // counts inserts from them, and a gate waiting for the allowance would
  // otherwise wait for steps held back here.
  if (block.size() > 0 || block.env_steps > 0) sink_.send(std::move(pending_));
}

}  // namespace coral::training
