// The recurrent trunk's unroll (learners/src/network.cpp), forward and
// backward, against the plain unroll it replaced (git log has it):
// torch::nn::LSTMCell stepped over the sequence, each step's input sliced
// with select(), the state multiplied by its keep mask at every step.
// Both on the same module and inputs, one torch thread (as the
// learners run), at the sizes of the checked-in configs:
// - ppo_memory: configs/memory-ppo-lstm.toml's minibatch, 8 rows of 24 steps,
//   a hidden layer of 64 then an LSTM of 64, one reset per row (at step 0);
// - r2d2_cartpole: configs/cartpole-r2d2.toml's batch after burn-in,
//   32 rows of 10 slots, hidden 32 32, LSTM 64, resets rare;
// - r2d2_paper: BENCHMARKS.md's R2D2 run at the paper's sizes, 64 rows of
//   41 slots (after a burn-in of 40), hidden 32 32, LSTM 64.
// train: forward, a loss on every h and c, backward; forward: under
// torch::NoGradGuard (the burn-in, PPO's value pass). OpenBLAS as the
// `coral` command sets it up (learners/blas_core.hpp): the kernels of this
// CPU, one thread.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "../../learners/src/actor_critic.hpp"
#include "coral/learners/blas_core.hpp"

namespace {

using coral::learners::detail::recurrent_trunk;

struct shape {
  std::int64_t rows, steps, obs;
  std::vector<std::size_t> hidden;
  std::int64_t lstm;
};

shape shape_of(std::int64_t which) {
  switch (which) {
    case 0: return {8, 24, 6, {64}, 64};
    case 1: return {32, 10, 4, {32, 32}, 64};
    default: return {64, 41, 4, {32, 32}, 64};
  }
}

const char* name_of(std::int64_t which) {
  switch (which) {
    case 0: return "ppo_memory";
    case 1: return "r2d2_cartpole";
    default: return "r2d2_paper";
  }
}

struct setup {
  explicit setup(const shape& s)
      : trunk(static_cast<std::size_t>(s.obs), s.hidden, static_cast<std::size_t>(s.lstm)),
        obs(torch::randn({s.rows, s.steps, s.obs})),
        resets(torch::zeros({s.rows, s.steps})),
        h0(torch::zeros({s.rows, s.lstm})),
        c0(torch::zeros({s.rows, s.lstm})) {
    // One episode start per row: at step 0 for PPO's whole-episode segments;
    // for R2D2 about one row in eight somewhere in the sequence.
    for (std::int64_t r = 0; r < s.rows; ++r) {
      if (s.steps == 24) {
        resets[r][0] = 1;
      } else if (r % 8 == 3) {
        resets[r][(r * 7) % s.steps] = 1;
      }
    }
  }
  recurrent_trunk trunk;
  torch::Tensor obs, resets, h0, c0;
};

// The unroll as it was: LSTMCell stepped, select() per step.
std::pair<torch::Tensor, torch::Tensor> reference_unroll(recurrent_trunk& trunk, const torch::Tensor& obs,
                                                         const torch::Tensor& resets, torch::Tensor h, torch::Tensor c) {
  const auto B = obs.size(0), T = obs.size(1);
  auto x = trunk->encoder->forward(obs.reshape({B * T, obs.size(2)})).reshape({B, T, -1});
  const auto keep = 1.0 - resets;
  std::vector<torch::Tensor> hs, cs;
  for (std::int64_t t = 0; t < T; ++t) {
    const auto k = keep.select(1, t).unsqueeze(1);
    std::tie(h, c) = trunk->lstm->forward(x.select(1, t), std::make_tuple(h * k, c * k));
    hs.push_back(h);
    cs.push_back(c);
  }
  return {torch::stack(hs, 1), torch::stack(cs, 1)};
}

template <bool Reference, bool Train>
void unroll(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::manual_seed(1);
  setup s(shape_of(state.range(0)));
  state.SetLabel(name_of(state.range(0)));
  for (auto _ : state) {
    if constexpr (Train) {
      const auto [hs, cs] = Reference ? reference_unroll(s.trunk, s.obs, s.resets, s.h0, s.c0)
                                      : s.trunk->unroll(s.obs, s.resets, s.h0, s.c0);
      (hs.sum() + cs.sum()).backward();
    } else {
      torch::NoGradGuard no_grad;
      const auto [hs, cs] = Reference ? reference_unroll(s.trunk, s.obs, s.resets, s.h0, s.c0)
                                      : s.trunk->unroll(s.obs, s.resets, s.h0, s.c0);
      benchmark::DoNotOptimize(hs.data_ptr<float>());
    }
  }
  state.SetItemsProcessed(state.iterations() * s.obs.size(0) * s.obs.size(1));
}

void train_reference(benchmark::State& state) { unroll<true, true>(state); }
void train_trunk(benchmark::State& state) { unroll<false, true>(state); }
void forward_reference(benchmark::State& state) { unroll<true, false>(state); }
void forward_trunk(benchmark::State& state) { unroll<false, false>(state); }

BENCHMARK(train_reference)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK(train_trunk)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK(forward_reference)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK(forward_trunk)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  coral::learners::set_up_blas();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
