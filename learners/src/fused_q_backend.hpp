#pragma once
// Private: what the fused DQN and R2D2 backends (dqn_fused.cpp,
// r2d2_fused.cpp) share (torch-free): an online and a target network on the
// fused engine, Adam, the counters, and the state a checkpoint holds, laid
// out as the torch twins' (detail::q_learner_state), so that a checkpoint
// written on either backend resumes on the other.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "coral/learners/fused/optim.hpp"
#include "coral/training/learner_state.hpp"
#include "learner_backends.hpp"

namespace coral::learners::detail {

/// The parts of a Q learner's fused backend beyond its update: `Interface`
/// is dqn_learner::backend or r2d2_learner::backend, `Net` the engine's
/// network (fused::q_network, fused::recurrent_q_network: parameters(),
/// target_parameters(), sync_target()).
template <class Interface, class Net>
class fused_q_backend : public Interface {
 public:
  std::vector<float> weights() const override {
    const auto p = std::as_const(*net_).parameters();
    return {p.begin(), p.end()};
  }

  std::vector<float> target_weights() const override {
    const auto p = std::as_const(*net_).target_parameters();
    return {p.begin(), p.end()};
  }

  training::learner_state state() const override {
    training::learner_state st;
    st.parameters = weights();
    st.adam_m = adam_.m;
    st.adam_v = adam_.v;
    st.adam_steps = adam_.steps;
    st.updates = updates_;
    st.env_steps = env_steps_;
    return st;
  }

  void restore(const training::learner_state& st, std::span<const float> target) override {
    check_q_state(st, target, net_->parameters().size(), owner_);
    std::copy(st.parameters.begin(), st.parameters.end(), net_->parameters().begin());
    std::copy(target.begin(), target.end(), net_->target_parameters().begin());
    adam_.m = st.adam_m;
    adam_.v = st.adam_v;
    adam_.steps = st.adam_steps;
    updates_ = st.updates;
    env_steps_ = st.env_steps;
  }

  std::uint64_t updates() const noexcept override { return updates_; }
  void set_env_steps(std::uint64_t steps) noexcept override { env_steps_ = steps; }

 protected:
  /// `net` with `initial` parameters in both copies, Adam of `adam_epsilon`;
  /// `owner` names the learner in refusals ("dqn_learner").
  fused_q_backend(std::unique_ptr<Net> net, std::span<const float> initial, double adam_epsilon,
                  std::string_view owner)
      : owner_(owner), net_(std::move(net)), adam_(net_->parameters().size(), adam_epsilon) {
    std::copy(initial.begin(), initial.end(), net_->parameters().begin());
    net_->sync_target();
  }

  /// Moves to `bigger` (a network of more rows), both copies' parameters with it.
  void enlarge(std::unique_ptr<Net> bigger) {
    std::copy(net_->parameters().begin(), net_->parameters().end(), bigger->parameters().begin());
    std::copy(net_->target_parameters().begin(), net_->target_parameters().end(),
              bigger->target_parameters().begin());
    net_ = std::move(bigger);
  }

  /// Counts an update; every `target_update`-th (where > 0) copies the
  /// online network into the target, as the torch twins do.
  void count_update(std::size_t target_update) noexcept {
    ++updates_;
    if (target_update > 0 && updates_ % target_update == 0) net_->sync_target();
  }

  std::string_view owner_;
  std::unique_ptr<Net> net_;
  fused::adam adam_;
  std::uint64_t updates_ = 0;
  std::uint64_t env_steps_ = 0;
};

}  // namespace coral::learners::detail
