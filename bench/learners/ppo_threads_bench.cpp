// One thread or two for a PPO minibatch step on the fused engine (issue
// 55, "the learner uses the machine"): the same step at 64-wide networks
// and minibatches of 64 to 512 rows, timed three ways in one process:
//
//   one thread     fused::ppo_step as the learner runs it (OpenBLAS on one thread);
//   OpenBLAS x2    the same with openblas_set_num_threads(2): OpenBLAS splits
//                  the products it finds large enough;
//   shards x2      the minibatch split in two halves, each half's forward,
//                  loss and backward on its own thread into its own gradient
//                  buffer (a second network, its parameters copied in before
//                  each step), the two gradients added in a fixed order on the
//                  learner's thread, then clipping and Adam there. The helper
//                  thread waits for work spinning, then yielding.
//
// The shards' loss normalises each half's advantages on its own (a real
// implementation would normalise over the whole minibatch first): the
// arithmetic is the same, which is what is timed.
//
// Each time: the median over 15 repetitions of the mean over a batch of
// steps (at least 20 ms each), after a warm-up. Torch-free.
//
// Build and run: cmake --build build/release --target ppo_threads_bench &&
//                build/release/bench/learners/ppo_threads_bench

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coral/core/rng.hpp"
#include "learner_bench.hpp"
#include "coral/learners/blas_core.hpp"
#include "coral/learners/fused/actor_critic.hpp"
#include "coral/learners/fused/optim.hpp"
#include "coral/learners/fused/ppo.hpp"
#include "coral/learners/network.hpp"

namespace {

namespace fused = coral::learners::fused;
using coral::learners::network_spec;
using coral::learners::ppo_config;

using coral::bench::seconds_per_call;

void set_blas_threads(int n) {
  using setter = void (*)(int);
  if (auto* set = reinterpret_cast<setter>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads")); set != nullptr) set(n);
}

/// A second thread that runs one job per go(), waiting spinning then yielding.
class helper_thread {
 public:
  template <class Job>
  explicit helper_thread(Job job)
      : thread_([this, job] {
          std::uint64_t seen = 0;
          for (;;) {
            std::uint64_t now = 0;
            for (int spins = 0; (now = go_.load(std::memory_order_acquire)) == seen; ++spins) {
              if (spins > 2000) std::this_thread::yield();
            }
            if (now == stop_) return;
            seen = now;
            job();
            done_.store(now, std::memory_order_release);
          }
        }) {}
  ~helper_thread() {
    go_.store(stop_, std::memory_order_release);
    thread_.join();
  }
  helper_thread(const helper_thread&) = delete;
  helper_thread& operator=(const helper_thread&) = delete;

  void start() { go_.store(++round_, std::memory_order_release); }
  void wait() const {
    for (int spins = 0; done_.load(std::memory_order_acquire) != round_; ++spins) {
      if (spins > 2000) std::this_thread::yield();
    }
  }

 private:
  static constexpr std::uint64_t stop_ = ~std::uint64_t{0};
  std::uint64_t round_ = 0;
  std::atomic<std::uint64_t> go_{0};
  std::atomic<std::uint64_t> done_{0};
  std::thread thread_;
};

struct shape {
  std::string name;
  std::size_t in;
  std::vector<std::int32_t> nvec;
  std::size_t continuous;
};

/// `rows` random rows of `spec`'s minibatch (the buffers it points into).
struct rows_of {
  std::vector<float> obs, cont, logp, values, adv, ret;
  std::vector<std::int32_t> disc;
  rows_of(const network_spec& spec, std::size_t rows, coral::rng& gen) {
    auto normals = [&](std::size_t n) {
      std::vector<float> v(n);
      for (auto& x : v) x = static_cast<float>(gen.normal());
      return v;
    };
    obs = normals(rows * spec.input_dim());
    cont = normals(rows * spec.continuous_dim());
    logp = normals(rows);
    values = normals(rows);
    adv = normals(rows);
    ret = normals(rows);
    for (auto& l : logp) l = -std::abs(l) * static_cast<float>(spec.continuous_dim() + 1);
    for (std::size_t r = 0; r < rows; ++r) {
      for (auto n : spec.nvec) disc.push_back(static_cast<std::int32_t>(gen.below(static_cast<std::uint64_t>(n))));
    }
  }
  /// Rows [from, from + n) as a minibatch.
  fused::ppo_minibatch part(const network_spec& spec, std::size_t from, std::size_t n) const {
    const std::size_t d = spec.input_dim(), h = spec.nvec.size(), c = spec.continuous_dim();
    return {n,
            std::span<const float>(obs).subspan(from * d, n * d),
            std::span<const std::int32_t>(disc).subspan(from * h, n * h),
            std::span<const float>(cont).subspan(from * c, n * c),
            std::span<const float>(logp).subspan(from, n),
            std::span<const float>(values).subspan(from, n),
            std::span<const float>(adv).subspan(from, n),
            std::span<const float>(ret).subspan(from, n)};
  }
};

}  // namespace

int main() {
  coral::learners::set_up_blas();
  std::printf("OpenBLAS kernels: %s, %d thread(s) by default; %u hardware threads\n",
              coral::learners::blas_core_in_use().c_str(), coral::learners::blas_threads_in_use(),
              std::thread::hardware_concurrency());
  std::printf("%-48s %6s %12s %12s %12s %9s %9s\n", "shape", "rows", "1 thread us", "OpenBLAS x2", "shards x2",
              "blas x", "shards x");
  const std::vector<shape> shapes{
      {"halfcheetah: 17 -> 64x64 -> 6 Gaussian", 17, {}, 6},
      {"cartpole: 4 -> 64x64 -> Discrete 2", 4, {2}, 0},
  };
  for (const auto& s : shapes) {
    for (const std::size_t rows : {64, 128, 256, 512}) {
      const auto spec = coral::bench::mlp_64x64(s.in, s.nvec, s.continuous);
      ppo_config config;
      config.learning_rate = 3e-4;
      coral::rng gen(1);
      const rows_of data(spec, rows, gen);
      const auto weights = fused::init_orthogonal(spec, 1);

      fused::actor_critic net(spec, rows);
      std::copy(weights.begin(), weights.end(), net.parameters().begin());
      fused::adam adam(weights.size(), config.adam_epsilon);
      fused::ppo_workspace work(rows);
      const auto whole = data.part(spec, 0, rows);
      auto one_step = [&] { fused::ppo_step(net, adam, work, whole, config, config.learning_rate); };
      const double one_s = seconds_per_call(one_step);
      set_blas_threads(2);
      const double blas_s = seconds_per_call(one_step);
      set_blas_threads(1);

      // Shards: this thread takes the first half, the helper the second.
      const std::size_t half = rows / 2;
      fused::actor_critic a(spec, half), b(spec, rows - half);
      std::copy(weights.begin(), weights.end(), a.parameters().begin());
      fused::adam shard_adam(weights.size(), config.adam_epsilon);
      fused::ppo_workspace work_a(half), work_b(rows - half);
      const auto first = data.part(spec, 0, half), second = data.part(spec, half, rows - half);
      helper_thread helper([&] { fused::ppo_loss_gradients(b, work_b, second, config); });
      const double shard_s = seconds_per_call([&] {
        std::copy(a.parameters().begin(), a.parameters().end(), b.parameters().begin());
        helper.start();
        fused::ppo_loss_gradients(a, work_a, first, config);
        helper.wait();
        auto ga = a.gradients();
        const auto gb = std::as_const(b).gradients();
        for (std::size_t i = 0; i < ga.size(); ++i) ga[i] = 0.5f * (ga[i] + gb[i]);  // the whole minibatch's mean
        fused::clip_grad_norm(ga, config.max_grad_norm);
        shard_adam.step(a.parameters(), ga, config.learning_rate);
      });
      std::printf("%-48s %6zu %12.1f %12.1f %12.1f %8.2fx %8.2fx\n", s.name.c_str(), rows, one_s * 1e6, blas_s * 1e6,
                  shard_s * 1e6, one_s / blas_s, one_s / shard_s);
    }
  }
  return 0;
}
