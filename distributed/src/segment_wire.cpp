#include "coral/distributed/segment_wire.hpp"

#include "coral/core/error.hpp"

namespace coral::distributed {

using training::rollout_segment;

void encode_segment(const rollout_segment& s, wire::writer& w) {
  w.put<std::uint64_t>(s.index);
  w.put<std::uint64_t>(s.rows);
  w.put<std::uint64_t>(s.horizon);
  w.put<std::uint64_t>(s.obs_dim);
  w.put<std::uint64_t>(s.discrete_dim);
  w.put<std::uint64_t>(s.continuous_dim);
  w.put_vector(s.observations);
  w.put_vector(s.discrete_actions);
  w.put_vector(s.continuous_actions);
  w.put_vector(s.log_probs);
  w.put_vector(s.values);
  w.put_vector(s.rewards);
  w.put_vector(s.terminated);
  w.put_vector(s.truncated);
  w.put_vector(s.policy_versions);
  w.put_vector(s.truncated_steps);
  w.put_vector(s.truncated_observations);
  w.put<std::uint64_t>(s.state_dim);
  w.put_vector(s.initial_states);
  w.put_vector(s.acted);
  w.put<std::uint64_t>(s.mask_dim);
  w.put_vector(s.action_masks);
}

rollout_segment decode_segment(wire::reader& r) {
  rollout_segment s;
  s.index = r.get<std::uint64_t>("segment index");
  s.rows = r.get<std::uint64_t>("segment rows");
  s.horizon = r.get<std::uint64_t>("segment horizon");
  s.obs_dim = r.get<std::uint64_t>("segment obs_dim");
  s.discrete_dim = r.get<std::uint64_t>("segment discrete_dim");
  s.continuous_dim = r.get<std::uint64_t>("segment continuous_dim");
  auto sized = [&r](auto& v, std::string_view field, std::uint64_t expected) {
    r.get_vector(v, field);
    if (v.size() != expected) r.bad(field);
  };
  const std::uint64_t steps = s.rows * s.horizon;
  if (s.horizon != 0 && steps / s.horizon != s.rows) r.bad("segment shape");
  sized(s.observations, "segment observations", s.rows * (s.horizon + 1) * s.obs_dim);
  sized(s.discrete_actions, "segment discrete actions", steps * s.discrete_dim);
  sized(s.continuous_actions, "segment continuous actions", steps * s.continuous_dim);
  sized(s.log_probs, "segment log_probs", steps);
  sized(s.values, "segment values", steps);
  sized(s.rewards, "segment rewards", steps);
  sized(s.terminated, "segment terminated", steps);
  sized(s.truncated, "segment truncated", steps);
  sized(s.policy_versions, "segment policy_versions", steps);
  r.get_vector(s.truncated_steps, "segment truncated_steps");
  for (const auto i : s.truncated_steps) {
    if (i >= steps) r.bad("segment truncated_steps");
  }
  sized(s.truncated_observations, "segment truncated observations", s.truncated_steps.size() * s.obs_dim);
  s.state_dim = r.get<std::uint64_t>("segment state_dim");
  sized(s.initial_states, "segment initial states", s.rows * s.state_dim);
  sized(s.acted, "segment acted", steps);
  s.mask_dim = r.get<std::uint64_t>("segment mask_dim");
  sized(s.action_masks, "segment action masks", steps * s.mask_dim);
  return s;
}

rollout_segment join_segments(std::vector<rollout_segment>& parts) {
  if (parts.empty()) throw usage_error("join_segments: no parts");
  if (parts.size() == 1) return std::move(parts.front());
  const auto& first = parts.front();
  rollout_segment out;
  out.index = first.index;
  out.horizon = first.horizon;
  out.obs_dim = first.obs_dim;
  out.discrete_dim = first.discrete_dim;
  out.continuous_dim = first.continuous_dim;
  out.state_dim = first.state_dim;
  out.mask_dim = first.mask_dim;
  auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
  for (auto& p : parts) {
    if (p.index != out.index || p.horizon != out.horizon || p.obs_dim != out.obs_dim ||
        p.discrete_dim != out.discrete_dim || p.continuous_dim != out.continuous_dim || p.state_dim != out.state_dim ||
        p.mask_dim != out.mask_dim) {
      throw usage_error("join_segments: parts of different shapes");
    }
    const auto offset = static_cast<std::uint32_t>(out.rows * out.horizon);
    append(out.observations, p.observations);
    append(out.discrete_actions, p.discrete_actions);
    append(out.continuous_actions, p.continuous_actions);
    append(out.log_probs, p.log_probs);
    append(out.values, p.values);
    append(out.rewards, p.rewards);
    append(out.terminated, p.terminated);
    append(out.truncated, p.truncated);
    append(out.policy_versions, p.policy_versions);
    for (const auto i : p.truncated_steps) out.truncated_steps.push_back(offset + i);
    append(out.truncated_observations, p.truncated_observations);
    append(out.initial_states, p.initial_states);
    append(out.acted, p.acted);
    append(out.action_masks, p.action_masks);
    out.rows += p.rows;
  }
  return out;
}

}  // namespace coral::distributed
