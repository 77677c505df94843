// The fused engine's convolutions on their own (torch-free, so the
// sanitizer builds run them too): im2col + GEMM against the direct loop,
// col2im as im2col's transpose, the backward against finite differences,
// the convolutional networks' initialisers and their updates within their
// buffers. Their torch twins as the oracle: fused_*oracle_test.cpp.

#include "coral/learners/fused/conv.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "coral/core/rng.hpp"
#include "coral/learners/fused/actor_critic.hpp"
#include "coral/learners/fused/optim.hpp"
#include "coral/learners/fused/ppo.hpp"
#include "coral/learners/fused/q_network.hpp"
#include "coral/learners/fused/r2d2.hpp"
#include "coral/replay/sequence.hpp"
#include "../support/central_difference.hpp"

namespace fused = coral::learners::fused;
using coral::learners::conv_spec;
using coral::learners::network_spec;

namespace {

std::vector<float> conv_normals(coral::rng& gen, std::size_t n, double scale = 1.0) {
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(scale * gen.normal());
  return v;
}

/// Layers of several shapes: MinAtar's, a stride of 2 over a grid it does
/// not divide, a window as large as the grid, one channel in.
std::vector<fused::conv_layer> conv_layer_shapes() {
  return {
      {.in_h = 10, .in_w = 10, .in_c = 4, .out_c = 16, .kernel = 3, .stride = 1, .offset = 0},
      {.in_h = 7, .in_w = 9, .in_c = 3, .out_c = 5, .kernel = 3, .stride = 2, .offset = 2},
      {.in_h = 5, .in_w = 5, .in_c = 2, .out_c = 3, .kernel = 5, .stride = 1, .offset = 1},
      {.in_h = 6, .in_w = 4, .in_c = 1, .out_c = 2, .kernel = 2, .stride = 3, .offset = 0},
  };
}

}  // namespace

TEST_CASE("conv_forward, im2col and one GEMM, computes the direct convolution", "[learners][fused][conv]") {
  coral::rng gen(1);
  for (const auto& l : conv_layer_shapes()) {
    INFO(l.in_h << "x" << l.in_w << "x" << l.in_c << " -> " << l.out_c << ", window " << l.kernel << ", stride " << l.stride);
    const std::size_t rows = 3;
    const auto params = conv_normals(gen, l.offset + l.size());
    const auto x = conv_normals(gen, rows * l.in_size());
    std::vector<float> patches(rows * l.positions() * l.patch()), weight(l.out_c * l.patch());
    std::vector<float> got(rows * l.out_size()), want(got.size());
    fused::conv_forward(l, params.data(), x.data(), rows, patches.data(), weight.data(), got.data());
    fused::conv_forward_reference(l, params.data(), x.data(), rows, want.data());
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("output " << i);
      CHECK(got[i] == Approx(want[i]).epsilon(1e-5).margin(1e-5));
    }
  }
}

TEST_CASE("col2im is im2col's transpose: <im2col(x), p> = <x, col2im(p)>", "[learners][fused][conv]") {
  coral::rng gen(2);
  for (const auto& l : conv_layer_shapes()) {
    const std::size_t rows = 2;
    const auto x = conv_normals(gen, rows * l.in_size());
    const auto p = conv_normals(gen, rows * l.positions() * l.patch());
    std::vector<float> patches(p.size()), back(x.size(), 7.0f);  // col2im zeroes what it writes into
    fused::im2col(l, x.data(), rows, patches.data());
    fused::col2im(l, p.data(), rows, back.data());
    const double left = std::inner_product(patches.begin(), patches.end(), p.begin(), 0.0);
    const double right = std::inner_product(x.begin(), x.end(), back.begin(), 0.0);
    CHECK(left == Approx(right).epsilon(1e-5));
  }
}

TEST_CASE("conv_backward's gradients are the finite differences of a loss linear in the layer",
          "[learners][fused][conv]") {
  // Σ g · conv(x) is linear in the weights, the bias and x: central
  // differences are exact but for rounding.
  coral::rng gen(3);
  for (const auto& l : conv_layer_shapes()) {
    const std::size_t rows = 2;
    auto params = conv_normals(gen, l.offset + l.size());
    auto x = conv_normals(gen, rows * l.in_size());
    const auto g = conv_normals(gen, rows * l.out_size());
    std::vector<float> patches(rows * l.positions() * l.patch()), d_patches(patches.size()), y(g.size());
    std::vector<float> weight(l.out_c * l.patch());
    std::vector<float> grads(params.size(), 0.0f), dx(x.size());
    auto loss = [&] {
      fused::conv_forward(l, params.data(), x.data(), rows, patches.data(), weight.data(), y.data());
      return std::inner_product(y.begin(), y.end(), g.begin(), 0.0);
    };
    loss();
    fused::conv_backward(l, grads.data(), patches.data(), g.data(), rows, weight.data(), d_patches.data(), dx.data());
    constexpr float h = 1e-2f;
    auto numeric = [&](float& v) { return coral::test::central_difference(v, h, loss); };
    for (std::size_t j = l.offset; j < params.size(); ++j) {
      INFO("parameter " << j);
      CHECK(numeric(params[j]) == Approx(grads[j]).epsilon(1e-3).margin(1e-3));
    }
    for (std::size_t j = 0; j < x.size(); ++j) {
      INFO("input " << j);
      CHECK(numeric(x[j]) == Approx(dx[j]).epsilon(1e-3).margin(1e-3));
    }
  }
}

TEST_CASE("a conv stack of two layers passes its gradient back through ReLU and the first layer",
          "[learners][fused][conv]") {
  // A loss linear in the second layer's output, and the inputs far from
  // every ReLU's kink: the finite differences see no kink.
  const conv_spec spec{.height = 6, .width = 5, .channels = 2, .layers = {{3, 2, 1}, {4, 2, 2}}};
  fused::conv_stack stack(spec, 0, 2);
  coral::rng gen(4);
  auto params = conv_normals(gen, stack.parameter_count(), 0.5);
  const auto x = conv_normals(gen, 2 * 6 * 5 * 2);
  const auto g = conv_normals(gen, 2 * stack.output_dim());
  auto loss = [&] {
    const float* y = stack.forward(params.data(), x.data(), 2);
    return std::inner_product(y, y + g.size(), g.begin(), 0.0);
  };
  loss();
  std::vector<float> grads(params.size());
  stack.backward(grads.data(), g.data(), 2);
  constexpr float h = 1e-3f;
  for (std::size_t j = 0; j < params.size(); ++j) {
    const double numeric = coral::test::central_difference(params[j], h, loss);
    // A kink crossed by the step shows as a large difference: allowed only
    // where a pre-activation lies within the step's reach of zero, which
    // these weights (seed 4) never put there.
    INFO("parameter " << j << ": analytic " << grads[j] << ", numeric " << numeric);
    CHECK(numeric == Approx(grads[j]).epsilon(1e-2).margin(2e-3));
  }
}

TEST_CASE("the convolutional networks start orthogonal with gain √2, zero biases, the dense layers after",
          "[learners][fused][conv]") {
  network_spec spec;
  spec.raw_obs_dim = 10 * 10 * 4;
  spec.nvec = {6};
  spec.hidden = {128};
  spec.conv = {.height = 10, .width = 10, .channels = 4, .layers = {{16, 3, 1}}};
  const auto flat = fused::init_orthogonal(spec, 5);
  REQUIRE(flat.size() == fused::actor_critic::parameter_count(spec));
  // The conv weight [16][36]: rows orthonormal times √2; its bias zero.
  for (std::size_t a = 0; a < 16; ++a) {
    for (std::size_t b = 0; b < 16; ++b) {
      double dot = 0;
      for (std::size_t i = 0; i < 36; ++i) dot += static_cast<double>(flat[a * 36 + i]) * flat[b * 36 + i];
      CHECK(dot == Approx(a == b ? 2.0 : 0.0).margin(1e-5));
    }
  }
  CHECK(std::all_of(flat.begin() + 16 * 36, flat.begin() + 16 * 36 + 16, [](float v) { return v == 0.0f; }));
  // Conv 16*36+16, dense 1024->128, actor head 128->6, critic head 128->1.
  CHECK(flat.size() == 16 * 36 + 16 + 1024 * 128 + 128 + 128 * 6 + 6 + 128 + 1);
  const std::vector<std::size_t> widths{1024, 128, 6};
  const auto q = fused::init_q_network(widths, 5, spec.conv);
  CHECK(q.size() == 16 * 36 + 16 + 1024 * 128 + 128 + 128 * 6 + 6);
  CHECK(fused::q_network(widths, 1, spec.conv).parameters().size() == q.size());
  spec.lstm = 8;
  const auto r = fused::init_recurrent_q_network(spec, 5);
  CHECK(r.size() == 16 * 36 + 16 + 1024 * 128 + 128 + 4 * 8 * (128 + 8 + 2) + 8 * 6 + 6);
  CHECK(fused::recurrent_q_network(spec, 1, 1).parameters().size() == r.size());
}

TEST_CASE("the convolutional PPO, DQN and R2D2 updates run within their buffers and give finite results",
          "[learners][fused][conv]") {
  // The sanitizer builds' coverage of the convolutional networks' indexing
  // (their oracle tests need torch): full batches of the largest shapes made for.
  coral::rng gen(6);
  network_spec spec;
  spec.raw_obs_dim = 7 * 6 * 3;
  spec.nvec = {4};
  spec.hidden = {16};
  spec.conv = {.height = 7, .width = 6, .channels = 3, .layers = {{5, 3, 1}, {4, 2, 2}}};

  fused::actor_critic ac(spec, 9);
  const auto w = fused::init_orthogonal(spec, 1);
  std::copy(w.begin(), w.end(), ac.parameters().begin());
  auto obs = conv_normals(gen, 9 * spec.input_dim()), cont = conv_normals(gen, 0), logp = conv_normals(gen, 9),
       values = conv_normals(gen, 9), adv = conv_normals(gen, 9), ret = conv_normals(gen, 9);
  std::vector<std::int32_t> disc{0, 1, 2, 3, 0, 1, 2, 3, 0};
  fused::ppo_workspace work(9);
  fused::adam ac_adam(w.size(), 1e-5);
  const auto ppo = fused::ppo_step(ac, ac_adam, work, {9, obs, disc, cont, logp, values, adv, ret},
                                   coral::learners::ppo_config{}, 1e-3);
  CHECK(std::isfinite(ppo.loss));
  CHECK(std::all_of(ac.parameters().begin(), ac.parameters().end(), [](float v) { return std::isfinite(v); }));

  const std::vector<std::size_t> widths{spec.conv.output_dim(), 16, 4};
  fused::q_network q(widths, 5, spec.conv);
  const auto qw = fused::init_q_network(widths, 2, spec.conv);
  std::copy(qw.begin(), qw.end(), q.parameters().begin());
  q.sync_target();
  const auto qobs = conv_normals(gen, 5 * spec.input_dim()), next = conv_normals(gen, 5 * spec.input_dim()),
             returns = conv_normals(gen, 5);
  const std::vector<float> discounts(5, 0.9f), weights(5, 1.0f);
  const std::vector<std::int32_t> actions{0, 1, 2, 3, 0};
  std::vector<float> td(5);
  fused::adam q_adam(qw.size(), 1e-5);
  const auto dqn = fused::dqn_step(q, q_adam, {5, qobs, next, actions, returns, discounts, weights},
                                   coral::learners::dqn_config{}, td);
  CHECK(std::isfinite(dqn.td_loss));
  const auto qobs10 = conv_normals(gen, 10 * spec.input_dim());  // up to twice the rows of an update
  CHECK(q.q_values(qobs10.data(), 10).size() == 10 * 4);

  spec.lstm = 6;
  const std::size_t B = 3, L = 7;
  fused::recurrent_q_network r(spec, B, L);
  const auto rw = fused::init_recurrent_q_network(spec, 3);
  std::copy(rw.begin(), rw.end(), r.parameters().begin());
  r.sync_target();
  coral::replay::sequence_batch b;
  b.layout = {.length = L, .burn_in = 2, .overlap = 2, .obs_dim = spec.input_dim(), .discrete_dim = 1, .state_dim = 12};
  b.size = B;
  b.observations = conv_normals(gen, B * (L + 1) * spec.input_dim());
  b.rewards = conv_normals(gen, B * L);
  b.states = conv_normals(gen, B * 12);
  b.weights.assign(B, 1.0f);
  b.flags.assign(B * L, coral::replay::slot_valid);
  b.flags[3] |= coral::replay::slot_first;
  b.flags[L + 4] |= coral::replay::slot_terminated;
  b.actions.assign(B * L, 2);
  fused::adam r_adam(rw.size(), 1e-5);
  const auto r2d2 = fused::r2d2_step(r, r_adam, b, coral::learners::dqn_config{}, coral::learners::r2d2_config{});
  CHECK(std::isfinite(r2d2.base.td_loss));
  REQUIRE(b.priorities.size() == B);
  CHECK(std::all_of(b.priorities.begin(), b.priorities.end(), [](float v) { return std::isfinite(v) && v >= 0; }));
}
