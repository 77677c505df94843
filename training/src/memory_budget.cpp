#include "memory_budget.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>


namespace coral::training::detail {
namespace {

std::string join(const std::vector<std::size_t>& values) { return fmt::format("{}", fmt::join(values, " ")); }

}  // namespace

actors::memory_estimate estimate_memory(const train_options& o, const algorithm_descriptor& algo,
                                        const actors::env_shape& shape) {
  actors::memory_estimate e;
  actors::add_sampler_memory(e, o.sampler, shape);
  if (algo.memory) algo.memory(e, o, shape);
  return e;
}

void check_memory_budget(const train_options& o, const algorithm_descriptor& algo) {
  const auto shape = actors::probe_env_shape(o.sampler);
  const auto estimate = estimate_memory(o, algo, shape);
  const double available = actors::available_memory();
  if (estimate.total() <= available) return;
  // Which flag is at fault: the one whose default saves the most.
  const train_options defaults;
  std::vector<actors::sizing_flag> flags;
  auto flag = [&](std::string name, std::string value, const std::function<void(train_options&)>& reset) {
    train_options changed = o;
    reset(changed);
    flags.push_back({std::move(name), std::move(value), estimate_memory(changed, algo, shape).total()});
  };
  flag("--num-envs", fmt::format("{}", o.sampler.num_envs),
       [&](train_options& c) { c.sampler.num_envs = defaults.sampler.num_envs; });
  flag("--hidden", join(o.hidden), [&](train_options& c) { c.hidden = defaults.hidden; });
  flag("--conv", fmt::format("{}", fmt::join(o.conv, " ")), [&](train_options& c) { c.conv = defaults.conv; });
  const auto algo_defaults = algo.defaults();
  for (const auto& f : algo.fields) {
    if (!f.sizing) continue;
    flag("--" + f.name, to_text(f.get(o.algo_options)),
         [&](train_options& c) { f.set(c.algo_options, f.get(algo_defaults)); });
  }
  actors::check_memory(estimate, flags, available);
}

}  // namespace coral::training::detail
