#pragma once
// Private: what computes a learner's updates, and where the torch twins plug
// in (torch-free).
//
// ppo_learner, dqn_learner and r2d2_learner are torch-free front ends over a
// backend: the fused engine's (ppo_fused.cpp, dqn_fused.cpp, r2d2_fused.cpp)
// where it has the network and the config asks for it, else torch's. The
// torch backends live in coral::learners_torch, which fills the
// table below when it is linked (torch_backend.cpp, pulled in by the linker
// option that library carries). The `coral` command links no torch: it parses
// and checks a run torch-free and hands a run that needs torch to
// coral-torch (apps/coral/main.cpp), so that `--help` or a refused flag
// answers without loading libtorch.

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/ppo_learner.hpp"
#include "coral/learners/r2d2_learner.hpp"

namespace coral::learners {

/// A PPO learner's update, weights and state (ppo_learner's methods).
struct ppo_learner::backend {
  virtual ~backend() = default;
  virtual training::update_stats update(const training::rollout_segment& segment, std::uint64_t version,
                                        training::learner_activity* activity) = 0;
  [[nodiscard]] virtual std::vector<float> weights() const = 0;
  [[nodiscard]] virtual std::vector<float> values(std::span<const float> observations) const = 0;
  [[nodiscard]] virtual training::learner_state state() const = 0;
  virtual void restore(const training::learner_state& s) = 0;
  [[nodiscard]] virtual std::uint64_t updates() const noexcept = 0;
  [[nodiscard]] virtual std::uint64_t env_steps() const noexcept = 0;
  [[nodiscard]] virtual const network_spec& spec() const noexcept = 0;
};

/// A DQN learner's update, weights and state (dqn_learner's methods).
struct dqn_learner::backend {
  virtual ~backend() = default;
  virtual training::update_stats update(replay::sample_batch& batch) = 0;
  [[nodiscard]] virtual std::vector<float> weights() const = 0;
  [[nodiscard]] virtual std::vector<float> target_weights() const = 0;
  [[nodiscard]] virtual training::learner_state state() const = 0;
  virtual void restore(const training::learner_state& s, std::span<const float> target) = 0;
  [[nodiscard]] virtual std::uint64_t updates() const noexcept = 0;
  virtual void set_env_steps(std::uint64_t steps) noexcept = 0;
};

/// An R2D2 learner's update, weights and state (r2d2_learner's methods).
struct r2d2_learner::backend {
  virtual ~backend() = default;
  virtual r2d2_update_stats update(replay::sequence_batch& batch) = 0;
  [[nodiscard]] virtual std::vector<float> weights() const = 0;
  [[nodiscard]] virtual std::vector<float> target_weights() const = 0;
  [[nodiscard]] virtual training::learner_state state() const = 0;
  virtual void restore(const training::learner_state& s, std::span<const float> target) = 0;
  [[nodiscard]] virtual std::uint64_t updates() const noexcept = 0;
  virtual void set_env_steps(std::uint64_t steps) noexcept = 0;
  [[nodiscard]] virtual std::vector<float> q_values(std::span<const float> observations,
                                                    std::span<const std::uint8_t> resets) const = 0;
  [[nodiscard]] virtual std::vector<float> state_after(std::span<const float> observations,
                                                       std::span<const std::uint8_t> resets,
                                                       std::span<const float> initial) const = 0;
};

/// The torch backends' factories (each sets torch to one thread first).
struct torch_learners {
  std::unique_ptr<ppo_learner::backend> (*ppo)(const network_spec&, const ppo_config&, std::uint64_t seed,
                                               std::uint64_t total_steps) = nullptr;
  std::unique_ptr<dqn_learner::backend> (*dqn)(const network_spec&, const dqn_config&, std::uint64_t seed) = nullptr;
  std::unique_ptr<r2d2_learner::backend> (*r2d2)(const network_spec&, const dqn_config&, const r2d2_config&,
                                                 std::uint64_t seed) = nullptr;
};

/// Where coral::learners_torch is linked, its factories (set before main()
/// by its static initialiser); nullptr otherwise.
[[nodiscard]] const torch_learners* torch_backend() noexcept;

/// Sets what torch_backend() returns (torch_backend.cpp's initialiser).
void provide_torch_backend(const torch_learners* backend) noexcept;

/// torch_backend(), or usage_error (errors::torch_not_linked) naming `what`.
[[nodiscard]] const torch_learners& require_torch_backend(std::string_view what);

namespace detail {

/// DQN's fused backend (dqn_fused.cpp): the engine has every Q-network.
[[nodiscard]] std::unique_ptr<dqn_learner::backend> make_fused_dqn(const network_spec& spec, const dqn_config& config,
                                                                   std::uint64_t seed);

/// R2D2's fused backend (r2d2_fused.cpp): the engine has every recurrent Q-network.
[[nodiscard]] std::unique_ptr<r2d2_learner::backend> make_fused_r2d2(const network_spec& spec, const dqn_config& dqn,
                                                                     const r2d2_config& config, std::uint64_t seed);

/// Refuses, with usage_error naming `owner`, a Q learner's checkpoint state
/// or target weights that do not fit a network of `parameters` floats, in
/// the torch backends' words (detail::load, flat_adam::load), so that a
/// refusal reads the same on either backend.
void check_q_state(const training::learner_state& s, std::span<const float> target, std::size_t parameters,
                   std::string_view owner);

/// Refuses, with usage_error, a sequence batch whose layout or sizes do not
/// fit R2D2's network of `spec` (both R2D2 backends check with it).
void check_sequence_batch(const network_spec& spec, const replay::sequence_batch& b);

}  // namespace detail

}  // namespace coral::learners
