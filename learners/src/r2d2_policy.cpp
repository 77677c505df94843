// R2D2's acting policy (r2d2_policy.hpp): the recurrent Q-network's dense
// kernels, torch-free.

#include "coral/learners/r2d2_policy.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/core/rng.hpp"
#include "dense.hpp"
#include "flat_layout.hpp"
#include "legal_actions.hpp"

namespace coral::learners {

std::size_t r2d2_parameter_count(const network_spec& spec) { return detail::recurrent_q_parameter_count(spec); }

struct r2d2_policy::impl {
  impl(const network_spec& s, std::size_t rows, std::uint64_t seed, const dqn_config& c, std::uint64_t steps_done,
       std::size_t agents_per_env)
      : spec(s),
        agents(std::max<std::size_t>(agents_per_env, 1)),
        schedule(std::max<std::size_t>(rows / agents, 1), c.epsilon_base, c.epsilon_alpha, c.exploration_steps,
                 steps_done),
        use_masks(c.action_masks) {
    if (s.lstm == 0) throw usage_error("r2d2_policy: the network has no LSTM");
    actions = detail::r2d2_action_count(s);
    // Zeros until the learner publishes its weights, as q_policy.
    load(std::vector<float>(detail::recurrent_q_parameter_count(s), 0.0f));
    constexpr std::uint64_t policy_salt = 0x72326432706F6CULL;  // "r2d2pol"
    for (std::size_t r = 0; r < rows; ++r) rngs.emplace_back(coral::env_seed{seed ^ policy_salt, r});
    state.assign(rows * s.state_dim(), 0.0f);
    states_before.assign(rows * s.state_dim(), 0.0f);
    gates.resize(4 * s.lstm);
    const std::size_t w = std::max({trunk.encoder.widest(), head.widest(), s.lstm});
    scratch_a.resize(w);
    scratch_b.resize(w);
  }
  /// Reads the parameters (trunk, head: flat_layout.hpp) into the kernels.
  void load(std::span<const float> flat) {
    const auto expected = detail::recurrent_q_parameter_count(spec);
    if (flat.size() != expected) {
      throw usage_error(fmt::format("r2d2_policy: {} weights given, the network has {}", flat.size(), expected));
    }
    const std::size_t at = detail::load_trunk(trunk, flat, spec);
    const std::size_t head_widths[] = {spec.lstm, actions};
    head.load_flat(flat.subspan(at), head_widths);
  }

  network_spec spec;
  std::size_t agents;  // rows per env: an env's rows share its rung
  detail::dense_trunk trunk;
  detail::dense_mlp head;
  std::size_t actions = 0;
  actors::epsilon_schedule schedule;
  std::vector<coral::rng> rngs;
  std::vector<float> state;          // rows × 2H
  std::vector<float> states_before;  // rows × 2H
  std::vector<float> gates;
  std::vector<float> scratch_a;
  std::vector<float> scratch_b;
  bool use_masks;
  bool deterministic = false;
};

r2d2_policy::r2d2_policy(const network_spec& spec, std::size_t rows, std::uint64_t seed, const dqn_config& config,
                         std::uint64_t steps_done, std::size_t agents)
    : impl_(std::make_unique<impl>(spec, rows, seed, config, steps_done, agents)) {}

r2d2_policy::~r2d2_policy() = default;

void r2d2_policy::load_weights(std::span<const float> weights) {
  impl_->load(weights);
}

void r2d2_policy::set_deterministic(bool on) noexcept { impl_->deterministic = on; }

std::span<const float> r2d2_policy::recurrent_states() const noexcept { return impl_->states_before; }
const actors::epsilon_schedule& r2d2_policy::schedule() const noexcept { return impl_->schedule; }

void r2d2_policy::act(const actors::policy_rows& rows) {
  auto& m = *impl_;
  auto& batch = rows.batch;
  const auto term = batch.terminated();
  const auto trunc = batch.truncated();
  const auto failed = batch.failed();
  const std::size_t H = m.spec.lstm;
  const std::uint64_t steps = m.schedule.steps();  // the whole batch acts at one point of the schedule
  const bool masked = m.use_masks && rows.masked();
  std::uint64_t counted = 0;
  for (const auto& range : rows.ranges) {
    counted += range.count;  // env steps, as the run counts them (rows, acted or not)
    for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
      float* h = m.state.data() + static_cast<std::size_t>(r) * 2 * H;
      float* c = h + H;
      // The row's agent ended (or its env was reset): whoever acts in the
      // slot next starts from zeros, even if it waits for that.
      if (term[r] != 0 || trunc[r] != 0 || failed[r] != 0) std::fill(h, h + 2 * H, 0.0f);
      // No agent in play, or one waiting for its turn: the env ignores the
      // row, and its state, action and stream are left alone.
      if (!rows.active(r)) continue;
      std::copy(h, h + 2 * H, m.states_before.begin() + static_cast<std::ptrdiff_t>(r * 2 * H));
      m.trunk.step(batch.observations().row(r).data(), h, c, m.scratch_a.data(), m.scratch_b.data(), m.gates.data());
      const float* q = m.head.apply(h, m.scratch_a.data(), m.scratch_b.data());
      const std::uint8_t* legal = masked ? rows.action_mask(r).data() : nullptr;
      // An active row has a legal action (the env's guarantee): 0 stands in for none.
      const auto best = legal == nullptr ? static_cast<std::size_t>(std::max_element(q, q + m.actions) - q)
                                         : detail::best_legal(q, legal, m.actions) % m.actions;
      auto& rng = m.rngs[r];
      const bool explore = !m.deterministic && rng.uniform() < m.schedule.epsilon(r / m.agents, steps);
      std::size_t pick = best;
      if (explore) {
        pick = legal == nullptr ? static_cast<std::size_t>(rng.below(m.actions)) : detail::draw_legal(legal, m.actions, rng);
      }
      batch.discrete_actions().row(r)[0] = static_cast<std::int32_t>(pick);
      if (!rows.values.empty()) rows.values[r] = q[best];
      if (!rows.log_probs.empty()) rows.log_probs[r] = 0.0f;
    }
  }
  m.schedule.advance(counted);
}

}  // namespace coral::learners
