// A checkpoint's policy outside a run (trained_policy.hpp): the algorithm's
// acting policy over a batch of its own, torch-free.

#include "coral/learners/trained_policy.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/registry.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/train.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/checkpoint_dir.hpp"
#include "coral/training/checkpoint_settings.hpp"
#include "coral/training/errors.hpp"

namespace coral::learners {

struct trained_policy::impl {
  impl(std::size_t rows, const envs::space& observation, const envs::space& action)
      : observation_space(observation),
        action_space(action),
        batch(rows, observation, action),
        mask_counts(envs::discrete_counts(action)),
        whole{0, static_cast<std::uint32_t>(rows)} {}
  envs::space observation_space;
  envs::space action_space;
  envs::env_batch batch;
  std::vector<std::int32_t> mask_counts;  // discrete_counts(action_space): a mask row's layout
  actors::row_range whole;
  std::unique_ptr<actors::policy> policy;
  training::train_options options;
  std::filesystem::path file;
  std::uint64_t env_steps = 0;
  std::uint64_t seed = 0;
  bool deterministic = true;
};

trained_policy::trained_policy(std::unique_ptr<impl> m) : impl_(std::move(m)) {}
trained_policy::trained_policy(trained_policy&&) noexcept = default;
trained_policy& trained_policy::operator=(trained_policy&&) noexcept = default;
trained_policy::~trained_policy() = default;

policy_actions trained_policy::act(std::span<const float> observations,
                                   std::span<const std::uint8_t> action_masks) {
  auto& m = *impl_;
  auto& b = m.batch;
  const std::size_t width = b.obs_dim();
  if (observations.size() != b.rows() * width) {
    throw usage_error(fmt::format(fmt::runtime(errors::policy_observation_size), observations.size(), b.rows(), width));
  }
  if (!action_masks.empty() && action_masks.size() != b.rows() * b.action_mask_dim()) {
    throw usage_error(fmt::format(fmt::runtime(errors::policy_mask_size), action_masks.size(), b.rows(),
                                  b.action_mask_dim()));
  }
  std::copy(observations.begin(), observations.end(), b.observations().row(0).data());
  if (!action_masks.empty()) {
    b.declare_action_masks();
    // Nonzero = legal, stored as the envs write it (1).
    std::transform(action_masks.begin(), action_masks.end(), b.action_masks().row(0).data(),
                   [](std::uint8_t v) { return static_cast<std::uint8_t>(v != 0 ? 1 : 0); });
    for (std::size_t r = 0; r < b.rows(); ++r) {
      if (const auto c = envs::fully_masked_component(b.action_masks().row(r), m.mask_counts); c >= 0) {
        throw usage_error(fmt::format(fmt::runtime(errors::policy_mask_empty), r, c));
      }
    }
  } else if (b.action_mask_dim() > 0) {
    std::fill_n(b.action_masks().row(0).data(), b.rows() * b.action_mask_dim(), std::uint8_t{1});
  }
  m.policy->act(actors::policy_rows{.batch = b, .ranges = std::span(&m.whole, 1), .log_probs = {}, .values = {}});
  // A reset asked for is carried out by this act: the rows' flags say
  // "this observation starts an episode" (terminated) to the policy once.
  std::fill(b.terminated().begin(), b.terminated().end(), std::uint8_t{0});
  return {.discrete = {b.discrete_actions().row(0).data(), b.rows() * b.discrete_action_dim()},
          .continuous = {b.continuous_actions().row(0).data(), b.rows() * b.continuous_action_dim()}};
}

void trained_policy::reset(std::size_t row) {
  auto& b = impl_->batch;
  if (row >= b.rows()) throw usage_error(fmt::format(fmt::runtime(errors::policy_row_out_of_range), row, b.rows()));
  b.terminated()[row] = 1;
}

void trained_policy::reset() {
  auto t = impl_->batch.terminated();
  std::fill(t.begin(), t.end(), std::uint8_t{1});
}

std::size_t trained_policy::rows() const noexcept { return impl_->batch.rows(); }
std::size_t trained_policy::observation_size() const noexcept { return impl_->batch.obs_dim(); }
std::size_t trained_policy::action_mask_size() const noexcept { return impl_->batch.action_mask_dim(); }
std::size_t trained_policy::discrete_size() const noexcept { return impl_->batch.discrete_action_dim(); }
std::size_t trained_policy::continuous_size() const noexcept { return impl_->batch.continuous_action_dim(); }
const envs::space& trained_policy::observation_space() const noexcept { return impl_->observation_space; }
const envs::space& trained_policy::action_space() const noexcept { return impl_->action_space; }
const training::train_options& trained_policy::run_options() const noexcept { return impl_->options; }
const std::filesystem::path& trained_policy::file() const noexcept { return impl_->file; }
std::uint64_t trained_policy::env_steps() const noexcept { return impl_->env_steps; }
bool trained_policy::deterministic() const noexcept { return impl_->deterministic; }
std::uint64_t trained_policy::seed() const noexcept { return impl_->seed; }

std::filesystem::path find_checkpoint(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return path;  // read_checkpoint() names what is wrong with it
  const auto listing = training::list_checkpoints(path);
  if (!listing.checkpoints.empty()) return listing.checkpoints.front().file;
  for (const auto& s : listing.skipped) {
    if (s.regular_file) throw training::checkpoint_error(s.why);
  }
  throw config_error(fmt::format(fmt::runtime(errors::no_checkpoint_in_dir), path.string()));
}

trained_policy load_policy(const std::filesystem::path& path, const policy_options& options) {
  register_builtin_algorithms();
  const auto file = find_checkpoint(path);
  const auto name = file.string();
  const auto c = training::read_checkpoint(file);
  auto o = training::run_options_of(c, name);
  for (const auto& [key, value] : options.env_args) {
    auto at = std::find_if(o.sampler.env_args.begin(), o.sampler.env_args.end(),
                           [&key](const auto& kv) { return kv.first == key; });
    if (at != o.sampler.env_args.end()) {
      at->second = value;
    } else {
      o.sampler.env_args.emplace_back(key, value);
    }
  }
  const auto descriptor = training::find_algorithm(c.algo);
  if (!descriptor->acting) throw config_error(fmt::format(fmt::runtime(errors::algo_cannot_act), name, c.algo));
  // The env is made only for its spaces (and to check the env args).
  const auto env = envs::registry::global().make(o.sampler.env, o.sampler.env_args, c.seed, 0);
  auto m = std::make_unique<trained_policy::impl>(std::max<std::size_t>(options.rows, 1), env->observation_space(),
                                                  env->action_space());
  m->seed = options.seed.value_or(c.seed);
  m->deterministic = options.deterministic;
  m->file = file;
  m->env_steps = c.learner.env_steps;
  const training::acting_options a{.rows = m->batch.rows(), .seed = m->seed, .deterministic = m->deterministic, .file = name};
  try {
    m->policy = descriptor->acting(o, m->observation_space, m->action_space, &c, a);
  } catch (const usage_error& e) {  // weights of another size than the network the signature names
    throw training::checkpoint_error(fmt::format(fmt::runtime(training::errors::checkpoint_does_not_fit), name, e.what()));
  }
  m->options = std::move(o);
  return trained_policy(std::move(m));
}

}  // namespace coral::learners
