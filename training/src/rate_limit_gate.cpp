#include "coral/training/rate_limit_gate.hpp"

#include <algorithm>

namespace coral::training {

std::size_t batcher_hold(const actors::wiring& wiring, const actors::inference_batcher::options& options) {
  const std::size_t per_group = std::max<std::size_t>(wiring.envs_per_group, 1);
  const std::size_t channels = std::max<std::size_t>(wiring.ready_channels, 1);
  const std::size_t groups_wanted = std::max<std::size_t>(options.batch_size / per_group, 1);
  // As inference_batcher::collect counts: the groups that let it act.
  std::size_t groups_needed = groups_wanted;
  if (options.min_batch_size > 0) {
    groups_needed = std::min(groups_wanted, std::max<std::size_t>((options.min_batch_size + per_group - 1) / per_group, 1));
  }
  const std::size_t groups_per_channel = wiring.groups / channels;
  return per_group * ((groups_needed - 1) + (channels - 1) * groups_per_channel);
}

}  // namespace coral::training
