#include "coral/learners/q_policy.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/core/rng.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/errors.hpp"
#include "dense.hpp"
#include "legal_actions.hpp"

namespace coral::learners {

std::vector<std::size_t> q_network_widths(const network_spec& spec, std::string_view action_space) {
  if (spec.nvec.size() != 1 || spec.continuous_dim() != 0) {
    throw config_error(fmt::format(fmt::runtime(errors::dqn_needs_discrete), action_space));
  }
  std::vector<std::size_t> widths{spec.dense_input_dim()};
  widths.insert(widths.end(), spec.hidden.begin(), spec.hidden.end());
  widths.push_back(static_cast<std::size_t>(spec.nvec.front()));
  return widths;
}

struct q_policy::impl {
  impl(std::size_t rows, const dqn_config& c, std::uint64_t steps_done, std::size_t agents_per_env)
      : agents(std::max<std::size_t>(agents_per_env, 1)),
        schedule(std::max<std::size_t>(rows / agents, 1), c.epsilon_base, c.epsilon_alpha, c.exploration_steps,
                 steps_done),
        use_masks(c.action_masks) {}

  std::size_t agents;  // rows per env: an env's rows share its rung

  std::vector<std::size_t> widths;
  conv_spec conv;
  std::size_t actions = 0;
  detail::dense_encoder net;  // the convolutions (if any) and the MLP
  std::vector<coral::rng> rngs;
  actors::epsilon_schedule schedule;  // advanced here, read by the progress line on its own thread
  std::vector<float> scratch_a;
  std::vector<float> scratch_b;
  bool use_masks;
  bool deterministic = false;
};

q_policy::q_policy(const network_spec& spec, std::size_t rows, std::uint64_t seed, const dqn_config& config,
                   std::uint64_t steps_done, std::size_t agents)
    : impl_(std::make_unique<impl>(rows, config, steps_done, agents)) {
  auto& m = *impl_;
  if (spec.frames != 1) throw config_error(fmt::format(fmt::runtime(errors::dqn_no_frames), spec.frames));
  m.widths = q_network_widths(spec, fmt::format("{} actions", fmt::join(spec.nvec, ",")));
  m.conv = spec.conv;
  m.actions = m.widths.back();
  const std::vector<float> zeros(m.conv.parameter_count() + detail::dense_parameter_count(m.widths), 0.0f);
  m.net.load_flat(zeros, m.conv, m.widths);
  constexpr std::uint64_t policy_salt = 0x712D706F6C696379ULL;  // "q-policy"
  for (std::size_t r = 0; r < rows; ++r) m.rngs.emplace_back(coral::env_seed{seed ^ policy_salt, r});
  m.scratch_a.resize(m.net.widest());
  m.scratch_b.resize(m.net.widest());
}

q_policy::~q_policy() = default;

void q_policy::load_weights(std::span<const float> weights) {
  const auto expected = impl_->conv.parameter_count() + detail::dense_parameter_count(impl_->widths);
  if (weights.size() != expected) {
    throw usage_error(fmt::format("q_policy: {} weights given, the network has {}", weights.size(), expected));
  }
  impl_->net.load_flat(weights, impl_->conv, impl_->widths);
}

void q_policy::set_deterministic(bool on) noexcept { impl_->deterministic = on; }

double q_policy::epsilon(std::size_t row) const noexcept { return impl_->schedule.epsilon(row / impl_->agents); }

const actors::epsilon_schedule& q_policy::schedule() const noexcept { return impl_->schedule; }

void q_policy::act(const actors::policy_rows& rows) {
  auto& m = *impl_;
  auto& batch = rows.batch;
  const std::uint64_t steps = m.schedule.steps();  // the whole batch acts at one point of the schedule
  const bool masked = m.use_masks && rows.masked();
  std::uint64_t counted = 0;
  for (const auto& range : rows.ranges) {
    counted += range.count;  // env steps, as the run counts them
    for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
      // No agent in play, or one waiting for its turn: the env ignores the row.
      if (!rows.active(r)) continue;
      const std::uint8_t* legal = masked ? rows.action_mask(r).data() : nullptr;
      auto& rng = m.rngs[r];
      const bool explore = !m.deterministic && rng.uniform() < m.schedule.epsilon(r / m.agents, steps);
      std::size_t pick = 0;
      if (explore) pick = legal == nullptr ? static_cast<std::size_t>(rng.below(m.actions)) : detail::draw_legal(legal, m.actions, rng);
      if (!explore || !rows.values.empty()) {
        const float* q =
            m.net.apply(batch.observations().row(r).data(), m.scratch_a.data(), m.scratch_b.data(), false);
        // An active row has a legal action (the env's guarantee): 0 stands in for none.
        const auto best = legal == nullptr ? static_cast<std::size_t>(std::max_element(q, q + m.actions) - q)
                                           : detail::best_legal(q, legal, m.actions) % m.actions;
        if (!explore) pick = best;
        if (!rows.values.empty()) rows.values[r] = q[best];
      }
      batch.discrete_actions().row(r)[0] = static_cast<std::int32_t>(pick);
      if (!rows.log_probs.empty()) rows.log_probs[r] = 0.0f;
    }
  }
  m.schedule.advance(counted);
}

}  // namespace coral::learners
