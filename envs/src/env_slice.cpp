#include "coral/envs/env_slice.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/envs/errors.hpp"

namespace coral::envs {
namespace {

constexpr std::uint32_t exponent_bits = 0x7f800000U;

[[noreturn]] void mismatch(std::size_t index, std::string_view reason) {
  throw usage_error(fmt::format(fmt::runtime(errors::batch_mismatch), fmt::format("#{}", index), reason));
}

/// True when no element of `values` is a NaN or an infinity (all exponent
/// bits set). Integer tests the compiler vectorises: a float sum of x * 0
/// would be one long chain of dependent adds, several times slower for
/// humanoid's 376 elements.
bool all_finite(std::span<const float> values) {
  std::uint32_t bad = 0;
  for (const float x : values) {
    bad |= static_cast<std::uint32_t>((std::bit_cast<std::uint32_t>(x) & exponent_bits) == exponent_bits);
  }
  return bad == 0;
}

/// errors::non_finite_observation for the first NaN or infinite element of
/// `obs`, if there is one.
std::optional<std::string> non_finite_element(std::span<const float> obs) {
  if (all_finite(obs)) return std::nullopt;
  for (std::size_t k = 0; k < obs.size(); ++k) {
    if (!std::isfinite(obs[k])) return fmt::format(fmt::runtime(errors::non_finite_observation), k, obs[k]);
  }
  return std::nullopt;
}

}  // namespace

env_slice::env_slice(env_batch& batch, std::size_t first_row, std::vector<std::unique_ptr<env>> envs)
    : batch_(&batch), first_row_(first_row), envs_(std::move(envs)) {
  std::size_t row = first_row;
  std::size_t widest = 0;
  row_offsets_.reserve(envs_.size());
  views_.reserve(envs_.size());
  for (std::size_t i = 0; i < envs_.size(); ++i) {
    const env& e = *envs_[i];
    if (e.observation_space().flat_size() != batch.obs_dim()) {
      mismatch(i, fmt::format("observation width {} != batch obs_dim {}", e.observation_space().flat_size(),
                              batch.obs_dim()));
    }
    if (e.action_space().discrete_size() != batch.discrete_action_dim() ||
        e.action_space().continuous_size() != batch.continuous_action_dim()) {
      mismatch(i, "action widths differ from the batch's");
    }
    const std::size_t agents = e.max_agents();
    if (agents == 0) mismatch(i, "max_agents() is 0");
    if (row + agents > batch.rows()) mismatch(i, "its rows run past the end of the batch");
    if (const std::size_t declared = e.action_mask_size(); declared != 0) {
      const std::size_t needed = action_mask_size(e.action_space());
      if (declared != needed || needed != batch.action_mask_dim()) {
        throw usage_error(fmt::format(fmt::runtime(errors::mask_width), fmt::format("#{}", i), declared,
                                      e.action_space().to_string(), needed));
      }
      batch.declare_action_masks();
      masked_ = true;
    }
    const std::size_t teams = e.team_count();
    for (std::size_t slot = 0; slot < agents; ++slot) {
      const std::size_t team = e.team_of(slot);
      if (team >= teams) {
        throw usage_error(fmt::format(fmt::runtime(errors::team_out_of_range), fmt::format("#{}", i), slot, team, teams));
      }
      batch.teams()[row + slot] = static_cast<std::int32_t>(team);
    }
    row_offsets_.push_back(row);
    views_.push_back(batch.view(row, agents));
    row += agents;
    widest = std::max(widest, agents);
  }
  row_count_ = row - first_row;
  was_active_.resize(widest);
  if (masked_) mask_counts_ = discrete_counts(envs_.front()->action_space());
}

void env_slice::check_masks(std::size_t i, const env_rows& rows) const {
  for (std::size_t r = 0; r < rows.size(); ++r) {
    // A row that ended is acted for next in a new episode, whose reset
    // writes its mask; only rows that play on must have a legal action now.
    if (rows.active(r) == 0 || (rows.terminated(r) | rows.truncated(r)) != 0) continue;
    if (const auto c = fully_masked_component(rows.action_mask(r), mask_counts_); c >= 0) {
      throw env_failed(i, fmt::format(fmt::runtime(errors::all_actions_masked), r, c));
    }
  }
}

void env_slice::reset_env(std::size_t i, const env_rows& rows) {
  std::fill_n(&rows.active(0), rows.size(), std::uint8_t{1});
  if (masked_) std::fill_n(rows.action_mask(0).data(), rows.size() * rows.action_mask(0).size(), std::uint8_t{1});
  try {
    envs_[i]->reset(rows);
  } catch (const std::exception& e) {
    throw env_failed(i, fmt::format(fmt::runtime(errors::reset_failed), e.what()));
  }
  if (masked_) check_masks(i, rows);
  if (!check_finite_) return;
  // A first observation is checked like any other: a NaN from reset() would
  // otherwise reach the policy unseen.
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (rows.active(r) == 0) continue;
    if (const auto bad = non_finite_element(rows.observation(r))) {
      throw env_failed(i, fmt::format(fmt::runtime(errors::reset_failed), *bad));
    }
  }
}

void env_slice::check_values(std::size_t i, const env_rows& rows) const {
  // Every value finite, the case of every step: one pass without early
  // exits. Only otherwise is the culprit looked for and named.
  bool finite = true;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const bool counts = was_active_[r] != 0 || (rows.terminated(r) | rows.truncated(r)) != 0;
    finite &= !counts || std::isfinite(rows.reward(r));
    finite &= rows.active(r) == 0 || all_finite(rows.observation(r));
  }
  if (finite) return;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const bool counts = was_active_[r] != 0 || (rows.terminated(r) | rows.truncated(r)) != 0;
    if (counts && !std::isfinite(rows.reward(r))) {
      throw env_failed(i, fmt::format(fmt::runtime(errors::non_finite_reward), rows.reward(r)));
    }
    if (rows.active(r) == 0) continue;
    if (const auto bad = non_finite_element(rows.observation(r))) throw env_failed(i, *bad);
  }
}

void env_slice::reset_all() {
  for (std::size_t i = 0; i < envs_.size(); ++i) reset_one(i);
}

void env_slice::reset_one(std::size_t i) {
  reset_env(i, views_[i]);
  clear_rows(i);
}

void env_slice::clear_rows(std::size_t i) {
  const std::size_t first = row_offsets_[i];
  const std::size_t n = views_[i].size();
  std::fill_n(batch_->rewards().data() + first, n, 0.0F);
  std::fill_n(batch_->terminated().data() + first, n, std::uint8_t{0});
  std::fill_n(batch_->truncated().data() + first, n, std::uint8_t{0});
  std::fill_n(batch_->episode_returns().data() + first, n, 0.0F);
  std::fill_n(batch_->episode_lengths().data() + first, n, 0);
  std::fill_n(batch_->final_observations().row(first).data(), n * batch_->obs_dim(), 0.0F);
  std::fill_n(batch_->failed().data() + first, n, std::uint8_t{0});
  // A new episode carries out any pending reset (next-step auto-reset).
  auto& command = batch_->commands()[first];
  if (command != row_command::step) command = row_command::step;
}

void env_slice::step_all() { step_from(0); }

void env_slice::step_from(std::size_t first_env) {
  float* const returns = batch_->episode_returns().data();
  std::int32_t* const lengths = batch_->episode_lengths().data();
  std::uint8_t* const failed = batch_->failed().data();
  std::uint8_t* const commands = batch_->commands().data();
  const std::size_t obs_dim = batch_->obs_dim();
  for (std::size_t i = first_env; i < envs_.size(); ++i) {
    const env_rows& rows = views_[i];
    const std::size_t first = row_offsets_[i];
    const std::size_t n = rows.size();

    if (const std::uint8_t command = commands[first]; command != row_command::step) {
      if ((command & row_command::hold) != 0) {
        commands[first] = command & row_command::reset;
        continue;
      }
      reset_one(i);  // clears the command
      continue;
    }

    for (std::size_t r = 0; r < n; ++r) {
      if ((rows.terminated(r) | rows.truncated(r)) != 0) {
        returns[first + r] = 0.0F;
        lengths[first + r] = 0;
      }
      was_active_[r] = rows.active(r);
      // An inactive row ends on this step only if the env says so now (a
      // waiting agent, see env.hpp): what a past step left is cleared first.
      if (was_active_[r] == 0 && (rows.terminated(r) | rows.truncated(r)) != 0) {
        rows.reward(r) = 0.0F;
        rows.terminated(r) = 0;
        rows.truncated(r) = 0;
      }
      // Only after a failure is there anything to clear: an unconditional
      // store would make the column's cache line, shared by the groups on
      // other threads, bounce on every step.
      if (failed[first + r] != 0) failed[first + r] = 0;
    }

    // A try block costs nothing until something throws.
    try {
      envs_[i]->step(rows);
    } catch (const std::exception& e) {
      throw env_failed(i, e.what());
    }
    if (check_finite_) check_values(i, rows);
    if (masked_) check_masks(i, rows);

    bool live = false;
    for (std::size_t r = 0; r < n; ++r) {
      const bool ended = (rows.terminated(r) | rows.truncated(r)) != 0;
      if (was_active_[r] == 0 && !ended) {
        rows.reward(r) = 0.0F;
        live = live || rows.active(r) != 0;
        continue;
      }
      returns[first + r] += rows.reward(r);
      lengths[first + r] += was_active_[r];
      if ((rows.terminated(r) | rows.truncated(r)) != 0) {
        std::memcpy(batch_->final_observations().row(first + r).data(), rows.observation(r).data(),
                    obs_dim * sizeof(float));
      } else {
        live = live || rows.active(r) != 0;
      }
    }
    if (live || !autoreset_) continue;
    if (next_step_autoreset_) {
      commands[first] = row_command::reset;
    } else {
      reset_env(i, rows);
    }
  }
}

}  // namespace coral::envs
