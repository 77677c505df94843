// The fused recurrent actor-critic and PPO step against their torch twin,
// the oracle: the same flat weights in both, the same random minibatch of
// whole rows (initial states, episode resets mid-sequence), then the
// forward outputs, the loss and its parts, every parameter's gradient, and
// clipping plus Adam steps compared, for each head kind. The torch side is
// ppo_torch.cpp's recurrent minibatch body: the trunk's unroll of the rows,
// then ppo_torch_loss.hpp's loss on its features, on
// learners/src/actor_critic.hpp's network, adam.hpp's clip_grad_norm and
// flat_adam. The tolerance: fused_oracle_support.hpp's (which says why its
// floor); a mean over rows whose terms nearly cancel (the surrogate's ±A·ratio
// with advantages normalised: on the Gaussian shape a policy loss of 1.9e-3
// from terms of 0.8, moved 2e-7 by float32 rounding of each log
// probability) gets its floor from its terms' magnitude.

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
#include "coral/learners/errors.hpp"
#include "coral/learners/fused/optim.hpp"
#include "coral/learners/fused/recurrent_actor_critic.hpp"
#include "coral/learners/fused/recurrent_ppo.hpp"
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

/// `v` [B][T][width] as [T][B][width].
template <class Value>
std::vector<Value> time_major(const std::vector<Value>& v, std::size_t B, std::size_t T, std::size_t width) {
  std::vector<Value> out(v.size());
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      std::copy_n(v.begin() + static_cast<std::ptrdiff_t>((b * T + t) * width), width,
                  out.begin() + static_cast<std::ptrdiff_t>((t * B + b) * width));
    }
  }
  return out;
}

/// A torch tensor [B, T, ...] flattened time-major, as the engine lays out its rows.
std::vector<float> time_major_floats(const torch::Tensor& batch_major, std::size_t B, std::size_t T) {
  const auto v = floats_of(batch_major);
  return time_major(v, B, T, v.size() / (B * T));
}

}  // namespace

TEST_CASE("the fused recurrent PPO step computes what the torch learner's recurrent minibatch body does, to 1e-5",
          "[learners][fused][oracle][recurrent]") {
  const auto shape = GENERATE(values<coral::test::ppo_oracle_shape>({
      // name, in, nvec, Box elements, hidden, rows, clip value loss, normalise advantages, LSTM, steps
      {"memory: 2 -> 64 -> LSTM 64, 8 rows of 24 steps", 2, {2}, 0, {64}, 8, true, true, 64, 24},
      {"positions-only cartpole: 2 -> 64 -> LSTM 64, 4 rows of 64, value loss unclipped", 2, {2}, 0, {64}, 4, false,
       true, 64, 64},
      {"Gaussian: 17 -> 32x32 -> LSTM 16, 3 rows of 5", 17, {}, 6, {32, 32}, 3, true, true, 16, 5},
      {"mixed heads, no encoder: 5 -> LSTM 8, 2 rows of 7, advantages as given", 5, {3, 2}, 2, {}, 2, true, false, 8,
       7},
      {"one row of 6 steps", 4, {2}, 1, {16}, 1, true, true, 8, 6},
      {"MinAtar's encoder: 10x10x4 -> conv 16:3 -> 64 -> LSTM 32, 3 rows of 8", 400, {6}, 0, {64}, 3, true, true, 32,
       8, false, {.height = 10, .width = 10, .channels = 4, .layers = {{16, 3, 1}}}},
  }));
  INFO(shape.name);
  const auto spec = coral::test::spec_of(shape);
  const std::size_t B = shape.rows, T = shape.steps, N = B * T, D = spec.input_dim(), H = spec.lstm;
  const std::size_t heads = spec.nvec.size(), C = spec.continuous_dim();
  coral::rng gen(std::hash<std::string>{}(shape.name) % 1000);
  auto normals = [&](std::size_t n, double scale) {
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(scale * gen.normal());
    return v;
  };

  // The same weights in both: the fused initialiser's, moved off its
  // symmetries (nonzero biases and log std, larger heads).
  auto weights = fused::init_recurrent_actor_critic(spec, 7);
  for (auto& w : weights) w += static_cast<float>(0.1 * gen.normal());
  twin::actor_critic net(spec);
  REQUIRE(twin::flatten(*net).size() == weights.size());
  REQUIRE(coral::learners::parameter_count(spec) == weights.size());
  twin::load(*net, weights);
  fused::recurrent_actor_critic engine(spec, B, T);
  std::copy(weights.begin(), weights.end(), engine.parameters().begin());

  // Batch-major data for torch: observations, resets (a row's state is
  // zeroed before a step that starts an episode; never before its first,
  // whose state is the given one), initial states, actions.
  const auto obs = normals(N * D, 1.0), h0 = normals(B * H, 0.5), c0 = normals(B * H, 0.5);
  std::vector<float> resets(N, 0.0f);
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 1; t < T; ++t) resets[b * T + t] = gen.uniform() < 0.15 ? 1.0f : 0.0f;
  }
  if (T > 3) resets[T / 2] = 1.0f;  // at least one, in row 0
  std::vector<std::int32_t> disc;
  for (std::size_t i = 0; i < N; ++i) {
    for (auto n : spec.nvec) disc.push_back(static_cast<std::int32_t>(gen.below(static_cast<std::uint64_t>(n))));
  }
  const auto cont = normals(N * C, 1.0);

  // Time-major for the engine.
  std::vector<float> keep(N);
  for (std::size_t i = 0; i < N; ++i) keep[i] = 1.0f - resets[i];
  keep = time_major(keep, B, T, 1);
  const auto x = time_major(obs, B, T, D);
  const auto disc_t = time_major(disc, B, T, heads);
  const auto cont_t = time_major(cont, B, T, C);

  // Old log probabilities and values near the network's own, so that some
  // ratios and values are clipped and some are not (time-major).
  engine.forward(x.data(), keep.data(), h0.data(), c0.data(), B, T, false);
  engine.heads().log_prob_entropy(disc_t.data(), cont_t.data());
  auto logp = normals(N, 0.3), values = normals(N, 0.3);
  for (std::size_t i = 0; i < N; ++i) {
    logp[i] += engine.heads().log_probs()[i];
    values[i] += engine.heads().values()[i];
  }
  const auto adv = normals(N, 1.0), ret = normals(N, 1.0);
  const fused::recurrent_ppo_minibatch batch{
      .rows = B,
      .steps = T,
      .keep = keep,
      .h0 = h0,
      .c0 = c0,
      .steps_of = {N, x, disc_t, cont_t, logp, values, adv, ret}};

  // The same per-step data batch-major, for torch.
  auto batch_major = [&](const std::vector<float>& v) {
    std::vector<float> out(v.size());
    for (std::size_t b = 0; b < B; ++b) {
      for (std::size_t t = 0; t < T; ++t) out[b * T + t] = v[t * B + b];
    }
    return torch::from_blob(out.data(), {static_cast<std::int64_t>(N)}, torch::kFloat32).clone();
  };
  const auto b_ = static_cast<std::int64_t>(B), t_ = static_cast<std::int64_t>(T), n_ = static_cast<std::int64_t>(N);
  auto disc_copy = disc;
  const auto disc_torch =
      heads > 0 ? torch::from_blob(disc_copy.data(), {n_, static_cast<std::int64_t>(heads)}, torch::kInt32)
                      .to(torch::kInt64)
                : torch::zeros({n_, 0}, torch::kInt64);
  auto cont_copy = cont;
  const auto cont_torch = C > 0 ? torch::from_blob(cont_copy.data(), {n_, static_cast<std::int64_t>(C)}).clone()
                                : torch::zeros({n_, 0}, torch::kFloat32);
  auto obs_copy = obs;
  auto resets_copy = resets;
  auto h0_copy = h0, c0_copy = c0;
  const auto obs_torch = torch::from_blob(obs_copy.data(), {b_, t_, static_cast<std::int64_t>(D)});
  const auto resets_torch = torch::from_blob(resets_copy.data(), {b_, t_});
  const auto h0_torch = torch::from_blob(h0_copy.data(), {b_, static_cast<std::int64_t>(H)});
  const auto c0_torch = torch::from_blob(c0_copy.data(), {b_, static_cast<std::int64_t>(H)});
  const auto old_logp = batch_major(logp), old_v = batch_major(values), adv_torch = batch_major(adv),
             ret_torch = batch_major(ret);

  const auto config = coral::test::oracle_ppo_config(shape.clip_value_loss, shape.normalize_advantages);
  const double lr = 3e-4;

  fused::adam engine_adam(weights.size(), config.adam_epsilon);
  twin::flat_adam torch_adam(net->ordered(), config.adam_epsilon);
  fused::ppo_workspace work(N);
  // Two steps: the second from the first's weights and Adam moments.
  for (int step = 1; step <= 2; ++step) {
    INFO("step " << step);
    const auto features =
        net->unroll(obs_torch, resets_torch, h0_torch.clone(), c0_torch.clone()).first.reshape({n_, -1});
    const auto want = twin::ppo_loss(*net, features, disc_torch, cont_torch, old_logp, old_v, adv_torch, ret_torch,
                                     config);
    net->zero_grad();
    want.loss.backward();
    const auto got = fused::recurrent_ppo_loss_gradients(engine, work, batch, config);

    require_close(engine.features(), time_major_floats(features.view({b_, t_, -1}), B, T), "LSTM output");
    require_close(engine.heads().actor_out(), time_major_floats(want.actor_out, B, T), "actor output");
    require_close(engine.heads().values(), time_major_floats(want.value, B, T), "values");
    require_close(engine.heads().log_probs(), time_major_floats(want.log_prob, B, T), "log probabilities");
    require_close(engine.heads().entropies(), time_major_floats(want.entropy, B, T), "entropies");
    auto a = adv_torch;
    if (config.normalize_advantages) a = (a - a.mean()) / (a.std() + 1e-8);
    const double surrogate_terms = (a * want.ratio).abs().mean().item<double>();
    require_close(got.loss, want.loss.item<double>(), "loss", surrogate_terms);
    require_close(got.policy_loss, want.policy.item<double>(), "policy loss", surrogate_terms);
    require_close(got.value_loss, want.value_loss.item<double>(), "value loss");
    require_close(got.entropy, want.mean_entropy.item<double>(), "entropy");

    coral::test::check_gradients_and_step(engine.parameters(), engine.gradients(), net, engine_adam, torch_adam, config,
                                          lr);
  }
}

TEST_CASE("recurrent_ppo_step is the loss's gradients, clipping and Adam, in one call", "[learners][fused][recurrent]") {
  const coral::test::ppo_oracle_shape shape{"", 4, {2}, 0, {8}, 2, true, true, 4, 3};
  const auto spec = coral::test::spec_of(shape);
  coral::rng gen(9);
  auto normals = [&](std::size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(gen.normal());
    return v;
  };
  const std::size_t N = 6;
  auto obs = normals(N * 4), h0 = normals(2 * 4), c0 = normals(2 * 4), logp = normals(N), values = normals(N),
       adv = normals(N), ret = normals(N);
  const std::vector<float> keep{1, 1, 0, 1, 1, 1}, cont;
  const std::vector<std::int32_t> disc{0, 1, 1, 0, 1, 0};
  const fused::recurrent_ppo_minibatch batch{.rows = 2,
                                             .steps = 3,
                                             .keep = keep,
                                             .h0 = h0,
                                             .c0 = c0,
                                             .steps_of = {N, obs, disc, cont, logp, values, adv, ret}};
  const auto weights = fused::init_recurrent_actor_critic(spec, 1);
  fused::recurrent_actor_critic a(spec, 2, 3), b(spec, 2, 3);
  std::copy(weights.begin(), weights.end(), a.parameters().begin());
  std::copy(weights.begin(), weights.end(), b.parameters().begin());
  fused::adam adam_a(weights.size(), 1e-5), adam_b(weights.size(), 1e-5);
  fused::ppo_workspace work(N);
  ppo_config config;
  const auto stats = fused::recurrent_ppo_step(a, adam_a, work, batch, config, 1e-3);
  fused::recurrent_ppo_loss_gradients(b, work, batch, config);
  CHECK(stats.grad_norm == fused::clip_grad_norm(b.gradients(), config.max_grad_norm));
  adam_b.step(b.parameters(), b.gradients(), 1e-3);
  CHECK(std::equal(a.parameters().begin(), a.parameters().end(), b.parameters().begin()));
  CHECK(a.parameters().size() != 0);
  CHECK(adam_a.steps == 1);

  // A minibatch whose steps' data is not rows × steps long, or longer than the buffers, is refused.
  auto short_batch = batch;
  short_batch.steps_of.rows = 5;
  CHECK_THROWS_WITH(fused::recurrent_ppo_loss_gradients(a, work, short_batch, config),
                    fmt::format(fmt::runtime(coral::learners::errors::fused_recurrent_minibatch_shape), 2, 3, 5));
  fused::recurrent_actor_critic small(spec, 1, 3);
  CHECK_THROWS_WITH(fused::recurrent_ppo_loss_gradients(small, work, batch, config),
                    fmt::format(fmt::runtime(coral::learners::errors::fused_too_many_rows), 6, 3));
  CHECK_THROWS_WITH(fused::recurrent_actor_critic(coral::test::spec_of({"", 4, {2}, 0, {8}, 1, true, true}), 1, 1),
                    std::string(coral::learners::errors::fused_needs_lstm));
}
