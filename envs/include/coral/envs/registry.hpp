#pragma once
/// \file
/// The env registry: envs by name, with their config keys and defaults, and
/// the factory that builds an instance from (name, config, seed, env index).
///
/// The built-in envs are registered the first time registry::global() is
/// used. A user registers their own env from their own app, before starting
/// anything, without editing coral:
///
/// ```
/// coral::envs::registry::global().add({
///     .name = "coin_flip",
///     .description = "guess a fair coin",
///     .keys = {{.name = "length", .type = coral::envs::config_type::integer,
///               .default_value = "10", .description = "steps per episode", .min = 1}},
///     .factory = [](const coral::envs::env_config& c, coral::env_seed s) {
///       return std::make_unique<coin_flip>(c, s);
///     }});
/// auto e = coral::envs::registry::global().make("coin_flip", {{"length", "5"}}, 42, 0);
/// ```

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/core/rng.hpp"

namespace coral::envs {

/// Builds one env from its validated config and its seed. Called when envs
/// are created, never per step.
using env_factory = std::function<std::unique_ptr<env>(const env_config&, env_seed)>;

/// Everything the registry knows about one env.
struct env_spec {
  std::string name;              ///< unique; what `--env` takes
  std::string description;       ///< one line, shown by `coral envs`
  std::vector<config_key> keys;  ///< the config keys it accepts, with defaults
  env_factory factory;           ///< builds an instance
};

/// Envs by name.
///
/// Thread safety: every member function may be called from any thread (a
/// mutex guards the table); references returned by find() stay valid for the
/// life of the registry (entries are never removed).
class registry {
 public:
  /// An empty registry (tests, or an app that wants only its own envs).
  registry() = default;
  registry(const registry&) = delete;
  registry& operator=(const registry&) = delete;

  /// The process-wide registry, holding the built-in envs on first use.
  [[nodiscard]] static registry& global();

  /// Adds an env. Throws usage_error (errors::duplicate_env) if the name is taken.
  void add(env_spec spec);

  /// The spec of `name`. Throws config_error (errors::unknown_env) listing the known names.
  [[nodiscard]] const env_spec& find(std::string_view name) const;

  /// True if `name` is registered.
  [[nodiscard]] bool contains(std::string_view name) const;

  /// The registered names, sorted.
  [[nodiscard]] std::vector<std::string> names() const;

  /// Validates `args` against the keys of `name` (config_error naming the key).
  [[nodiscard]] env_config make_config(std::string_view name, const config_args& args) const;

  /// Builds env `name` with config `args` (validated first), seeded from (seed, env_index).
  [[nodiscard]] std::unique_ptr<env> make(std::string_view name, const config_args& args, std::uint64_t seed,
                                          std::uint64_t env_index) const;

  /// Builds `count` envs `name` with indices first_env_index, first_env_index + 1, ...
  /// (validating the config once).
  [[nodiscard]] std::vector<std::unique_ptr<env>> make_many(std::string_view name, const config_args& args,
                                                            std::uint64_t seed, std::uint64_t first_env_index,
                                                            std::size_t count) const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<env_spec>> specs_;
};

/// Adds coral's built-in envs (cartpole, bandit, memory, stochastic,
/// password, squared, race, noop, delay, faulty, the MinAtar games of
/// minatar.hpp, and with CORAL_WITH_MUJOCO
/// the MuJoCo envs of mujoco.hpp) to `r`. registry::global() calls this.
void register_builtin_envs(registry& r);

}  // namespace coral::envs
