#pragma once
// PPO segments across ranks: encoded by a sampler rank, decoded and joined
// row-wise by the learner (one segment of every sampler rank per update, so
// that segment k of the run is the same k on every rank and the policy-lag
// rules are those of one process).

#include <vector>

#include "coral/training/rollout.hpp"
#include "coral/distributed/wire.hpp"

namespace coral::distributed {

using training::rollout_segment;

/// Appends `s` to `w`.
void encode_segment(const rollout_segment& s, wire::writer& w);
/// Reads a segment that encode_segment() wrote; every array's length is
/// checked against the segment's shape (error naming the sender otherwise).
[[nodiscard]] rollout_segment decode_segment(wire::reader& r);
/// One segment holding the rows of `parts` in order (same index, horizon and
/// widths; throws usage_error otherwise).
[[nodiscard]] rollout_segment join_segments(std::vector<rollout_segment>& parts);

}  // namespace coral::distributed
