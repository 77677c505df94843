#include "coral/replay/replay_buffer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/detail/divider.hpp"
#include "coral/replay/detail/key_kernels.hpp"
#include "coral/replay/errors.hpp"
#include "coral/replay/nstep_assembler.hpp"
#include "coral/replay/replay_actor.hpp"

using coral::rng;
using coral::replay::nstep_assembler;
using coral::replay::nstep_config;
using coral::replay::replay_buffer;
using coral::replay::replay_config;
using coral::replay::sample_key;
using coral::replay::sampled_batch;
using coral::replay::transition;
namespace rm = coral::replay::errors;

namespace {

replay_config one_step(std::size_t capacity, std::size_t streams = 1) {
  replay_config c;
  c.capacity = capacity;
  c.num_streams = streams;
  c.obs_dim = 1;
  c.n_step = 1;
  c.alpha = 1.0;
  c.epsilon = 0.5;
  return c;
}

/// Inserts a one-step transition with observation `value`; when `last`, its
/// final-observation frame follows, so it is complete at once.
void insert_one(replay_buffer& b, std::size_t stream, float value, bool last) {
  const float next = value + 0.5f;
  const std::int32_t action = static_cast<std::int32_t>(value);
  transition t;
  t.observation = {&value, 1};
  t.discrete_action = {&action, 1};
  t.n_step_return = value;
  t.discount = last ? 0.0f : 0.9f;
  t.steps = 1;
  t.next_observation = {&next, 1};
  t.last_of_episode = last;
  b.insert(stream, t);
}

}  // namespace

TEST_CASE("a transition can be sampled only once its bootstrap observation is stored", "[replay][buffer]") {
  replay_buffer b(one_step(8));
  insert_one(b, 0, 1.0f, false);
  CHECK(b.size() == 0);
  CHECK_FALSE(b.sampleable(0));
  insert_one(b, 0, 2.0f, false);
  CHECK(b.size() == 1);
  CHECK(b.sampleable(0));
  CHECK(b.next_observation(0)[0] == 2.0f);  // o_{t+1} is the next slot's observation, not a copy
  insert_one(b, 0, 3.0f, true);  // ends the episode: the frame 3.5 follows
  CHECK(b.size() == 3);
  CHECK(b.next_observation(2)[0] == 3.5f);
  CHECK_FALSE(b.sampleable(3));  // the frame itself is never sampled
  CHECK(b.inserts() == 4);
}

TEST_CASE("the buffer wraps around its capacity, keeping the newest items", "[replay][buffer]") {
  replay_buffer b(one_step(16));
  for (int i = 0; i < 50; ++i) insert_one(b, 0, static_cast<float>(i), false);
  // 16 slots hold items 34 .. 49; the newest waits for its successor.
  CHECK(b.size() == 15);
  std::set<float> held;
  for (std::size_t s = 0; s < 16; ++s) held.insert(b.observation(s)[0]);
  CHECK(held.size() == 16);
  CHECK(*held.begin() == 34.0f);
  CHECK(*held.rbegin() == 49.0f);
  for (std::size_t s = 0; s < 16; ++s) {
    if (b.sampleable(s)) CHECK(b.next_observation(s)[0] == b.observation(s)[0] + 1.0f);
  }
  CHECK(b.total_priority() == Approx(15.0));  // alpha 1, every new item at priority 1
}

TEST_CASE("uniform sampling covers every sampleable slot of a wrapped ring and nothing else", "[replay][buffer][uniform]") {
  replay_buffer b(one_step(64, 2));
  for (int i = 0; i < 100; ++i) {
    insert_one(b, 0, static_cast<float>(i), i % 7 == 6);
    insert_one(b, 1, static_cast<float>(1000 + i), i % 5 == 4);
  }
  rng r(3);
  sampled_batch out;
  std::map<std::size_t, int> counts;
  for (int round = 0; round < 400; ++round) {
    b.sample_uniform(r, 32, out);
    for (std::size_t i = 0; i < out.keys.size(); ++i) {
      REQUIRE(b.sampleable(out.keys[i].slot));
      CHECK(out.weights[i] == 1.0f);
      ++counts[out.keys[i].slot];
    }
  }
  std::size_t sampleable = 0;
  for (std::size_t s = 0; s < 64; ++s) sampleable += b.sampleable(s) ? 1 : 0;
  CHECK(sampleable == b.size());
  CHECK(counts.size() == sampleable);
  // 12,800 draws over about 50 slots: each expected ~250 times.
  for (const auto& [slot, count] : counts) CHECK(count > 150);
}

TEST_CASE("prioritized sampling follows the priorities (chi-square, fixed seed)", "[replay][buffer][prioritized]") {
  constexpr std::size_t items = 64;
  replay_config c = one_step(2 * items);
  c.alpha = 0.7;
  replay_buffer b(c);
  for (std::size_t i = 0; i < items; ++i) insert_one(b, 0, static_cast<float>(i), true);
  REQUIRE(b.size() == items);
  // Priorities 1 .. 64 (|td| + epsilon 0.5) on the transitions (even slots).
  std::vector<sample_key> keys;
  std::vector<float> td;
  for (std::size_t i = 0; i < items; ++i) {
    keys.push_back({2 * i, b.generation(2 * i)});
    td.push_back(static_cast<float>(i) + 0.5f);
  }
  REQUIRE(b.update_priorities(keys, td) == items);
  double mass = 0.0;
  for (std::size_t i = 0; i < items; ++i) mass += std::pow(static_cast<double>(i + 1), 0.7);
  CHECK(b.total_priority() == Approx(mass));

  rng r(2024);
  sampled_batch out;
  std::vector<double> observed(items, 0.0);
  constexpr int rounds = 800;
  constexpr std::size_t batch = 250;
  for (int round = 0; round < rounds; ++round) {
    b.sample_prioritized(r, batch, 0.4, out);
    for (const auto& key : out.keys) {
      REQUIRE(key.slot % 2 == 0);
      observed[key.slot / 2] += 1.0;
    }
  }
  double chi_square = 0.0;
  for (std::size_t i = 0; i < items; ++i) {
    const double expected = rounds * batch * std::pow(static_cast<double>(i + 1), 0.7) / mass;
    chi_square += (observed[i] - expected) * (observed[i] - expected) / expected;
  }
  // 63 degrees of freedom: the 0.999 quantile of chi-square(63) is 103.4.
  // Stratification only lowers the statistic; the seed is fixed, so this is
  // deterministic, and a biased sampler (say, priorities without alpha)
  // lands in the thousands.
  INFO("chi-square = " << chi_square);
  CHECK(chi_square < 103.4);
}

TEST_CASE("importance weights are (N P(i))^-beta normalised so the largest is 1", "[replay][buffer][prioritized]") {
  for (const double alpha : {1.0, 0.5}) {
    replay_config c = one_step(6);
    c.alpha = alpha;
    replay_buffer b(c);
    for (int i = 0; i < 3; ++i) insert_one(b, 0, static_cast<float>(i), true);
    // Transitions in slots 0, 2, 4 with priorities 1, 2, 4.
    const std::vector<sample_key> keys{{0, b.generation(0)}, {2, b.generation(2)}, {4, b.generation(4)}};
    REQUIRE(b.update_priorities(keys, std::vector<float>{0.5f, 1.5f, 3.5f}) == 3);
    // By hand: leaves p^alpha; P(i) = leaf / Σ; w = (leaf / min leaf)^-beta.
    const double l0 = 1.0, l1 = std::pow(2.0, alpha), l2 = std::pow(4.0, alpha);
    const double total = l0 + l1 + l2;
    const std::map<std::size_t, std::pair<double, double>> expected{
        {0, {l0 / total, 1.0}},
        {2, {l1 / total, std::pow(l1 / l0, -0.5)}},
        {4, {l2 / total, std::pow(l2 / l0, -0.5)}}};
    rng r(9);
    sampled_batch out;
    std::set<std::size_t> seen;
    for (int round = 0; round < 50; ++round) {
      b.sample_prioritized(r, 8, 0.5, out);
      for (std::size_t i = 0; i < out.keys.size(); ++i) {
        const auto& [p, w] = expected.at(out.keys[i].slot);
        CHECK(out.probabilities[i] == Approx(p));
        CHECK(out.weights[i] == Approx(w));
        seen.insert(out.keys[i].slot);
      }
    }
    CHECK(seen.size() == 3);
  }
  // alpha 1, beta 0.5: weights 1, 1/sqrt(2), 1/2.
  CHECK(std::pow(2.0, -0.5) == Approx(0.70710678));
}

TEST_CASE("a priority update for a slot overwritten since it was sampled is ignored", "[replay][buffer][prioritized]") {
  replay_buffer b(one_step(8));
  for (int i = 0; i < 4; ++i) insert_one(b, 0, static_cast<float>(i), true);  // fills all 8 slots
  rng r(1);
  sampled_batch out;
  b.sample_prioritized(r, 4, 0.4, out);
  const std::vector<sample_key> stale = out.keys;
  for (int i = 0; i < 4; ++i) insert_one(b, 0, static_cast<float>(10 + i), true);  // overwrites all 8
  const double before = b.total_priority();
  CHECK(b.update_priorities(stale, std::vector<float>(stale.size(), 100.0f)) == 0);
  CHECK(b.total_priority() == before);
  CHECK(b.max_priority() == 1.0);
  for (const auto& key : stale) CHECK(b.priority(key.slot) == 1.0);
  // The same update with fresh keys applies.
  b.sample_prioritized(r, 4, 0.4, out);
  CHECK(b.update_priorities(out.keys, std::vector<float>(out.keys.size(), 100.0f)) == out.keys.size());
  CHECK(b.max_priority() == 100.5);
  // New items get the largest priority seen.
  insert_one(b, 0, 20.0f, true);
  CHECK(b.priority(0) == 100.5);
}

TEST_CASE("a priority update with a TD error that is not a finite number is refused whole, naming the draw",
          "[replay][buffer][errors]") {
  replay_buffer b(one_step(8));
  for (int i = 0; i < 4; ++i) insert_one(b, 0, static_cast<float>(i), true);
  rng r(1);
  sampled_batch out;
  b.sample_prioritized(r, 4, 0.4, out);
  const double before = b.total_priority();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  CHECK_THROWS_MATCHES(b.update_priorities(out.keys, std::vector<float>{1.0f, 2.0f, nan, 3.0f}), coral::config_error,
                       Catch::Message("replay_buffer: the TD error of draw 2 is nan; it must be a finite number"));
  CHECK_THROWS_MATCHES(b.update_priorities(out.keys, std::vector<float>{-inf, 2.0f, 1.0f, 3.0f}), coral::config_error,
                       Catch::Message("replay_buffer: the TD error of draw 0 is -inf; it must be a finite number"));
  // Nothing applied, not even the draws before the bad one.
  CHECK(b.total_priority() == before);
  CHECK(b.max_priority() == 1.0);
  for (const auto& key : out.keys) CHECK(b.priority(key.slot) == 1.0);
  // The largest finite TD error is taken.
  CHECK(b.update_priorities(out.keys, std::vector<float>(4, std::numeric_limits<float>::max())) == 4);
  CHECK(std::isfinite(b.total_priority()));
}

TEST_CASE("n-step transitions from the assembler keep their bootstrap observations through wrap-around",
          "[replay][buffer][nstep]") {
  constexpr std::size_t streams = 3;
  replay_config c;
  c.capacity = 60 * streams;
  c.num_streams = streams;
  c.obs_dim = 2;
  c.n_step = 3;
  replay_buffer b(c);
  std::vector<nstep_assembler> assemblers;
  for (std::size_t s = 0; s < streams; ++s) assemblers.emplace_back(nstep_config{2, 1, 0, 3, 0.9});
  // What each slot should hold: the last transition written there.
  struct expect {
    float obs0, next0, ret, discount;
  };
  std::map<std::size_t, expect> expected;
  std::vector<std::uint64_t> written(streams, 0);
  rng r(77);
  float counter = 0.0f;
  std::vector<float> obs(streams * 2, 0.0f);
  for (int step = 0; step < 1000; ++step) {
    for (std::size_t s = 0; s < streams; ++s) {
      const float reward = static_cast<float>(r.below(5));
      const bool terminated = r.bernoulli(0.05);
      const bool truncated = !terminated && r.bernoulli(0.05);
      counter += 1.0f;
      const float next[2] = {counter, -counter};
      const std::int32_t action = static_cast<std::int32_t>(r.below(2));
      for (const transition& t : assemblers[s].push({&obs[2 * s], 2}, {&action, 1}, {}, reward, terminated, truncated,
                                                    next)) {
        const std::size_t slot = s * 60 + static_cast<std::size_t>(written[s] % 60);
        written[s] += t.last_of_episode ? 2 : 1;
        expected[slot] = {t.observation[0], t.next_observation[0], t.n_step_return, t.discount};
        b.insert(s, t);
      }
      if (terminated || truncated) {
        obs[2 * s] = counter + 0.25f;  // reset observation, distinct from the final one
      } else {
        obs[2 * s] = counter;
      }
      obs[2 * s + 1] = -obs[2 * s];
    }
  }
  std::size_t checked = 0;
  for (std::size_t slot = 0; slot < c.capacity; ++slot) {
    if (!b.sampleable(slot)) continue;
    const expect& e = expected.at(slot);
    REQUIRE(b.observation(slot)[0] == e.obs0);
    REQUIRE(b.next_observation(slot)[0] == e.next0);
    REQUIRE(b.next_observation(slot)[1] == -e.next0);
    REQUIRE(b.n_step_return(slot) == e.ret);
    REQUIRE(b.discount(slot) == e.discount);
    ++checked;
  }
  CHECK(checked == b.size());
  CHECK(checked > 120);
}

TEST_CASE("a replay buffer rejects bad settings and inserts with exact messages", "[replay][buffer][errors]") {
  replay_config c = one_step(10, 3);
  CHECK_THROWS_MATCHES(replay_buffer(c), coral::config_error,
                       Catch::Message("replay_buffer: capacity 10 must be a positive multiple of num_streams 3"));
  c = one_step(6, 2);
  c.n_step = 2;
  CHECK_THROWS_MATCHES(replay_buffer(c), coral::config_error,
                       Catch::Message("replay_buffer: each stream needs at least n_step + 2 = 4 slots, has 3"));
  c = one_step(8);
  c.alpha = 1.5;
  CHECK_THROWS_MATCHES(replay_buffer(c), coral::config_error,
                       Catch::Message("replay_buffer: alpha 1.5 must be in [0, 1]"));
  CHECK_THROWS_MATCHES(replay_buffer(one_step(8, 0)), coral::config_error,
                       Catch::Message("replay_buffer: num_streams must be at least 1"));
  c = one_step(8);
  c.epsilon = 0.0;
  CHECK_THROWS_MATCHES(replay_buffer(c), coral::config_error,
                       Catch::Message("replay_buffer: epsilon 0 must be positive"));
  replay_buffer b(one_step(8));
  CHECK_THROWS_MATCHES(insert_one(b, 1, 0.0f, false), coral::config_error,
                       Catch::Message("replay_buffer: stream 1 out of range (num_streams 1)"));
  rng r(1);
  sampled_batch out;
  CHECK_THROWS_MATCHES(b.sample_prioritized(r, 4, 0.4, out), coral::config_error,
                       Catch::Message("replay_buffer: no transition to sample"));
  const float x = 0.0f;
  const std::int32_t a = 0;
  transition t{{&x, 1}, {&a, 1}, {}, 0.0f, 0.0f, 2, {&x, 1}, false};
  CHECK_THROWS_MATCHES(b.insert(0, t), coral::config_error,
                       Catch::Message("replay_buffer: transition steps 2 not in [1, 1]"));
  CHECK(b.inserts() == 0);
  const sample_key key{0, 1};
  const float td_errors[2] = {1.0f, 2.0f};
  CHECK_THROWS_MATCHES(b.update_priorities({&key, 1}, td_errors), coral::config_error,
                       Catch::Message("replay_buffer: td_errors has 2 elements, expected 1"));
}

namespace {

/// A two-stream n-step buffer with both action parts, filled by assemblers
/// through several wrap-arounds, with some priorities updated.
replay_config persist_config() {
  replay_config c;
  c.capacity = 2 * 40;
  c.num_streams = 2;
  c.obs_dim = 2;
  c.discrete_action_dim = 1;
  c.continuous_action_dim = 2;
  c.n_step = 3;
  c.alpha = 0.6;
  c.epsilon = 0.01;
  return c;
}

/// Drives one assembler per stream for `steps` steps of random episodes.
struct stream_driver {
  explicit stream_driver(std::size_t streams) : observations(streams, 0.0f) {
    for (std::size_t s = 0; s < streams; ++s) assemblers.emplace_back(nstep_config{2, 1, 2, 3, 0.9});
  }

  /// One env step on stream s; returns the transitions inserted, valid until
  /// the stream's next step.
  std::vector<transition> step(replay_buffer& b, std::size_t s, rng& r) {
    const float reward = static_cast<float>(r.below(5));
    const bool terminated = r.bernoulli(0.05);
    const bool truncated = !terminated && r.bernoulli(0.05);
    counter += 1.0f;
    const float obs[2] = {observations[s], -observations[s]};
    const float next[2] = {counter, -counter};
    const std::int32_t action = static_cast<std::int32_t>(r.below(3));
    const float continuous[2] = {counter * 2.0f, counter * 3.0f};
    std::vector<transition> out;
    for (const transition& t : assemblers[s].push(obs, {&action, 1}, continuous, reward, terminated, truncated, next)) {
      b.insert(s, t);
      out.push_back(t);
    }
    if (terminated || truncated) {
      reset(s);
    } else {
      observations[s] = counter;
    }
    return out;
  }

  /// The env of stream s is reset: a fresh observation, distinct from any final one.
  void reset(std::size_t s) {
    assemblers[s].clear();
    observations[s] = counter + 0.25f;
  }

  std::vector<nstep_assembler> assemblers;
  std::vector<float> observations;
  float counter = 0.0f;
};

/// Every accessor of every slot, the counters and the trees' roots agree.
void require_same_state(const replay_buffer& a, const replay_buffer& b) {
  REQUIRE(a.capacity() == b.capacity());
  CHECK(a.size() == b.size());
  CHECK(a.inserts() == b.inserts());
  CHECK(a.total_priority() == b.total_priority());
  CHECK(a.max_priority() == b.max_priority());
  for (std::size_t slot = 0; slot < a.capacity(); ++slot) {
    INFO("slot " << slot);
    REQUIRE(a.sampleable(slot) == b.sampleable(slot));
    REQUIRE(a.generation(slot) == b.generation(slot));
    REQUIRE(a.steps(slot) == b.steps(slot));
    REQUIRE(a.priority(slot) == b.priority(slot));
    REQUIRE(a.n_step_return(slot) == b.n_step_return(slot));
    REQUIRE(a.discount(slot) == b.discount(slot));
    const auto same = [](auto x, auto y) { return std::equal(x.begin(), x.end(), y.begin(), y.end()); };
    REQUIRE(same(a.observation(slot), b.observation(slot)));
    REQUIRE(same(a.discrete_action(slot), b.discrete_action(slot)));
    REQUIRE(same(a.continuous_action(slot), b.continuous_action(slot)));
    if (a.sampleable(slot)) REQUIRE(same(a.next_observation(slot), b.next_observation(slot)));
  }
}

/// The draws of both buffers from equal rng states agree exactly.
void require_same_draws(const replay_buffer& a, const replay_buffer& b, std::uint64_t seed) {
  rng ra(seed), rb(seed);
  sampled_batch oa, ob;
  for (int round = 0; round < 20; ++round) {
    a.sample_prioritized(ra, 32, 0.4, oa);
    b.sample_prioritized(rb, 32, 0.4, ob);
    for (std::size_t i = 0; i < 32; ++i) {
      REQUIRE(oa.keys[i].slot == ob.keys[i].slot);
      REQUIRE(oa.keys[i].generation == ob.keys[i].generation);
      REQUIRE(oa.probabilities[i] == ob.probabilities[i]);
      REQUIRE(oa.weights[i] == ob.weights[i]);
    }
    a.sample_uniform(ra, 16, oa);
    b.sample_uniform(rb, 16, ob);
    for (std::size_t i = 0; i < 16; ++i) REQUIRE(oa.keys[i].slot == ob.keys[i].slot);
  }
}

std::size_t count_sampleable(const replay_buffer& b) {
  std::size_t n = 0;
  for (std::size_t slot = 0; slot < b.capacity(); ++slot) n += b.sampleable(slot) ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("a saved and loaded buffer has every accessor and every draw of the original", "[replay][buffer][persist]") {
  const replay_config c = persist_config();
  replay_buffer original(c);
  stream_driver driver(2);
  rng r(11);
  sampled_batch out;
  std::vector<float> td(16);
  for (int step = 0; step < 300; ++step) {  // about 7 wrap-arounds of each ring
    for (std::size_t s = 0; s < 2; ++s) driver.step(original, s, r);
    if (step % 10 == 9 && original.size() > 0) {
      original.sample_prioritized(r, 16, 0.4, out);
      for (auto& x : td) x = static_cast<float>(r.uniform(0.0, 3.0));
      original.update_priorities(out.keys, td);
    }
  }
  REQUIRE(original.inserts() > 2 * c.capacity);
  REQUIRE(original.max_priority() > 1.0);

  std::vector<char> blob{'x', 'y'};  // save appends: what was there stays
  original.save(blob);
  REQUIRE(blob[0] == 'x');
  REQUIRE(blob[1] == 'y');
  const std::span<const char> state(blob.data() + 2, blob.size() - 2);

  SECTION("into a fresh buffer") {
    replay_buffer loaded(c);
    loaded.load(state);
    require_same_state(original, loaded);
    require_same_draws(original, loaded, 5);
    // Later inserts land in the same slots and complete the same transitions.
    for (int step = 0; step < 50; ++step) {
      for (std::size_t s = 0; s < 2; ++s) {
        for (const transition& t : driver.step(original, s, r)) loaded.insert(s, t);
      }
    }
    require_same_state(original, loaded);
    require_same_draws(original, loaded, 6);
  }
  SECTION("into a used buffer, twice") {
    replay_buffer loaded(c);
    stream_driver other(2);
    rng r2(99);
    for (int step = 0; step < 70; ++step) other.step(loaded, step % 2, r2);
    loaded.load(state);
    loaded.load(state);
    require_same_state(original, loaded);
    require_same_draws(original, loaded, 7);
    std::vector<char> again;
    loaded.save(again);
    CHECK(std::equal(again.begin(), again.end(), state.begin(), state.end()));  // save is a function of the state
  }
}

TEST_CASE("load converts the saved priorities to the loading buffer's alpha", "[replay][buffer][persist]") {
  replay_config c = one_step(6);
  c.alpha = 1.0;
  replay_buffer saved(c);
  for (int i = 0; i < 3; ++i) insert_one(saved, 0, static_cast<float>(i), true);
  const std::vector<sample_key> keys{{0, saved.generation(0)}, {2, saved.generation(2)}, {4, saved.generation(4)}};
  REQUIRE(saved.update_priorities(keys, std::vector<float>{0.5f, 1.5f, 3.5f}) == 3);  // priorities 1, 2, 4
  insert_one(saved, 0, 9.0f, false);  // pending, at the max priority 4, in slot 0
  std::vector<char> blob;
  saved.save(blob);

  c.alpha = 0.5;
  replay_buffer loaded(c);
  loaded.load(blob);
  CHECK(loaded.priority(2) == Approx(std::sqrt(2.0)));
  CHECK(loaded.priority(4) == Approx(2.0));
  CHECK(loaded.priority(0) == Approx(2.0));  // the pending one: 4^0.5
  CHECK(loaded.total_priority() == Approx(std::sqrt(2.0) + 2.0));
  CHECK(loaded.max_priority() == 4.0);  // raw, as update_priorities keeps it
  insert_one(loaded, 0, 10.0f, false);  // completes the pending one
  CHECK(loaded.sampleable(0));
  CHECK(loaded.priority(1) == Approx(2.0));  // new items at max priority^0.5

  SECTION("a blob saved with alpha 0 gives every transition the max priority") {
    c.alpha = 0.0;
    replay_buffer flat(c);
    flat.load(blob);  // its leaves are p^1; load converts them to p^0 = 1
    CHECK(flat.priority(2) == 1.0);
    std::vector<char> flat_blob;
    flat.save(flat_blob);
    c.alpha = 0.5;
    replay_buffer back(c);
    back.load(flat_blob);
    CHECK(back.priority(2) == Approx(2.0));
    CHECK(back.priority(4) == Approx(2.0));
  }
}

TEST_CASE("load rejects the state of a buffer of another shape, naming the field and both values",
          "[replay][buffer][persist][errors]") {
  replay_buffer small(one_step(8));
  insert_one(small, 0, 1.0f, true);
  std::vector<char> blob;
  small.save(blob);
  replay_buffer large(one_step(16));
  insert_one(large, 0, 5.0f, true);
  CHECK_THROWS_MATCHES(large.load(blob), coral::config_error,
                       Catch::Message("replay_buffer: saved state has capacity 8, this buffer has 16"));
  CHECK(large.observation(0)[0] == 5.0f);  // untouched
  CHECK(large.size() == 1);
  CHECK_THROWS_MATCHES(replay_buffer(one_step(8, 2)).load(blob), coral::config_error,
                       Catch::Message("replay_buffer: saved state has num_streams 1, this buffer has 2"));
  replay_config c = one_step(8);
  c.obs_dim = 3;
  CHECK_THROWS_MATCHES(replay_buffer(c).load(blob), coral::config_error,
                       Catch::Message("replay_buffer: saved state has obs_dim 1, this buffer has 3"));
  c = one_step(8);
  c.discrete_action_dim = 0;
  CHECK_THROWS_MATCHES(replay_buffer(c).load(blob), coral::config_error,
                       Catch::Message("replay_buffer: saved state has discrete_action_dim 1, this buffer has 0"));
  c = one_step(8);
  c.continuous_action_dim = 2;
  CHECK_THROWS_MATCHES(replay_buffer(c).load(blob), coral::config_error,
                       Catch::Message("replay_buffer: saved state has continuous_action_dim 0, this buffer has 2"));
  c = one_step(8);
  c.n_step = 2;
  CHECK_THROWS_MATCHES(replay_buffer(c).load(blob), coral::config_error,
                       Catch::Message("replay_buffer: saved state has n_step 1, this buffer has 2"));
  c = one_step(8);
  c.alpha = 0.3;
  c.epsilon = 0.1;
  CHECK_NOTHROW(replay_buffer(c).load(blob));  // alpha and epsilon may differ
}

TEST_CASE("load rejects a truncated or garbled state with exact messages and leaves the buffer as it was",
          "[replay][buffer][persist][errors]") {
  replay_buffer saved(persist_config());
  stream_driver driver(2);
  rng r(3);
  for (int step = 0; step < 60; ++step) driver.step(saved, step % 2, r);
  std::vector<char> blob;
  saved.save(blob);
  const std::size_t n = blob.size();

  replay_buffer target(persist_config());
  stream_driver other(2);
  rng r2(4);
  for (int step = 0; step < 30; ++step) other.step(target, step % 2, r2);
  std::vector<char> before;
  target.save(before);
  const auto unchanged = [&] {
    std::vector<char> now;
    target.save(now);
    return now == before;
  };
  const auto message = [](const std::string& reason) {
    return Catch::Message(fmt::format(fmt::runtime(rm::malformed_state), reason));
  };

  const std::vector<char> empty;
  CHECK_THROWS_MATCHES(target.load(empty), coral::config_error, message("truncated: 0 of 56 bytes"));
  const std::span<const char> whole(blob);
  CHECK_THROWS_MATCHES(target.load(whole.first(n / 2)), coral::config_error,
                       message("truncated: " + std::to_string(n / 2) + " of " + std::to_string(n) + " bytes"));
  CHECK_THROWS_MATCHES(target.load(whole.first(n - 1)), coral::config_error,
                       message("truncated: " + std::to_string(n - 1) + " of " + std::to_string(n) + " bytes"));
  std::vector<char> longer = blob;
  longer.push_back(0);
  CHECK_THROWS_MATCHES(target.load(longer), coral::config_error,
                       message(std::to_string(n + 1) + " bytes where the header says " + std::to_string(n)));
  for (const std::size_t at : {n / 3, n / 2, n - 20, n - 1}) {
    std::vector<char> garbled = blob;
    garbled[at] = static_cast<char>(garbled[at] ^ 0x10);
    CHECK_THROWS_MATCHES(target.load(garbled), coral::config_error, message("checksum mismatch"));
  }
  std::vector<char> garbled = blob;
  garbled[0] = 'C';
  CHECK_THROWS_MATCHES(target.load(garbled), coral::config_error, message("not a replay_buffer state"));
  garbled = blob;
  std::swap(garbled[12], garbled[15]);  // the byte-order mark
  CHECK_THROWS_MATCHES(target.load(garbled), coral::config_error, message("written with another byte order"));
  garbled = blob;
  garbled[8] = 2;  // format version
  CHECK_THROWS_MATCHES(target.load(garbled), coral::config_error,
                       Catch::Message("replay_buffer: saved state has format version 2, this build reads version 1"));
  CHECK(unchanged());
  // An untouched blob still loads.
  target.load(blob);
  require_same_state(saved, target);
}

namespace {

/// Where the elements of section `name` start in a saved state: after a
/// 24-byte header come sections of a 24-byte header (the name, zero-padded
/// to 8 bytes, the element size at +8, the count at +16) and their elements.
std::size_t section_data(const std::vector<char>& blob, std::string_view name) {
  for (std::size_t at = 24; at + 24 <= blob.size();) {
    std::uint32_t size = 0;
    std::uint64_t count = 0;
    std::memcpy(&size, blob.data() + at + 8, sizeof size);
    std::memcpy(&count, blob.data() + at + 16, sizeof count);
    if (std::string_view(blob.data() + at, 8).substr(0, name.size()) == name &&
        (name.size() == 8 || blob[at + name.size()] == '\0')) {
      return at + 24;
    }
    at += 24 + size * count;
  }
  FAIL("no section '" << name << "'");
  return 0;
}

/// Writes `value` at byte `at` of `blob`, then the checksum that lets it pass
/// again: a crafted state, which the checksum cannot catch.
template <class T>
void craft(std::vector<char>& blob, std::size_t at, T value) {
  std::memcpy(blob.data() + at, &value, sizeof value);
  const std::uint64_t sum = coral::replay::saved_state_checksum(std::span(blob).first(blob.size() - 8));
  std::memcpy(blob.data() + blob.size() - 8, &sum, sizeof sum);
}

/// The saved state of a one_step(8) buffer holding a complete transition
/// (slot 0, its frame in slot 1) and a pending one (slot 2).
std::vector<char> two_transition_state() {
  replay_buffer saved(one_step(8));
  insert_one(saved, 0, 1.0f, true);
  insert_one(saved, 0, 2.0f, false);
  std::vector<char> blob;
  saved.save(blob);
  return blob;
}

/// Checks that the empty buffer `target` refuses `crafted` as malformed for
/// `reason`, and stays empty.
void check_refused(replay_buffer& target, const std::vector<char>& crafted, const std::string& reason) {
  CHECK_THROWS_MATCHES(target.load(crafted), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::malformed_state), reason)));
  CHECK(target.inserts() == 0);
}

}  // namespace

TEST_CASE("load rejects a re-checksummed state with priorities no save writes, naming the slot or value",
          "[replay][buffer][persist][errors]") {
  const std::vector<char> blob = two_transition_state();  // slot 0 complete, slot 2 pending
  const std::size_t priorities = section_data(blob, "priority");
  replay_buffer target(one_step(8));
  const auto refused = [&](const std::vector<char>& crafted, const std::string& reason) {
    check_refused(target, crafted, reason);
  };

  // Found by fuzz/replay_blob_fuzz (fuzz/regressions/replay_blob/): a pending
  // transition's priority was not checked, and became a negative, infinite
  // or subnormal tree leaf when the transition completed, so that draws had
  // probability 0 or weights of 0.
  std::vector<char> crafted = blob;
  craft(crafted, priorities + 2 * 8, -14.5);
  refused(crafted, "priority of slot 2 is -14.5");
  craft(crafted, priorities + 2 * 8, 1.8971375900641885e+81);
  refused(crafted, "priority of slot 2 is 1.8971375900641885e+81");
  craft(crafted, priorities + 2 * 8, 2.938735877055719e-39);
  refused(crafted, "priority of slot 2 is 2.938735877055719e-39");
  crafted = blob;
  craft(crafted, priorities, std::numeric_limits<double>::infinity());
  refused(crafted, "priority of slot 0 is inf");

  crafted = blob;
  craft(crafted, section_data(blob, "max_leaf"), std::nan(""));
  refused(crafted, "max leaf is nan, outside [FLT_MIN, FLT_MAX]");
  crafted = blob;
  craft(crafted, section_data(blob, "max_prio"), 1e39);
  refused(crafted, "max priority is 1e+39, outside (0, FLT_MAX]");
  crafted = blob;
  craft(crafted, section_data(blob, "alpha"), 1.5);
  refused(crafted, "alpha is 1.5, outside [0, 1]");
  craft(crafted, section_data(blob, "alpha"), 1.0);
  target.load(crafted);  // the same bytes as saved: loads
  CHECK(target.size() == 1);
}

TEST_CASE("load rejects a re-checksummed state whose sections or counters disagree, naming them",
          "[replay][buffer][persist][errors]") {
  const std::vector<char> blob = two_transition_state();
  replay_buffer target(one_step(8));
  const auto refused = [&](const std::vector<char>& crafted, const std::string& reason) {
    check_refused(target, crafted, reason);
  };

  std::vector<char> crafted = blob;
  craft(crafted, section_data(blob, "inserts"), std::uint64_t{5});
  refused(crafted, fmt::format(fmt::runtime(rm::state_bad_counter), "inserts", 5, 3));  // three slots: slot 0, its frame, slot 2
  crafted = blob;
  craft(crafted, section_data(blob, "complete"), std::uint64_t{0});
  refused(crafted, fmt::format(fmt::runtime(rm::state_bad_counter), "complete", 0, 1));
  crafted = blob;
  craft(crafted, section_data(blob, "alpha") - 24, 'b');  // the section's name: "blpha"
  refused(crafted, fmt::format(fmt::runtime(rm::state_bad_section), "blpha", 1, 8, "alpha", 1, 8));
  // Eight bytes after the checksum section, with the header's length and the
  // checksum (the last eight bytes) made to agree.
  crafted = blob;
  crafted.resize(blob.size() + 8);
  craft(crafted, 16, std::uint64_t{crafted.size()});
  refused(crafted, fmt::format(fmt::runtime(rm::state_extra), 8));
  target.load(blob);
  CHECK(target.size() == 1);
}

TEST_CASE("load keeps a converted priority within a float when a tiny saved alpha meets a large one",
          "[replay][buffer][persist]") {
  replay_config c = one_step(8);
  c.alpha = 0.01;
  replay_buffer saved(c);
  insert_one(saved, 0, 1.0f, true);
  std::vector<char> blob;
  saved.save(blob);
  // A leaf of 1e30 at alpha 0.01 is a priority of 1e3000: no float holds it.
  craft(blob, section_data(blob, "priority"), 1e30);
  c.alpha = 1.0;
  replay_buffer loaded(c);
  loaded.load(blob);
  CHECK(loaded.priority(0) == std::numeric_limits<float>::max());
  CHECK(std::isfinite(loaded.total_priority()));
  sampled_batch out;
  rng r(5);
  loaded.sample_prioritized(r, 4, 0.4, out);
  for (const double p : out.probabilities) CHECK(p == 1.0);
}

TEST_CASE("cut makes a stream's pending transitions unsampleable for good and keeps the completed ones",
          "[replay][buffer][cut]") {
  replay_config c = one_step(2 * 12, 2);
  c.n_step = 3;
  replay_buffer b(c);
  const auto insert_k = [&](std::size_t stream, float value, std::uint32_t k) {
    const std::int32_t action = 0;
    transition t;
    t.observation = {&value, 1};
    t.discrete_action = {&action, 1};
    t.n_step_return = value;
    t.discount = 0.5f;
    t.steps = k;
    t.next_observation = {&value, 1};
    b.insert(stream, t);
  };
  // Five mid-episode transitions, k = 3: positions 0 and 1 are complete, 2 to 4 pending.
  for (int i = 0; i < 5; ++i) insert_k(0, static_cast<float>(i), 3);
  insert_k(1, 100.0f, 3);  // the other stream's pending item is not cut
  REQUIRE(b.size() == 2);
  b.cut(0);
  CHECK(b.size() == 2);
  CHECK(b.sampleable(0));
  CHECK(b.sampleable(1));
  // A fresh episode: its items would have completed positions 2 to 4.
  for (int i = 0; i < 6; ++i) insert_k(0, static_cast<float>(10 + i), 3);
  for (const std::size_t slot : {2, 3, 4}) CHECK_FALSE(b.sampleable(slot));
  for (const std::size_t slot : {5, 6, 7}) CHECK(b.sampleable(slot));  // the new episode's first three
  CHECK(b.size() == 5);
  CHECK(b.size() == count_sampleable(b));
  CHECK(b.total_priority() == Approx(5.0));  // alpha 1, every priority 1
  for (int i = 0; i < 3; ++i) insert_k(1, static_cast<float>(200 + i), 3);
  CHECK(b.sampleable(12));  // stream 1's pending item completed as usual
  // Sampling never draws the cut ones.
  rng r(8);
  sampled_batch out;
  for (int round = 0; round < 50; ++round) {
    b.sample_prioritized(r, 16, 0.4, out);
    for (const auto& key : out.keys) REQUIRE(b.sampleable(key.slot));
  }
  // Wrap-around overwrites the cut slots with items that complete normally.
  for (int i = 0; i < 12; ++i) insert_k(0, static_cast<float>(20 + i), 3);
  CHECK(b.size() == count_sampleable(b));
  CHECK(b.sampleable(2));
  CHECK(b.next_observation(2)[0] == b.observation(2)[0] + 3.0f);

  SECTION("cut right after an episode end changes nothing") {
    insert_one(b, 0, 50.0f, true);  // k = 1 with its frame: everything before is complete
    const std::size_t size = b.size();
    b.cut(0);
    CHECK(b.size() == size);
    CHECK(b.size() == count_sampleable(b));
  }
  SECTION("a bad stream is rejected") {
    CHECK_THROWS_MATCHES(b.cut(2), coral::config_error,
                         Catch::Message("replay_buffer: stream 2 out of range (num_streams 2)"));
  }
}

TEST_CASE("random cuts never complete an abandoned transition and keep size() right through wrap-around",
          "[replay][buffer][cut]") {
  constexpr std::size_t streams = 3;
  constexpr std::size_t per_stream = 30;
  replay_config c;
  c.capacity = streams * per_stream;
  c.num_streams = streams;
  c.obs_dim = 2;
  c.discrete_action_dim = 1;
  c.continuous_action_dim = 2;
  c.n_step = 3;
  c.alpha = 1.0;
  replay_buffer b(c);
  stream_driver driver(streams);
  rng r(21);
  // What each slot holds: the bootstrap observation its transition expects.
  std::map<std::size_t, float> expected_next;
  std::vector<std::uint64_t> written(streams, 0);
  std::vector<std::pair<std::size_t, std::uint64_t>> abandoned;  // slot, generation
  std::size_t cuts = 0;
  std::size_t checked_slots = 0;
  for (int step = 0; step < 3000; ++step) {
    const std::size_t s = static_cast<std::size_t>(r.below(streams));
    if (r.bernoulli(0.03)) {
      // Whatever of the last n items is still a non-sampleable transition is
      // pending now and must stay unsampleable while its slot holds it.
      for (std::uint64_t p = written[s] >= 3 ? written[s] - 3 : 0; p < written[s]; ++p) {
        const std::size_t slot = s * per_stream + static_cast<std::size_t>(p % per_stream);
        if (b.steps(slot) > 0 && !b.sampleable(slot)) abandoned.emplace_back(slot, b.generation(slot));
      }
      b.cut(s);
      driver.reset(s);
      ++cuts;
    } else {
      for (const transition& t : driver.step(b, s, r)) {
        const std::size_t slot = s * per_stream + static_cast<std::size_t>(written[s] % per_stream);
        written[s] += t.last_of_episode ? 2 : 1;
        expected_next[slot] = t.next_observation[0];
      }
    }
    REQUIRE(b.size() == count_sampleable(b));
    REQUIRE(b.total_priority() == Approx(static_cast<double>(b.size())));  // alpha 1, every priority 1
    for (const auto& [slot, generation] : abandoned) {
      if (b.generation(slot) == generation) REQUIRE_FALSE(b.sampleable(slot));
    }
    if (step % 100 == 0) {
      for (std::size_t slot = 0; slot < c.capacity; ++slot) {
        if (!b.sampleable(slot)) continue;
        REQUIRE(b.next_observation(slot)[0] == expected_next.at(slot));
        ++checked_slots;
      }
    }
  }
  CHECK(cuts > 50);
  CHECK(abandoned.size() > 30);
  CHECK(checked_slots > 500);

  // A cut survives save and load.
  std::vector<char> blob;
  b.save(blob);
  replay_buffer loaded(c);
  loaded.load(blob);
  require_same_state(b, loaded);
}

TEST_CASE("a slot's generation is 1 + the position in its stream of the item it holds, 0 before any",
          "[replay][buffer]") {
  // Two streams of 5 slots; stream 1 gets items (and frames) at a different
  // pace, so the generations of the two rings are independent.
  replay_buffer b(one_step(10, 2));
  for (std::size_t slot = 0; slot < 10; ++slot) CHECK(b.generation(slot) == 0);
  std::uint64_t written[2] = {0, 0};  // items per stream, frames included
  std::map<std::size_t, std::uint64_t> expected;  // slot -> generation
  rng r(8);
  for (int step = 0; step < 400; ++step) {
    const std::size_t stream = r.below(3) == 0 ? 1 : 0;
    const bool last = r.below(4) == 0;
    insert_one(b, stream, static_cast<float>(step), last);
    for (int item = 0; item < (last ? 2 : 1); ++item) {
      expected[stream * 5 + written[stream] % 5] = written[stream] + 1;
      ++written[stream];
    }
    for (std::size_t slot = 0; slot < 10; ++slot) {
      const auto it = expected.find(slot);
      REQUIRE(b.generation(slot) == (it == expected.end() ? 0 : it->second));
    }
  }
}

TEST_CASE("the batch key kernel gives every slot the generation a simulation of the writes gives",
          "[replay][buffer]") {
  namespace k = coral::replay::detail;
  rng r(41);
  std::size_t compared = 0;
  // Rounds with at most 8 streams (heads in one register each), 9 to 16
  // (two each), and more (gathered).
  std::size_t few = 0, some = 0, many = 0;
  for (const k::isa isa : k::available_isas()) {
    for (int round = 0; round < 300; ++round) {
      INFO("isa " << static_cast<int>(isa) << ", round " << round);
      const std::size_t streams = 1 + r.below(24);
      ++(streams <= 8 ? few : streams <= 16 ? some : many);
      // Small rings, and now and then one of a million slots (sampled).
      const std::size_t capacity = round % 50 == 0 ? 1'000'000 + r.below(1000) : 3 + r.below(100);
      std::vector<std::uint64_t> heads(streams);
      std::vector<std::size_t> ring_heads(streams);
      for (std::size_t s = 0; s < streams; ++s) {
        // Never written, within the first lap, many laps on, or far on.
        const std::size_t kind = r.below(4);
        heads[s] = kind == 0   ? 0
                   : kind == 1 ? r.below(capacity)
                   : kind == 2 ? r.below(5 * capacity)
                               : (std::uint64_t{1} << 40) + r.below(capacity);
        ring_heads[s] = static_cast<std::size_t>(heads[s] % capacity);
      }
      const k::divider streams_of(capacity);
      const k::stream_heads view{heads.data(), ring_heads.data(), capacity, streams_of.magic(), streams};
      std::vector<std::size_t> slots(capacity > 1000 ? 4000 : streams * capacity);
      for (std::size_t i = 0; i < slots.size(); ++i) slots[i] = capacity > 1000 ? r.below(streams * capacity) : i;
      const std::size_t n = slots.size() - r.below(std::min<std::size_t>(8, slots.size()));  // a tail the caller derives
      constexpr std::uint64_t untouched = 0xdeadbeef;
      std::vector<std::uint64_t> keys(2 * n, untouched);
      const std::size_t done = k::make_keys(isa, view, slots.data(), n, keys.data());
      REQUIRE(done % 8 == 0);
      REQUIRE(done <= n);
      if (isa == k::isa::avx512) REQUIRE(done == n - n % 8);
      for (std::size_t i = 0; i < n; ++i) {
        if (i >= done) {
          REQUIRE(keys[2 * i] == untouched);
          REQUIRE(keys[2 * i + 1] == untouched);
          continue;
        }
        // The item in place r of stream s is the last one written there:
        // position r + capacity * laps, below the stream's head.
        const std::size_t s = slots[i] / capacity, place = slots[i] % capacity;
        const std::uint64_t expected = place < heads[s] ? place + capacity * ((heads[s] - 1 - place) / capacity) + 1 : 0;
        REQUIRE(keys[2 * i] == slots[i]);
        REQUIRE(keys[2 * i + 1] == expected);
        ++compared;
      }
    }
  }
  INFO(compared << " generations compared (none without AVX-512: the buffer then derives them one at a time)");
  if (k::isa_available(k::isa::avx512)) REQUIRE(compared > 0);
  REQUIRE(few > 0);
  REQUIRE(some > 0);
  REQUIRE(many > 0);
}

TEST_CASE("a prioritized draw's keys carry their slots' generations in every stream and lap", "[replay][buffer]") {
  // Three streams at different paces, past several laps, so that the keys of
  // a draw of 64 (eight-key steps) come from rings in different laps.
  replay_buffer b(one_step(3 * 40, 3));
  rng r(12);
  sampled_batch out;
  for (int step = 0; step < 600; ++step) {
    const std::size_t stream = r.below(6) == 0 ? 2 : r.below(2);
    insert_one(b, stream, static_cast<float>(step), r.below(5) == 0);
    if (step % 7 != 0 || b.size() == 0) continue;
    b.sample_prioritized(r, 64 + r.below(8), 0.5, out);
    for (const sample_key& key : out.keys) {
      REQUIRE(b.sampleable(key.slot));
      REQUIRE(key.generation == b.generation(key.slot));
    }
  }
}

TEST_CASE("a transition's next action mask is its bootstrap item's, a frame's the final observation's, through save "
          "and load and into a sampled batch",
          "[replay][buffer][masks]") {
  replay_config c;
  c.capacity = 16;
  c.obs_dim = 1;
  c.n_step = 2;
  c.mask_dim = 2;
  nstep_assembler assembler(nstep_config{.obs_dim = 1, .n_step = 2, .gamma = 0.9, .mask_dim = 2});
  coral::replay::insert_block block(1, 1, 0, 2);
  // Four steps, the last truncated: observation t acts under mask (t mod 2, 1);
  // the final observation's mask is (1, 0).
  const auto mask_at = [](int t) { return std::vector<std::uint8_t>{static_cast<std::uint8_t>(t % 2), 1}; };
  const std::vector<std::uint8_t> final_mask{1, 0};
  for (int t = 0; t < 4; ++t) {
    const float obs = static_cast<float>(t), next = static_cast<float>(t + 1);
    const std::int32_t action = 0;
    const auto mask = mask_at(t);
    const auto next_mask = t == 3 ? final_mask : mask_at(t + 1);
    for (const auto& tr : assembler.push({&obs, 1}, {&action, 1}, {}, 1.0f, false, t == 3, {&next, 1}, mask, next_mask)) {
      CHECK(std::vector<std::uint8_t>(tr.action_mask.begin(), tr.action_mask.end()) ==
            mask_at(static_cast<int>(tr.observation[0])));
      block.push(0, tr);
    }
  }
  REQUIRE(block.size() == 4);
  coral::replay::transition_storage storage(c);
  coral::replay::replay_stats stats;
  storage.insert(block, stats);
  const auto& buffer = storage.buffer();
  REQUIRE(buffer.size() == 4);
  const auto next_mask_of = [](const replay_buffer& b, std::size_t slot) {
    const auto m = b.next_action_mask(slot);
    return std::vector<std::uint8_t>(m.begin(), m.end());
  };
  // Slots 0 and 1 bootstrap two steps on (observations 2 and 3), slots 2
  // and 3 from the frame of the final observation.
  CHECK(next_mask_of(buffer, 0) == mask_at(2));
  CHECK(next_mask_of(buffer, 1) == mask_at(3));
  CHECK(next_mask_of(buffer, 2) == final_mask);
  CHECK(next_mask_of(buffer, 3) == final_mask);

  coral::replay::sample_batch drawn;
  rng r(4);
  storage.fill(drawn, 32, false, 1.0, r);
  REQUIRE(drawn.next_masks.size() == 32 * 2);
  for (std::size_t i = 0; i < 32; ++i) {
    const auto slot = drawn.keys[i].slot;
    CHECK(std::vector<std::uint8_t>(drawn.next_masks.begin() + static_cast<std::ptrdiff_t>(2 * i),
                                    drawn.next_masks.begin() + static_cast<std::ptrdiff_t>(2 * i + 2)) ==
          next_mask_of(buffer, slot));
  }

  std::vector<char> blob;
  buffer.save(blob);
  replay_buffer loaded(c);
  loaded.load(blob);
  for (std::size_t slot = 0; slot < 4; ++slot) CHECK(next_mask_of(loaded, slot) == next_mask_of(buffer, slot));
  // A blob with masks is another shape than one without, either way round.
  replay_config plain = c;
  plain.mask_dim = 0;
  CHECK_THROWS_MATCHES(replay_buffer(plain).load(blob), coral::config_error,
                       Catch::Message("replay_buffer: saved state has mask_dim 2, this buffer has 0"));
  std::vector<char> plain_blob;
  replay_buffer(plain).save(plain_blob);
  CHECK_THROWS_MATCHES(replay_buffer(c).load(plain_blob), coral::config_error,
                       Catch::Message("replay_buffer: saved state has mask_dim 0, this buffer has 2"));
}
