#pragma once
/// \file
/// An algorithm as the rest of coral knows it: a registered descriptor with
/// its options type and defaults, the settings it declares (every one a
/// `coral train` flag, a config-file key and a `coral.train` keyword), its
/// checks, its memory estimate and the factory of its plug-in (algorithm.hpp).
/// Nothing outside an algorithm's own file names it: `--algo NAME` finds
/// its descriptor here.

#include <any>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coral/actors/memory_budget.hpp"
#include "coral/envs/space.hpp"
#include "coral/training/algorithm.hpp"
#include "coral/training/option_field.hpp"
#include "coral/training/train_options.hpp"

namespace coral::training {

/// How a trained agent acts outside a run (`coral eval`, learners::load_policy()).
struct acting_options {
  std::size_t rows = 1;       ///< batch rows the policy acts for, each with its own state
  std::uint64_t seed = 0;     ///< seeds what a policy draws when it is not deterministic
  /// The network's best action: the most probable category and the
  /// Gaussian's mean (an actor-critic), the greedy action (a Q-network).
  /// Otherwise an actor-critic samples as in training and a Q-network acts
  /// epsilon-greedily with eval_epsilon.
  bool deterministic = true;
  std::string file;           ///< the checkpoint's file, for messages
};

/// The epsilon of a Q-network's policy that acts outside a run without
/// acting_options::deterministic: a little exploration, so that a greedy
/// loop (pushing against a wall) does not hold an episode to its time limit.
inline constexpr double eval_epsilon = 0.05;

/// Everything coral knows of one algorithm.
struct algorithm_descriptor {
  std::string name;     ///< what `--algo` takes: `ppo`
  std::string title;    ///< how messages name it: `PPO`
  std::string summary;  ///< one line for `--algo`'s help
  /// Its options with their defaults: a value of its options type.
  std::function<std::any()> defaults;
  /// The settings it declares, in the order help lists them. A name may be
  /// declared by several algorithms (`learning-rate`), each with its own
  /// default, but always of the same kind.
  std::vector<option_field> fields;
  /// Checks its options (and how they combine with the common ones); throws
  /// config_error naming the flag at fault. May be empty.
  std::function<void(const train_options&)> check;
  /// Adds what a run of it allocates beyond the sampler's part. May be empty.
  std::function<void(actors::memory_estimate&, const train_options&, const actors::env_shape&)> memory;
  /// Whether it trains multi-agent envs (env::max_agents() > 1: inactive
  /// rows, per-slot chains; envs/env.hpp). A run of another algorithm on
  /// such an env is refused before it starts (errors::multi_agent_unsupported).
  bool multi_agent = false;
  /// Checks its options against what the env offers (agents, teams, a
  /// reference opponent), given env 0 of the run as the run would build it;
  /// throws config_error naming the flag and the env. Called before
  /// anything of the run starts. May be empty.
  std::function<void(const train_options&, const envs::env&)> check_env;
  /// Builds its plug-in for a run.
  algorithm_factory make;
  /// Whether a run with these options needs libtorch (a torch learner). A
  /// program built without it (the `coral` command) hands such a run to one
  /// built with it before anything starts. Empty: never.
  std::function<bool(const train_options&)> needs_torch;
  /// Builds the policy this algorithm acts with outside a run of options
  /// `o` (run_options_of(c) for a checkpoint `c`), over envs of these
  /// spaces, with the state a run's acting side has at its start (frame
  /// stacks, recurrent state: zeros). With a checkpoint `c`, the weights of
  /// `c` are loaded; it throws checkpoint_error (errors::checkpoint_mismatch,
  /// naming "network") when the network `o` and the spaces give is not the
  /// one of `c` (an env arg that changes a space). With `c` null, none are:
  /// the caller loads weights a run of `o` published (training_run::weights(),
  /// what policy::load_weights() takes), as the clip recorder of
  /// `--video-every` does. Torch-free. Empty: it cannot act outside a run.
  std::function<std::unique_ptr<actors::policy>(const train_options& o, const envs::space& observation,
                                                const envs::space& action, const checkpoint* c,
                                                const acting_options& a)>
      acting;
};

/// Throws checkpoint_error (errors::checkpoint_mismatch, "network") naming
/// `file` when `signature` (of the network an acting policy built) is not
/// the network signature of `c`.
void check_acting_network(const checkpoint& c, std::string_view signature, std::string_view file);

/// Makes `--algo d.name` find `d`; replaces an earlier registration of the
/// name. Throws usage_error when `d` has no name, no defaults or no factory,
/// declares a setting twice, or declares a name another algorithm declares
/// with another kind. Thread safety: any thread, before the runs that use it.
void register_algorithm(algorithm_descriptor d);

/// Registers an algorithm that declares no settings of its own (options of
/// type std::monostate). Thread safety: as above.
void register_algorithm(std::string name, algorithm_factory make,
                        std::function<void(const train_options&)> check = {});

/// Forgets `--algo name` (a plug-in unloaded, or a test's algorithm that
/// must not show in later tests' help and errors). Does nothing for an
/// unregistered name. Thread safety: any thread, between runs.
void unregister_algorithm(std::string_view name);

/// The descriptor of `--algo name`; config_error (coral::errors::bad_value,
/// naming the registered ones) when none is registered.
[[nodiscard]] std::shared_ptr<const algorithm_descriptor> find_algorithm(std::string_view name);

/// Every registered descriptor, in registration order.
[[nodiscard]] std::vector<std::shared_ptr<const algorithm_descriptor>> registered_algorithms();

/// The registered names in registration order, comma-separated (for error messages).
[[nodiscard]] std::string algorithm_names();

/// `o` with its algorithm's default options when it holds none; usage_error
/// when it holds options of another type than its algorithm's.
[[nodiscard]] train_options with_algorithm_defaults(train_options o);

/// Each setting of `o`'s algorithm (its options filled in as
/// with_algorithm_defaults() does) as name and text, in declaration order.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> algorithm_settings(const train_options& o);

/// Throws config_error (actors::errors::flag_out_of_range) naming the first
/// setting of `o`'s algorithm outside its option_range.
void check_setting_ranges(const train_options& o);

/// Throws config_error (errors::setting_of_other_algo) when the setting
/// `name` (a flag without dashes) was given to a run of `algo`, which does
/// not declare it, while other registered algorithms do. Does nothing for a
/// setting `algo` declares or that no algorithm declares.
void check_setting_declared(std::string_view name, std::string_view algo);

}  // namespace coral::training
