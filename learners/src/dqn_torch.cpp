#include "coral/learners/dqn_learner.hpp"

#include <chrono>
#include <limits>

#include <fmt/format.h>

#include "actor_critic.hpp"
#include "adam.hpp"
#include "learner_backends.hpp"
#include "coral/core/error.hpp"

namespace coral::learners {
namespace {

std::vector<float> flatten(const torch::nn::Sequential& net) { return detail::flatten(net->parameters()); }

void load(torch::nn::Sequential& net, std::span<const float> weights) {
  detail::load(net->parameters(), weights, "dqn_learner");
}

}  // namespace

struct torch_dqn_state {
  torch_dqn_state(const network_spec& spec, const dqn_config& c, std::uint64_t seed) : config(c) {
    const auto widths = q_network_widths(spec, "");
    // The initial weights depend on the seed alone.
    torch::manual_seed(seed);
    online = detail::make_q_network(widths, spec.conv);
    target = detail::make_q_network(widths, spec.conv);
    load(target, flatten(online));
    online->train();
    target->eval();
    adam = std::make_unique<detail::flat_adam>(online->parameters(), c.adam_epsilon);
    obs_dim = static_cast<std::int64_t>(spec.input_dim());
  }


  dqn_config config;
  torch::nn::Sequential online{nullptr};
  torch::nn::Sequential target{nullptr};
  std::unique_ptr<detail::flat_adam> adam;
  std::int64_t obs_dim = 0;
  std::uint64_t updates = 0;
  std::uint64_t env_steps = 0;
};

/// The torch twin's updates (learner_backends.hpp).
class torch_dqn final : public dqn_learner::backend {
 public:
  torch_dqn(const network_spec& spec, const dqn_config& config, std::uint64_t seed) : impl_(std::make_unique<torch_dqn_state>(spec, config, seed)) {}
  training::update_stats update(replay::sample_batch& batch) override;
  std::vector<float> weights() const override;
  std::vector<float> target_weights() const override;
  training::learner_state state() const override;
  void restore(const training::learner_state& s, std::span<const float> target) override;
  std::uint64_t updates() const noexcept override;
  void set_env_steps(std::uint64_t steps) noexcept override;
 private:
  std::unique_ptr<torch_dqn_state> impl_;
};


std::uint64_t torch_dqn::updates() const noexcept { return impl_->updates; }
void torch_dqn::set_env_steps(std::uint64_t steps) noexcept { impl_->env_steps = steps; }
std::vector<float> torch_dqn::weights() const { return flatten(impl_->online); }
std::vector<float> torch_dqn::target_weights() const { return flatten(impl_->target); }

training::update_stats torch_dqn::update(replay::sample_batch& b) {
  auto& s = *impl_;
  const auto& c = s.config;
  const auto started = std::chrono::steady_clock::now();
  const auto B = static_cast<std::int64_t>(b.size);
  const auto D = s.obs_dim;
  const auto obs = torch::from_blob(b.observations.data(), {B, D}, torch::kFloat32);
  const auto next = torch::from_blob(b.next_observations.data(), {B, D}, torch::kFloat32);
  const auto actions = torch::from_blob(b.discrete.data(), {B, 1}, torch::kInt32).to(torch::kInt64);
  const auto returns = torch::from_blob(b.returns.data(), {B}, torch::kFloat32);
  const auto discounts = torch::from_blob(b.discounts.data(), {B}, torch::kFloat32);
  // Importance weights scaled so that the batch's largest is 1 (as Ape-X's
  // learners do): the buffer's own normalisation, by the smallest priority
  // anywhere, can make every weight tiny, and Adam's epsilon then shrinks
  // the steps.
  auto weights = torch::from_blob(b.weights.data(), {B}, torch::kFloat32);
  weights = weights / weights.max().clamp_min(1e-12);

  // One forward pass of the online network over o and o' together.
  const auto q_all = s.online->forward(torch::cat({obs, next}, 0));
  const auto q = q_all.narrow(0, 0, B).gather(1, actions).squeeze(1);
  torch::Tensor y;
  {
    torch::NoGradGuard no_grad;
    const auto q_next_target = s.target->forward(next);
    auto q_next_online = q_all.narrow(0, B, B).detach();
    auto q_next_scored = q_next_target;
    if (c.action_masks && !b.next_masks.empty()) {
      // Only the actions legal at o' compete for the bootstrap.
      const auto A = q_next_target.size(1);
      const auto illegal = torch::from_blob(b.next_masks.data(), {B, A}, torch::kUInt8).eq(0);
      const auto lowest = -std::numeric_limits<float>::infinity();
      q_next_online = q_next_online.masked_fill(illegal, lowest);
      q_next_scored = q_next_target.masked_fill(illegal, lowest);
    }
    torch::Tensor bootstrap;
    if (c.double_dqn) {
      const auto best = q_next_online.argmax(1, /*keepdim=*/true);
      bootstrap = q_next_target.gather(1, best).squeeze(1);
    } else {
      bootstrap = std::get<0>(q_next_scored.max(1));
    }
    y = returns + discounts * bootstrap;
  }
  const auto td = y - q;
  const auto huber = torch::nn::functional::huber_loss(
      q, y, torch::nn::functional::HuberLossFuncOptions().reduction(torch::kNone).delta(c.huber_delta));
  const auto loss = (weights * huber).mean();
  s.online->zero_grad();
  loss.backward();
  if (c.max_grad_norm > 0) torch::nn::utils::clip_grad_norm_(s.online->parameters(), c.max_grad_norm);
  s.adam->step(s.online->parameters(), c.learning_rate);

  training::update_stats out;
  {
    torch::NoGradGuard no_grad;
    const auto abs_td = td.detach().abs().contiguous();
    b.td_errors.assign(abs_td.data_ptr<float>(), abs_td.data_ptr<float>() + B);
    out.td_loss = loss.item<double>();
    out.mean_q = q.detach().mean().item<double>();
    out.mean_abs_td = abs_td.mean().item<double>();
  }
  ++s.updates;
  if (c.target_update > 0 && s.updates % c.target_update == 0) load(s.target, flatten(s.online));
  out.learning_rate = c.learning_rate;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

training::learner_state torch_dqn::state() const {
  return detail::q_learner_state(weights(), *impl_->adam, impl_->updates, impl_->env_steps);
}

void torch_dqn::restore(const training::learner_state& st, std::span<const float> target) {
  auto& s = *impl_;
  load(s.online, st.parameters);
  load(s.target, target);
  s.adam->load(st.adam_m, st.adam_v, st.adam_steps);
  s.updates = st.updates;
  s.env_steps = st.env_steps;
}

namespace detail {

std::unique_ptr<dqn_learner::backend> make_torch_dqn(const network_spec& spec, const dqn_config& config, std::uint64_t seed) {
  return std::make_unique<torch_dqn>(spec, config, seed);
}

}  // namespace detail

}  // namespace coral::learners
