// The PPO minibatch step on both network backends, side by side in one
// process (issue 55): the torch learner's minibatch body (learners/src/
// ppo_torch.cpp's, operator for operator: index_select of the minibatch
// from the update's tensors, forward, loss, backward, clip_grad_norm,
// flat_adam) against fused::ppo_step (the rows gathered into contiguous
// buffers, then forward, loss, backward, clipping and Adam by hand).
//
// Shapes: HalfCheetah as configs/halfcheetah-ppo.toml trains it (17
// observations, 6 Gaussian actions, 64x64, minibatches of 64) and
// `coral train`'s default CartPole (4 observations, Discrete 2, 64x64,
// minibatches of 256). OpenBLAS as the `coral` command sets it up
// (set_up_blas(): this CPU's kernels, one thread), one torch thread.
//
// The fused step's arithmetic rate, as a fraction of OpenBLAS's sgemm on
// 512x512x512 measured in the same run: FLOPs counted as the products'
// 2·m·n·k (forward; the weights' gradients; the inputs' gradients of every
// layer but the first) plus 10 per parameter for clipping and Adam; the
// elementwise rest (tanh, softmax, the loss) is not counted.
//
// Then whole updates, the learners' own update() on each backend:
// recurrent PPO at configs/memory-ppo-lstm.toml's shape (32 rows of 24
// steps, 8 epochs of minibatches of 8 whole rows, 2 -> 64 -> LSTM 64);
// and the Q-learners', the torch learners' own update()
// (dqn_learner, r2d2_learner on the torch backend) against fused::dqn_step and fused::r2d2_step
// on the same batch: DQN at `--algo dqn`'s defaults on CartPole (batches
// of 128, 4 -> 64x64 -> 2) and R2D2 at configs/cartpole-r2d2.toml's (32
// sequences of 20 slots, burn-in 10, 4 -> 32x32 -> LSTM 64 -> 2).
//
// Each time: the median over 15 repetitions of the mean over a batch of
// steps (at least 20 ms each), after a warm-up.
//
// Build and run: cmake --build build/release --target fused_ppo_bench &&
//                build/release/bench/learners/fused_ppo_bench

#include "../../learners/src/actor_critic.hpp"
#include "../../learners/src/adam.hpp"
#include "../../learners/src/ppo_torch_loss.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "coral/core/rng.hpp"
#include "learner_bench.hpp"
#include "coral/learners/blas_core.hpp"
#include "coral/learners/fused/actor_critic.hpp"
#include "coral/learners/fused/optim.hpp"
#include "coral/learners/fused/ppo.hpp"
#include "coral/learners/fused/q_network.hpp"
#include "coral/learners/fused/r2d2.hpp"
#include "coral/learners/network.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/ppo_learner.hpp"
#include "coral/learners/r2d2_learner.hpp"
#include "coral/training/rollout.hpp"

namespace {

namespace fused = coral::learners::fused;
namespace twin = coral::learners::detail;
using coral::learners::network_spec;
using coral::learners::ppo_config;

using coral::bench::seconds_per_call;

struct shape {
  std::string name;
  std::size_t in;
  std::vector<std::int32_t> nvec;
  std::size_t continuous;
  std::size_t rows;
  double entropy_coef;
};

double step_flops(const network_spec& spec, std::size_t rows) {
  double flops = 0;
  const std::size_t heads = [&] {
    std::size_t n = spec.continuous_dim();
    for (auto v : spec.nvec) n += static_cast<std::size_t>(v);
    return n;
  }();
  for (const std::size_t out : {heads, std::size_t{1}}) {
    std::size_t width = spec.input_dim();
    std::vector<std::size_t> widths(spec.hidden);
    widths.push_back(out);
    bool first = true;
    for (auto w : widths) {
      const double mnk = static_cast<double>(rows) * static_cast<double>(width) * static_cast<double>(w);
      flops += 2 * mnk * (first ? 2 : 3);  // forward, d weight, d input (not for the first layer)
      first = false;
      width = w;
    }
  }
  return flops + 10.0 * static_cast<double>(fused::actor_critic::parameter_count(spec));
}

}  // namespace

int main() {
  coral::learners::set_up_blas();
  coral::learners::use_one_torch_thread();
  std::printf("OpenBLAS kernels: %s, %d thread(s)\n", coral::learners::blas_core_in_use().c_str(),
              coral::learners::blas_threads_in_use());
  std::vector<float> a(512 * 512, 0.5f), b(512 * 512, 0.25f), c(512 * 512);
  const double sgemm_s = seconds_per_call([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 512, 512, 512, 1.0f, a.data(), 512, b.data(), 512, 0.0f,
                c.data(), 512);
  });
  const double sgemm_rate = 2.0 * 512 * 512 * 512 / sgemm_s;
  std::printf("sgemm 512x512x512: %.0f us, %.1f GFLOP/s\n\n", sgemm_s * 1e6, sgemm_rate * 1e-9);
  std::printf("%-50s %12s %12s %8s %10s %10s\n", "shape (one minibatch step)", "torch us", "fused us", "ratio",
              "fused GF/s", "of sgemm");

  const std::vector<shape> shapes{
      {"halfcheetah: 17 -> 64x64 -> 6 Gaussian, 64 rows", 17, {}, 6, 64, 0.0},
      {"cartpole: 4 -> 64x64 -> Discrete 2, 256 rows", 4, {2}, 0, 256, 0.01},
  };
  for (const auto& s : shapes) {
    const auto spec = coral::bench::mlp_64x64(s.in, s.nvec, s.continuous);
    ppo_config config;
    config.entropy_coef = s.entropy_coef;
    config.learning_rate = 3e-4;
    const std::size_t rows = s.rows, batches = 32, N = rows * batches;
    const auto D = static_cast<std::int64_t>(spec.input_dim());
    const auto heads = static_cast<std::int64_t>(spec.nvec.size());
    const auto C = static_cast<std::int64_t>(spec.continuous_dim());

    // An update's data: N rows at random, minibatches of `rows` drawn in a shuffled order.
    coral::rng gen(1);
    auto normals = [&](std::size_t n) {
      std::vector<float> v(n);
      for (auto& x : v) x = static_cast<float>(gen.normal());
      return v;
    };
    auto obs = normals(N * spec.input_dim()), cont = normals(N * spec.continuous_dim()), logp = normals(N),
         values = normals(N), adv = normals(N), ret = normals(N);
    for (auto& l : logp) l = -std::abs(l) * static_cast<float>(C + 1);
    std::vector<std::int32_t> disc;
    for (std::size_t r = 0; r < N; ++r) {
      for (auto n : spec.nvec) disc.push_back(static_cast<std::int32_t>(gen.below(static_cast<std::uint64_t>(n))));
    }
    std::vector<std::int64_t> order(N);
    for (std::size_t i = 0; i < N; ++i) order[i] = static_cast<std::int64_t>(i);
    for (std::size_t i = N; i > 1; --i) std::swap(order[i - 1], order[gen.below(i)]);
    const auto weights = fused::init_orthogonal(spec, 1);

    // torch: the update's tensors, then the minibatch body per step.
    twin::actor_critic net(spec);
    twin::load(*net, weights);
    twin::flat_adam torch_adam(net->ordered(), config.adam_epsilon);
    const auto obs_t = torch::from_blob(obs.data(), {static_cast<std::int64_t>(N), D});
    const auto disc_t = heads > 0 ? torch::from_blob(disc.data(), {static_cast<std::int64_t>(N), heads}, torch::kInt32)
                                        .to(torch::kInt64)
                                  : torch::zeros({static_cast<std::int64_t>(N), 0}, torch::kInt64);
    const auto cont_t = C > 0 ? torch::from_blob(cont.data(), {static_cast<std::int64_t>(N), C})
                              : torch::zeros({static_cast<std::int64_t>(N), 0});
    const auto logp_t = torch::from_blob(logp.data(), {static_cast<std::int64_t>(N)});
    const auto val_t = torch::from_blob(values.data(), {static_cast<std::int64_t>(N)});
    const auto adv_t = torch::from_blob(adv.data(), {static_cast<std::int64_t>(N)});
    const auto ret_t = torch::from_blob(ret.data(), {static_cast<std::int64_t>(N)});
    std::size_t next = 0;
    const double torch_s = seconds_per_call([&] {
      const auto idx = torch::from_blob(order.data() + (next++ % batches) * rows, {static_cast<std::int64_t>(rows)},
                                        torch::kInt64);
      const auto& c = config;
      const auto l = twin::ppo_loss(*net, obs_t.index_select(0, idx), disc_t.index_select(0, idx),
                                    cont_t.index_select(0, idx), logp_t.index_select(0, idx),
                                    val_t.index_select(0, idx), adv_t.index_select(0, idx),
                                    ret_t.index_select(0, idx), c);
      net->zero_grad();
      l.loss.backward();
      twin::clip_grad_norm(net->ordered(), c.max_grad_norm);
      torch_adam.step(net->ordered(), c.learning_rate);
    });

    // fused: gather the minibatch's rows, then one call.
    fused::actor_critic engine(spec, rows);
    std::copy(weights.begin(), weights.end(), engine.parameters().begin());
    fused::adam engine_adam(weights.size(), config.adam_epsilon);
    fused::ppo_workspace work(rows);
    std::vector<float> mb_obs(rows * spec.input_dim()), mb_cont(rows * spec.continuous_dim()), mb_logp(rows),
        mb_val(rows), mb_adv(rows), mb_ret(rows);
    std::vector<std::int32_t> mb_disc(rows * spec.nvec.size());
    next = 0;
    const double fused_s = seconds_per_call([&] {
      const std::int64_t* idx = order.data() + (next++ % batches) * rows;
      const std::size_t d = spec.input_dim(), h = spec.nvec.size(), cd = spec.continuous_dim();
      for (std::size_t j = 0; j < rows; ++j) {
        const auto i = static_cast<std::size_t>(idx[j]);
        std::copy_n(obs.data() + i * d, d, mb_obs.data() + j * d);
        std::copy_n(disc.data() + i * h, h, mb_disc.data() + j * h);
        std::copy_n(cont.data() + i * cd, cd, mb_cont.data() + j * cd);
        mb_logp[j] = logp[i];
        mb_val[j] = values[i];
        mb_adv[j] = adv[i];
        mb_ret[j] = ret[i];
      }
      const fused::ppo_minibatch batch{rows, mb_obs, mb_disc, mb_cont, mb_logp, mb_val, mb_adv, mb_ret};
      fused::ppo_step(engine, engine_adam, work, batch, config, config.learning_rate);
    });
    const double rate = step_flops(spec, rows) / fused_s;
    std::printf("%-50s %12.1f %12.1f %7.1fx %10.1f %9.0f%%\n", s.name.c_str(), torch_s * 1e6, fused_s * 1e6,
                torch_s / fused_s, rate * 1e-9, 100.0 * rate / sgemm_rate);
  }

  std::printf("\n%-50s %12s %12s %8s\n", "whole update", "torch us", "fused us", "ratio");
  {
    // Recurrent PPO at configs/memory-ppo-lstm.toml's shape: a segment of
    // 32 rows of 24 steps (episode ends mid-row, initial states), 8 epochs
    // of minibatches of 8 whole rows, 2 -> 64 -> LSTM 64 -> heads; the
    // learners' own update() (the bootstrap unroll, GAE, the minibatches).
    network_spec spec;
    spec.raw_obs_dim = 2;
    spec.nvec = {2};
    spec.hidden = {64};
    spec.lstm = 64;
    ppo_config config;
    config.epochs = 8;
    config.minibatch_size = 192;
    config.learning_rate = 2e-3;
    config.entropy_coef = 0.003;
    const std::size_t R = 32, T = 24;
    coral::rng gen(4);
    coral::training::rollout_segment seg(0, R, T, spec.input_dim(), 1, 0);
    for (auto& x : seg.observations) x = static_cast<float>(gen.uniform(-1.0, 1.0));
    for (std::size_t i = 0; i < R * T; ++i) {
      seg.discrete_actions[i] = static_cast<std::int32_t>(gen.below(2));
      seg.log_probs[i] = std::log(0.5f);
      seg.rewards[i] = gen.uniform() < 0.2 ? 0.25f : 0.0f;
      seg.terminated[i] = i % T == 11 ? 1 : 0;
    }
    seg.state_dim = spec.state_dim();
    for (std::size_t k = 0; k < R * seg.state_dim; ++k) seg.initial_states.push_back(static_cast<float>(0.1 * gen.normal()));
    auto on_torch = config;
    on_torch.backend = coral::learners::network_backend::torch;
    coral::learners::ppo_learner torch_learner(spec, on_torch, 1, 1'000'000'000);
    coral::learners::ppo_learner fused_learner(spec, config, 1, 1'000'000'000);
    const double torch_s = seconds_per_call([&] { torch_learner.update(seg, torch_learner.updates()); });
    const double fused_s = seconds_per_call([&] { fused_learner.update(seg, fused_learner.updates()); });
    std::printf("%-50s %12.1f %12.1f %7.1fx\n", "ppo lstm memory: 32 x 24, 8 epochs of 8 rows", torch_s * 1e6,
                fused_s * 1e6, torch_s / fused_s);
  }
  {
    coral::learners::network_spec spec;
    spec.raw_obs_dim = 4;
    spec.nvec = {2};
    spec.hidden = {64, 64};
    coral::learners::dqn_config config;
    const std::size_t B = config.batch_size;
    coral::rng gen(2);
    coral::replay::sample_batch b;
    b.size = B;
    for (std::size_t i = 0; i < B * 4; ++i) {
      b.observations.push_back(static_cast<float>(gen.normal()));
      b.next_observations.push_back(static_cast<float>(gen.normal()));
    }
    for (std::size_t i = 0; i < B; ++i) {
      b.discrete.push_back(static_cast<std::int32_t>(gen.below(2)));
      b.returns.push_back(static_cast<float>(gen.normal()));
      b.discounts.push_back(0.97f);
      b.weights.push_back(static_cast<float>(0.5 + gen.uniform()));
    }
    auto on_torch = config;
    on_torch.backend = coral::learners::network_backend::torch;
    coral::learners::dqn_learner learner(spec, on_torch, 1);
    const double torch_s = seconds_per_call([&] { learner.update(b); });
    const std::vector<std::size_t> widths{4, 64, 64, 2};
    fused::q_network net(widths, B);
    const auto w = fused::init_q_network(widths, 1);
    std::copy(w.begin(), w.end(), net.parameters().begin());
    net.sync_target();
    fused::adam optimiser(w.size(), config.adam_epsilon);
    std::vector<float> td(B);
    const fused::dqn_batch batch{B, b.observations, b.next_observations, b.discrete, b.returns, b.discounts, b.weights};
    const double fused_s = seconds_per_call([&] { fused::dqn_step(net, optimiser, batch, config, td); });
    std::printf("%-50s %12.1f %12.1f %7.1fx\n", "dqn cartpole: 4 -> 64x64 -> 2, 128 transitions", torch_s * 1e6,
                fused_s * 1e6, torch_s / fused_s);
  }
  {
    coral::learners::network_spec spec;
    spec.raw_obs_dim = 4;
    spec.nvec = {2};
    spec.hidden = {32, 32};
    spec.lstm = 64;
    coral::learners::dqn_config dqn;
    dqn.n_step = 5;
    dqn.learning_rate = 1e-3;
    coral::learners::r2d2_config config;
    config.seq_len = 20;
    config.burn_in = 10;
    const std::size_t B = 32, L = 20, H = 64;
    coral::rng gen(3);
    coral::replay::sequence_batch b;
    b.layout.length = L;
    b.layout.burn_in = 10;
    b.layout.overlap = 10;
    b.layout.obs_dim = 4;
    b.layout.state_dim = 2 * H;
    b.size = B;
    for (std::size_t i = 0; i < B * (L + 1) * 4; ++i) b.observations.push_back(static_cast<float>(gen.normal()));
    for (std::size_t i = 0; i < B * 2 * H; ++i) b.states.push_back(static_cast<float>(0.1 * gen.normal()));
    for (std::size_t i = 0; i < B * L; ++i) {
      b.rewards.push_back(1.0f);
      b.actions.push_back(static_cast<std::int32_t>(gen.below(2)));
      b.flags.push_back(coral::replay::slot_valid);
    }
    for (std::size_t i = 0; i < B; ++i) {
      b.weights.push_back(static_cast<float>(0.5 + gen.uniform()));
      b.flags[i * L + 7] |= coral::replay::slot_first;  // an episode start in each burn-in
    }
    auto on_torch = dqn;
    on_torch.backend = coral::learners::network_backend::torch;
    coral::learners::r2d2_learner learner(spec, on_torch, config, 1);
    const double torch_s = seconds_per_call([&] { learner.update(b); });
    fused::recurrent_q_network net(spec, B, L);
    const auto w = learner.weights();
    std::copy(w.begin(), w.end(), net.parameters().begin());
    net.sync_target();
    fused::adam optimiser(w.size(), dqn.adam_epsilon);
    const double fused_s = seconds_per_call([&] { fused::r2d2_step(net, optimiser, b, dqn, config); });
    std::printf("%-50s %12.1f %12.1f %7.1fx\n", "r2d2 cartpole: 32 x 20 slots, burn-in 10, LSTM 64", torch_s * 1e6,
                fused_s * 1e6, torch_s / fused_s);
  }
  return 0;
}
