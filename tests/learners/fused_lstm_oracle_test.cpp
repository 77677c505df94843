// The fused recurrent trunk against its torch twin (learners/src/
// actor_critic.hpp's recurrent_trunk, whose unroll is the lstm_recurrence
// autograd node): the same flat weights, random observations, initial
// states and episode resets mid-sequence, then every step's h and c, and
// every parameter's gradient of a loss that weighs each h and c at random.
// The tolerance: fused_oracle_support.hpp's (which says why its floor).

#include "../../learners/src/actor_critic.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

// Torch first: its logging header defines a CHECK macro of its own.
#undef CHECK
#include <catch2/catch.hpp>

#include "coral/core/rng.hpp"
#include "coral/learners/fused/lstm_trunk.hpp"
#include "fused_oracle_support.hpp"

namespace fused = coral::learners::fused;
namespace twin = coral::learners::detail;
using coral::test::floats_of;
using coral::test::require_close;

namespace {

struct trunk_shape {
  std::string name;
  std::size_t in;
  std::vector<std::size_t> hidden;
  std::size_t width, rows, steps;
};

}  // namespace

TEST_CASE("the fused LSTM trunk unrolls and back-propagates as its torch twin, resets included, to 1e-5",
          "[learners][fused][oracle][recurrent]") {
  const auto shape = GENERATE(values<trunk_shape>({
      {"r2d2 cartpole: 4 -> 32x32 -> LSTM 64, 32 rows of 10 steps", 4, {32, 32}, 64, 32, 10},
      {"ppo memory: 6 -> 64 -> LSTM 64, 8 rows of 24 steps", 6, {64}, 64, 8, 24},
      {"no encoder: 5 -> LSTM 16, one row of 7 steps", 5, {}, 16, 1, 7},
  }));
  INFO(shape.name);
  const std::size_t B = shape.rows, T = shape.steps, D = shape.in, H = shape.width;
  coral::rng gen(std::hash<std::string>{}(shape.name) % 1000);
  auto normals = [&](std::size_t n, double scale) {
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(scale * gen.normal());
    return v;
  };
  twin::recurrent_trunk trunk(D, shape.hidden, H);
  fused::lstm_trunk engine(D, shape.hidden, H, 0, B, T);
  const auto params = trunk->parameters();
  auto weights = twin::flatten(params);
  REQUIRE(weights.size() == engine.parameter_count());
  for (auto& w : weights) w = static_cast<float>(0.3 * gen.normal());  // biases too
  twin::load(params, weights, "test");

  // Batch-major for torch ([B, T, ...]), time-major for the engine.
  auto obs = normals(B * T * D, 1.0), h0 = normals(B * H, 0.5), c0 = normals(B * H, 0.5);
  std::vector<float> resets(B * T), keep(T * B), x(T * B * D);
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      resets[b * T + t] = (t > 0 && gen.uniform() < 0.15) ? 1.0f : 0.0f;
      keep[t * B + b] = 1.0f - resets[b * T + t];
      std::copy_n(obs.data() + (b * T + t) * D, D, x.data() + (t * B + b) * D);
    }
  }
  const auto gh = normals(T * B * H, 1.0), gc = normals(T * B * H, 1.0);  // time-major
  const auto b_ = static_cast<std::int64_t>(B), t_ = static_cast<std::int64_t>(T), h_ = static_cast<std::int64_t>(H);
  const auto [feats, cells] =
      trunk->unroll(torch::from_blob(obs.data(), {b_, t_, static_cast<std::int64_t>(D)}),
                    torch::from_blob(resets.data(), {b_, t_}), torch::from_blob(h0.data(), {b_, h_}).clone(),
                    torch::from_blob(c0.data(), {b_, h_}).clone());
  const auto gh_t = torch::from_blob(const_cast<float*>(gh.data()), {t_, b_, h_}).transpose(0, 1);
  const auto gc_t = torch::from_blob(const_cast<float*>(gc.data()), {t_, b_, h_}).transpose(0, 1);
  ((feats * gh_t).sum() + (cells * gc_t).sum()).backward();

  std::vector<float> hs(T * B * H), cs(T * B * H), grads(weights.size());
  engine.forward(weights.data(), x.data(), keep.data(), h0.data(), c0.data(), B, T, hs.data(), cs.data(), true);
  engine.backward(weights.data(), grads.data(), gh.data(), gc.data());

  require_close(hs, floats_of(feats.transpose(0, 1)), "h after every step");
  require_close(cs, floats_of(cells.transpose(0, 1)), "c after every step");
  std::size_t at = 0, index = 0;
  for (const auto& p : params) {
    const auto n = static_cast<std::size_t>(p.numel());
    require_close(std::span<const float>(grads).subspan(at, n), floats_of(p.grad()),
                     "gradient of parameter " + std::to_string(index++));
    at += n;
  }

  // A burn-in: an unroll without backward whose last state starts the next
  // gives what one unroll over both gives, to the tolerance. Not to the bit:
  // the input projection is one product over every row of the unroll, and
  // OpenBLAS's sums depend on its row count on some kernel sets (Haswell's,
  // which it runs on AMD Zen too: 1-ulp differences; SkylakeX's and the
  // generic ones agree to the bit).
  if (T > 2) {
    const std::size_t first = T / 2;
    std::vector<float> hs2(T * B * H), cs2(T * B * H);
    engine.forward(weights.data(), x.data(), keep.data(), h0.data(), c0.data(), B, first, hs2.data(), cs2.data(),
                   false);
    engine.forward(weights.data(), x.data() + first * B * D, keep.data() + first * B,
                   hs2.data() + (first - 1) * B * H, cs2.data() + (first - 1) * B * H, B, T - first,
                   hs2.data() + first * B * H, cs2.data() + first * B * H, true);
    require_close(hs2, hs, "h after a burn-in and the rest");
    require_close(cs2, cs, "c after a burn-in and the rest");
  }
}
