#include "coral/envs/population.hpp"

#include <algorithm>
#include <cmath>

namespace coral::envs {

std::vector<config_key> population::config_keys() {
  return {{.name = "agents", .type = config_type::integer, .default_value = "8",
           .description = "agent slots (rows per env)", .min = 1, .max = 4096},
          {.name = "actions", .type = config_type::integer, .default_value = "4",
           .description = "values of the cue (and actions)", .min = 2, .max = 64},
          {.name = "length", .type = config_type::integer, .default_value = "8",
           .description = "steps an agent plays unless it leaves early", .min = 1, .max = 1 << 20},
          {.name = "join", .type = config_type::real, .default_value = "0.1",
           .description = "probability that a free slot takes a new agent after a step", .min = 0.0, .max = 1.0},
          {.name = "leave", .type = config_type::real, .default_value = "0.05",
           .description = "probability that an agent leaves after a step (truncated)", .min = 0.0, .max = 1.0},
          {.name = "max_steps", .type = config_type::integer, .default_value = "64",
           .description = "steps of the env's episode", .min = 1}};
}

population::population(const env_config& config, env_seed seed)
    : observation_space_(space::box({static_cast<std::size_t>(config.get_int("actions")) + 1}, 0.0F, 1.0F)),
      action_space_(space::discrete(static_cast<std::int32_t>(config.get_int("actions")))),
      rng_(seed),
      actions_(static_cast<std::int32_t>(config.get_int("actions"))),
      length_(config.get_int("length")),
      join_(config.get_float("join")),
      leave_(config.get_float("leave")),
      max_steps_(config.get_int("max_steps")) {
  if (max_steps_ < length_) config.reject("max_steps", "must be at least length");
  const auto agents = static_cast<std::size_t>(config.get_int("agents"));
  played_.assign(agents, -1);
  cues_.assign(agents, 0);
}

std::optional<double> population::optimal_return() const noexcept {
  if (leave_ == 0.0) return 1.0;
  const double stay = 1.0 - leave_;
  return (1.0 - std::pow(stay, static_cast<double>(length_))) / (leave_ * static_cast<double>(length_));
}

void population::new_cue(const env_rows& rows, std::size_t slot) {
  const auto cue = static_cast<std::int32_t>(rng_.below(static_cast<std::uint64_t>(actions_)));
  cues_[slot] = cue;
  float* obs = rows.observation(slot).data();
  std::fill_n(obs, actions_, 0.0F);
  obs[cue] = 1.0F;
  obs[actions_] = static_cast<float>(played_[slot]) / static_cast<float>(length_);
  // One wrong answer ruled out: drawn among the actions_ - 1 others.
  std::uint8_t* mask = rows.action_mask(slot).data();
  std::fill_n(mask, actions_, std::uint8_t{1});
  auto ruled_out = static_cast<std::int32_t>(rng_.below(static_cast<std::uint64_t>(actions_ - 1)));
  if (ruled_out >= cue) ++ruled_out;
  mask[ruled_out] = 0;
}

void population::join(const env_rows& rows, std::size_t slot) {
  played_[slot] = 0;
  rows.active(slot) = 1;
  new_cue(rows, slot);
}

void population::reset(const env_rows& rows) {
  steps_ = 0;
  for (std::size_t slot = 0; slot < played_.size(); ++slot) {
    if (slot == 0 || rng_.below(2) == 0) {
      join(rows, slot);
    } else {
      played_[slot] = -1;
      rows.active(slot) = 0;
    }
  }
}

void population::step(const env_rows& rows) {
  ++steps_;
  const bool may_join = max_steps_ - steps_ >= length_;
  const std::size_t n = played_.size();
  std::size_t in_play = 0;
  for (std::size_t slot = 0; slot < n; ++slot) {
    if (played_[slot] < 0) {
      if (may_join && join_ > 0.0 && rng_.uniform(0.0, 1.0) < join_) {
        join(rows, slot);
        ++in_play;
      }
      continue;
    }
    const bool answered = rows.action(slot) == cues_[slot];
    rows.reward(slot) = answered ? 1.0F / static_cast<float>(length_) : 0.0F;
    const bool done = ++played_[slot] >= length_;
    const bool leaves = !done && leave_ > 0.0 && rng_.uniform(0.0, 1.0) < leave_;
    rows.terminated(slot) = static_cast<std::uint8_t>(done);
    rows.truncated(slot) = static_cast<std::uint8_t>(leaves);
    if (done || leaves) {
      rows.observation(slot)[static_cast<std::size_t>(actions_)] =
          static_cast<float>(played_[slot]) / static_cast<float>(length_);
      played_[slot] = -1;
      rows.active(slot) = 0;
      continue;
    }
    new_cue(rows, slot);
    ++in_play;
  }
  if (in_play == 0 && may_join) {
    // Keep the episode going while an agent could still play a whole task.
    // A slot whose agent just ended keeps its final row this step; take a free one that did not.
    for (std::size_t slot = 0; slot < n; ++slot) {
      if (played_[slot] < 0 && rows.terminated(slot) == 0 && rows.truncated(slot) == 0) {
        join(rows, slot);
        break;
      }
    }
  }
}

}  // namespace coral::envs
