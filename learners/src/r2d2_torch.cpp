// R2D2's learner, the torch twin (see r2d2.hpp; learner_backends.hpp).

#include "coral/learners/r2d2.hpp"
#include "coral/learners/r2d2_learner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "actor_critic.hpp"
#include "adam.hpp"
#include "coral/core/error.hpp"
#include "coral/core/rng.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/r2d2_math.hpp"
#include "flat_layout.hpp"
#include "learner_backends.hpp"

namespace coral::learners {
namespace {

using clock = std::chrono::steady_clock;

double seconds_since(clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); }


/// The recurrent Q-network: the trunk (encoder, LSTM) and a linear head of
/// one Q value per action. Parameters in registration order: trunk, head.
struct recurrent_q_impl : torch::nn::Module {
  explicit recurrent_q_impl(const network_spec& spec) {
    torch::NoGradGuard no_grad;
    trunk = register_module("trunk", detail::recurrent_trunk(spec.input_dim(), spec.hidden, spec.lstm, spec.conv));
    head = register_module("head", detail::make_mlp(spec.lstm, {}, detail::r2d2_action_count(spec), 1.0));
  }
  /// Q values [B, T, A] of T slots from (h, c), zeroing the state where `resets`.
  torch::Tensor unroll(const torch::Tensor& obs, const torch::Tensor& resets, const torch::Tensor& h,
                       const torch::Tensor& c, torch::Tensor* h_out = nullptr, torch::Tensor* c_out = nullptr) {
    auto [hs, cs] = trunk->unroll(obs, resets, h, c);
    const auto T = obs.size(1);
    if (h_out != nullptr) *h_out = hs.select(1, T - 1);
    if (c_out != nullptr) *c_out = cs.select(1, T - 1);
    return head->forward(hs);
  }
  detail::recurrent_trunk trunk{nullptr};
  torch::nn::Sequential head{nullptr};
};
TORCH_MODULE_IMPL(recurrent_q, recurrent_q_impl);

std::vector<float> flatten(const recurrent_q& net) { return detail::flatten(net->parameters()); }
void load(recurrent_q& net, std::span<const float> w, std::string_view owner) {
  detail::load(net->parameters(), w, owner);
}

}  // namespace


// ---------------------------------------------------------------------------

struct torch_r2d2_state {
  torch_r2d2_state(const network_spec& s, const dqn_config& d, const r2d2_config& r, std::uint64_t seed)
      : spec(s), dqn(d), config(r) {
    if (s.lstm == 0) throw usage_error("r2d2_learner: the network has no LSTM");
    torch::manual_seed(seed);
    online = recurrent_q(s);
    target = recurrent_q(s);
    load(target, flatten(online), "r2d2_learner");
    online->train();
    target->eval();
    adam = std::make_unique<detail::flat_adam>(online->parameters(), d.adam_epsilon);
  }

  network_spec spec;
  dqn_config dqn;
  r2d2_config config;
  recurrent_q online{nullptr};
  recurrent_q target{nullptr};
  std::unique_ptr<detail::flat_adam> adam;
  std::uint64_t updates = 0;
  std::uint64_t env_steps = 0;
  // Per update, reused: the bootstrap values, targets and mask (B × L(+1)).
  std::vector<float> bootstrap, targets, mask, td;
};

/// The torch twin's updates (learner_backends.hpp).
class torch_r2d2 final : public r2d2_learner::backend {
 public:
  torch_r2d2(const network_spec& spec, const dqn_config& dqn, const r2d2_config& config, std::uint64_t seed) : impl_(std::make_unique<torch_r2d2_state>(spec, dqn, config, seed)) {}
  r2d2_update_stats update(replay::sequence_batch& batch) override;
  std::vector<float> weights() const override;
  std::vector<float> target_weights() const override;
  training::learner_state state() const override;
  void restore(const training::learner_state& s, std::span<const float> target) override;
  std::uint64_t updates() const noexcept override;
  void set_env_steps(std::uint64_t steps) noexcept override;
  std::vector<float> q_values(std::span<const float> observations,
                              std::span<const std::uint8_t> resets) const override;
  std::vector<float> state_after(std::span<const float> observations, std::span<const std::uint8_t> resets,
                                 std::span<const float> initial) const override;
 private:
  std::unique_ptr<torch_r2d2_state> impl_;
};


std::uint64_t torch_r2d2::updates() const noexcept { return impl_->updates; }
void torch_r2d2::set_env_steps(std::uint64_t steps) noexcept { impl_->env_steps = steps; }
std::vector<float> torch_r2d2::weights() const { return flatten(impl_->online); }
std::vector<float> torch_r2d2::target_weights() const { return flatten(impl_->target); }

r2d2_update_stats torch_r2d2::update(replay::sequence_batch& b) {
  auto& s = *impl_;
  const auto& d = s.dqn;
  const auto started = clock::now();
  const auto& layout = b.layout;
  const auto B = static_cast<std::int64_t>(b.size);
  const auto L = static_cast<std::int64_t>(layout.length);
  const auto D = static_cast<std::int64_t>(layout.obs_dim);
  const auto H = static_cast<std::int64_t>(s.spec.lstm);
  const auto BI = static_cast<std::int64_t>(layout.burn_in);
  detail::check_sequence_batch(s.spec, b);
  const auto obs = torch::from_blob(b.observations.data(), {B, L + 1, D}, torch::kFloat32);
  const auto states = torch::from_blob(b.states.data(), {B, 2 * H}, torch::kFloat32);
  const auto h0 = states.narrow(1, 0, H);
  const auto c0 = states.narrow(1, H, H);
  // Reset before slot t where it starts an episode; slot L (the bootstrap
  // observation) continues the last slot's episode.
  auto resets = torch::zeros({B, L + 1}, torch::kFloat32);
  {
    float* rp = resets.data_ptr<float>();
    for (std::int64_t i = 0; i < B; ++i) {
      for (std::int64_t t = 0; t < L; ++t) {
        rp[i * (L + 1) + t] = (b.flags[static_cast<std::size_t>(i * L + t)] & replay::slot_first) != 0 ? 1.0f : 0.0f;
      }
    }
  }
  r2d2_update_stats out;

  // Burn-in: both networks from the stored state, without gradient.
  torch::Tensor h_on = h0, c_on = c0, h_tg = h0, c_tg = c0;
  if (BI > 0) {
    torch::NoGradGuard no_grad;
    const auto o = obs.narrow(1, 0, BI), r = resets.narrow(1, 0, BI);
    (void)s.online->unroll(o, r, h0, c0, &h_on, &c_on);
    (void)s.target->unroll(o, r, h0, c0, &h_tg, &c_tg);
  }
  out.burn_in_seconds = seconds_since(started);
  const auto learn_started = clock::now();

  // The trained slots and the bootstrap slot: [BI, L].
  const auto T = L + 1 - BI;
  const auto o_rest = obs.narrow(1, BI, T), r_rest = resets.narrow(1, BI, T);
  const auto q = s.online->unroll(o_rest, r_rest, h_on.detach(), c_on.detach());  // [B, T, A]
  {
    torch::NoGradGuard no_grad;
    const auto q_target = s.target->unroll(o_rest, r_rest, h_tg, c_tg);
    auto q_scored = q.detach();
    if (d.action_masks && layout.mask_dim > 0) {
      // Only the actions legal at each bootstrap observation compete; a
      // slot with none legal (padding) keeps them all.
      const auto A = q_scored.size(2);
      const auto legal = torch::from_blob(b.masks.data(), {B, L + 1, A}, torch::kUInt8).narrow(1, BI, T).ne(0);
      const auto illegal = legal.logical_not().logical_and(legal.any(2, /*keepdim=*/true));
      q_scored = q_scored.masked_fill(illegal, -std::numeric_limits<float>::infinity());
    }
    const auto best = q_scored.argmax(2, /*keepdim=*/true);
    const auto boot = q_target.gather(2, best).squeeze(2).contiguous();  // [B, T]
    s.bootstrap.assign(static_cast<std::size_t>(B * (L + 1)), 0.0f);
    const float* bp = boot.data_ptr<float>();
    for (std::int64_t i = 0; i < B; ++i) {
      std::copy_n(bp + i * T, T, s.bootstrap.begin() + static_cast<std::ptrdiff_t>(i * (L + 1) + BI));
    }
  }
  s.targets.assign(static_cast<std::size_t>(B * L), 0.0f);
  s.mask.assign(static_cast<std::size_t>(B * L), 0.0f);
  nstep_batch_targets(b.size, layout.length, b.rewards, b.flags, s.bootstrap,
                              {.gamma = d.gamma, .n = d.n_step, .eps = s.config.rescale_epsilon, .burn_in = layout.burn_in},
                              s.targets, s.mask);
  // Q of the actions taken at the trained slots [BI, L).
  const auto actions = torch::from_blob(b.actions.data(), {B, L, 1}, torch::kInt32).narrow(1, BI, L - BI).to(torch::kInt64);
  const auto q_taken = q.narrow(1, 0, L - BI).gather(2, actions).squeeze(2);  // [B, L − BI]
  const auto targets = torch::from_blob(s.targets.data(), {B, L}, torch::kFloat32).narrow(1, BI, L - BI);
  const auto mask = torch::from_blob(s.mask.data(), {B, L}, torch::kFloat32).narrow(1, BI, L - BI);
  const auto td = (targets - q_taken) * mask;
  auto weights = torch::from_blob(b.weights.data(), {B}, torch::kFloat32);
  weights = weights / weights.max().clamp_min(1e-12);
  const auto per_sequence = 0.5 * td.pow(2).sum(1) / mask.sum(1).clamp_min(1.0);
  const auto loss = (weights * per_sequence).mean();
  s.online->zero_grad();
  loss.backward();
  out.grad_norm = d.max_grad_norm > 0 ? detail::clip_grad_norm(s.online->parameters(), d.max_grad_norm) : 0.0;
  s.adam->step(s.online->parameters(), d.learning_rate);

  {
    torch::NoGradGuard no_grad;
    const auto abs_td = td.detach().abs().contiguous();
    const auto m = mask.contiguous();
    const auto W = L - BI;
    b.priorities.resize(b.size);
    s.td.assign(abs_td.data_ptr<float>(), abs_td.data_ptr<float>() + B * W);
    for (std::int64_t i = 0; i < B; ++i) {
      b.priorities[static_cast<std::size_t>(i)] = sequence_priority(
          std::span<const float>(s.td).subspan(static_cast<std::size_t>(i * W), static_cast<std::size_t>(W)),
          std::span<const float>(m.data_ptr<float>() + i * W, static_cast<std::size_t>(W)), s.config.priority_eta);
    }
    const double count = std::max(1.0, m.sum().item<double>());
    const auto qt = q_taken.detach();
    out.base.td_loss = loss.item<double>();
    out.base.mean_q = value_unrescale((qt * m).sum().item<double>() / count, s.config.rescale_epsilon);
    out.base.mean_abs_td = abs_td.sum().item<double>() / count;
    out.q_max = value_unrescale(q.detach().max().item<double>(), s.config.rescale_epsilon);
  }
  ++s.updates;
  if (d.target_update > 0 && s.updates % d.target_update == 0) load(s.target, flatten(s.online), "r2d2_learner");
  out.base.learning_rate = d.learning_rate;
  out.learn_seconds = seconds_since(learn_started);
  out.base.seconds = seconds_since(started);
  return out;
}

std::vector<float> torch_r2d2::q_values(std::span<const float> observations,
                                          std::span<const std::uint8_t> resets) const {
  auto& s = *impl_;
  const auto D = static_cast<std::int64_t>(s.spec.input_dim());
  const auto T = static_cast<std::int64_t>(resets.size());
  if (static_cast<std::int64_t>(observations.size()) != T * D) {
    throw usage_error(fmt::format("r2d2_learner: {} floats are not {} observations of {}", observations.size(), T, D));
  }
  torch::NoGradGuard no_grad;
  const auto obs = torch::from_blob(const_cast<float*>(observations.data()), {1, T, D}, torch::kFloat32);
  auto r = torch::zeros({1, T}, torch::kFloat32);
  for (std::int64_t t = 0; t < T; ++t) r[0][t] = static_cast<float>(resets[static_cast<std::size_t>(t)]);
  const auto zeros = torch::zeros({1, static_cast<std::int64_t>(s.spec.lstm)}, torch::kFloat32);
  const auto q = s.online->unroll(obs, r, zeros, zeros).contiguous();
  return {q.data_ptr<float>(), q.data_ptr<float>() + q.numel()};
}

std::vector<float> torch_r2d2::state_after(std::span<const float> observations, std::span<const std::uint8_t> resets,
                                             std::span<const float> initial) const {
  auto& s = *impl_;
  const auto D = static_cast<std::int64_t>(s.spec.input_dim());
  const auto T = static_cast<std::int64_t>(resets.size());
  const auto H = static_cast<std::int64_t>(s.spec.lstm);
  if (static_cast<std::int64_t>(observations.size()) != T * D || static_cast<std::int64_t>(initial.size()) != 2 * H) {
    throw usage_error("r2d2_learner: state_after takes T observations and 2 × lstm floats of state");
  }
  torch::NoGradGuard no_grad;
  const auto obs = torch::from_blob(const_cast<float*>(observations.data()), {1, T, D}, torch::kFloat32);
  auto r = torch::zeros({1, T}, torch::kFloat32);
  for (std::int64_t t = 0; t < T; ++t) r[0][t] = static_cast<float>(resets[static_cast<std::size_t>(t)]);
  const auto st = torch::from_blob(const_cast<float*>(initial.data()), {1, 2 * H}, torch::kFloat32);
  torch::Tensor h, c;
  (void)s.online->unroll(obs, r, st.narrow(1, 0, H), st.narrow(1, H, H), &h, &c);
  const auto hc = torch::cat({h, c}, 1).contiguous();
  return {hc.data_ptr<float>(), hc.data_ptr<float>() + hc.numel()};
}

training::learner_state torch_r2d2::state() const {
  return detail::q_learner_state(weights(), *impl_->adam, impl_->updates, impl_->env_steps);
}

void torch_r2d2::restore(const training::learner_state& st, std::span<const float> target) {
  auto& s = *impl_;
  load(s.online, st.parameters, "r2d2_learner");
  load(s.target, target, "r2d2_learner");
  s.adam->load(st.adam_m, st.adam_v, st.adam_steps);
  s.updates = st.updates;
  s.env_steps = st.env_steps;
}

namespace detail {

std::unique_ptr<r2d2_learner::backend> make_torch_r2d2(const network_spec& spec, const dqn_config& dqn, const r2d2_config& config, std::uint64_t seed) {
  return std::make_unique<torch_r2d2>(spec, dqn, config, seed);
}

}  // namespace detail

}  // namespace coral::learners
