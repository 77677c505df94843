// The fused engine's convolution (learners/src/fused/conv.cpp) against a
// direct loop, on MinAtar's shape: 10 x 10 x C grids (C = 4 Breakout, 7
// Freeway, 10 Seaquest), 16 channels, a 3 x 3 window, stride 1. One pass
// is the forward and the weights' and bias's gradients (the first layer
// needs no input gradient), over the rows of an update: DQN's 2 x 32
// (observations and next observations), R2D2's 32 x 41 slots, PPO's
// minibatch of 512.
//
//   im2col + sgemm   fused::conv_forward + conv_backward: the patches, then
//                    one OpenBLAS product each way
//   direct           plain loops with the weight reordered to
//                    [ky][kx][c][out], so the inner loop runs over 16
//                    contiguous outputs and vectorises
//   direct, sparse   the same, skipping zero inputs (MinAtar's grids are
//                    about 5 % ones)
//
// Inputs: 0/1 cells, 5 % ones, as MinAtar's grids are. Each time: the
// median over 11 repetitions of the mean over at least 20 ms of passes.
// OpenBLAS as the `coral` command sets it up (this CPU's kernels, one thread).
//
// Build and run: cmake --build build/release --target conv_bench &&
//                build/release/bench/learners/conv_bench

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "coral/core/rng.hpp"
#include "coral/learners/blas_core.hpp"
#include "coral/learners/fused/conv.hpp"

namespace {

namespace fused = coral::learners::fused;
using clock_type = std::chrono::steady_clock;

template <class Fn>
double median_us(Fn&& pass) {
  std::vector<double> times;
  for (int rep = 0; rep < 11; ++rep) {
    int n = 0;
    const auto start = clock_type::now();
    auto now = start;
    do {
      pass();
      ++n;
      now = clock_type::now();
    } while (now - start < std::chrono::milliseconds(20));
    times.push_back(std::chrono::duration<double, std::micro>(now - start).count() / n);
  }
  std::nth_element(times.begin(), times.begin() + 5, times.end());
  return times[5];
}

// The direct convolution's forward and weight/bias gradients, the weight
// as [ky][kx][c][out] (`wt`, `dwt`).
struct direct_conv {
  fused::conv_layer l;
  bool skip_zeros;

  void forward(const float* wt, const float* bias, const float* x, std::size_t rows, float* y) const {
    const std::size_t K = l.kernel, C = l.in_c, O = l.out_c, oh = l.out_h(), ow = l.out_w();
    for (std::size_t r = 0; r < rows; ++r) {
      const float* in = x + r * l.in_size();
      for (std::size_t oy = 0; oy < oh; ++oy) {
        for (std::size_t ox = 0; ox < ow; ++ox) {
          float* out = y + ((r * oh + oy) * ow + ox) * O;
          std::copy_n(bias, O, out);
          for (std::size_t ky = 0; ky < K; ++ky) {
            for (std::size_t kx = 0; kx < K; ++kx) {
              const float* cell = in + ((oy * l.stride + ky) * l.in_w + ox * l.stride + kx) * C;
              const float* w = wt + (ky * K + kx) * C * O;
              for (std::size_t c = 0; c < C; ++c) {
                if (skip_zeros && cell[c] == 0.0f) continue;
                for (std::size_t o = 0; o < O; ++o) out[o] += w[c * O + o] * cell[c];
              }
            }
          }
        }
      }
    }
  }

  void backward(const float* x, const float* dy, std::size_t rows, float* dwt, float* db) const {
    const std::size_t K = l.kernel, C = l.in_c, O = l.out_c, oh = l.out_h(), ow = l.out_w();
    std::fill_n(dwt, K * K * C * O, 0.0f);
    std::fill_n(db, O, 0.0f);
    for (std::size_t r = 0; r < rows; ++r) {
      const float* in = x + r * l.in_size();
      for (std::size_t oy = 0; oy < oh; ++oy) {
        for (std::size_t ox = 0; ox < ow; ++ox) {
          const float* d = dy + ((r * oh + oy) * ow + ox) * O;
          for (std::size_t o = 0; o < O; ++o) db[o] += d[o];
          for (std::size_t ky = 0; ky < K; ++ky) {
            for (std::size_t kx = 0; kx < K; ++kx) {
              const float* cell = in + ((oy * l.stride + ky) * l.in_w + ox * l.stride + kx) * C;
              float* w = dwt + (ky * K + kx) * C * O;
              for (std::size_t c = 0; c < C; ++c) {
                if (skip_zeros && cell[c] == 0.0f) continue;
                for (std::size_t o = 0; o < O; ++o) w[c * O + o] += cell[c] * d[o];
              }
            }
          }
        }
      }
    }
  }
};

}  // namespace

int main() {
  coral::learners::set_up_blas();
  std::printf("conv 10x10xC -> 16 channels, 3x3, stride 1: forward + weight gradients per pass (us)\n");
  std::printf("%-4s %-6s %14s %10s %16s %12s\n", "C", "rows", "im2col+sgemm", "direct", "direct, sparse",
              "direct/im2col");
  coral::rng gen(1);
  for (const std::size_t C : {4, 7, 10}) {
    for (const std::size_t rows : {64, 512, 1312}) {
      const fused::conv_layer l{.in_h = 10, .in_w = 10, .in_c = C, .out_c = 16, .kernel = 3, .stride = 1, .offset = 0};
      std::vector<float> params(l.size()), grads(l.size());
      for (auto& p : params) p = static_cast<float>(0.3 * gen.normal());
      std::vector<float> x(rows * l.in_size());
      for (auto& v : x) v = gen.uniform() < 0.05 ? 1.0f : 0.0f;
      std::vector<float> y(rows * l.out_size()), dy(rows * l.out_size()), patches(rows * l.positions() * l.patch());
      std::vector<float> weight(l.out_c * l.patch());
      for (auto& v : dy) v = static_cast<float>(gen.normal());
      const double gemm = median_us([&] {
        fused::conv_forward(l, params.data(), x.data(), rows, patches.data(), weight.data(), y.data());
        fused::conv_backward(l, grads.data(), patches.data(), dy.data(), rows, weight.data(), nullptr, nullptr);
      });
      std::vector<float> wt(l.size()), dwt(l.size()), db(16);
      double direct[2];
      for (const bool sparse : {false, true}) {
        const direct_conv d{l, sparse};
        direct[sparse ? 1 : 0] = median_us([&] {
          d.forward(wt.data(), params.data() + l.bias_offset(), x.data(), rows, y.data());
          d.backward(x.data(), dy.data(), rows, dwt.data(), db.data());
        });
      }
      std::printf("%-4zu %-6zu %14.1f %10.1f %16.1f %12.2f\n", C, rows, gemm, direct[0], direct[1], direct[0] / gemm);
    }
  }
  return 0;
}
