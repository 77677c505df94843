// The acting side of the built-in actor-critic: the learner's flat weights
// (flat_layout.hpp) read into plain dense layers and LSTM cells (dense.hpp),
// acting on batch rows without torch.

#include "coral/learners/mlp_policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dense.hpp"
#include "flat_layout.hpp"
#include "coral/core/error.hpp"
#include "coral/core/rng.hpp"
#include "coral/learners/blas_core.hpp"
#include "coral/learners/errors.hpp"
#include "coral/training/frame_stack.hpp"
#include "coral/training/running_moments.hpp"

namespace coral::learners {


struct mlp_policy::impl {
  impl(const network_spec& s, std::size_t rows, std::uint64_t seed)
      : spec(s), stack(rows, s.raw_obs_dim, s.frames) {
    rngs.reserve(rows);
    // A stream family of its own: envs draw from (seed, env index), and a
    // policy stream equal to its env's would correlate actions with what
    // the env drew (a one-step env was "solved" by the untrained policy).
    constexpr std::uint64_t policy_salt = 0x706F6C6963792D31ULL;  // "policy-1"
    for (std::size_t r = 0; r < rows; ++r) rngs.emplace_back(coral::env_seed{seed ^ policy_salt, r});
    // Zeros until the learner publishes its weights (it does before sampling starts).
    kernels.load(std::vector<float>(detail::actor_critic_parameter_count(s), 0.0f), s, "mlp_policy");
    const std::size_t w = std::max({kernels.actor.widest(), kernels.critic.widest(), kernels.trunk.encoder.widest(),
                                    kernels.encoder.widest()});
    if (detail::shares_encoder(s)) features.resize(detail::encoder_widths(s).back());
    state.assign(rows * s.state_dim(), 0.0f);
    states_before.assign(rows * s.state_dim(), 0.0f);
    gates.resize(4 * s.lstm);
    scratch_a.resize(w);
    scratch_b.resize(w);
    samples.resize(rows * s.continuous_dim());
    if (s.normalize_observations) {
      // The identity until the learner publishes its moments.
      normalizer.assign(2 * s.input_dim(), 0.0f);
      std::fill(normalizer.begin() + static_cast<std::ptrdiff_t>(s.input_dim()), normalizer.end(), 1.0f);
      normalized.resize(s.input_dim());
    }
  }
  network_spec spec;
  detail::actor_critic_kernels kernels;  // actor, critic, trunk (with an LSTM), log_std
  std::vector<float> state;           // rows × state_dim: each row's h then c now
  std::vector<float> states_before;   // rows × state_dim: what the row's last act() started from
  std::vector<float> gates;           // 4 × lstm scratch
  std::vector<float> samples;     // rows × continuous_dim: the unclipped Gaussian samples
  std::vector<float> normalizer;  // normalizer_block() published with the weights; empty without obs norm
  std::vector<float> normalized;  // one normalised input row
  std::vector<float> encoded = std::vector<float>(spec.input_dim());  // one input row, one-hot elements expanded
  training::frame_stack stack;
  std::vector<coral::rng> rngs;
  std::vector<float> scratch_a;
  std::vector<float> scratch_b;
  std::vector<float> features;  // the shared encoder's output (with convolutions and no LSTM)
  bool deterministic = false;
  bool use_masks = true;
};

mlp_policy::mlp_policy(const network_spec& spec, std::size_t rows, std::uint64_t seed)
    : impl_(std::make_unique<impl>(spec, rows, seed)) {}

mlp_policy::~mlp_policy() = default;

void mlp_policy::set_deterministic(bool on) noexcept { impl_->deterministic = on; }

void mlp_policy::set_use_masks(bool on) noexcept { impl_->use_masks = on; }

void mlp_policy::load_weights(std::span<const float> weights) {
  auto& m = *impl_;
  const std::size_t block = m.normalizer.size();
  if (weights.size() < block) {
    throw usage_error(fmt::format("mlp_policy: {} weights given, the normaliser alone has {}", weights.size(), block));
  }
  m.kernels.load(weights.first(weights.size() - block), m.spec, "mlp_policy");
  const auto tail = weights.last(block);
  std::copy(tail.begin(), tail.end(), m.normalizer.begin());
}

std::span<const float> mlp_policy::sampled_actions() const noexcept { return impl_->samples; }

std::span<const float> mlp_policy::recurrent_states() const noexcept { return impl_->states_before; }

void mlp_policy::act(const actors::policy_rows& rows) {
  auto& m = *impl_;
  auto& batch = rows.batch;
  const auto term = batch.terminated();
  const auto trunc = batch.truncated();
  const auto failed = batch.failed();
  const std::size_t cont = m.spec.continuous_dim();
  const std::size_t H = m.spec.lstm;
  constexpr double half_log_2pi = 0.91893853320467274178;
  const bool masked = m.use_masks && rows.masked();
  for (const auto& range : rows.ranges) {
    for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
      // A row with no agent in play (or one waiting for its turn) gets no
      // action: the env ignores it, and its state does not move.
      if (!rows.active(r)) continue;
      // The observation starts a new episode (an env reset after a failure too).
      const bool restart = term[r] != 0 || trunc[r] != 0 || failed[r] != 0;
      if (restart) m.stack.restart(r);
      m.stack.push(r, batch.observations().row(r));
      const float* x = m.stack.row(r).data();
      if (!m.spec.one_hot.empty()) {
        encode_observation(m.spec, m.stack.row(r), m.encoded);
        x = m.encoded.data();
      }
      if (!m.normalizer.empty()) {
        training::normalize_observation(m.normalizer, x, m.normalized.data());
        x = m.normalized.data();
      }
      if (H > 0) {
        // The row's own state (pool batches bring rows in any order), zeroed
        // at an episode's start; the trunk's output is the cell's new h.
        float* h = m.state.data() + static_cast<std::size_t>(r) * 2 * H;
        float* c = h + H;
        if (restart) std::fill(h, h + 2 * H, 0.0f);
        std::copy(h, h + 2 * H, m.states_before.begin() + static_cast<std::ptrdiff_t>(r * 2 * H));
        m.kernels.trunk.step(x, h, c, m.scratch_a.data(), m.scratch_b.data(), m.gates.data());
        x = h;
      } else if (!m.features.empty()) {
        // The heads' scratch is the encoder's: its output is kept apart.
        const float* f = m.kernels.encoder.apply(x, m.scratch_a.data(), m.scratch_b.data());
        std::copy(f, f + m.features.size(), m.features.begin());
        x = m.features.data();
      }
      if (!rows.values.empty()) rows.values[r] = *m.kernels.critic.apply(x, m.scratch_a.data(), m.scratch_b.data());
      const float* row_out = m.kernels.actor.apply(x, m.scratch_a.data(), m.scratch_b.data());

      auto& rng = m.rngs[r];
      double logp = 0;
      auto discrete = batch.discrete_actions().row(r);
      // A masked value's logit is −∞: it is never drawn and has no share of
      // the probability (the env guarantees each head a legal value).
      const std::uint8_t* legal = masked ? rows.action_mask(r).data() : nullptr;
      const auto allowed = [legal](std::size_t j) { return legal == nullptr || legal[j] != 0; };
      std::size_t offset = 0;
      for (std::size_t h = 0; h < m.spec.nvec.size(); ++h) {
        const auto k = static_cast<std::size_t>(m.spec.nvec[h]);
        const float* logits = row_out + offset;
        float mx = -std::numeric_limits<float>::infinity();
        std::size_t best = k;
        for (std::size_t j = 0; j < k; ++j) {
          if (allowed(offset + j) && (best == k || logits[j] > mx)) {
            mx = logits[j];
            best = j;
          }
        }
        double sum = 0;
        for (std::size_t j = 0; j < k; ++j) {
          if (allowed(offset + j)) sum += std::exp(static_cast<double>(logits[j] - mx));
        }
        std::size_t pick = best;
        if (!m.deterministic) {
          double u = rng.uniform() * sum;
          for (std::size_t j = 0; j < k; ++j) {
            if (!allowed(offset + j)) continue;
            pick = j;  // the last legal value, should rounding leave u ≥ 0
            u -= std::exp(static_cast<double>(logits[j] - mx));
            if (u < 0) break;
          }
        }
        discrete[h] = static_cast<std::int32_t>(pick);
        logp += static_cast<double>(logits[pick] - mx) - std::log(sum);
        offset += k;
      }
      auto continuous = batch.continuous_actions().row(r);
      float* sample = m.samples.data() + static_cast<std::size_t>(r) * cont;
      for (std::size_t c = 0; c < cont; ++c) {
        const double mean = row_out[offset + c];
        const double sd = std::exp(static_cast<double>(m.kernels.log_std[c]));
        sample[c] = static_cast<float>(m.deterministic ? mean : mean + sd * rng.normal());
        // The env gets the sample clipped to its bounds; the log probability
        // is the unclipped sample's, which is what the learner scores.
        continuous[c] = std::clamp(sample[c], m.spec.low[c], m.spec.high[c]);
        const double z = (static_cast<double>(sample[c]) - mean) / sd;
        logp += -0.5 * z * z - static_cast<double>(m.kernels.log_std[c]) - half_log_2pi;
      }
      if (!rows.log_probs.empty()) rows.log_probs[r] = static_cast<float>(logp);
    }
  }
}

}  // namespace coral::learners
