#include "coral/envs/registry.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/core/error.hpp"
#include "coral/envs/errors.hpp"

namespace coral::envs {

registry& registry::global() {
  static registry* r = [] {
    auto* created = new registry;  // never destroyed: envs may be made during static destruction
    register_builtin_envs(*created);
    return created;
  }();
  return *r;
}

void registry::add(env_spec spec) {
  std::lock_guard lock(mutex_);
  for (const auto& s : specs_) {
    if (s->name == spec.name) throw usage_error(fmt::format(fmt::runtime(errors::duplicate_env), spec.name));
  }
  specs_.push_back(std::make_unique<env_spec>(std::move(spec)));
}

const env_spec& registry::find(std::string_view name) const {
  {
    std::lock_guard lock(mutex_);
    for (const auto& s : specs_) {
      if (s->name == name) return *s;
    }
  }
  throw config_error(fmt::format(fmt::runtime(errors::unknown_env), name, fmt::join(names(), ", ")));
}

bool registry::contains(std::string_view name) const {
  std::lock_guard lock(mutex_);
  return std::any_of(specs_.begin(), specs_.end(), [&](const auto& s) { return s->name == name; });
}

std::vector<std::string> registry::names() const {
  std::vector<std::string> out;
  {
    std::lock_guard lock(mutex_);
    for (const auto& s : specs_) out.push_back(s->name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

env_config registry::make_config(std::string_view name, const config_args& args) const {
  const env_spec& spec = find(name);
  return env_config(spec.name, spec.keys, args);
}

std::unique_ptr<env> registry::make(std::string_view name, const config_args& args, std::uint64_t seed,
                                    std::uint64_t env_index) const {
  const env_spec& spec = find(name);
  return spec.factory(env_config(spec.name, spec.keys, args), env_seed{seed, env_index});
}

std::vector<std::unique_ptr<env>> registry::make_many(std::string_view name, const config_args& args,
                                                      std::uint64_t seed, std::uint64_t first_env_index,
                                                      std::size_t count) const {
  const env_spec& spec = find(name);
  const env_config config(spec.name, spec.keys, args);
  std::vector<std::unique_ptr<env>> envs;
  envs.reserve(count);
  for (std::size_t i = 0; i < count; ++i) envs.push_back(spec.factory(config, env_seed{seed, first_env_index + i}));
  return envs;
}

}  // namespace coral::envs
