#include "coral/actors/policy.hpp"
#include "coral/actors/builtin_policy.hpp"
#include "coral/actors/constant_policy.hpp"
#include "coral/actors/random_policy.hpp"

#include <algorithm>

#include "coral/core/error.hpp"

namespace coral::actors {
namespace {

/// Appends, in leaf order, the continuous value nearest 0 within each Box
/// element's bounds.
void collect_constant(const envs::space& s, std::vector<float>& continuous) {
  switch (s.kind()) {
    case envs::space_kind::box:
      for (std::size_t i = 0; i < s.low().size(); ++i) {
        continuous.push_back(std::clamp(0.0F, s.low()[i], s.high()[i]));
      }
      break;
    case envs::space_kind::dict:
    case envs::space_kind::tuple:
      for (const auto& child : s.children()) collect_constant(child, continuous);
      break;
    default:
      break;
  }
}

/// Draws uniformly among the values of one component that `mask` (n bytes)
/// marks legal. The env guarantees at least one (env_slice checks it).
std::int32_t draw_legal(coral::rng& r, const std::uint8_t* mask, std::size_t n) {
  std::uint64_t legal = 0;
  for (std::size_t k = 0; k < n; ++k) legal += mask[k] != 0 ? 1 : 0;
  if (legal == 0) return 0;  // only for rows the env does not act on (inactive)
  std::uint64_t pick = r.below(legal);
  for (std::size_t k = 0; k < n; ++k) {
    if (mask[k] == 0) continue;
    if (pick == 0) return static_cast<std::int32_t>(k);
    --pick;
  }
  return 0;
}

}  // namespace

random_policy::random_policy(const envs::space& action_space, std::size_t rows, std::uint64_t seed,
                             std::span<const std::uint64_t> streams)
    : action_space_(action_space),
      discrete_n_(action_space.kind() == envs::space_kind::discrete
                      ? static_cast<std::uint64_t>(action_space.nvec().front())
                      : 0),
      counts_(envs::discrete_counts(action_space)) {
  rngs_.reserve(rows);
  // A stream apart from the envs' own (seed, index) streams.
  const std::uint64_t policy_seed = seed ^ 0x9e3779b97f4a7c15ULL;
  if (!streams.empty() && streams.size() != rows) {
    throw usage_error(fmt::format("random_policy: {} streams for {} rows", streams.size(), rows));
  }
  for (std::size_t r = 0; r < rows; ++r) {
    rngs_.emplace_back(coral::env_seed{policy_seed, streams.empty() ? r : streams[r]});
  }
}

void random_policy::act(const policy_rows& rows) {
  auto& discrete = rows.batch.discrete_actions();
  auto& continuous = rows.batch.continuous_actions();
  if (rows.batch.has_action_masks()) {
    const auto& masks = rows.batch.action_masks();
    for (const auto& range : rows.ranges) {
      for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
        std::int32_t* action = discrete.row(r).data();
        if (discrete_n_ == 0) envs::sample_action(action_space_, rngs_[r], discrete.row(r), continuous.row(r));
        const std::uint8_t* mask = masks.row(r).data();
        for (std::size_t c = 0; c < counts_.size(); ++c) {
          const auto n = static_cast<std::size_t>(counts_[c]);
          action[c] = draw_legal(rngs_[r], mask, n);
          mask += n;
        }
      }
    }
    return;
  }
  if (discrete_n_ > 0) {
    // One Discrete(n): the same draw sample_action makes, without walking the space.
    for (const auto& range : rows.ranges) {
      for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
        discrete.row(r)[0] = static_cast<std::int32_t>(rngs_[r].below(discrete_n_));
      }
    }
    return;
  }
  for (const auto& range : rows.ranges) {
    for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
      envs::sample_action(action_space_, rngs_[r], discrete.row(r), continuous.row(r));
    }
  }
}

constant_policy::constant_policy(const envs::space& action_space)
    : discrete_(action_space.discrete_size(), 0), counts_(envs::discrete_counts(action_space)) {
  collect_constant(action_space, continuous_);
}

void constant_policy::act(const policy_rows& rows) {
  auto& discrete = rows.batch.discrete_actions();
  auto& continuous = rows.batch.continuous_actions();
  for (const auto& range : rows.ranges) {
    for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
      std::copy(discrete_.begin(), discrete_.end(), discrete.row(r).begin());
      std::copy(continuous_.begin(), continuous_.end(), continuous.row(r).begin());
      if (!rows.batch.has_action_masks()) continue;
      const std::uint8_t* mask = rows.batch.action_masks().row(r).data();
      for (std::size_t c = 0; c < counts_.size(); ++c) {
        const auto n = static_cast<std::size_t>(counts_[c]);
        const auto* legal = std::find_if(mask, mask + n, [](std::uint8_t m) { return m != 0; });
        discrete.row(r)[c] = legal == mask + n ? 0 : static_cast<std::int32_t>(legal - mask);
        mask += n;
      }
    }
  }
}

std::unique_ptr<policy> make_builtin_policy(std::string_view name, const envs::space& action_space,
                                            std::size_t rows, std::uint64_t seed,
                                            std::span<const std::uint64_t> streams) {
  if (name == "random") return std::make_unique<random_policy>(action_space, rows, seed, streams);
  if (name == "constant") return std::make_unique<constant_policy>(action_space);
  throw config_error(fmt::format(fmt::runtime(coral::errors::bad_value), "--policy", name, "random, constant"));
}

}  // namespace coral::actors
