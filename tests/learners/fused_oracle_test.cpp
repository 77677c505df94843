// The fused engine against its torch twin, the oracle: the same flat
// weights in both, the same random minibatch, then the forward outputs,
// the PPO loss and its parts, every parameter's gradient, and clipping plus
// Adam steps compared, for each head kind, several widths and minibatch
// sizes, and the convolutional network (conv encoder shared by both heads). The torch side is ppo_torch.cpp's minibatch body
// (learners/src/ppo_torch_loss.hpp has it operator for operator) on
// learners/src/actor_critic.hpp's network, adam.hpp's clip_grad_norm and
// flat_adam.

#include "../../learners/src/actor_critic.hpp"
#include "../../learners/src/ppo_torch_loss.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

// Torch first: its logging header defines a CHECK macro of its own, which
// must give way to Catch2's.
#undef CHECK
#include <catch2/catch.hpp>

#include "coral/core/rng.hpp"
#include "coral/learners/fused/actor_critic.hpp"
#include "coral/learners/fused/optim.hpp"
#include "coral/learners/fused/ppo.hpp"
#include "coral/learners/network.hpp"
#include "coral/learners/ppo_learner.hpp"
#include "fused_ppo_oracle.hpp"

namespace fused = coral::learners::fused;
using coral::test::floats_of;
using coral::test::require_close;
namespace twin = coral::learners::detail;
using coral::learners::network_spec;
using coral::learners::ppo_config;

namespace {

// The torch update's minibatch body: the loss's parts, after backward.
struct torch_pass {
  torch::Tensor out, logp, entropy, value;
  double loss, policy_loss, value_loss, entropy_mean, approx_kl, clip_fraction;
};

torch_pass run_torch(twin::actor_critic& net, const fused::ppo_minibatch& b, const ppo_config& c,
                     const network_spec& spec) {
  const auto B = static_cast<std::int64_t>(b.rows);
  const auto D = static_cast<std::int64_t>(spec.input_dim());
  auto f = [](std::span<const float> s) { return const_cast<float*>(s.data()); };
  const auto x = torch::from_blob(f(b.observations), {B, D}, torch::kFloat32);
  const auto heads = static_cast<std::int64_t>(spec.nvec.size());
  const auto disc = heads > 0 ? torch::from_blob(const_cast<std::int32_t*>(b.discrete_actions.data()), {B, heads},
                                                 torch::kInt32)
                                    .to(torch::kInt64)
                              : torch::zeros({B, 0}, torch::kInt64);
  const auto C = static_cast<std::int64_t>(spec.continuous_dim());
  const auto cont = C > 0 ? torch::from_blob(f(b.continuous_actions), {B, C}, torch::kFloat32)
                          : torch::zeros({B, 0}, torch::kFloat32);
  const auto logits = static_cast<std::int64_t>(spec.logits_dim());
  const auto masks = b.action_masks.empty()
                         ? torch::Tensor()
                         : torch::from_blob(const_cast<std::uint8_t*>(b.action_masks.data()), {B, logits}, torch::kUInt8)
                               .to(torch::kBool);
  const auto old_logp = torch::from_blob(f(b.log_probs), {B}, torch::kFloat32);
  const auto old_v = torch::from_blob(f(b.values), {B}, torch::kFloat32);
  const auto adv = torch::from_blob(f(b.advantages), {B}, torch::kFloat32);
  const auto ret = torch::from_blob(f(b.returns), {B}, torch::kFloat32);

  const auto l = twin::ppo_loss(*net, x, disc, cont, old_logp, old_v, adv, ret, c, masks);
  net->zero_grad();
  l.loss.backward();
  torch::NoGradGuard no_grad;
  torch_pass p;
  p.out = l.actor_out;
  p.logp = l.log_prob;
  p.entropy = l.entropy;
  p.value = l.value;
  p.loss = l.loss.item<double>();
  p.policy_loss = l.policy.item<double>();
  p.value_loss = l.value_loss.item<double>();
  p.entropy_mean = l.mean_entropy.item<double>();
  p.approx_kl = ((l.ratio - 1) - l.log_ratio).mean().item<double>();
  p.clip_fraction = ((l.ratio - 1.0).abs() > c.clip).to(torch::kFloat32).mean().item<double>();
  return p;
}

}  // namespace

TEST_CASE("the fused PPO step computes what the torch learner's minibatch body does, to 1e-5",
          "[learners][fused][oracle]") {
  const auto shape = GENERATE(values<coral::test::ppo_oracle_shape>({
      {"cartpole: one categorical head, 64x64, 256 rows", 4, {2}, 0, {64, 64}, 256, true, true},
      {"cartpole: 7 rows, value loss unclipped", 4, {2}, 0, {64, 64}, 7, false, true},
      {"MultiDiscrete: three heads, one layer of 32", 10, {3, 4, 2}, 0, {32}, 7, true, true},
      {"Gaussian: halfcheetah's shape, 64 rows", 17, {}, 6, {64, 64}, 64, true, true},
      {"Gaussian: 256 rows, advantages as given", 17, {}, 6, {64, 64}, 256, false, false},
      {"mixed: a categorical head and two Gaussians, 16x16x16", 5, {3}, 2, {16, 16, 16}, 7, true, true},
      {"mixed: one row (advantages as given: one row has no std)", 5, {4, 2}, 3, {16, 16, 16}, 1, true, false},
      {"masked: tic-tac-toe's shape, 64x64, 256 rows", 9, {9}, 0, {64, 64}, 256, true, true, 0, 1, true},
      {"masked: three heads, 7 rows", 10, {3, 4, 2}, 0, {32}, 7, true, true, 0, 1, true},
      {"masked: a categorical head and a Gaussian, 33 rows", 5, {5}, 1, {16, 16}, 33, false, true, 0, 1, true},
      {"MinAtar's network: 10x10x4 -> conv 16:3 -> 128 -> 6 actions, 64 rows", 400, {6}, 0, {128}, 64, true, true, 0,
       1, false, {.height = 10, .width = 10, .channels = 4, .layers = {{16, 3, 1}}}},
      {"two convolutions, stride 2, two hidden layers, a Gaussian too: 9x7x3, 13 rows", 189, {3}, 2, {16, 8}, 13,
       false, true, 0, 1, false, {.height = 9, .width = 7, .channels = 3, .layers = {{6, 3, 1}, {5, 2, 2}}}},
  }));
  INFO(shape.name);
  const auto spec = coral::test::spec_of(shape);
  const std::size_t rows = shape.rows;
  coral::rng gen(std::hash<std::string>{}(shape.name) % 1000);
  auto normals = [&](std::size_t n, double scale) {
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(scale * gen.normal());
    return v;
  };

  // The same weights in both: the fused initialiser's, moved off its
  // symmetries (nonzero biases and log std, larger heads).
  auto weights = fused::init_orthogonal(spec, 7);
  for (auto& w : weights) w += static_cast<float>(0.1 * gen.normal());
  twin::actor_critic net(spec);
  REQUIRE(twin::flatten(*net).size() == weights.size());
  twin::load(*net, weights);
  fused::actor_critic engine(spec, rows);
  std::copy(weights.begin(), weights.end(), engine.parameters().begin());

  // Observations and actions at random; old log probabilities and values
  // near the network's own, so that some ratios and values are clipped and
  // some are not.
  auto obs = normals(rows * spec.input_dim(), 1.0);
  std::vector<std::int32_t> disc;
  std::vector<std::uint8_t> masks;  // the actions taken are legal
  for (std::size_t r = 0; r < rows; ++r) {
    for (auto n : spec.nvec) {
      const auto a = static_cast<std::int32_t>(gen.below(static_cast<std::uint64_t>(n)));
      disc.push_back(a);
      for (std::int32_t j = 0; j < n && shape.masked; ++j) masks.push_back(j == a || gen.uniform() < 0.6 ? 1 : 0);
    }
  }
  auto cont = normals(rows * spec.continuous_dim(), 1.0);
  engine.forward(obs.data(), rows);
  engine.log_prob_entropy(disc.data(), cont.data(), masks.empty() ? nullptr : masks.data());
  auto logp = normals(rows, 0.3);
  auto values = normals(rows, 0.3);
  for (std::size_t r = 0; r < rows; ++r) {
    logp[r] += engine.log_probs()[r];
    values[r] += engine.values()[r];
  }
  auto adv = normals(rows, 1.0);
  auto ret = normals(rows, 1.0);
  const fused::ppo_minibatch batch{rows, obs, disc, cont, logp, values, adv, ret, masks};

  const auto config = coral::test::oracle_ppo_config(shape.clip_value_loss, shape.normalize_advantages);
  const double lr = 3e-4;

  fused::adam engine_adam(weights.size(), config.adam_epsilon);
  twin::flat_adam torch_adam(net->ordered(), config.adam_epsilon);
  fused::ppo_workspace work(rows);
  // Two steps: the second from the first's weights and Adam moments.
  for (int step = 1; step <= 2; ++step) {
    INFO("step " << step);
    const auto want = run_torch(net, batch, config, spec);
    const auto got = fused::ppo_loss_gradients(engine, work, batch, config);

    require_close(engine.actor_out(), floats_of(want.out), "actor output");
    require_close(engine.values(), floats_of(want.value), "values");
    require_close(engine.log_probs(), floats_of(want.logp), "log probabilities");
    require_close(engine.entropies(), floats_of(want.entropy), "entropies");
    require_close(got.loss, want.loss, "loss");
    require_close(got.policy_loss, want.policy_loss, "policy loss");
    require_close(got.value_loss, want.value_loss, "value loss");
    require_close(got.entropy, want.entropy_mean, "entropy");
    require_close(got.approx_kl, want.approx_kl, "approx kl");
    require_close(got.clip_fraction, want.clip_fraction, "clip fraction");  // torch's mean is a float

    coral::test::check_gradients_and_step(engine.parameters(), engine.gradients(), net, engine_adam, torch_adam, config,
                                          lr);
  }
}

TEST_CASE("ppo_step is ppo_loss_gradients, clipping and Adam, in one call", "[learners][fused]") {
  const coral::test::ppo_oracle_shape shape{"", 4, {2}, 1, {8}, 5, true, true};
  const auto spec = coral::test::spec_of(shape);
  coral::rng gen(9);
  auto normals = [&](std::size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(gen.normal());
    return v;
  };
  auto obs = normals(5 * 4), cont = normals(5), logp = normals(5), values = normals(5), adv = normals(5),
       ret = normals(5);
  std::vector<std::int32_t> disc{0, 1, 1, 0, 1};
  const fused::ppo_minibatch batch{5, obs, disc, cont, logp, values, adv, ret};
  const auto weights = fused::init_orthogonal(spec, 1);
  fused::actor_critic a(spec, 5), b(spec, 5);
  std::copy(weights.begin(), weights.end(), a.parameters().begin());
  std::copy(weights.begin(), weights.end(), b.parameters().begin());
  fused::adam adam_a(weights.size(), 1e-5), adam_b(weights.size(), 1e-5);
  fused::ppo_workspace work(5);
  ppo_config config;
  const auto stats = fused::ppo_step(a, adam_a, work, batch, config, 1e-3);
  fused::ppo_loss_gradients(b, work, batch, config);
  CHECK(stats.grad_norm == fused::clip_grad_norm(b.gradients(), config.max_grad_norm));
  adam_b.step(b.parameters(), b.gradients(), 1e-3);
  CHECK(std::equal(a.parameters().begin(), a.parameters().end(), b.parameters().begin()));
  CHECK(adam_a.steps == 1);
}
