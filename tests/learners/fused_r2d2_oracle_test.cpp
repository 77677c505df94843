// The fused R2D2 update against the torch learner's
// (learners/src/r2d2_learner.cpp), operator for operator on the same
// module (recurrent_trunk and a linear head, as its recurrent_q builds
// them): the same flat online and target weights, a random batch of
// sequences with episode starts, ends (terminated and truncated) and
// padding, then the loss, the priorities, every parameter's gradient and
// the parameters after clipping and Adam, over two updates. The
// tolerance: fused_oracle_support.hpp's.

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
#include "coral/learners/fused/r2d2.hpp"
#include "coral/learners/r2d2_math.hpp"
#include "fused_oracle_support.hpp"
#include "sequence_batches.hpp"

namespace fused = coral::learners::fused;
namespace twin = coral::learners::detail;
namespace replay = coral::replay;
using coral::test::floats_of;
using coral::test::require_close;

namespace {

struct torch_r2d2 {
  twin::recurrent_trunk trunk;
  torch::nn::Sequential head;
  std::vector<torch::Tensor> parameters() const {
    auto p = trunk->parameters();
    for (const auto& h : head->parameters()) p.push_back(h);
    return p;
  }
  torch::Tensor unroll(const torch::Tensor& obs, const torch::Tensor& resets, const torch::Tensor& h,
                       const torch::Tensor& c, torch::Tensor* h_out = nullptr, torch::Tensor* c_out = nullptr) {
    auto [hs, cs] = trunk->unroll(obs, resets, h, c);
    if (h_out != nullptr) *h_out = hs.select(1, obs.size(1) - 1);
    if (c_out != nullptr) *c_out = cs.select(1, obs.size(1) - 1);
    return head->forward(hs);
  }
};

struct r2d2_shape {
  std::string name;
  std::size_t in;
  std::vector<std::size_t> hidden;
  std::size_t lstm, actions, rows, length, burn_in;
  coral::learners::conv_spec conv{};  // `in` is its grid's floats where it has layers
};

}  // namespace

TEST_CASE("the fused R2D2 update computes what the torch R2D2 learner's does, to 1e-5",
          "[learners][fused][oracle][recurrent]") {
  const auto shape = GENERATE(values<r2d2_shape>({
      {"cartpole-r2d2's shape: 4 -> 32x32 -> LSTM 64 -> 2, 8 sequences of 12, burn-in 4", 4, {32, 32}, 64, 2, 8, 12, 4},
      {"no burn-in: 3 -> 16 -> LSTM 16 -> 3, 3 sequences of 6", 3, {16}, 16, 3, 3, 6, 0},
      {"MinAtar's encoder: 10x10x4 -> conv 16:3 -> 128 -> LSTM 32 -> 6, 4 sequences of 10, burn-in 3", 400, {128},
       32, 6, 4, 10, 3, {.height = 10, .width = 10, .channels = 4, .layers = {{16, 3, 1}}}},
      {"two convolutions: 6x6x2 -> conv 3:3, 4:2:2 -> 8 -> LSTM 8 -> 3, 3 sequences of 6", 72, {8}, 8, 3, 3, 6, 2,
       {.height = 6, .width = 6, .channels = 2, .layers = {{3, 3, 1}, {4, 2, 2}}}},
  }));
  INFO(shape.name);
  const std::size_t B = shape.rows, L = shape.length, BI = shape.burn_in, D = shape.in, H = shape.lstm,
                    A = shape.actions;
  coral::rng gen(std::hash<std::string>{}(shape.name) % 1000);
  coral::learners::network_spec spec;
  spec.raw_obs_dim = D;
  spec.nvec = {static_cast<std::int32_t>(A)};
  spec.hidden = shape.hidden;
  spec.lstm = H;
  spec.conv = shape.conv;
  torch_r2d2 online{twin::recurrent_trunk(D, shape.hidden, H, shape.conv), twin::make_mlp(H, {}, A, 1.0)};
  torch_r2d2 target{twin::recurrent_trunk(D, shape.hidden, H, shape.conv), twin::make_mlp(H, {}, A, 1.0)};
  auto weights = twin::flatten(online.parameters());
  if (shape.conv.empty()) {
    for (auto& w : weights) w = static_cast<float>(0.3 * gen.normal());
  } else {
    // Weights of 0.3 on the 1024 inputs of MinAtar's dense layer saturate
    // every gate, and the gradients left are sums that cancel to rounding
    // in either backend's order: the initialiser's scale instead, moved off
    // its symmetries (nonzero biases) as the PPO oracle does.
    weights = fused::init_recurrent_q_network(spec, 3);
    for (auto& w : weights) w += static_cast<float>(0.1 * gen.normal());
  }
  auto target_weights = weights;
  for (auto& w : target_weights) w += static_cast<float>(0.05 * gen.normal());
  twin::load(online.parameters(), weights, "test");
  twin::load(target.parameters(), target_weights, "test");
  fused::recurrent_q_network net(spec, B, L);
  REQUIRE(net.parameters().size() == weights.size());
  std::copy(weights.begin(), weights.end(), net.parameters().begin());
  std::copy(target_weights.begin(), target_weights.end(), net.target_parameters().begin());

  auto b = coral::test::random_sequences(spec, B, L, BI, gen);
  coral::learners::dqn_config dqn;
  dqn.gamma = 0.99;
  dqn.n_step = 3;
  dqn.max_grad_norm = 1.0;
  dqn.learning_rate = 1e-3;
  coral::learners::r2d2_config config;
  fused::adam engine_adam(weights.size(), dqn.adam_epsilon);
  twin::flat_adam torch_adam(online.parameters(), dqn.adam_epsilon);

  for (int step = 1; step <= 2; ++step) {
    INFO("step " << step);
    // The torch learner's update, operator for operator.
    const auto b_ = static_cast<std::int64_t>(B), l_ = static_cast<std::int64_t>(L), bi = static_cast<std::int64_t>(BI),
               h_ = static_cast<std::int64_t>(H);
    const auto obs = torch::from_blob(b.observations.data(), {b_, l_ + 1, static_cast<std::int64_t>(D)});
    const auto states = torch::from_blob(b.states.data(), {b_, 2 * h_});
    const auto h0 = states.narrow(1, 0, h_), c0 = states.narrow(1, h_, h_);
    auto resets = torch::zeros({b_, l_ + 1});
    for (std::size_t i = 0; i < B; ++i) {
      for (std::size_t t = 0; t < L; ++t) {
        resets[static_cast<std::int64_t>(i)][static_cast<std::int64_t>(t)] =
            (b.flags[i * L + t] & replay::slot_first) != 0 ? 1.0f : 0.0f;
      }
    }
    torch::Tensor h_on = h0, c_on = c0, h_tg = h0, c_tg = c0;
    if (bi > 0) {
      torch::NoGradGuard no_grad;
      const auto o = obs.narrow(1, 0, bi), r = resets.narrow(1, 0, bi);
      (void)online.unroll(o, r, h0, c0, &h_on, &c_on);
      (void)target.unroll(o, r, h0, c0, &h_tg, &c_tg);
    }
    const auto T = l_ + 1 - bi;
    const auto o_rest = obs.narrow(1, bi, T), r_rest = resets.narrow(1, bi, T);
    const auto q = online.unroll(o_rest, r_rest, h_on.detach(), c_on.detach());
    std::vector<float> bootstrap(B * (L + 1), 0.0f), targets(B * L), mask(B * L);
    {
      torch::NoGradGuard no_grad;
      const auto q_target = target.unroll(o_rest, r_rest, h_tg, c_tg);
      const auto boot = q_target.gather(2, q.detach().argmax(2, true)).squeeze(2).contiguous();
      for (std::size_t i = 0; i < B; ++i) {
        std::copy_n(boot.data_ptr<float>() + i * static_cast<std::size_t>(T), T, bootstrap.begin() + static_cast<std::ptrdiff_t>(i * (L + 1) + BI));
      }
    }
    coral::learners::nstep_batch_targets(B, L, b.rewards, b.flags, bootstrap,
                                         {.gamma = dqn.gamma, .n = dqn.n_step, .eps = config.rescale_epsilon, .burn_in = BI},
                                         targets, mask);
    const auto actions = torch::from_blob(b.actions.data(), {b_, l_, 1}, torch::kInt32).narrow(1, bi, l_ - bi).to(torch::kInt64);
    const auto q_taken = q.narrow(1, 0, l_ - bi).gather(2, actions).squeeze(2);
    const auto targets_t = torch::from_blob(targets.data(), {b_, l_}).narrow(1, bi, l_ - bi);
    const auto mask_t = torch::from_blob(mask.data(), {b_, l_}).narrow(1, bi, l_ - bi);
    const auto td = (targets_t - q_taken) * mask_t;
    auto w = torch::from_blob(b.weights.data(), {b_});
    w = w / w.max().clamp_min(1e-12);
    const auto loss = (w * (0.5 * td.pow(2).sum(1) / mask_t.sum(1).clamp_min(1.0))).mean();
    for (auto& p : online.parameters()) {
      if (p.grad().defined()) p.grad().zero_();
    }
    loss.backward();
    std::vector<float> priorities(B);
    {
      const auto abs_td = td.detach().abs().contiguous();
      const auto m = mask_t.contiguous();
      const std::size_t W = L - BI;
      for (std::size_t i = 0; i < B; ++i) {
        priorities[i] = coral::learners::sequence_priority({abs_td.data_ptr<float>() + i * W, W},
                                                           {m.data_ptr<float>() + i * W, W}, config.priority_eta);
      }
    }

    const auto stats = net.loss_gradients(b, dqn, config);
    CHECK(std::fabs(stats.base.td_loss - loss.item<double>()) <= 1e-5 * std::fabs(loss.item<double>()) + 1e-7);
    require_close(b.priorities, priorities, "priorities");
    std::size_t at = 0, index = 0;
    for (const auto& p : online.parameters()) {
      const auto n = static_cast<std::size_t>(p.numel());
      require_close(net.gradients().subspan(at, n), floats_of(p.grad()), "gradient of parameter " + std::to_string(index++));
      at += n;
    }
    fused::clip_grad_norm(net.gradients(), dqn.max_grad_norm);
    engine_adam.step(net.parameters(), net.gradients(), dqn.learning_rate);
    twin::clip_grad_norm(online.parameters(), dqn.max_grad_norm);
    torch_adam.step(online.parameters(), dqn.learning_rate);
    require_close(net.parameters(), twin::flatten(online.parameters()), "parameters after clipping and Adam");
  }
}
