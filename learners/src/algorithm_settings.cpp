// Which built-in algorithm reads which setting of train_options: the one
// table their option checks consult, so that a setting given to an
// algorithm that does not read it is refused before anything starts instead
// of silently ignored. Found by reading the code, not the help text: ppo.cpp,
// ppo_learner.cpp and rollout.cpp for PPO; dqn.cpp, dqn_learner.cpp and
// q_policy.cpp for DQN; r2d2.cpp and r2d2_learner.cpp for R2D2. A setting
// every built-in algorithm reads (the sampler's, --hidden, --total-steps,
// checkpoints, run files, progress, the watchdog) has no row.

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/learners/errors.hpp"
#include "option_checks.hpp"

namespace coral::learners::detail {
namespace {

/// The built-in algorithms, as bits of a setting's readers.
enum readers : unsigned { ppo = 1U, dqn = 2U, r2d2 = 4U };

/// A built-in algorithm: its --algo name, its bit, and how errors name it.
struct builtin {
  std::string_view algo;
  unsigned bit;
  std::string_view shown;
};
constexpr std::array<builtin, 3> builtins{{{"ppo", ppo, "PPO"}, {"dqn", dqn, "DQN"}, {"r2d2", r2d2, "R2D2"}}};

const train_options& defaults() {
  static const train_options d;
  return d;
}

/// Whether the setting that `Path` leads to (member pointers from
/// train_options down) differs from its default.
template <auto... Path>
bool differs(const train_options& o) {
  return (o .* ... .* Path) != (defaults() .* ... .* Path);
}

/// One algorithm-specific setting: how errors name it, which algorithms
/// read it, and whether a run's options changed it.
struct setting {
  /// The flag that sets it, as `coral train` spells it; for the fields a
  /// flag shared by every algorithm sets in the running algorithm's config
  /// only (apps/coral/train_command.cpp), and those no flag sets, the field.
  std::string_view name;
  unsigned read_by;
  bool (*changed)(const train_options&);
};

using opts = train_options;

// --frames under DQN and R2D2, and --lstm under DQN, have errors of their own
// (errors::dqn_no_frames, ...), checked first; their rows say who reads them.
constexpr std::array settings{
    setting{"--horizon", ppo, differs<&opts::horizon>},
    setting{"--max-policy-lag", ppo, differs<&opts::max_policy_lag>},
    setting{"--frames", ppo, differs<&opts::frames>},
    setting{"--lstm", ppo | r2d2, differs<&opts::lstm>},
    setting{"--obs-norm", ppo, differs<&opts::normalize_observations>},
    setting{"ppo.learning_rate", ppo, differs<&opts::ppo, &ppo_config::learning_rate>},
    setting{"--no-anneal-lr", ppo, differs<&opts::ppo, &ppo_config::anneal_lr>},
    setting{"ppo.gamma", ppo, differs<&opts::ppo, &ppo_config::gamma>},
    setting{"--gae-lambda", ppo, differs<&opts::ppo, &ppo_config::gae_lambda>},
    setting{"--epochs", ppo, differs<&opts::ppo, &ppo_config::epochs>},
    setting{"--minibatch-size", ppo, differs<&opts::ppo, &ppo_config::minibatch_size>},
    setting{"--clip", ppo, differs<&opts::ppo, &ppo_config::clip>},
    setting{"--no-clip-value-loss", ppo, differs<&opts::ppo, &ppo_config::clip_value_loss>},
    setting{"--value-coef", ppo, differs<&opts::ppo, &ppo_config::value_coef>},
    setting{"--entropy-coef", ppo, differs<&opts::ppo, &ppo_config::entropy_coef>},
    setting{"ppo.max_grad_norm", ppo, differs<&opts::ppo, &ppo_config::max_grad_norm>},
    setting{"--no-advantage-norm", ppo, differs<&opts::ppo, &ppo_config::normalize_advantages>},
    setting{"ppo.adam_epsilon", ppo, differs<&opts::ppo, &ppo_config::adam_epsilon>},
    setting{"--reward-scale", ppo, differs<&opts::ppo, &ppo_config::scale_rewards>},
    setting{"dqn.learning_rate", dqn | r2d2, differs<&opts::dqn, &dqn_config::learning_rate>},
    setting{"dqn.adam_epsilon", dqn | r2d2, differs<&opts::dqn, &dqn_config::adam_epsilon>},
    setting{"dqn.gamma", dqn | r2d2, differs<&opts::dqn, &dqn_config::gamma>},
    setting{"--n-step", dqn | r2d2, differs<&opts::dqn, &dqn_config::n_step>},
    setting{"--replay-batch", dqn | r2d2, differs<&opts::dqn, &dqn_config::batch_size>},
    setting{"--replay-ratio", dqn | r2d2, differs<&opts::dqn, &dqn_config::replay_ratio>},
    setting{"--replay-capacity", dqn | r2d2, differs<&opts::dqn, &dqn_config::replay_capacity>},
    setting{"--learning-starts", dqn | r2d2, differs<&opts::dqn, &dqn_config::learning_starts>},
    setting{"--prefetch", dqn | r2d2, differs<&opts::dqn, &dqn_config::prefetch>},
    setting{"--uniform-replay", dqn | r2d2, differs<&opts::dqn, &dqn_config::prioritized>},
    setting{"--priority-alpha", dqn | r2d2, differs<&opts::dqn, &dqn_config::priority_alpha>},
    setting{"--priority-beta", dqn | r2d2, differs<&opts::dqn, &dqn_config::priority_beta>},
    setting{"dqn.priority_epsilon", dqn | r2d2, differs<&opts::dqn, &dqn_config::priority_epsilon>},
    setting{"--target-update", dqn | r2d2, differs<&opts::dqn, &dqn_config::target_update>},
    // R2D2's loss is the squared TD error, and its target always double-Q.
    setting{"dqn.huber_delta", dqn, differs<&opts::dqn, &dqn_config::huber_delta>},
    setting{"dqn.max_grad_norm", dqn | r2d2, differs<&opts::dqn, &dqn_config::max_grad_norm>},
    setting{"--no-double-dqn", dqn, differs<&opts::dqn, &dqn_config::double_dqn>},
    setting{"--epsilon-base", dqn | r2d2, differs<&opts::dqn, &dqn_config::epsilon_base>},
    setting{"--epsilon-alpha", dqn | r2d2, differs<&opts::dqn, &dqn_config::epsilon_alpha>},
    setting{"--exploration-steps", dqn | r2d2, differs<&opts::dqn, &dqn_config::exploration_steps>},
    setting{"--publish-every", dqn | r2d2, differs<&opts::dqn, &dqn_config::publish_every>},
    setting{"--seq-len", r2d2, differs<&opts::r2d2, &r2d2_config::seq_len>},
    setting{"--burn-in", r2d2, differs<&opts::r2d2, &r2d2_config::burn_in>},
    setting{"--seq-overlap", r2d2, differs<&opts::r2d2, &r2d2_config::overlap>},
    setting{"--prefetch-batches", r2d2, differs<&opts::r2d2, &r2d2_config::prefetch_batches>},
    setting{"--priority-eta", r2d2, differs<&opts::r2d2, &r2d2_config::priority_eta>},
    setting{"--rescale-epsilon", r2d2, differs<&opts::r2d2, &r2d2_config::rescale_epsilon>},
};

// A field added to one of the three configs without a row above would be
// silently ignored by the algorithms that do not read it: these fail to
// compile until the row is there (and the count here is raised).
struct any_field {
  template <class T>
  operator T() const;  // NOLINT(google-explicit-constructor): converts to any field's type
};
/// The number of fields of the aggregate T: the most initializers T{...} takes.
template <class T, class... Fields>
consteval std::size_t field_count() {
  if constexpr (requires { T{Fields{}..., any_field{}}; }) {
    return field_count<T, Fields..., any_field>();
  } else {
    return sizeof...(Fields);
  }
}
static_assert(field_count<ppo_config>() == 14, "a ppo_config field without a row in `settings`");
static_assert(field_count<dqn_config>() == 21, "a dqn_config field without a row in `settings`");
static_assert(field_count<r2d2_config>() == 6, "an r2d2_config field without a row in `settings`");

const builtin* builtin_named(std::string_view algo) {
  const auto b = std::find_if(builtins.begin(), builtins.end(), [algo](const builtin& x) { return x.algo == algo; });
  return b == builtins.end() ? nullptr : &*b;
}

/// Throws errors::setting_of_other_algo for setting `s` under `algo`.
[[noreturn]] void refuse(const setting& s, std::string_view algo) {
  std::string read_by;
  for (const auto& b : builtins) {
    if ((s.read_by & b.bit) != 0) read_by += fmt::format("{}{}", read_by.empty() ? "" : " and ", b.shown);
  }
  throw config_error(fmt::format(fmt::runtime(errors::setting_of_other_algo), s.name, read_by, algo));
}

}  // namespace

void check_settings_read(const train_options& o) {
  const builtin* self = builtin_named(o.algo);
  if (self == nullptr) return;  // another algorithm reads what it reads
  for (const auto& s : settings) {
    if ((s.read_by & self->bit) == 0 && s.changed(o)) refuse(s, o.algo);
  }
}

}  // namespace coral::learners::detail

namespace coral::learners {

void check_flag_read(std::string_view flag, std::string_view algo) {
  const detail::builtin* self = detail::builtin_named(algo);
  if (self == nullptr) return;
  for (const auto& s : detail::settings) {
    if (s.name == flag && (s.read_by & self->bit) == 0) detail::refuse(s, algo);
  }
}

}  // namespace coral::learners
