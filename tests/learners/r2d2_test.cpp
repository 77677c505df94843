// R2D2's learner and acting policy: the policy's kernels against the
// learner's torch unroll, burn-in without gradient, priorities written back.

#include "coral/learners/r2d2.hpp"
#include "coral/learners/r2d2_learner.hpp"
#include "coral/learners/r2d2_policy.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "coral/core/error.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/registry.hpp"
#include "coral/core/rng.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/r2d2_math.hpp"
#include "coral/replay/sequence.hpp"
#include "../support/test_envs.hpp"
#include "coral/learners/ppo.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/train.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/errors.hpp"

using namespace coral::learners;
using namespace coral::training;
namespace actors = coral::actors;
namespace envs = coral::envs;
namespace replay = coral::replay;

namespace {

network_spec cartpole_spec() {
  auto e = envs::registry::global().make("cartpole", {}, 0, 0);
  auto spec = network_spec::from_spaces(e->observation_space(), e->action_space(), {16}, 1);
  spec.lstm = 8;
  return spec;
}

std::vector<float> random_weights(std::size_t n, std::uint64_t seed) {
  coral::rng rng(seed);
  std::vector<float> w(n);
  for (auto& x : w) x = static_cast<float>(rng.uniform(-0.6, 0.6));
  return w;
}

/// A batch of `size` random sequences of `length` slots (burn-in `burn_in`),
/// all valid, slot 0 starting an episode in the even ones.
replay::sequence_batch random_batch(const network_spec& spec, std::size_t size, std::size_t length,
                                    std::size_t burn_in, std::uint64_t seed) {
  replay::sequence_batch b;
  b.layout = {.length = length, .burn_in = burn_in, .overlap = burn_in, .obs_dim = spec.input_dim(),
              .discrete_dim = 1, .state_dim = spec.state_dim()};
  b.size = size;
  coral::rng rng(seed);
  b.observations.resize(size * (length + 1) * spec.input_dim());
  for (auto& x : b.observations) x = static_cast<float>(rng.uniform(-1.0, 1.0));
  b.actions.resize(size * length);
  for (auto& a : b.actions) a = static_cast<std::int32_t>(rng.below(2));
  b.rewards.resize(size * length);
  for (auto& r : b.rewards) r = static_cast<float>(rng.uniform(0.0, 1.0));
  b.flags.assign(size * length, replay::slot_valid);
  for (std::size_t i = 0; i < size; i += 2) b.flags[i * length] |= replay::slot_first;
  b.states.resize(size * spec.state_dim());
  for (std::size_t i = 0; i < size; ++i) {
    if (i % 2 == 1) {
      for (std::size_t j = 0; j < spec.state_dim(); ++j) b.states[i * spec.state_dim() + j] = static_cast<float>(rng.uniform(-0.5, 0.5));
    }
  }
  b.weights.assign(size, 1.0f);
  b.weights[1] = 0.5f;
  b.keys.resize(size);
  return b;
}

}  // namespace

TEST_CASE("R2D2's policy computes the Q values of the learner's network, state carried and reset per row",
          "[learners][r2d2]") {
  coral::test::register_test_envs();
  const auto spec = cartpole_spec();
  dqn_config d;
  d.epsilon_base = 1e-9;  // greedy after exploration...
  d.exploration_steps = 0;  // ...which is over at once
  r2d2_config rc;
  r2d2_learner learner(spec, d, rc, 1);
  const auto w = random_weights(r2d2_parameter_count(spec), 5);
  learner_state state;  // the rest (counters, normalisers) as a fresh learner has them
  state.parameters = w;
  state.adam_m.assign(w.size(), 0.0f);
  state.adam_v.assign(w.size(), 0.0f);
  learner.restore(state, w);
  constexpr std::size_t rows = 3, steps = 10;
  r2d2_policy policy(spec, rows, 7, d, 0);
  policy.load_weights(learner.weights());
  auto e = envs::registry::global().make("cartpole", {}, 0, 0);
  envs::env_batch batch(rows, e->observation_space(), e->action_space());
  coral::rng rng(9);
  std::vector<float> obs(steps * rows * 4);
  for (auto& x : obs) x = static_cast<float>(rng.uniform(-1.0, 1.0));
  std::vector<std::uint8_t> starts(steps * rows, 0);
  starts[4 * rows + 1] = 1;  // row 1 starts an episode at step 4
  std::vector<float> values(steps * rows);
  std::vector<std::int32_t> actions(steps * rows);
  std::vector<float> lp(rows), v(rows);
  for (std::size_t t = 0; t < steps; ++t) {
    for (std::size_t r = 0; r < rows; ++r) {
      auto o = batch.observations().row(r);
      std::copy_n(obs.begin() + static_cast<std::ptrdiff_t>((t * rows + r) * 4), 4, o.begin());
      batch.terminated()[r] = starts[t * rows + r];
    }
    // Rows one at a time, in reverse: each reads its own state.
    for (std::uint32_t r = rows; r-- > 0;) {
      const actors::row_range one{r, 1};
      policy.act({batch, std::span(&one, 1), lp, v});
    }
    for (std::size_t r = 0; r < rows; ++r) {
      values[t * rows + r] = v[r];
      actions[t * rows + r] = batch.discrete_actions().row(r)[0];
    }
  }
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<float> row_obs;
    std::vector<std::uint8_t> row_resets;
    for (std::size_t t = 0; t < steps; ++t) {
      row_obs.insert(row_obs.end(), obs.begin() + static_cast<std::ptrdiff_t>((t * rows + r) * 4),
                     obs.begin() + static_cast<std::ptrdiff_t>((t * rows + r) * 4 + 4));
      row_resets.push_back(starts[t * rows + r]);
    }
    const auto q = learner.q_values(row_obs, row_resets);
    REQUIRE(q.size() == steps * 2);
    for (std::size_t t = 0; t < steps; ++t) {
      const float best = std::max(q[2 * t], q[2 * t + 1]);
      CHECK(values[t * rows + r] == Approx(best).margin(1e-5));
      CHECK(actions[t * rows + r] == (q[2 * t + 1] > q[2 * t] ? 1 : 0));
    }
  }
  // The state the last act of row 1 started from is the unroll's after its steps 4..8.
  std::vector<float> tail_obs;
  for (std::size_t t = 4; t < steps - 1; ++t) {
    tail_obs.insert(tail_obs.end(), obs.begin() + static_cast<std::ptrdiff_t>((t * rows + 1) * 4),
                    obs.begin() + static_cast<std::ptrdiff_t>((t * rows + 1) * 4 + 4));
  }
  const std::vector<float> zero(spec.state_dim(), 0.0f);
  const auto expected = learner.state_after(tail_obs, std::vector<std::uint8_t>(steps - 5, 0), zero);
  const auto got = policy.recurrent_states().subspan(spec.state_dim(), spec.state_dim());
  for (std::size_t j = 0; j < spec.state_dim(); ++j) CHECK(got[j] == Approx(expected[j]).margin(1e-5));
}

TEST_CASE("the burn-in gives the state and no gradient: an update equals one from the burned-in state",
          "[learners][r2d2]") {
  coral::test::register_test_envs();
  const auto spec = cartpole_spec();
  dqn_config d;
  d.n_step = 2;
  d.gamma = 0.9;
  d.learning_rate = 1e-2;
  r2d2_config rc;
  constexpr std::size_t size = 4, length = 9, burn_in = 3;
  auto with_burn_in = random_batch(spec, size, length, burn_in, 21);
  // No sequence starts an episode after slot 0 here, so the state the burn-in
  // leaves is the unroll of slots 0..2 from the stored state.
  r2d2_learner a(spec, d, rc, 3);
  r2d2_learner b(spec, d, rc, 3);
  const std::size_t D = spec.input_dim(), S = spec.state_dim(), L2 = length - burn_in;
  auto without = random_batch(spec, size, L2, 0, 22);
  for (std::size_t i = 0; i < size; ++i) {
    const auto* o = with_burn_in.observations.data() + i * (length + 1) * D;
    std::vector<std::uint8_t> resets(burn_in, 0);
    resets[0] = (with_burn_in.flags[i * length] & replay::slot_first) != 0 ? 1 : 0;
    const auto st = a.state_after(std::span<const float>(o, burn_in * D), resets,
                                  std::span<const float>(with_burn_in.states.data() + i * S, S));
    std::copy(st.begin(), st.end(), without.states.begin() + static_cast<std::ptrdiff_t>(i * S));
    std::copy(o + burn_in * D, o + (length + 1) * D,
              without.observations.begin() + static_cast<std::ptrdiff_t>(i * (L2 + 1) * D));
    for (std::size_t t = 0; t < L2; ++t) {
      without.actions[i * L2 + t] = with_burn_in.actions[i * length + burn_in + t];
      without.rewards[i * L2 + t] = with_burn_in.rewards[i * length + burn_in + t];
      without.flags[i * L2 + t] = with_burn_in.flags[i * length + burn_in + t];
    }
  }
  without.weights = with_burn_in.weights;
  const auto sa = a.update(with_burn_in);
  const auto sb = b.update(without);
  CHECK(sa.base.td_loss == Approx(sb.base.td_loss).epsilon(1e-5));
  const auto wa = a.weights(), wb = b.weights();
  REQUIRE(wa.size() == wb.size());
  double most = 0;
  for (std::size_t j = 0; j < wa.size(); ++j) most = std::max(most, static_cast<double>(std::abs(wa[j] - wb[j])));
  CHECK(most < 1e-5);
  REQUIRE(with_burn_in.priorities.size() == size);
  for (std::size_t i = 0; i < size; ++i) {
    CHECK(with_burn_in.priorities[i] > 0.0f);
    CHECK(with_burn_in.priorities[i] == Approx(without.priorities[i]).epsilon(1e-4));
  }
  CHECK(sa.q_max >= sa.base.mean_q);
  CHECK(sa.grad_norm > 0);
}

TEST_CASE("R2D2 refuses what it cannot train: no LSTM, a batch of another layout, a non-Discrete action space",
          "[learners][r2d2][errors]") {
  coral::test::register_test_envs();
  auto spec = cartpole_spec();
  dqn_config d;
  r2d2_config rc;
  r2d2_learner learner(spec, d, rc, 1);
  auto batch = random_batch(spec, 2, 6, 2, 1);
  batch.layout.state_dim = 4;
  CHECK_THROWS_AS(learner.update(batch), coral::usage_error);
  auto plain = spec;
  plain.lstm = 0;
  CHECK_THROWS_AS(r2d2_learner(plain, d, rc, 1), coral::usage_error);
  auto e = envs::registry::global().make("test-target", {}, 0, 0);
  auto box = network_spec::from_spaces(e->observation_space(), e->action_space(), {16}, 1);
  box.lstm = 8;
  CHECK_THROWS_AS(r2d2_policy(box, 2, 1, d, 0), coral::config_error);
}

namespace {

/// R2D2's network on 4 inputs with 3 actions, for the masked cases.
network_spec three_action_spec() {
  auto spec = network_spec::from_spaces(envs::space::box({4}, -1.0F, 1.0F), envs::space::discrete(3), {16}, 1);
  spec.lstm = 8;
  return spec;
}

/// Gives `learner` (of `spec`) the same random weights, drawn from `seed`,
/// in its online and target networks.
r2d2_learner& with_random_weights(r2d2_learner& learner, const network_spec& spec, std::uint64_t seed) {
  const auto w = random_weights(r2d2_parameter_count(spec), seed);
  learner_state state;
  state.parameters = w;
  state.adam_m.assign(w.size(), 0.0f);
  state.adam_v.assign(w.size(), 0.0f);
  learner.restore(state, w);
  return learner;
}

}  // namespace

TEST_CASE("R2D2's policy acts for active rows only: an inactive row keeps its state, its agent's end zeroes it",
          "[learners][r2d2][multi-agent]") {
  const auto spec = three_action_spec();
  dqn_config d;
  r2d2_config rc;
  r2d2_learner learner(spec, d, rc, 1);
  with_random_weights(learner, spec, 5);
  constexpr std::size_t rows = 3, steps = 12;
  r2d2_policy policy(spec, rows, 7, d, 0, rows);  // one env of three agent slots
  policy.load_weights(learner.weights());
  policy.set_deterministic(true);
  envs::env_batch batch(rows, envs::space::box({4}, -1.0F, 1.0F), envs::space::discrete(3));
  // Row 0 always plays. Row 1 waits at steps 3-6 and its agent ends at step
  // 5, while it waits; a new one plays from step 7. Row 2 waits at steps 2-4
  // and plays on with the same agent.
  const auto active = [](std::size_t r, std::size_t t) {
    return !((r == 1 && t >= 3 && t <= 6) || (r == 2 && t >= 2 && t <= 4));
  };
  coral::rng rng(9);
  std::vector<std::vector<float>> acted_obs(rows);          // per row, the observations it acted on
  std::vector<std::vector<std::uint8_t>> acted_resets(rows);
  std::vector<std::vector<std::int32_t>> acted_actions(rows);
  std::vector<std::vector<float>> acted_values(rows);
  std::vector<float> lp(rows), v(rows);
  const actors::row_range all{0, rows};
  for (std::size_t t = 0; t < steps; ++t) {
    for (std::size_t r = 0; r < rows; ++r) {
      const bool on = active(r, t);
      batch.active()[r] = on ? 1 : 0;
      batch.terminated()[r] = r == 1 && t == 5 ? 1 : 0;
      auto o = batch.observations().row(r);
      for (auto& x : o) x = on ? static_cast<float>(rng.uniform(-1.0, 1.0)) : std::nanf("");
      batch.discrete_actions().row(r)[0] = 7;  // what an inactive row keeps
      v[r] = -99.0f;
    }
    std::vector<float> before(policy.recurrent_states().begin(), policy.recurrent_states().end());
    policy.act({batch, std::span(&all, 1), lp, v});
    for (std::size_t r = 0; r < rows; ++r) {
      INFO("row " << r << " step " << t);
      const auto recorded = policy.recurrent_states().subspan(r * spec.state_dim(), spec.state_dim());
      if (!active(r, t)) {
        CHECK(batch.discrete_actions().row(r)[0] == 7);
        CHECK(v[r] == -99.0f);
        // Its recorded state is still the one its last act started from.
        CHECK(std::equal(recorded.begin(), recorded.end(), before.begin() + static_cast<std::ptrdiff_t>(r * spec.state_dim())));
        continue;
      }
      const auto o = batch.observations().row(r);
      acted_obs[r].insert(acted_obs[r].end(), o.begin(), o.end());
      acted_resets[r].push_back(static_cast<std::uint8_t>(acted_resets[r].empty() || (r == 1 && t == 7) ? 1 : 0));
      acted_actions[r].push_back(batch.discrete_actions().row(r)[0]);
      acted_values[r].push_back(v[r]);
      for (const float x : recorded) CHECK(std::isfinite(x));  // no inactive row's NaN ever reached it
    }
  }
  // Each row's actions are the greedy ones of an unroll over its own acted
  // observations only: row 1 from zeros again where its new agent starts,
  // row 2 carrying its state across the steps it waited.
  for (std::size_t r = 0; r < rows; ++r) {
    INFO("row " << r);
    const auto q = learner.q_values(acted_obs[r], acted_resets[r]);
    for (std::size_t k = 0; k < acted_actions[r].size(); ++k) {
      const float* qk = q.data() + 3 * k;
      const auto best = static_cast<std::int32_t>(std::max_element(qk, qk + 3) - qk);
      CHECK(acted_actions[r][k] == best);
      CHECK(acted_values[r][k] == Approx(qk[best]).margin(1e-5));
    }
  }
  CHECK(acted_actions[1].size() == steps - 4);
  CHECK(acted_actions[2].size() == steps - 3);
}

TEST_CASE("R2D2's policy never takes a masked action, greedy or exploring, and takes the best legal one",
          "[learners][r2d2][multi-agent][masks]") {
  const auto spec = three_action_spec();
  const bool exploring = GENERATE(false, true);
  CAPTURE(exploring);
  dqn_config d;
  d.epsilon_base = exploring ? 1.0 : 1e-9;  // every action drawn, or none
  d.exploration_steps = 0;
  r2d2_config rc;
  r2d2_learner learner(spec, d, rc, 1);
  with_random_weights(learner, spec, 6);
  constexpr std::size_t rows = 4, steps = 200;
  r2d2_policy policy(spec, rows, 3, d, 0, 2);
  policy.load_weights(learner.weights());
  auto unmasked = d;
  unmasked.action_masks = false;  // --no-action-masks
  r2d2_policy ignoring(spec, rows, 3, unmasked, 0, 2);
  ignoring.load_weights(learner.weights());
  envs::env_batch batch(rows, envs::space::box({4}, -1.0F, 1.0F), envs::space::discrete(3));
  envs::env_batch same(rows, envs::space::box({4}, -1.0F, 1.0F), envs::space::discrete(3));
  batch.declare_action_masks();
  same.declare_action_masks();
  coral::rng rng(10);
  std::vector<std::vector<float>> row_obs(rows);
  std::vector<std::vector<std::uint8_t>> row_masks(rows);
  std::vector<std::vector<std::int32_t>> row_actions(rows);
  std::size_t illegal_when_ignored = 0;
  const actors::row_range all{0, rows};
  for (std::size_t t = 0; t < steps; ++t) {
    for (std::size_t r = 0; r < rows; ++r) {
      for (auto& x : batch.observations().row(r)) x = static_cast<float>(rng.uniform(-1.0, 1.0));
      std::ranges::copy(batch.observations().row(r), same.observations().row(r).begin());
      const auto legal = 1 + rng.below(6);  // one or two of the three actions, never none
      for (std::size_t a = 0; a < 3; ++a) {
        batch.action_masks().row(r)[a] = static_cast<std::uint8_t>((legal >> a) & 1U);
        same.action_masks().row(r)[a] = batch.action_masks().row(r)[a];
      }
    }
    policy.act({batch, std::span(&all, 1), {}, {}});
    ignoring.act({same, std::span(&all, 1), {}, {}});
    for (std::size_t r = 0; r < rows; ++r) {
      const auto a = static_cast<std::size_t>(batch.discrete_actions().row(r)[0]);
      REQUIRE(a < 3);
      REQUIRE(batch.action_masks().row(r)[a] == 1);
      const auto b = static_cast<std::size_t>(same.discrete_actions().row(r)[0]);
      illegal_when_ignored += same.action_masks().row(r)[b] == 0 ? 1 : 0;
      const auto o = batch.observations().row(r);
      row_obs[r].insert(row_obs[r].end(), o.begin(), o.end());
      const auto m = batch.action_masks().row(r);
      row_masks[r].insert(row_masks[r].end(), m.begin(), m.end());
      row_actions[r].push_back(static_cast<std::int32_t>(a));
    }
  }
  // The mask is what keeps the actions legal: without it some are not.
  CHECK(illegal_when_ignored > 0);
  if (exploring) return;
  // Greedy: the legal action of largest Q.
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<std::uint8_t> resets(steps, 0);
    resets[0] = 1;
    const auto q = learner.q_values(row_obs[r], resets);
    for (std::size_t t = 0; t < steps; ++t) {
      std::int32_t best = -1;
      for (std::int32_t a = 0; a < 3; ++a) {
        if (row_masks[r][t * 3 + static_cast<std::size_t>(a)] != 0 && (best < 0 || q[t * 3 + a] > q[t * 3 + best])) best = a;
      }
      CHECK(row_actions[r][t] == best);
    }
  }
}

TEST_CASE("R2D2's double-Q bootstrap maximises over the legal actions only, on both backends",
          "[learners][r2d2][multi-agent][masks]") {
  const auto spec = three_action_spec();
  const std::string backend = GENERATE("fused", "torch");
  CAPTURE(backend);
  dqn_config d;
  d.n_step = 2;
  d.gamma = 0.9;
  d.backend = backend == "torch" ? network_backend::torch : network_backend::fused;
  r2d2_config rc;
  rc.seq_len = 6;
  rc.burn_in = 0;
  constexpr std::size_t L = 6, D = 4, A = 3;
  // One sequence from an episode's start: the stored state is zeros, and
  // the target network equals the online one before the first update, so
  // the learner's Q values are learner.q_values() of its observations.
  replay::sequence_batch b;
  b.layout = {.length = L, .burn_in = 0, .overlap = 0, .obs_dim = D, .discrete_dim = 1,
              .state_dim = spec.state_dim(), .mask_dim = A};
  b.size = 1;
  coral::rng rng(31);
  b.observations.resize((L + 1) * D);
  for (auto& x : b.observations) x = static_cast<float>(rng.uniform(-1.0, 1.0));
  b.actions.resize(L);
  for (auto& a : b.actions) a = static_cast<std::int32_t>(rng.below(A));
  b.rewards.resize(L);
  for (auto& r : b.rewards) r = static_cast<float>(rng.uniform(-1.0, 1.0));
  b.flags.assign(L, replay::slot_valid);
  b.flags[0] |= replay::slot_first;
  b.states.assign(spec.state_dim(), 0.0f);
  b.weights = {1.0f};
  b.keys.resize(1);
  std::vector<std::uint8_t> resets(L + 1, 0);
  resets[0] = 1;
  r2d2_learner reference(spec, d, rc, 1);
  const auto q = with_random_weights(reference, spec, 8).q_values(b.observations, resets);
  // Each observation slot's mask leaves out its greedy action: a bootstrap
  // over every action would differ from one over the legal ones.
  b.masks.assign((L + 1) * A, 1);
  std::vector<float> boot_legal(L + 1), boot_all(L + 1);
  for (std::size_t j = 0; j <= L; ++j) {
    const float* qj = q.data() + j * A;
    const auto greedy = static_cast<std::size_t>(std::max_element(qj, qj + A) - qj);
    b.masks[j * A + greedy] = 0;
    boot_all[j] = qj[greedy];
    std::size_t best = A;
    for (std::size_t a = 0; a < A; ++a) {
      if (a != greedy && (best == A || qj[a] > qj[best])) best = a;
    }
    boot_legal[j] = qj[best];
  }
  const auto priority_with = [&](const std::vector<float>& bootstrap) {
    std::vector<float> targets(L), mask(L), td(L);
    nstep_sequence_targets(b.rewards, b.flags, bootstrap,
                           {.gamma = d.gamma, .n = d.n_step, .eps = rc.rescale_epsilon, .burn_in = 0}, targets, mask);
    for (std::size_t t = 0; t < L; ++t) td[t] = targets[t] - q[t * A + static_cast<std::size_t>(b.actions[t])];
    return sequence_priority(td, mask, rc.priority_eta);
  };
  const float legal = priority_with(boot_legal), every = priority_with(boot_all);
  REQUIRE(std::abs(legal - every) > 1e-3f * std::abs(every));

  auto masked = b;
  r2d2_learner learner(spec, d, rc, 1);
  (void)with_random_weights(learner, spec, 8).update(masked);
  REQUIRE(masked.priorities.size() == 1);
  CHECK(masked.priorities[0] == Approx(legal).epsilon(1e-4));
  // --no-action-masks: the same batch bootstraps over every action.
  auto ignored = b;
  auto off = d;
  off.action_masks = false;
  r2d2_learner unmasked_learner(spec, off, rc, 1);
  (void)with_random_weights(unmasked_learner, spec, 8).update(ignored);
  CHECK(ignored.priorities[0] == Approx(every).epsilon(1e-4));
}
