// R2D2's updates on the fused engine (torch-free): the torch twin's update
// (r2d2_torch.cpp) — burn-in without gradient, n-step double-Q targets in
// rescaled space, the importance-weighted squared TD error per sequence,
// priorities, clipping, Adam, the target copied every target_update
// updates — computed by fused::r2d2_step over buffers allocated once. Its
// state is the twin's: checkpoints move between the backends.

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/learners/blas_core.hpp"
#include "coral/learners/fused/lstm_trunk.hpp"
#include "coral/learners/fused/r2d2.hpp"
#include "coral/learners/r2d2_learner.hpp"
#include "flat_layout.hpp"
#include "fused_q_backend.hpp"
#include "learner_backends.hpp"

namespace coral::learners {
namespace {

using clock = std::chrono::steady_clock;

using fused_r2d2_base = detail::fused_q_backend<r2d2_learner::backend, fused::recurrent_q_network>;

class fused_r2d2 final : public fused_r2d2_base {
 public:
  fused_r2d2(const network_spec& spec, const dqn_config& dqn, const r2d2_config& config, std::uint64_t seed)
      : fused_r2d2_base(network(checked(spec), dqn.batch_size, config.seq_len),
                        fused::init_recurrent_q_network(checked(spec), seed), dqn.adam_epsilon, "r2d2_learner"),
        spec_(spec),
        dqn_(dqn),
        config_(config) {
    report_blas_setup();
  }

  r2d2_update_stats update(replay::sequence_batch& b) override {
    const auto started = clock::now();
    detail::check_sequence_batch(spec_, b);
    // A batch beyond --replay-batch or --seq-len (a caller's own) gets buffers of its size, once.
    if (b.size > net_->max_rows() || b.layout.length > net_->max_length()) {
      enlarge(network(spec_, std::max(b.size, net_->max_rows()), std::max(b.layout.length, net_->max_length())));
    }
    auto out = fused::r2d2_step(*net_, adam_, b, dqn_, config_);
    count_update(dqn_.target_update);
    out.base.learning_rate = dqn_.learning_rate;
    out.base.seconds = std::chrono::duration<double>(clock::now() - started).count();
    out.learn_seconds = out.base.seconds - out.burn_in_seconds;
    return out;
  }

  std::vector<float> q_values(std::span<const float> observations,
                              std::span<const std::uint8_t> resets) const override {
    const std::size_t D = spec_.input_dim(), T = resets.size();
    if (observations.size() != T * D) {
      throw usage_error(fmt::format("r2d2_learner: {} floats are not {} observations of {}", observations.size(), T, D));
    }
    const std::vector<float> zero(spec_.state_dim(), 0.0f);
    const auto hs = unroll(observations, resets, zero).first;
    const std::size_t A = detail::r2d2_action_count(spec_);
    const fused::dense_layer head{spec_.lstm, A, net_->parameters().size() - (spec_.lstm * A + A)};
    std::vector<float> q(T * A);
    fused::dense_forward(head, std::as_const(*net_).parameters().data(), hs.data(), T, q.data());
    return q;
  }

  std::vector<float> state_after(std::span<const float> observations, std::span<const std::uint8_t> resets,
                                 std::span<const float> initial) const override {
    const std::size_t D = spec_.input_dim(), T = resets.size(), H = spec_.lstm;
    if (observations.size() != T * D || initial.size() != 2 * H) {
      throw usage_error("r2d2_learner: state_after takes T observations and 2 × lstm floats of state");
    }
    if (T == 0) return {initial.begin(), initial.end()};
    const auto [hs, cs] = unroll(observations, resets, initial);
    std::vector<float> hc(hs.end() - static_cast<std::ptrdiff_t>(H), hs.end());
    hc.insert(hc.end(), cs.end() - static_cast<std::ptrdiff_t>(H), cs.end());
    return hc;
  }

 private:
  /// `spec`, or usage_error where it has no LSTM (config_error where its
  /// action space is not one Discrete), as the torch twin refuses them.
  static const network_spec& checked(const network_spec& spec) {
    if (spec.lstm == 0) throw usage_error("r2d2_learner: the network has no LSTM");
    (void)detail::r2d2_action_count(spec);
    return spec;
  }

  /// R2D2's networks with buffers for `rows` sequences of `length` slots (at least one each).
  static std::unique_ptr<fused::recurrent_q_network> network(const network_spec& spec, std::size_t rows,
                                                             std::size_t length) {
    return std::make_unique<fused::recurrent_q_network>(spec, std::max<std::size_t>(rows, 1),
                                                        std::max<std::size_t>(length, 1));
  }

  /// The online trunk's h and c after each of T steps of one row from
  /// `initial` (h then c), zeroing the state before a step where `resets`
  /// says so; [T][H] each. Buffers of its own, made per call (for tests,
  /// off the update's path).
  std::pair<std::vector<float>, std::vector<float>> unroll(std::span<const float> observations,
                                                           std::span<const std::uint8_t> resets,
                                                           std::span<const float> initial) const {
    const std::size_t T = resets.size(), H = spec_.lstm;
    std::vector<float> keep(T), hs(T * H), cs(T * H);
    for (std::size_t t = 0; t < T; ++t) keep[t] = 1.0f - static_cast<float>(resets[t]);
    if (T == 0) return {hs, cs};
    fused::lstm_trunk trunk(spec_.input_dim(), spec_.hidden, H, 0, 1, T, spec_.conv);
    trunk.forward(std::as_const(*net_).parameters().data(), observations.data(), keep.data(), initial.data(),
                  initial.data() + H, 1, T, hs.data(), cs.data(), false);
    return {hs, cs};
  }

  network_spec spec_;
  dqn_config dqn_;
  r2d2_config config_;
};

}  // namespace

namespace detail {

std::unique_ptr<r2d2_learner::backend> make_fused_r2d2(const network_spec& spec, const dqn_config& dqn,
                                                       const r2d2_config& config, std::uint64_t seed) {
  return std::make_unique<fused_r2d2>(spec, dqn, config, seed);
}

}  // namespace detail

}  // namespace coral::learners
