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

}  // namespace

random_policy::random_policy(const envs::space& action_space, std::size_t rows, std::uint64_t seed,
                             std::span<const std::uint64_t> streams)
    : action_space_(action_space),
      discrete_n_(action_space.kind() == envs::space_kind::discrete
                      ? static_cast<std::uint64_t>(action_space.nvec().front())
                      : 0) {
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
    : discrete_(action_space.discrete_size(), 0) {
  collect_constant(action_space, continuous_);
}

void constant_policy::act(const policy_rows& rows) {
  auto& discrete = rows.batch.discrete_actions();
  auto& continuous = rows.batch.continuous_actions();
  for (const auto& range : rows.ranges) {
    for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
      std::copy(discrete_.begin(), discrete_.end(), discrete.row(r).begin());
      std::copy(continuous_.begin(), continuous_.end(), continuous.row(r).begin());
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
