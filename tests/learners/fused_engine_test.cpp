// The fused engine on its own (torch-free, so the sanitizer builds run it
// too): its PPO gradients against finite differences of its own loss, the
// orthogonal initialisers, gradient clipping, Adam's vectorised update
// against its scalar formula, the sigmoid kernel against the exact one,
// the LSTM trunk's and the recurrent actor-critic's gradients against
// finite differences, the Q-networks'
// updates within their buffers, and the refusals. The torch twins as the oracle: fused_*oracle_test.cpp.

#include <algorithm>
#include <csignal>
#include <bit>
#include <limits>
#include <cmath>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/core/interrupts.hpp"
#include "coral/core/rng.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/fused/actor_critic.hpp"
#include "coral/learners/fused/optim.hpp"
#include "coral/learners/fused/ppo.hpp"
#include "coral/learners/fused/lstm_trunk.hpp"
#include "coral/learners/fused/q_network.hpp"
#include "coral/learners/fused/r2d2.hpp"
#include "coral/learners/fused/recurrent_actor_critic.hpp"
#include "coral/learners/fused/recurrent_ppo.hpp"
#include "coral/replay/sequence.hpp"
#include "../support/central_difference.hpp"
#include "../support/float_ulps.hpp"

namespace fused = coral::learners::fused;
using coral::learners::network_spec;

namespace {

network_spec engine_spec(std::size_t in, std::vector<std::int32_t> nvec, std::size_t continuous,
                         std::vector<std::size_t> hidden) {
  network_spec spec;
  spec.raw_obs_dim = in;
  spec.nvec = std::move(nvec);
  spec.low.assign(continuous, -1.0f);
  spec.high.assign(continuous, 1.0f);
  spec.hidden = std::move(hidden);
  return spec;
}

// A minibatch of random rows for `spec` (the buffers it points into).
struct random_batch {
  std::vector<float> obs, cont, logp, values, adv, ret;
  std::vector<std::int32_t> disc;
  fused::ppo_minibatch batch;

  random_batch(const network_spec& spec, std::size_t rows, std::uint64_t seed) {
    coral::rng gen(seed);
    auto normals = [&](std::size_t n, double scale) {
      std::vector<float> v(n);
      for (auto& x : v) x = static_cast<float>(scale * gen.normal());
      return v;
    };
    obs = normals(rows * spec.input_dim(), 1.0);
    cont = normals(rows * spec.continuous_dim(), 1.0);
    logp = normals(rows, 0.5);
    values = normals(rows, 1.0);
    adv = normals(rows, 1.0);
    ret = normals(rows, 1.0);
    for (std::size_t r = 0; r < rows; ++r) {
      for (auto n : spec.nvec) disc.push_back(static_cast<std::int32_t>(gen.below(static_cast<std::uint64_t>(n))));
    }
    batch = {rows, obs, disc, cont, logp, values, adv, ret};
  }
};

}  // namespace

TEST_CASE("the fused actor-critic's PPO gradients are the finite differences of its loss", "[learners][fused]") {
  const auto spec = engine_spec(5, {3, 2}, 2, {8, 8});
  const std::size_t rows = 6;
  fused::actor_critic net(spec, rows);
  auto weights = fused::init_orthogonal(spec, 3);
  // Off the initialisation's symmetries: nonzero biases and log std, larger heads.
  coral::rng gen(4);
  for (auto& w : weights) w += static_cast<float>(0.2 * gen.normal());
  std::copy(weights.begin(), weights.end(), net.parameters().begin());
  random_batch data(spec, rows, 5);
  coral::learners::ppo_config config;
  config.clip = 100.0;  // no clipping: the loss is smooth in every parameter
  config.clip_value_loss = false;
  config.entropy_coef = 0.1;
  fused::ppo_workspace work(rows);
  fused::ppo_loss_gradients(net, work, data.batch, config);
  const std::vector<float> analytic(net.gradients().begin(), net.gradients().end());
  double scale = 0;
  for (const float g : analytic) scale = std::max(scale, static_cast<double>(std::fabs(g)));
  // Central differences in float: a step of 1e-2 leaves a truncation error
  // of about 1e-4 and a rounding error of about 1e-5 on a loss of order 1.
  constexpr float h = 1e-2f;
  for (std::size_t j = 0; j < weights.size(); ++j) {
    const double numeric = coral::test::central_difference(
        net.parameters()[j], h, [&] { return fused::ppo_loss_gradients(net, work, data.batch, config).loss; });
    INFO("parameter " << j << ": analytic " << analytic[j] << ", numeric " << numeric);
    CHECK(std::fabs(numeric - analytic[j]) <= 2e-2 * std::max(std::fabs(numeric), std::fabs(double{analytic[j]})) + 1e-3 * scale);
  }
}

namespace {

/// A dense layer's shape and its initialiser's gain.
struct layer {
  std::size_t in, out;
  double gain;
};

/// The weight w [out][in]: the shorter side's vectors orthonormal times `gain`.
void check_orthogonal(const float* w, std::size_t in, std::size_t out, double gain) {
  const bool wide = out <= in;
  const std::size_t count = wide ? out : in, length = wide ? in : out;
  auto element = [&](std::size_t vec, std::size_t i) {
    return static_cast<double>(wide ? w[vec * in + i] : w[i * in + vec]);
  };
  for (std::size_t a = 0; a < count; ++a) {
    for (std::size_t b = 0; b < count; ++b) {
      double dot = 0;
      for (std::size_t i = 0; i < length; ++i) dot += element(a, i) * element(b, i);
      const double want = a == b ? gain * gain : 0.0;
      CHECK(std::fabs(dot - want) <= 1e-5 * gain * gain);
    }
  }
}

}  // namespace

TEST_CASE("a stop signal while a large layer's orthogonal weights are drawn ends the draw, naming it",
          "[fused][init]") {
  // A layer of tens of millions of weights takes minutes to draw (O(n k^2));
  // a SIGINT or SIGTERM then must not wait for it. A small draw finishes
  // (the run then stops in order, its weights whole).
  const std::size_t rows = 1024, cols = 512;  // n k^2 = 2^28: above the threshold
  static_assert(1024.0 * 512.0 * 512.0 >= fused::orthogonal_stoppable_work);
  std::vector<float> large(rows * cols), small(64 * 32);
  {
    const coral::interrupt_scope scope([] {});
    std::raise(SIGINT);  // the handler runs before raise returns
    REQUIRE(coral::interrupted());
    CHECK_THROWS_WITH(fused::orthogonal(large.data(), rows, cols, 1.0, 5),
                      fmt::format(fmt::runtime(coral::learners::errors::init_interrupted), rows, cols));
    CHECK_NOTHROW(fused::orthogonal(small.data(), 64, 32, 1.0, 5));
    check_orthogonal(small.data(), 32, 64, 1.0);
  }
  // The stop ended with its scope: the next draw (the next test's) is not cut short.
  CHECK_NOTHROW(fused::orthogonal(small.data(), 64, 32, 1.0, 5));
}

TEST_CASE("init_orthogonal gives orthogonal weights with the twin's gains, zero biases and zero log std",
          "[learners][fused]") {
  const auto spec = engine_spec(4, {2}, 3, {16, 8});
  const auto flat = fused::init_orthogonal(spec, 11);
  REQUIRE(flat.size() == fused::actor_critic::parameter_count(spec));
  // Log std (3), then the actor 4→16→8→5 and the critic 4→16→8→1.
  std::size_t at = 3;
  CHECK(std::all_of(flat.begin(), flat.begin() + 3, [](float v) { return v == 0.0f; }));
  const double root2 = std::sqrt(2.0);
  for (const layer l : {layer{4, 16, root2}, layer{16, 8, root2}, layer{8, 5, 0.01}, layer{4, 16, root2},
                        layer{16, 8, root2}, layer{8, 1, 1.0}}) {
    check_orthogonal(flat.data() + at, l.in, l.out, l.gain);
    const float* bias = flat.data() + at + l.in * l.out;
    CHECK(std::all_of(bias, bias + l.out, [](float v) { return v == 0.0f; }));
    at += l.in * l.out + l.out;
  }
  CHECK(at == flat.size());
  CHECK(fused::init_orthogonal(spec, 11) == flat);
  CHECK(fused::init_orthogonal(spec, 12) != flat);
}

namespace {

/// Walks initialised flat parameters from the front, checking each part.
struct init_walk {
  const std::vector<float>& flat;
  std::size_t at = 0;

  /// The next `n` floats are zero.
  void zeros(std::size_t n) {
    CHECK(std::all_of(flat.begin() + static_cast<std::ptrdiff_t>(at), flat.begin() + static_cast<std::ptrdiff_t>(at + n),
                      [](float v) { return v == 0.0f; }));
    at += n;
  }
  /// The next floats are an orthogonal weight of `l`.
  void weight(const layer& l) {
    check_orthogonal(flat.data() + at, l.in, l.out, l.gain);
    at += l.in * l.out;
  }
  /// The next floats are an orthogonal weight of `l`, then a zero bias.
  void dense(const layer& l) {
    weight(l);
    zeros(l.out);
  }
  /// The next floats are the trunk of engine_spec(4, ..., {16, 8}) with
  /// an LSTM of 6: the encoder 4→16→8 (gain √2), weight_ih [24][8] and
  /// weight_hh [24][6] (gain 1), both biases [24].
  void trunk() {
    dense({4, 16, std::sqrt(2.0)});
    dense({16, 8, std::sqrt(2.0)});
    weight({8, 24, 1.0});
    weight({6, 24, 1.0});
    zeros(2 * 24);
  }
};

}  // namespace

TEST_CASE("init_recurrent_q_network gives orthogonal weights with the twin's gains and zero biases",
          "[learners][fused][recurrent]") {
  auto spec = engine_spec(4, {3}, 0, {16, 8});
  spec.lstm = 6;
  const auto flat = fused::init_recurrent_q_network(spec, 11);
  // The trunk, then the head 6→3 (gain 1) and its bias.
  init_walk walk{flat};
  walk.trunk();
  walk.dense({6, 3, 1.0});
  CHECK(walk.at == flat.size());
  CHECK(fused::recurrent_q_network(spec, 1, 1).parameters().size() == flat.size());
  CHECK(fused::init_recurrent_q_network(spec, 11) == flat);
  CHECK(fused::init_recurrent_q_network(spec, 12) != flat);
}

TEST_CASE("init_recurrent_actor_critic gives orthogonal weights with the twin's gains, zero biases and log std",
          "[learners][fused][recurrent]") {
  auto spec = engine_spec(4, {3}, 2, {16, 8});
  spec.lstm = 6;
  const auto flat = fused::init_recurrent_actor_critic(spec, 11);
  // Log std (2), the trunk, the actor head 6→5 (gain 0.01), the critic
  // head 6→1 (gain 1), each with its bias.
  init_walk walk{flat};
  walk.zeros(2);
  walk.trunk();
  walk.dense({6, 5, 0.01});
  walk.dense({6, 1, 1.0});
  CHECK(walk.at == flat.size());
  CHECK(fused::recurrent_actor_critic::parameter_count(spec) == flat.size());
  CHECK(fused::init_recurrent_actor_critic(spec, 11) == flat);
  CHECK(fused::init_recurrent_actor_critic(spec, 12) != flat);
}

TEST_CASE("the fused recurrent actor-critic's PPO gradients are the finite differences of its loss, resets included",
          "[learners][fused][recurrent]") {
  auto spec = engine_spec(3, {3}, 2, {5});
  spec.lstm = 4;
  const std::size_t B = 2, T = 4, N = B * T;
  fused::recurrent_actor_critic net(spec, B, T);
  auto weights = fused::init_recurrent_actor_critic(spec, 3);
  coral::rng gen(4);
  for (auto& w : weights) w += static_cast<float>(0.2 * gen.normal());
  std::copy(weights.begin(), weights.end(), net.parameters().begin());
  random_batch data(spec, N, 5);
  std::vector<float> h0(B * 4), c0(B * 4);
  for (auto* v : {&h0, &c0}) {
    for (auto& x : *v) x = static_cast<float>(0.5 * gen.normal());
  }
  // Row 1 starts an episode at step 2 (time-major: t × B + b).
  const std::vector<float> keep{1, 1, 1, 1, 1, 0, 1, 1};
  const fused::recurrent_ppo_minibatch batch{.rows = B, .steps = T, .keep = keep, .h0 = h0, .c0 = c0,
                                             .steps_of = data.batch};
  coral::learners::ppo_config config;
  config.clip = 100.0;  // no clipping: the loss is smooth in every parameter
  config.clip_value_loss = false;
  config.entropy_coef = 0.1;
  fused::ppo_workspace work(N);
  fused::recurrent_ppo_loss_gradients(net, work, batch, config);
  const std::vector<float> analytic(net.gradients().begin(), net.gradients().end());
  double scale = 0;
  for (const float g : analytic) scale = std::max(scale, static_cast<double>(std::fabs(g)));
  constexpr float h = 1e-2f;  // as the MLP's test above
  for (std::size_t j = 0; j < weights.size(); ++j) {
    auto params = net.parameters();
    const float kept = params[j];
    params[j] = kept + h;
    const double up = fused::recurrent_ppo_loss_gradients(net, work, batch, config).loss;
    params[j] = kept - h;
    const double down = fused::recurrent_ppo_loss_gradients(net, work, batch, config).loss;
    params[j] = kept;
    const double numeric = (up - down) / (2.0 * h);
    INFO("parameter " << j << ": analytic " << analytic[j] << ", numeric " << numeric);
    CHECK(std::fabs(numeric - analytic[j]) <= 2e-2 * std::max(std::fabs(numeric), std::fabs(double{analytic[j]})) + 1e-3 * scale);
  }
}

TEST_CASE("clip_grad_norm scales the gradients to the norm only where they exceed it", "[learners][fused]") {
  std::vector<float> g{3.0f, 4.0f};
  CHECK(fused::clip_grad_norm(g, 10.0) == Approx(5.0));
  CHECK(g == std::vector<float>{3.0f, 4.0f});
  CHECK(fused::clip_grad_norm(g, 1.0) == Approx(5.0));
  CHECK(g[0] == Approx(0.6 / (1.0 + 2e-7)).epsilon(1e-6));
  CHECK(g[1] == Approx(0.8 / (1.0 + 2e-7)).epsilon(1e-6));
}

TEST_CASE("the fused engine refuses a recurrent network and a pass over more rows than its buffers",
          "[learners][fused]") {
  auto spec = engine_spec(4, {2}, 0, {8});
  spec.lstm = 16;
  REQUIRE_THROWS_MATCHES(fused::actor_critic(spec, 4), coral::usage_error,
                         Catch::Message(fmt::format(fmt::runtime(coral::learners::errors::fused_needs_mlp), 16)));
  spec.lstm = 0;
  fused::actor_critic net(spec, 4);
  random_batch data(spec, 5, 1);
  fused::ppo_workspace work(8);
  REQUIRE_THROWS_MATCHES(fused::ppo_loss_gradients(net, work, data.batch, coral::learners::ppo_config{}),
                         coral::usage_error,
                         Catch::Message(fmt::format(fmt::runtime(coral::learners::errors::fused_too_many_rows), 5, 4)));
}

TEST_CASE("Adam's update gives the bits of its plain scalar formula at every length and tail",
          "[learners][fused]") {
  coral::rng gen(21);
  for (std::size_t n = 0; n <= 41; ++n) {
    std::vector<float> params(n), grads(n), m(n), v(n);
    for (std::size_t i = 0; i < n; ++i) {
      params[i] = static_cast<float>(gen.normal());
      grads[i] = static_cast<float>(gen.normal() * 1e-2);
      m[i] = static_cast<float>(gen.normal() * 1e-3);
      v[i] = static_cast<float>(gen.uniform() * 1e-4);
    }
    auto want_p = params, want_m = m, want_v = v;
    // The reference: adam.hpp's loop as it was written before the engine,
    // one float at a time.
    const std::uint64_t step = 3;
    const double lr = 3e-4, epsilon = 1e-5;
    const auto step_size = static_cast<float>(lr / (1.0 - std::pow(0.9, 3.0)));
    const auto inv_c2 = static_cast<float>(1.0 / (1.0 - std::pow(0.999, 3.0)));
    const auto eps = static_cast<float>(epsilon);
    for (std::size_t j = 0; j < n; ++j) {
      want_m[j] = 0.9f * want_m[j] + (1.0f - 0.9f) * grads[j];
      want_v[j] = 0.999f * want_v[j] + (1.0f - 0.999f) * grads[j] * grads[j];
      want_p[j] -= step_size * want_m[j] / (std::sqrt(want_v[j] * inv_c2) + eps);
    }
    fused::adam_update(params.data(), grads.data(), m.data(), v.data(), n, step, lr, epsilon);
    INFO("n = " << n);
    CHECK(params == want_p);
    CHECK(m == want_m);
    CHECK(v == want_v);
  }
}

TEST_CASE("square_sum gives the same bits however the floats are split into spans", "[learners][fused]") {
  coral::rng gen(22);
  std::vector<float> x(203);
  for (auto& v : x) v = static_cast<float>(gen.normal());
  // The reference: eight serial sums, element i to sum i mod 8, added in order.
  double lanes[8] = {};
  for (std::size_t i = 0; i < x.size(); ++i) lanes[i % 8] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  double want = 0;
  for (const double l : lanes) want += l;
  for (const std::size_t first : {0, 1, 5, 8, 13, 64, 203}) {
    for (const std::size_t second : {0, 3, 9, 100}) {
      if (first + second > x.size()) continue;
      fused::square_sum s;
      const std::span<const float> all(x);
      s.add(all.subspan(0, first));
      s.add(all.subspan(first, second));
      s.add(all.subspan(first + second));
      INFO("spans of " << first << ", " << second << " and the rest");
      CHECK(s.total() == want);
    }
  }
}

TEST_CASE("the fused LSTM trunk's gradients are the finite differences of a loss over its unroll, resets included",
          "[learners][fused]") {
  // 3 -> 6 -> LSTM 4, 2 rows of 5 steps, a reset at step 2 of row 1.
  const std::size_t rows = 2, steps = 5, in = 3, H = 4;
  fused::lstm_trunk trunk(in, {6}, H, 0, rows, steps);
  coral::rng gen(31);
  auto normals = [&](std::size_t n, double scale) {
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(scale * gen.normal());
    return v;
  };
  auto params = normals(trunk.parameter_count(), 0.5);
  const auto x = normals(steps * rows * in, 1.0), h0 = normals(rows * H, 0.5), c0 = normals(rows * H, 0.5);
  const auto gh = normals(steps * rows * H, 1.0), gc = normals(steps * rows * H, 1.0);
  std::vector<float> keep(steps * rows, 1.0f);
  keep[2 * rows + 1] = 0.0f;
  std::vector<float> hs(steps * rows * H), cs(steps * rows * H), grads(params.size());
  // The loss Σ gh·h + Σ gc·c, in double.
  auto loss = [&] {
    trunk.forward(params.data(), x.data(), keep.data(), h0.data(), c0.data(), rows, steps, hs.data(), cs.data(), true);
    double sum = 0;
    for (std::size_t i = 0; i < hs.size(); ++i) sum += static_cast<double>(gh[i]) * hs[i] + static_cast<double>(gc[i]) * cs[i];
    return sum;
  };
  loss();
  trunk.backward(params.data(), grads.data(), gh.data(), gc.data());
  double scale = 0;
  for (const float g : grads) scale = std::max(scale, static_cast<double>(std::fabs(g)));
  constexpr float h = 1e-2f;  // as the PPO check: truncation ~1e-4, rounding ~1e-5
  for (std::size_t j = 0; j < params.size(); ++j) {
    const double numeric = coral::test::central_difference(params[j], h, loss);
    INFO("parameter " << j << ": analytic " << grads[j] << ", numeric " << numeric);
    CHECK(std::fabs(numeric - grads[j]) <= 2e-2 * std::max(std::fabs(numeric), std::fabs(double{grads[j]})) + 1e-3 * scale);
  }
}

TEST_CASE("the fused DQN and R2D2 updates run within their buffers and give finite losses and priorities",
          "[learners][fused]") {
  // The sanitizer builds' coverage of the Q-networks' indexing (their
  // oracle tests need torch): full batches, the largest shapes made for.
  coral::rng gen(41);
  auto normals = [&](std::size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(gen.normal());
    return v;
  };
  const std::vector<std::size_t> widths{4, 8, 8, 3};
  fused::q_network q(widths, 5);
  const auto w = fused::init_q_network(widths, 1);
  std::copy(w.begin(), w.end(), q.parameters().begin());
  q.sync_target();
  const auto obs = normals(5 * 4), next = normals(5 * 4), returns = normals(5);
  const std::vector<float> discounts(5, 0.9f), weights(5, 1.0f);
  const std::vector<std::int32_t> actions{0, 1, 2, 1, 0};
  std::vector<float> td(5);
  fused::adam q_adam(w.size(), 1e-5);
  const auto dqn_stats = fused::dqn_step(q, q_adam, {5, obs, next, actions, returns, discounts, weights},
                                         coral::learners::dqn_config{}, td);
  CHECK(std::isfinite(dqn_stats.td_loss));
  CHECK(std::all_of(td.begin(), td.end(), [](float v) { return std::isfinite(v) && v >= 0; }));

  auto spec = engine_spec(4, {3}, 0, {8});
  spec.lstm = 6;
  const std::size_t B = 3, L = 7;
  fused::recurrent_q_network r(spec, B, L);
  const auto rw = normals(r.parameters().size());
  std::copy(rw.begin(), rw.end(), r.parameters().begin());
  r.sync_target();
  coral::replay::sequence_batch b;
  b.layout.length = L;
  b.layout.burn_in = 2;
  b.layout.obs_dim = 4;
  b.layout.state_dim = 12;
  b.size = B;
  b.observations = normals(B * (L + 1) * 4);
  b.rewards = normals(B * L);
  b.states = normals(B * 12);
  b.weights.assign(B, 1.0f);
  b.flags.assign(B * L, coral::replay::slot_valid);
  b.flags[3] |= coral::replay::slot_first;
  b.flags[L + 4] |= coral::replay::slot_terminated;
  b.flags[2 * L - 1] = 0;  // padding
  b.actions.assign(B * L, 2);
  fused::adam r_adam(rw.size(), 1e-5);
  const auto r2d2_stats = fused::r2d2_step(r, r_adam, b, coral::learners::dqn_config{}, coral::learners::r2d2_config{});
  CHECK(std::isfinite(r2d2_stats.base.td_loss));
  REQUIRE(b.priorities.size() == B);
  CHECK(std::all_of(b.priorities.begin(), b.priorities.end(), [](float v) { return std::isfinite(v) && v >= 0; }));
  b.size = B + 1;
  REQUIRE_THROWS_MATCHES(r.loss_gradients(b, coral::learners::dqn_config{}, coral::learners::r2d2_config{}),
                         coral::usage_error,
                         Catch::Message(fmt::format(fmt::runtime(coral::learners::errors::fused_too_many_rows),
                                                    (B + 1) * (L + 1), B * (L + 1))));
}

TEST_CASE("the fused sigmoid is within 2.5 ulp of the exact one, and the same bits with AVX2 and without",
          "[learners][fused]") {
  // Every 61st float bit pattern in [−87, 87] and its negative, and ±0.
  std::vector<float> xs{0.0f, -0.0f};
  for (std::uint32_t bits = 0; bits < std::bit_cast<std::uint32_t>(87.0f); bits += 61) {
    xs.push_back(std::bit_cast<float>(bits));
    xs.push_back(-std::bit_cast<float>(bits));
  }
  auto y = xs;
  fused::sigmoid_in_place(y.data(), y.size());
  double worst = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double exact = 1.0 / (1.0 + std::exp(-static_cast<double>(xs[i])));
    worst = std::max(worst, coral::test::float_ulps(y[i], exact));
  }
  CHECK(worst <= 2.5);  // 2.32 measured
  // The dispatched kernel against its plain twin, at every length of the vector loop's tail.
  for (std::size_t n = 0; n <= 37; ++n) {
    std::vector<float> a(xs.begin() + 1000, xs.begin() + 1000 + static_cast<std::ptrdiff_t>(n)), b = a;
    fused::sigmoid_in_place(a.data(), n);
    fused::sigmoid_in_place_reference(b.data(), n);
    CHECK(std::equal(a.begin(), a.end(), b.begin(), [](float p, float q) { return std::bit_cast<std::uint32_t>(p) == std::bit_cast<std::uint32_t>(q); }));
  }
  // Beyond ±87 it is 1, or the sigmoid of −87 (1.6e-38: 0 to within any
  // sum it enters); NaN stays NaN.
  float special[] = {std::numeric_limits<float>::infinity(), 100.0f, -std::numeric_limits<float>::infinity(),
                     std::numeric_limits<float>::quiet_NaN()};
  fused::sigmoid_in_place(special, 4);
  CHECK(special[0] == 1.0f);
  CHECK(special[1] == 1.0f);
  CHECK(special[2] < 2e-38f);
  CHECK(std::isnan(special[3]));
}

TEST_CASE("the DQN target maximises over the next observation's legal actions only, double DQN or not",
          "[learners][fused][dqn][masks]") {
  const bool double_dqn = GENERATE(true, false);
  CAPTURE(double_dqn);
  // Zero weights and head biases (0, 0.5, 1): Q(o, a) is the bias of a for
  // every o, in the online and the target network alike.
  const std::vector<std::size_t> widths{2, 4, 3};
  fused::q_network net(widths, 3);
  auto params = net.parameters();
  std::fill(params.begin(), params.end(), 0.0f);
  params[params.size() - 2] = 0.5f;
  params[params.size() - 1] = 1.0f;
  net.sync_target();
  const std::vector<float> obs(3 * 2, 0.25f), next(3 * 2, -0.5f), returns(3, 0.0f), discounts(3, 1.0f),
      weights(3, 1.0f);
  const std::vector<std::int32_t> actions{0, 0, 0};
  // Row 0 may take anything next (the target is 1), row 1 not action 2 (0.5),
  // row 2 only action 0 (0).
  const std::vector<std::uint8_t> masks{1, 1, 1, 1, 1, 0, 1, 0, 0};
  coral::learners::dqn_config config;
  config.double_dqn = double_dqn;
  config.huber_delta = 10.0;
  std::vector<float> td(3);
  (void)fused::dqn_loss_gradients(net, {3, obs, next, actions, returns, discounts, weights, masks}, config, td);
  CHECK(td == std::vector<float>{1.0f, 0.5f, 0.0f});
  // Without masks every row bootstraps from the best action, 2.
  (void)fused::dqn_loss_gradients(net, {3, obs, next, actions, returns, discounts, weights}, config, td);
  CHECK(td == std::vector<float>{1.0f, 1.0f, 1.0f});
}
