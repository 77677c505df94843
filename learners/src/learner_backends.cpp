// The learners' torch-free front ends, and the table the torch backends
// fill (learner_backends.hpp).

#include "learner_backends.hpp"

#include <atomic>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/train.hpp"
#include "ppo_shared.hpp"

namespace coral::learners {
namespace {

std::atomic<const torch_learners*>& torch_table() noexcept {
  static std::atomic<const torch_learners*> table{nullptr};
  return table;
}

}  // namespace

const torch_learners* torch_backend() noexcept { return torch_table().load(std::memory_order_acquire); }

void provide_torch_backend(const torch_learners* backend) noexcept {
  torch_table().store(backend, std::memory_order_release);
}

const torch_learners& require_torch_backend(std::string_view what) {
  const auto* b = torch_backend();
  if (b == nullptr) throw usage_error(fmt::format(fmt::runtime(errors::torch_not_linked), what));
  return *b;
}

bool torch_linked() noexcept { return torch_backend() != nullptr; }

namespace detail {

void check_q_state(const training::learner_state& s, std::span<const float> target, std::size_t parameters,
                   std::string_view owner) {
  for (const auto given : {s.parameters.size(), target.size()}) {
    if (given != parameters) {
      throw usage_error(fmt::format("{}: {} weights given, the network has {}", owner, given, parameters));
    }
  }
  if (s.adam_m.size() != parameters || s.adam_v.size() != parameters) {
    throw usage_error("adam: optimiser state does not match the parameters");
  }
}

void check_sequence_batch(const network_spec& spec, const replay::sequence_batch& b) {
  const auto& layout = b.layout;
  const std::size_t D = layout.obs_dim, L = layout.length;
  // Masks, where there are some, are one byte per action of the one Discrete head.
  const bool masks_fit = layout.mask_dim == 0 ||
                         (spec.nvec.size() == 1 && layout.mask_dim == static_cast<std::size_t>(spec.nvec.front()));
  if (D != spec.input_dim() || layout.state_dim != spec.state_dim() || layout.discrete_dim != 1 ||
      layout.burn_in >= L || b.observations.size() != b.size * (L + 1) * D || b.states.size() != b.size * 2 * spec.lstm ||
      b.actions.size() != b.size * L || b.rewards.size() != b.size * L || b.flags.size() != b.size * L ||
      b.weights.size() != b.size || !masks_fit || b.masks.size() != b.size * layout.mask_bytes()) {
    throw usage_error(fmt::format("r2d2_learner: a batch of layout obs {} state {} does not fit the network (obs {}, "
                                  "state {})",
                                  layout.obs_dim, layout.state_dim, spec.input_dim(), spec.state_dim()));
  }
}

}  // namespace detail

// --- PPO ---

ppo_learner::ppo_learner(const network_spec& spec, const ppo_config& config, std::uint64_t seed,
                         std::uint64_t total_steps)
    : impl_(config.backend == network_backend::fused
                ? detail::make_fused_ppo(spec, config, seed, total_steps)
                : require_torch_backend("ppo_learner").ppo(spec, config, seed, total_steps)) {}
ppo_learner::~ppo_learner() = default;
training::update_stats ppo_learner::update(const training::rollout_segment& segment, std::uint64_t version,
                                           training::learner_activity* activity) {
  return impl_->update(segment, version, activity);
}
std::vector<float> ppo_learner::weights() const { return impl_->weights(); }
std::vector<float> ppo_learner::values(std::span<const float> observations) const {
  return impl_->values(observations);
}
training::learner_state ppo_learner::state() const { return impl_->state(); }
void ppo_learner::restore(const training::learner_state& s) { impl_->restore(s); }
std::uint64_t ppo_learner::updates() const noexcept { return impl_->updates(); }
std::uint64_t ppo_learner::env_steps() const noexcept { return impl_->env_steps(); }
const network_spec& ppo_learner::spec() const noexcept { return impl_->spec(); }

// --- DQN ---

dqn_learner::dqn_learner(const network_spec& spec, const dqn_config& config, std::uint64_t seed)
    : impl_(config.backend == network_backend::fused ? detail::make_fused_dqn(spec, config, seed)
                                                     : require_torch_backend("dqn_learner").dqn(spec, config, seed)) {}
dqn_learner::~dqn_learner() = default;
training::update_stats dqn_learner::update(replay::sample_batch& batch) { return impl_->update(batch); }
std::vector<float> dqn_learner::weights() const { return impl_->weights(); }
std::vector<float> dqn_learner::target_weights() const { return impl_->target_weights(); }
training::learner_state dqn_learner::state() const { return impl_->state(); }
void dqn_learner::restore(const training::learner_state& s, std::span<const float> target) {
  impl_->restore(s, target);
}
std::uint64_t dqn_learner::updates() const noexcept { return impl_->updates(); }
void dqn_learner::set_env_steps(std::uint64_t steps) noexcept { impl_->set_env_steps(steps); }

// --- R2D2 ---

r2d2_learner::r2d2_learner(const network_spec& spec, const dqn_config& dqn, const r2d2_config& config,
                           std::uint64_t seed)
    : impl_(dqn.backend == network_backend::fused ? detail::make_fused_r2d2(spec, dqn, config, seed)
                                                  : require_torch_backend("r2d2_learner").r2d2(spec, dqn, config, seed)) {}
r2d2_learner::~r2d2_learner() = default;
r2d2_update_stats r2d2_learner::update(replay::sequence_batch& batch) { return impl_->update(batch); }
std::vector<float> r2d2_learner::weights() const { return impl_->weights(); }
std::vector<float> r2d2_learner::target_weights() const { return impl_->target_weights(); }
training::learner_state r2d2_learner::state() const { return impl_->state(); }
void r2d2_learner::restore(const training::learner_state& s, std::span<const float> target) {
  impl_->restore(s, target);
}
std::uint64_t r2d2_learner::updates() const noexcept { return impl_->updates(); }
void r2d2_learner::set_env_steps(std::uint64_t steps) noexcept { impl_->set_env_steps(steps); }
std::vector<float> r2d2_learner::q_values(std::span<const float> observations,
                                          std::span<const std::uint8_t> resets) const {
  return impl_->q_values(observations, resets);
}
std::vector<float> r2d2_learner::state_after(std::span<const float> observations, std::span<const std::uint8_t> resets,
                                             std::span<const float> initial) const {
  return impl_->state_after(observations, resets, initial);
}

}  // namespace coral::learners
