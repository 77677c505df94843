#pragma once
// Random batches of sequences for R2D2's learner tests
// (fused_r2d2_oracle_test.cpp, learner_backends_test.cpp): every kind of
// slot the sequence replay hands out, in one batch.

#include <cstddef>
#include <cstdint>

#include "coral/core/rng.hpp"
#include "coral/learners/network.hpp"
#include "coral/replay/sequence.hpp"

namespace coral::test {

/// A batch of `rows` sequences of `length` slots (burn-in `burn_in`) for
/// R2D2's network of `spec`, drawn from `gen`: standard normal
/// observations and rewards, initial states of scale 0.5, importance
/// weights in [0.2, 1.2), random actions; episodes that start, end
/// (terminated or truncated) and start again mid-sequence, and the last
/// row padded after a terminated step. `masked`: with action masks, a
/// random nonempty set of legal actions at every observation slot but
/// padding (none legal there).
inline replay::sequence_batch random_sequences(const learners::network_spec& spec, std::size_t rows, std::size_t length,
                                               std::size_t burn_in, coral::rng& gen, bool masked = false) {
  const std::size_t D = spec.input_dim();
  const auto actions = static_cast<std::uint64_t>(spec.nvec.front());
  replay::sequence_batch b;
  b.layout = {.length = length, .burn_in = burn_in, .overlap = burn_in, .obs_dim = D, .discrete_dim = 1,
              .state_dim = spec.state_dim()};
  b.size = rows;
  for (std::size_t i = 0; i < rows * (length + 1) * D; ++i) b.observations.push_back(static_cast<float>(gen.normal()));
  for (std::size_t i = 0; i < rows * length; ++i) b.rewards.push_back(static_cast<float>(gen.normal()));
  for (std::size_t i = 0; i < rows * spec.state_dim(); ++i) b.states.push_back(static_cast<float>(0.5 * gen.normal()));
  for (std::size_t i = 0; i < rows; ++i) b.weights.push_back(static_cast<float>(0.2 + gen.uniform()));
  for (std::size_t i = 0; i < rows; ++i) {
    const std::size_t valid = i + 1 == rows ? length - 2 : length;
    bool starts = gen.uniform() < 0.3;
    for (std::size_t t = 0; t < length; ++t) {
      std::uint8_t f = 0;
      if (t < valid) {
        f = replay::slot_valid;
        if (starts) f |= replay::slot_first;
        const double u = gen.uniform();
        starts = false;
        if (t + 1 == valid && valid < length) {
          f |= replay::slot_terminated;
        } else if (u < 0.1) {
          f |= replay::slot_terminated;
          starts = true;
        } else if (u < 0.15) {
          f |= replay::slot_truncated;
          starts = true;
        }
      }
      b.flags.push_back(f);
      b.actions.push_back(static_cast<std::int32_t>(gen.below(actions)));
    }
  }
  b.keys.resize(rows);
  if (masked) {
    const auto A = static_cast<std::size_t>(actions);
    b.layout.mask_dim = A;
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j <= length; ++j) {
        const bool padding = i + 1 == rows && j + 2 > length;  // the padded row's last slots and the one after
        const std::uint64_t legal = padding ? 0 : 1 + gen.below((std::uint64_t{1} << A) - 1);
        for (std::size_t a = 0; a < A; ++a) b.masks.push_back(static_cast<std::uint8_t>((legal >> a) & 1U));
      }
    }
  }
  return b;
}

}  // namespace coral::test
