// DQN's updates on the fused engine (torch-free): the torch twin's update
// (dqn_torch.cpp) — double DQN, importance weights scaled to a largest of
// 1, the Huber loss, clipping, Adam, the target copied every target_update
// updates — computed by fused::dqn_step over buffers allocated once. Its
// state is the twin's: checkpoints move between the backends.

#include <algorithm>
#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/learners/blas_core.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/fused/q_network.hpp"
#include "fused_q_backend.hpp"
#include "learner_backends.hpp"

namespace coral::learners {
namespace {

using fused_dqn_base = detail::fused_q_backend<dqn_learner::backend, fused::q_network>;

class fused_dqn final : public fused_dqn_base {
 public:
  fused_dqn(const network_spec& spec, const dqn_config& config, std::uint64_t seed)
      : fused_dqn_base(network(q_network_widths(spec, ""), config.batch_size, spec.conv),
                       fused::init_q_network(q_network_widths(spec, ""), seed, spec.conv), config.adam_epsilon,
                       "dqn_learner"),
        config_(config) {
    report_blas_setup();
  }

  training::update_stats update(replay::sample_batch& b) override {
    const auto started = std::chrono::steady_clock::now();
    const std::size_t B = b.size, D = net_->input_dim();
    if (b.observations.size() != B * D || b.next_observations.size() != B * D || b.discrete.size() != B ||
        b.returns.size() != B || b.discounts.size() != B || b.weights.size() != B ||
        (!b.next_masks.empty() && b.next_masks.size() != B * net_->widths().back())) {
      throw usage_error(fmt::format("dqn_learner: a batch of {} draws with {} observation floats does not fit the "
                                    "network (obs {})",
                                    B, b.observations.size(), D));
    }
    // A batch larger than --replay-batch (a caller's own) gets buffers of its size, once.
    if (B > net_->max_rows()) enlarge(network(net_->widths(), B, net_->conv()));
    b.td_errors.resize(B);
    const fused::dqn_batch batch{.rows = B,
                                 .observations = b.observations,
                                 .next_observations = b.next_observations,
                                 .actions = b.discrete,
                                 .returns = b.returns,
                                 .discounts = b.discounts,
                                 .weights = b.weights,
                                 .next_masks = config_.action_masks ? std::span<const std::uint8_t>(b.next_masks)
                                                                    : std::span<const std::uint8_t>{}};
    const auto st = fused::dqn_step(*net_, adam_, batch, config_, b.td_errors);
    count_update(config_.target_update);
    training::update_stats out;
    out.td_loss = st.td_loss;
    out.mean_q = st.mean_q;
    out.mean_abs_td = st.mean_abs_td;
    out.learning_rate = config_.learning_rate;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return out;
  }

 private:
  /// A Q-network of `widths` and `conv` with buffers for `rows` transitions (at least one).
  static std::unique_ptr<fused::q_network> network(std::span<const std::size_t> widths, std::size_t rows,
                                                   const conv_spec& conv) {
    return std::make_unique<fused::q_network>(widths, std::max<std::size_t>(rows, 1), conv);
  }

  dqn_config config_;
};

}  // namespace

namespace detail {

std::unique_ptr<dqn_learner::backend> make_fused_dqn(const network_spec& spec, const dqn_config& config,
                                                     std::uint64_t seed) {
  return std::make_unique<fused_dqn>(spec, config, seed);
}

}  // namespace detail

}  // namespace coral::learners
