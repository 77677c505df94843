// The fused Q-network and DQN update against the torch learner's
// (learners/src/dqn_torch.cpp): the same flat weights in an online and a
// target torch network (make_q_network, as the learner builds them: an
// MLP, or convolutions and an MLP) and in
// fused::q_network, the same random batch, then the Q-values, the targets'
// TD errors, the loss, every parameter's gradient and the parameters after
// clipping (torch's own clip_grad_norm_, as the learner calls it) and Adam,
// over two updates, double DQN and not. The tolerance: fused_oracle_support.hpp's.

#include "../../learners/src/actor_critic.hpp"
#include "../../learners/src/adam.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

// Torch first: its logging header defines a CHECK macro of its own.
#undef CHECK
#include <catch2/catch.hpp>

#include "coral/core/rng.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/fused/q_network.hpp"
#include "fused_oracle_support.hpp"

namespace fused = coral::learners::fused;
namespace twin = coral::learners::detail;
using coral::test::floats_of;
using coral::test::require_close;

namespace {

struct dqn_shape {
  std::string name;
  std::vector<std::size_t> widths;  // the dense layers': widths.front() is the convolutions' output with some
  std::size_t rows;
  bool double_dqn;
  coral::learners::conv_spec conv{};
};

}  // namespace

TEST_CASE("the fused DQN update computes what the torch DQN learner's does, to 1e-5", "[learners][fused][oracle]") {
  const auto shape = GENERATE(values<dqn_shape>({
      {"cartpole: 4 -> 64x64 -> 2, 128 transitions, double DQN", {4, 64, 64, 2}, 128, true},
      {"6 -> 32 -> 5, 7 transitions, plain DQN", {6, 32, 5}, 7, false},
      {"3 -> 16x16x16 -> 3, one transition, double DQN", {3, 16, 16, 16, 3}, 1, true},
      {"MinAtar's: 10x10x4 -> conv 16:3 -> 128 -> 6, 32 transitions, double DQN", {1024, 128, 6}, 32, true,
       {.height = 10, .width = 10, .channels = 4, .layers = {{16, 3, 1}}}},
      {"8x8x2 -> conv 4:3, 3:2:2 -> 16 -> 3, 5 transitions, plain DQN", {27, 16, 3}, 5, false,
       {.height = 8, .width = 8, .channels = 2, .layers = {{4, 3, 1}, {3, 2, 2}}}},
  }));
  INFO(shape.name);
  const auto& widths = shape.widths;
  const auto& conv = shape.conv;
  const std::size_t B = shape.rows, A = widths.back();
  const std::size_t D = conv.empty() ? widths.front() : conv.height * conv.width * conv.channels;
  REQUIRE((conv.empty() || conv.output_dim() == widths.front()));
  coral::rng gen(std::hash<std::string>{}(shape.name) % 1000);
  auto normals = [&](std::size_t n, double scale) {
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(scale * gen.normal());
    return v;
  };
  auto weights = fused::init_q_network(widths, 5, conv);
  for (auto& w : weights) w += static_cast<float>(0.1 * gen.normal());
  auto target_weights = weights;
  for (auto& w : target_weights) w += static_cast<float>(0.05 * gen.normal());

  auto online = twin::make_q_network(widths, conv);
  auto target = twin::make_q_network(widths, conv);
  twin::load(online->parameters(), weights, "test");
  twin::load(target->parameters(), target_weights, "test");
  fused::q_network net(widths, B, conv);
  std::copy(weights.begin(), weights.end(), net.parameters().begin());
  std::copy(target_weights.begin(), target_weights.end(), net.target_parameters().begin());

  auto obs = normals(B * D, 1.0), next = normals(B * D, 1.0), returns = normals(B, 2.0);
  std::vector<float> discounts(B), is_weights(B);
  std::vector<std::int32_t> actions(B);
  for (std::size_t i = 0; i < B; ++i) {
    discounts[i] = gen.uniform() < 0.2 ? 0.0f : 0.97f;
    is_weights[i] = static_cast<float>(0.1 + gen.uniform());
    actions[i] = static_cast<std::int32_t>(gen.below(A));
  }
  coral::learners::dqn_config config;
  config.double_dqn = shape.double_dqn;
  config.huber_delta = 1.0;
  config.max_grad_norm = 1.0;
  config.learning_rate = 1e-3;
  const fused::dqn_batch batch{B, obs, next, actions, returns, discounts, is_weights};
  fused::adam engine_adam(weights.size(), config.adam_epsilon);
  twin::flat_adam torch_adam(online->parameters(), config.adam_epsilon);
  std::vector<float> td(B);

  for (int step = 1; step <= 2; ++step) {
    INFO("step " << step);
    // The torch learner's update, operator for operator.
    const auto b = static_cast<std::int64_t>(B), d = static_cast<std::int64_t>(D);
    const auto obs_t = torch::from_blob(obs.data(), {b, d});
    const auto next_t = torch::from_blob(next.data(), {b, d});
    const auto actions_t = torch::from_blob(actions.data(), {b, 1}, torch::kInt32).to(torch::kInt64);
    const auto returns_t = torch::from_blob(returns.data(), {b});
    const auto discounts_t = torch::from_blob(discounts.data(), {b});
    auto w_t = torch::from_blob(is_weights.data(), {b});
    w_t = w_t / w_t.max().clamp_min(1e-12);
    const auto q_all = online->forward(torch::cat({obs_t, next_t}, 0));
    const auto q = q_all.narrow(0, 0, b).gather(1, actions_t).squeeze(1);
    torch::Tensor y;
    {
      torch::NoGradGuard no_grad;
      const auto q_next_target = target->forward(next_t);
      const auto bootstrap =
          config.double_dqn
              ? q_next_target.gather(1, q_all.narrow(0, b, b).detach().argmax(1, true)).squeeze(1)
              : std::get<0>(q_next_target.max(1));
      y = returns_t + discounts_t * bootstrap;
    }
    const auto huber = torch::nn::functional::huber_loss(
        q, y, torch::nn::functional::HuberLossFuncOptions().reduction(torch::kNone).delta(config.huber_delta));
    const auto loss = (w_t * huber).mean();
    online->zero_grad();
    loss.backward();

    const auto stats = fused::dqn_loss_gradients(net, batch, config, td);
    require_close(net.q_values(obs.data(), B), floats_of(q_all.narrow(0, 0, b)), "Q-values");
    require_close(td, floats_of((y - q).abs()), "TD errors");
    CHECK(std::fabs(stats.td_loss - loss.item<double>()) <= 1e-5 * std::fabs(loss.item<double>()) + 1e-7);
    CHECK(std::fabs(stats.mean_q - q.mean().item<double>()) <= 1e-5 * std::fabs(q.mean().item<double>()) + 1e-6);
    std::size_t at = 0, index = 0;
    for (const auto& p : online->parameters()) {
      const auto n = static_cast<std::size_t>(p.numel());
      require_close(net.gradients().subspan(at, n), floats_of(p.grad()), "gradient of parameter " + std::to_string(index++));
      at += n;
    }
    // Each side's own clipping and Adam.
    fused::clip_grad_norm(net.gradients(), config.max_grad_norm);
    engine_adam.step(net.parameters(), net.gradients(), config.learning_rate);
    torch::nn::utils::clip_grad_norm_(online->parameters(), config.max_grad_norm);
    torch_adam.step(online->parameters(), config.learning_rate);
    require_close(net.parameters(), twin::flatten(online->parameters()), "parameters after clipping and Adam");
  }
}

TEST_CASE("dqn_step is the loss's gradients, clipping and Adam; sync_target copies the online weights",
          "[learners][fused]") {
  const std::vector<std::size_t> widths{3, 8, 2};
  fused::q_network a(widths, 4), b(widths, 4);
  const auto w = fused::init_q_network(widths, 2);
  std::copy(w.begin(), w.end(), a.parameters().begin());
  std::copy(w.begin(), w.end(), b.parameters().begin());
  a.sync_target();
  b.sync_target();
  CHECK(std::equal(w.begin(), w.end(), a.target_parameters().begin()));
  std::vector<float> obs{0.1f, 0.2f, 0.3f, -1, 0, 1, 0.5f, 0.5f, 0.5f, 2, -2, 0};
  std::vector<float> next{0.2f, 0.2f, 0.3f, -1, 1, 1, 0.5f, 0.4f, 0.5f, 2, -2, 1};
  std::vector<std::int32_t> actions{0, 1, 1, 0};
  std::vector<float> returns{1, 0, 2, -1}, discounts{0.9f, 0, 0.9f, 0.9f}, weights{1, 0.5f, 0.25f, 1};
  const fused::dqn_batch batch{4, obs, next, actions, returns, discounts, weights};
  coral::learners::dqn_config config;
  fused::adam adam_a(w.size(), 1e-5), adam_b(w.size(), 1e-5);
  std::vector<float> td_a(4), td_b(4);
  const auto stats = fused::dqn_step(a, adam_a, batch, config, td_a);
  fused::dqn_loss_gradients(b, batch, config, td_b);
  CHECK(stats.grad_norm == fused::clip_grad_norm(b.gradients(), config.max_grad_norm));
  adam_b.step(b.parameters(), b.gradients(), config.learning_rate);
  CHECK(std::equal(a.parameters().begin(), a.parameters().end(), b.parameters().begin()));
  CHECK(td_a == td_b);
}
