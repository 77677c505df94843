#include "coral/replay/sequence_replay_actor.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/watchdog.hpp"
#include "coral/actors/messages.hpp"
#include "coral/core/error.hpp"
#include "coral/replay/errors.hpp"
#include "coral/replay/replay_actor.hpp"
#include "coral/replay/sequence_buffer.hpp"

using namespace std::chrono_literals;
using coral::rng;
using coral::replay::sequence_batch;
using coral::replay::sequence_block;
using coral::replay::sequence_buffer;
using coral::replay::sequence_buffer_config;
using coral::replay::sequence_key;
using coral::replay::sequence_layout;
using coral::replay::sequence_replay_actor;
using coral::replay::sequence_replay_actor_config;
using coral::replay::sequence_replay_msg;
namespace rm = coral::replay::errors;

namespace {

/// Sequences of 4 slots, the first a burn-in slot: 3 trained slots each.
sequence_layout small_layout() {
  return {.length = 4, .burn_in = 1, .overlap = 1, .obs_dim = 2, .discrete_dim = 1, .state_dim = 3};
}

sequence_buffer_config small_buffer(std::size_t capacity, double alpha = 1.0) {
  return {.layout = small_layout(), .capacity = capacity, .num_streams = 2, .alpha = alpha, .epsilon = 1e-6};
}

/// Appends sequence `id` to `block`: every value says which sequence and
/// which slot it is, so a gathered row can be checked element by element.
void push_sequence(sequence_block& block, std::uint32_t id) {
  const sequence_layout& l = block.layout;
  block.streams.push_back(id % 2);
  for (std::size_t j = 0; j < l.observation_floats(); ++j) {
    block.observations.push_back(static_cast<float>(id) * 1000.0f + static_cast<float>(j));
  }
  for (std::size_t j = 0; j < l.length * l.discrete_dim; ++j) {
    block.actions.push_back(static_cast<std::int32_t>(id * 100 + j));
  }
  for (std::size_t j = 0; j < l.length; ++j) {
    block.rewards.push_back(static_cast<float>(id) + 0.25f * static_cast<float>(j));
    std::uint8_t f = coral::replay::slot_valid;
    if (j == 0 && id % 3 == 0) f |= coral::replay::slot_first;
    if (j + 1 == l.length && id % 3 == 1) f |= coral::replay::slot_terminated;
    block.flags.push_back(f);
  }
  for (std::size_t j = 0; j < l.state_dim; ++j) {
    block.states.push_back(static_cast<float>(id) + 0.5f * static_cast<float>(j));
  }
}

/// A block of the sequences [first, first + count), accounting for `steps` env steps.
std::unique_ptr<sequence_block> make_block(std::uint32_t first, std::uint32_t count, std::uint64_t steps = 0) {
  auto b = std::make_unique<sequence_block>();
  b->layout = small_layout();
  b->env_steps = steps;
  for (std::uint32_t id = first; id < first + count; ++id) push_sequence(*b, id);
  return b;
}

/// The id of the sequence in row i of a gathered batch (its first state value).
std::uint32_t id_of(const sequence_batch& b, std::size_t i) {
  return static_cast<std::uint32_t>(b.states[i * b.layout.state_dim]);
}

/// Whether row i of `b` is exactly sequence `id` as push_sequence made it.
bool row_is(const sequence_batch& b, std::size_t i, std::uint32_t id) {
  sequence_block expected;
  expected.layout = b.layout;
  push_sequence(expected, id);
  const sequence_layout& l = b.layout;
  const auto same = [i](const auto& got, const auto& want) {
    const std::size_t n = want.size();
    for (std::size_t j = 0; j < n; ++j) {
      if (got[i * n + j] != want[j]) return false;
    }
    return true;
  };
  return b.observations.size() == b.size * l.observation_floats() && same(b.observations, expected.observations) &&
         same(b.actions, expected.actions) && same(b.rewards, expected.rewards) && same(b.flags, expected.flags) &&
         same(b.states, expected.states);
}

}  // namespace

TEST_CASE("sampled sequences are exactly the inserted arrays, the observation after the last slot included",
          "[replay][sequence][buffer]") {
  sequence_buffer buffer(small_buffer(8));
  buffer.insert(*make_block(0, 3));
  CHECK(buffer.size() == 3);
  CHECK(buffer.inserts() == 3);
  rng gen(coral::env_seed{1, 0});
  sequence_batch batch;
  for (const bool prioritized : {true, false}) {
    if (prioritized) {
      buffer.sample(32, 0.4, gen, batch);
    } else {
      buffer.sample_uniform(32, gen, batch);
    }
    REQUIRE(batch.size == 32);
    CHECK(batch.layout.length == 4);
    CHECK(batch.weights.size() == 32);
    CHECK(batch.keys.size() == 32);
    CHECK(batch.priorities.empty());
    std::map<std::uint32_t, int> seen;
    for (std::size_t i = 0; i < batch.size; ++i) {
      const std::uint32_t id = id_of(batch, i);
      ++seen[id];
      CHECK(row_is(batch, i, id));
      CHECK(batch.keys[i].slot == id);  // the ring fills from slot 0
      CHECK(batch.keys[i].generation == id + 1);
      CHECK(batch.weights[i] == 1.0f);  // equal priorities: equal weights
    }
    CHECK(seen.size() == 3);
  }
  // The observation slot `length` (the bootstrap) is the last row of observations.
  CHECK(buffer.observations(1).size() == 5 * 2);
  CHECK(buffer.observations(1)[4 * 2 + 1] == 1009.0f);
}

TEST_CASE("the ring overwrites its oldest sequences first, whatever their stream", "[replay][sequence][buffer]") {
  sequence_buffer one_block(small_buffer(3));
  one_block.insert(*make_block(0, 5));  // more sequences than slots in one block
  sequence_buffer one_by_one(small_buffer(3));
  for (std::uint32_t id = 0; id < 5; ++id) one_by_one.insert(*make_block(id, 1));
  for (const sequence_buffer* b : {&one_block, &one_by_one}) {
    CHECK(b->size() == 3);
    CHECK(b->inserts() == 5);
    CHECK(b->head() == 2);
    // Slots 0 and 1 took the 4th and 5th sequences; slot 2 still holds the 3rd.
    CHECK(b->state(0)[0] == 3.0f);
    CHECK(b->state(1)[0] == 4.0f);
    CHECK(b->state(2)[0] == 2.0f);
    CHECK(b->generation(0) == 4);
    CHECK(b->generation(1) == 5);
    CHECK(b->generation(2) == 3);
    CHECK(b->total_priority() == Approx(3.0));
  }
  sequence_buffer empty(small_buffer(3));
  CHECK(empty.generation(0) == 0);
}

TEST_CASE("prioritized draws follow priority^alpha over many batches", "[replay][sequence][buffer][priority]") {
  // alpha 0.5 and priorities 1, 4, 9, 16: leaves 1, 2, 3, 4, so P = 0.1, 0.2, 0.3, 0.4.
  sequence_buffer buffer(small_buffer(4, 0.5));
  buffer.insert(*make_block(0, 4));
  std::vector<sequence_key> keys;
  for (std::uint32_t s = 0; s < 4; ++s) keys.push_back({s, buffer.generation(s)});
  const std::vector<float> values{1.0f, 4.0f, 9.0f, 16.0f};
  CHECK(buffer.update_priorities(keys, values) == 4);
  rng gen(coral::env_seed{7, 0});
  sequence_batch batch;
  std::vector<double> counts(4, 0.0);
  const int batches = 2000;
  const std::size_t size = 64;
  for (int k = 0; k < batches; ++k) {
    buffer.sample(size, 1.0, gen, batch);
    for (const sequence_key& key : batch.keys) counts[key.slot] += 1.0;
  }
  const double draws = static_cast<double>(batches) * static_cast<double>(size);
  // 128,000 stratified draws: the standard error of each share is below
  // 0.0015, so 0.01 is over six of them (and the generator is seeded).
  for (std::size_t s = 0; s < 4; ++s) CHECK(counts[s] / draws == Approx(0.1 * static_cast<double>(s + 1)).margin(0.01));
}

TEST_CASE("importance weights are (N P(i))^-beta over their largest possible value, and draws are stratified",
          "[replay][sequence][buffer][priority]") {
  // Priorities 1, 4, 16 at alpha 0.5: leaves 1, 2, 4, total 7, N = 3.
  auto config = small_buffer(3, 0.5);
  config.epsilon = 1e-12;
  sequence_buffer buffer(config);
  buffer.insert(*make_block(0, 3));
  std::vector<sequence_key> keys;
  for (std::uint32_t s = 0; s < 3; ++s) keys.push_back({s, buffer.generation(s)});
  const std::vector<float> values{1.0f, 4.0f, 16.0f};
  REQUIRE(buffer.update_priorities(keys, values) == 3);
  rng gen(coral::env_seed{3, 0});
  sequence_batch batch;
  // Seven strata of mass 1: one falls in slot 0, two in slot 1, four in slot 2, whatever the draws.
  buffer.sample(7, 0.5, gen, batch);
  std::vector<int> counts(3, 0);
  for (const sequence_key& key : batch.keys) ++counts[key.slot];
  CHECK(counts == std::vector<int>{1, 2, 4});
  // By hand: (3 · 1/7)^-0.5 = 1.5275, (3 · 2/7)^-0.5 = 1.0801, (3 · 4/7)^-0.5 = 0.7638;
  // over the largest, 1.5275: 1, 0.7071, 0.5.
  const double expected[3] = {1.0, 0.70710678, 0.5};
  for (std::size_t i = 0; i < batch.size; ++i) {
    CHECK(batch.weights[i] == Approx(expected[batch.keys[i].slot]).epsilon(1e-5));
    CHECK(row_is(batch, i, batch.keys[i].slot));
  }
  // The statistics the metrics read.
  CHECK(buffer.max_priority() == Approx(16.0));
  CHECK(buffer.min_priority() == Approx(1.0).epsilon(1e-5));
  CHECK(buffer.mean_priority() == Approx(7.0).epsilon(1e-5));
}

TEST_CASE("uniform sampling ignores priorities and gives weight 1", "[replay][sequence][buffer][uniform]") {
  sequence_buffer buffer(small_buffer(4));
  buffer.insert(*make_block(0, 4));
  const std::vector<sequence_key> keys{{0, buffer.generation(0)}};
  const std::vector<float> big{1000.0f};
  REQUIRE(buffer.update_priorities(keys, big) == 1);
  rng gen(coral::env_seed{5, 0});
  sequence_batch batch;
  std::vector<double> counts(4, 0.0);
  for (int k = 0; k < 1000; ++k) {
    buffer.sample_uniform(64, gen, batch);
    for (std::size_t i = 0; i < batch.size; ++i) {
      counts[batch.keys[i].slot] += 1.0;
      CHECK(batch.weights[i] == 1.0f);
    }
  }
  // 64,000 draws: the standard error of each share is 0.0017; 0.02 is over ten.
  for (const double c : counts) CHECK(c / 64000.0 == Approx(0.25).margin(0.02));
}

TEST_CASE("a priority update for an overwritten slot is stale and ignored", "[replay][sequence][buffer][priority]") {
  sequence_buffer buffer(small_buffer(2));
  buffer.insert(*make_block(0, 2));
  rng gen(coral::env_seed{2, 0});
  sequence_batch batch;
  buffer.sample(4, 1.0, gen, batch);
  const std::vector<sequence_key> drawn = batch.keys;
  buffer.insert(*make_block(2, 2));  // both slots overwritten
  const std::vector<float> values(drawn.size(), 50.0f);
  CHECK(buffer.update_priorities(drawn, values) == 0);
  CHECK(buffer.priority(0) == 1.0f);
  CHECK(buffer.priority(1) == 1.0f);
  CHECK(buffer.max_priority() == 1.0);
  // Keys of a slot never written, or out of range, are stale too.
  sequence_buffer fresh(small_buffer(4));
  fresh.insert(*make_block(0, 1));
  const std::vector<sequence_key> odd{{1, 0}, {9, 1}, {0, 1}};
  const std::vector<float> three{5.0f, 5.0f, 5.0f};
  CHECK(fresh.update_priorities(odd, three) == 1);
  CHECK(fresh.priority(0) == Approx(5.0));
}

TEST_CASE("a sequence buffer refuses bad settings, blocks and priorities with exact messages",
          "[replay][sequence][buffer][errors]") {
  auto c = small_buffer(0);
  CHECK_THROWS_MATCHES(sequence_buffer(c), coral::config_error, Catch::Message(std::string(rm::seq_zero_capacity)));
  c = small_buffer(4);
  c.layout.burn_in = 4;
  CHECK_THROWS_MATCHES(sequence_buffer(c), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::seq_bad_layout), 4, 4, 1)));
  c = small_buffer(4);
  c.alpha = 1.5;
  CHECK_THROWS_MATCHES(sequence_buffer(c), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::seq_bad_exponent), "alpha", 1.5)));

  sequence_buffer buffer(small_buffer(4));
  auto other = make_block(0, 1);
  other->layout.state_dim = 5;
  CHECK_THROWS_MATCHES(buffer.insert(*other), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::seq_layout_mismatch), "state_dim", 5, 3)));
  auto short_block = make_block(0, 2);
  short_block->rewards.pop_back();
  CHECK_THROWS_MATCHES(buffer.insert(*short_block), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::seq_size_mismatch), "rewards", 7, 8)));
  auto far = make_block(0, 1);
  far->streams[0] = 2;
  CHECK_THROWS_MATCHES(buffer.insert(*far), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::seq_bad_stream), 2, 2)));
  CHECK(buffer.size() == 0);  // nothing written by a refused block

  rng gen(coral::env_seed{1, 0});
  sequence_batch batch;
  CHECK_THROWS_MATCHES(buffer.sample(4, 0.5, gen, batch), coral::config_error,
                       Catch::Message(std::string(rm::seq_empty)));
  buffer.insert(*make_block(0, 2));
  const std::vector<sequence_key> keys{{0, 1}, {1, 2}};
  const std::vector<float> bad{2.0f, std::nanf("")};
  CHECK_THROWS_MATCHES(buffer.update_priorities(keys, bad), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::seq_bad_priority), 1, std::nanf(""))));
  const std::vector<float> negative{-1.0f, 2.0f};
  CHECK_THROWS_MATCHES(buffer.update_priorities(keys, negative), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::seq_bad_priority), 0, -1.0f)));
  CHECK(buffer.priority(0) == 1.0f);  // none applied

  c = small_buffer(4);
  c.num_streams = 0;
  CHECK_THROWS_MATCHES(sequence_buffer(c), coral::config_error, Catch::Message(std::string(rm::seq_zero_streams)));
  c = small_buffer(4);
  c.epsilon = 0;
  CHECK_THROWS_MATCHES(sequence_buffer(c), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::seq_bad_epsilon), 0.0)));
}

TEST_CASE("a saved sequence buffer loads into one of the same layout and samples the same draws",
          "[replay][sequence][buffer][snapshot]") {
  auto config = small_buffer(4, 0.6);
  sequence_buffer saved(config);
  saved.insert(*make_block(0, 6));
  const std::vector<sequence_key> keys{{1, saved.generation(1)}, {2, saved.generation(2)}};
  const std::vector<float> values{3.0f, 0.5f};
  REQUIRE(saved.update_priorities(keys, values) == 2);
  std::vector<char> blob;
  saved.save(blob);

  sequence_buffer loaded(config);
  loaded.load(blob);
  CHECK(loaded.inserts() == saved.inserts());
  CHECK(loaded.size() == saved.size());
  CHECK(loaded.max_priority() == saved.max_priority());
  CHECK(loaded.mean_priority() == Approx(saved.mean_priority()));
  CHECK(loaded.total_priority() == saved.total_priority());
  for (std::size_t s = 0; s < 4; ++s) {
    CHECK(loaded.generation(s) == saved.generation(s));
    CHECK(loaded.priority(s) == saved.priority(s));
    CHECK(loaded.leaf(s) == saved.leaf(s));  // bit for bit at the same alpha
  }
  rng a(coral::env_seed{9, 0});
  rng b(coral::env_seed{9, 0});
  sequence_batch from_saved;
  sequence_batch from_loaded;
  saved.sample(16, 0.7, a, from_saved);
  loaded.sample(16, 0.7, b, from_loaded);
  for (std::size_t i = 0; i < 16; ++i) {
    CHECK(from_loaded.keys[i].slot == from_saved.keys[i].slot);
    CHECK(from_loaded.keys[i].generation == from_saved.keys[i].generation);
    CHECK(from_loaded.weights[i] == from_saved.weights[i]);
    CHECK(row_is(from_loaded, i, id_of(from_saved, i)));
  }

  // Another alpha: the leaves are the saved priorities to the new alpha.
  auto other_alpha = config;
  other_alpha.alpha = 0.3;
  sequence_buffer rescaled(other_alpha);
  rescaled.load(blob);
  CHECK(rescaled.leaf(1) == Approx(std::pow(saved.priority(1), 0.3)).epsilon(1e-6));
}

TEST_CASE("a sequence buffer refuses a state of another layout or kind and stays as it was",
          "[replay][sequence][buffer][snapshot][errors]") {
  sequence_buffer saved(small_buffer(4));
  saved.insert(*make_block(0, 2));
  std::vector<char> blob;
  saved.save(blob);

  auto wider = small_buffer(4);
  wider.layout.obs_dim = 3;
  sequence_buffer target(wider);
  auto block = make_block(0, 1);
  block->layout = wider.layout;
  block->observations.assign(5 * 3, 7.0f);
  target.insert(*block);
  CHECK_THROWS_MATCHES(target.load(blob), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::seq_state_shape_mismatch), "obs_dim", 2, 3)));
  CHECK(target.size() == 1);
  CHECK(target.inserts() == 1);
  CHECK(target.observations(0)[0] == 7.0f);

  sequence_buffer smaller(small_buffer(2));
  CHECK_THROWS_MATCHES(smaller.load(blob), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::seq_state_shape_mismatch), "capacity", 4, 2)));

  const auto malformed = [](std::string_view reason) {
    return Catch::Message(fmt::format(fmt::runtime(rm::seq_malformed_state), reason));
  };
  sequence_buffer same(small_buffer(4));
  auto damaged = blob;
  damaged[damaged.size() / 2] ^= 1;
  CHECK_THROWS_MATCHES(same.load(damaged), coral::config_error, malformed(rm::state_checksum));
  // A state of another format version (the u32 after the 8 magic bytes).
  auto newer = blob;
  const std::uint32_t version = 99;
  std::memcpy(newer.data() + 8, &version, sizeof(version));
  CHECK_THROWS_MATCHES(same.load(newer), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::seq_unsupported_state_version), 99, 1)));
  // A transition buffer's state is not a sequence buffer's.
  coral::replay::replay_buffer transitions({.capacity = 8, .num_streams = 1, .obs_dim = 1});
  std::vector<char> transition_blob;
  transitions.save(transition_blob);
  CHECK_THROWS_MATCHES(same.load(transition_blob), coral::config_error, malformed(rm::seq_state_bad_magic));
  CHECK(same.size() == 0);
}

TEST_CASE("a sequence buffer keeps each sequence's action masks, and saves them only where it has them",
          "[replay][sequence][buffer][snapshot]") {
  auto masked = small_buffer(4);
  masked.layout.mask_dim = 3;
  // Sequence id's mask at observation slot j: action a legal when (id + j + a) is odd.
  const auto mask_of = [](std::uint32_t id, std::size_t j, std::size_t a) {
    return static_cast<std::uint8_t>((id + j + a) % 2);
  };
  const auto masked_block = [&](std::uint32_t first, std::uint32_t count) {
    auto b = make_block(first, count);
    b->layout = masked.layout;
    for (std::uint32_t id = first; id < first + count; ++id) {
      for (std::size_t j = 0; j <= masked.layout.length; ++j) {
        for (std::size_t a = 0; a < 3; ++a) b->masks.push_back(mask_of(id, j, a));
      }
    }
    return b;
  };
  sequence_buffer buffer(masked);
  buffer.insert(*masked_block(0, 3));
  rng gen(coral::env_seed{4, 0});
  sequence_batch batch;
  buffer.sample(16, 0.5, gen, batch);
  REQUIRE(batch.masks.size() == 16 * 5 * 3);
  for (std::size_t i = 0; i < batch.size; ++i) {
    const std::uint32_t id = id_of(batch, i);
    CHECK(row_is(batch, i, id));
    for (std::size_t j = 0; j <= 4; ++j) {
      for (std::size_t a = 0; a < 3; ++a) CHECK(batch.masks[(i * 5 + j) * 3 + a] == mask_of(id, j, a));
    }
  }

  // Saved and loaded with them, bit for bit.
  std::vector<char> blob;
  buffer.save(blob);
  sequence_buffer loaded(masked);
  loaded.load(blob);
  for (std::size_t slot = 0; slot < 3; ++slot) {
    const auto want = buffer.masks(slot);
    const auto have = loaded.masks(slot);
    CHECK(std::vector(have.begin(), have.end()) == std::vector(want.begin(), want.end()));
  }
  // A buffer without masks writes no mask section: its blob is the one it
  // always was, and a masked buffer refuses it (and the other way round).
  sequence_buffer plain(small_buffer(4));
  plain.insert(*make_block(0, 2));
  std::vector<char> plain_blob;
  plain.save(plain_blob);
  CHECK(std::string_view(plain_blob.data(), plain_blob.size()).find("mask") == std::string_view::npos);
  CHECK(std::string_view(blob.data(), blob.size()).find("mask_dim") != std::string_view::npos);
  CHECK_THROWS_MATCHES(loaded.load(plain_blob), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::seq_state_shape_mismatch), "mask_dim", 0, 3)));
  CHECK_THROWS_MATCHES(plain.load(blob), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::seq_state_shape_mismatch), "mask_dim", 3, 0)));
  CHECK(plain.inserts() == 2);

  // A block of another mask width, or with masks of the wrong length, is refused whole.
  auto unmasked = make_block(3, 1);
  CHECK_THROWS_MATCHES(buffer.insert(*unmasked), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::seq_layout_mismatch), "mask_dim", 0, 3)));
  auto short_masks = masked_block(3, 1);
  short_masks->masks.pop_back();
  CHECK_THROWS_MATCHES(buffer.insert(*short_masks), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(rm::seq_size_mismatch), "masks", 14, 15)));
  CHECK(buffer.inserts() == 3);
}

TEST_CASE("a sequence buffer's memory figure covers its arrays", "[replay][sequence][buffer]") {
  // 100,000 sequences of 80 slots of 4 floats: 100,000 × 81 × 4 × 4 bytes of observations alone.
  sequence_buffer_config big{.layout = {.length = 80, .burn_in = 40, .overlap = 40, .obs_dim = 4, .state_dim = 512},
                             .capacity = 100'000};
  const double bytes = sequence_buffer::memory_bytes(big);
  CHECK(bytes > 100'000.0 * (81 * 4 * 4 + 80 * 4 + 80 * 4 + 80 + 512 * 4));
  CHECK(bytes < 100'000.0 * (81 * 4 * 4 + 80 * 4 + 80 * 4 + 80 + 512 * 4 + 64));
}

namespace {

sequence_replay_actor_config actor_config() {
  sequence_replay_actor_config c;
  c.buffer = small_buffer(64);
  c.samples_per_insert = 2.0;  // each env step trained on twice
  c.min_size = 12;
  c.batch_size = 4;
  c.prefetch = 2;
  c.max_group_steps = 3;  // one block: one sequence of 3 new env steps
  c.batcher_hold = 0;
  c.seed = 4;
  return c;
}

}  // namespace

TEST_CASE("the sequence replay actor counts its ratio in trained steps, serving nothing before min_size",
          "[replay][sequence][actor]") {
  coral::test::watchdog dog("sequence replay ratio", 30s);
  asio::io_context io;
  sequence_replay_actor r(actor_config());
  CHECK(r.units_per_draw() == 3);  // length 4 − burn-in 1
  asio::co_spawn(io, r.run(), asio::detached);
  for (int i = 0; i < 2; ++i) REQUIRE(r.inbox().try_send(sequence_replay_msg(r.make_request())));
  io.poll();
  std::uint64_t inserted = 0;
  std::uint64_t served = 0;
  for (std::uint32_t id = 0; id < 200; ++id) {
    REQUIRE(r.inbox().try_send(sequence_replay_msg(make_block(id, 1, 3))));
    inserted += 3;
    io.poll();
    while (auto got = r.samples().try_receive()) {
      ++served;
      auto batch = std::move(*got);
      REQUIRE(batch->size == 4);
      for (std::size_t i = 0; i < batch->size; ++i) CHECK(row_is(*batch, i, id_of(*batch, i)));
      batch->priorities.assign(batch->size, 2.0f);
      REQUIRE(r.inbox().try_send(sequence_replay_msg(std::move(batch))));
      io.poll();
    }
    if (inserted < 12) CHECK(served == 0);
    const double diff = static_cast<double>(inserted) * 2.0 - static_cast<double>(r.stats().sampled.load() * 3);
    if (inserted >= 12) {
      CHECK(diff >= r.limiter().min_diff());
      CHECK(diff <= r.limiter().max_diff() + 4 * 3);
    }
  }
  CHECK(served > 0);
  // Trained steps sampled per env step inserted: 2, within the window.
  const double ratio = static_cast<double>(r.stats().sampled.load() * 3) / static_cast<double>(inserted);
  CHECK(ratio == Approx(2.0).margin(0.1));
  CHECK(r.stats().sequences.load() == 200);
  CHECK(r.stats().env_steps.load() == 600);
  CHECK(r.stats().batches.load() == served);
  CHECK(r.stats().size.load() == 64);
  CHECK(r.stats().sample_ns.load() > 0);
  CHECK(r.stats().priority_updates.load() > 0);
  CHECK(r.stats().priority_max.load() == Approx(2.0));
  r.close();
  io.run();
}

TEST_CASE("the sequence replay actor in draws serves sequences per env step, uniform when asked",
          "[replay][sequence][actor][uniform]") {
  coral::test::watchdog dog("sequence replay draws", 30s);
  auto c = actor_config();
  c.ratio_counts = coral::replay::ratio_unit::draws;
  c.samples_per_insert = 1.0;  // one sequence sampled per env step
  c.prioritized = false;
  asio::io_context io;
  sequence_replay_actor r(c);
  CHECK(r.units_per_draw() == 1);
  asio::co_spawn(io, r.run(), asio::detached);
  REQUIRE(r.inbox().try_send(sequence_replay_msg(r.make_request())));
  for (std::uint32_t id = 0; id < 100; ++id) {
    REQUIRE(r.inbox().try_send(sequence_replay_msg(make_block(id, 1, 3))));
    io.poll();
    while (auto got = r.samples().try_receive()) {
      for (const float w : (*got)->weights) CHECK(w == 1.0f);
      REQUIRE(r.inbox().try_send(sequence_replay_msg(std::move(*got))));
      io.poll();
    }
  }
  CHECK(static_cast<double>(r.stats().sampled.load()) == Approx(300.0).margin(c.min_size + 4 + 3 + 1));
  r.close();
  io.run();
}

TEST_CASE("the sequence replay actor counts stale priority updates and publishes priority statistics",
          "[replay][sequence][actor][priority]") {
  coral::test::watchdog dog("sequence replay stale", 30s);
  auto c = actor_config();
  c.buffer.capacity = 4;
  c.min_size = 1;
  asio::io_context io;
  sequence_replay_actor r(c);
  asio::co_spawn(io, r.run(), asio::detached);
  REQUIRE(r.inbox().try_send(sequence_replay_msg(make_block(0, 4, 12))));
  REQUIRE(r.inbox().try_send(sequence_replay_msg(r.make_request())));
  io.poll();
  auto first = r.samples().try_receive();
  REQUIRE(first);
  auto batch = std::move(*first);
  REQUIRE(r.inbox().try_send(sequence_replay_msg(make_block(4, 4, 12))));  // overwrites every slot
  batch->priorities.assign(batch->size, 9.0f);
  REQUIRE(r.inbox().try_send(sequence_replay_msg(std::move(batch))));
  io.poll();
  CHECK(r.stats().stale_updates.load() == 4);
  CHECK(r.stats().priority_updates.load() == 0);
  auto second = r.samples().try_receive();
  REQUIRE(second);
  auto fresh = std::move(*second);
  // Four strata over four equal leaves: each slot is drawn once.
  fresh->priorities = {9.0f, 2.0f, 9.0f, 9.0f};
  const std::uint32_t slot = fresh->keys[1].slot;
  REQUIRE(r.inbox().try_send(sequence_replay_msg(std::move(fresh))));
  io.poll();
  CHECK(r.stats().priority_updates.load() == 4);
  CHECK(r.stats().priority_max.load() == Approx(9.0));
  CHECK(r.stats().priority_min.load() == Approx(2.0));
  CHECK(r.stats().priority_mean.load() == Approx(7.25));
  CHECK(r.buffer().priority(slot) == Approx(2.0));
  r.close();
  io.run();
}

TEST_CASE("after close, drain applies the buffered inserts and priorities and drops snapshot requests",
          "[replay][sequence][actor]") {
  auto c = actor_config();
  c.min_size = 1;
  sequence_replay_actor r(c);
  REQUIRE(r.inbox().try_send(sequence_replay_msg(make_block(0, 3, 9))));
  REQUIRE(r.inbox().try_send(sequence_replay_msg(coral::replay::snapshot_request{1})));
  auto handed_back = r.make_request();
  handed_back->size = 1;
  handed_back->keys = {{0, 1}};
  handed_back->priorities = {4.0f};
  REQUIRE(r.inbox().try_send(sequence_replay_msg(std::move(handed_back))));
  r.close();
  CHECK_FALSE(r.inbox().try_send(sequence_replay_msg(make_block(3, 1, 3))));
  r.drain();
  CHECK(r.buffer().size() == 3);
  CHECK(r.limiter().inserts() == 9);
  CHECK(r.buffer().priority(0) == Approx(4.0));
  CHECK(r.stats().priority_updates.load() == 1);
  CHECK_FALSE(r.snapshots().try_receive());
}

TEST_CASE("a sequence replay actor's state loads into a fresh actor that then draws the same batch",
          "[replay][sequence][actor][snapshot]") {
  coral::test::watchdog dog("sequence replay snapshot", 30s);
  asio::io_context io;
  auto c = actor_config();
  sequence_replay_actor r(c);
  asio::co_spawn(io, r.run(), asio::detached);
  REQUIRE(r.inbox().try_send(sequence_replay_msg(r.make_request())));
  for (std::uint32_t id = 0; id < 10; ++id) REQUIRE(r.inbox().try_send(sequence_replay_msg(make_block(id, 1, 3))));
  io.poll();
  auto got = r.samples().try_receive();
  REQUIRE(got);
  REQUIRE(r.inbox().try_send(sequence_replay_msg(coral::replay::snapshot_request{5})));
  io.poll();
  auto snap = r.snapshots().try_receive();
  REQUIRE(snap);
  CHECK(snap->tag == 5);
  r.close();
  io.run();

  sequence_replay_actor a(c);
  sequence_replay_actor b(c);
  a.load(snap->state);
  b.load(snap->state);
  CHECK(a.limiter().inserts() == 30);
  CHECK(a.limiter().samples() == 12);  // one batch of 4 sequences of 3 trained steps
  CHECK(a.stats().sampled.load() == 4);
  CHECK(a.stats().size.load() == 10);
  CHECK(a.save() == snap->state);
  // Both serve the same next batch: the generator came with the state.
  asio::io_context io2;
  asio::co_spawn(io2, a.run(), asio::detached);
  asio::co_spawn(io2, b.run(), asio::detached);
  for (auto* actor : {&a, &b}) {
    REQUIRE(actor->inbox().try_send(sequence_replay_msg(actor->make_request())));
    REQUIRE(actor->inbox().try_send(sequence_replay_msg(make_block(10, 1, 3))));
  }
  io2.poll();
  auto from_a = a.samples().try_receive();
  auto from_b = b.samples().try_receive();
  REQUIRE(from_a);
  REQUIRE(from_b);
  CHECK((*from_a)->sequence == 1);
  for (std::size_t i = 0; i < (*from_a)->size; ++i) CHECK((*from_a)->keys[i].slot == (*from_b)->keys[i].slot);
  a.close();
  b.close();
  io2.run();

  // A transition replay actor's state is not a sequence actor's.
  coral::replay::replay_actor_config tc;
  tc.buffer = {.capacity = 8, .num_streams = 1, .obs_dim = 1};
  tc.min_size = 1;
  tc.batch_size = 2;
  coral::replay::replay_actor transitions(tc);
  CHECK_THROWS_MATCHES(
      a.load(transitions.save()), coral::config_error,
      Catch::Message(fmt::format(fmt::runtime(rm::actor_state_malformed), "not a sequence replay actor state")));
}

TEST_CASE("under the rate limiter, an inserting thread and a learning thread both get through and hold the ratio",
          "[replay][sequence][actor][stress]") {
  coral::test::watchdog dog("sequence replay threads", 120s);
  auto c = actor_config();
  c.buffer.capacity = 256;
  sequence_replay_actor r(c);
  coral::channel<coral::actors::gate_msg> waker(16);
  r.set_waker(&waker);
  constexpr std::uint32_t sequences = 3000;
  constexpr std::uint64_t steps_per_block = 3;

  // The sampling side: one block of one sequence (3 new env steps) at a
  // time, while the allowance covers it, as the rate-limit gate lets groups through.
  std::atomic<bool> feeder_failed{false};
  const auto feeder = [&]() -> asio::awaitable<void> {
    std::uint64_t let_through = 0;
    for (std::uint32_t id = 0; id < sequences;) {
      if (!r.wait_for_allowance(let_through + steps_per_block)) {
        auto note = co_await waker.async_receive();
        if (!note) co_return;
        continue;
      }
      if (!r.inbox().try_send(sequence_replay_msg(make_block(id, 1, steps_per_block)))) feeder_failed = true;
      let_through += steps_per_block;
      ++id;
    }
    r.close();  // the run is over: the actor drains, the learner sees the close
  };
  // The learner: `prefetch` requests in flight, each handed back with priorities.
  std::uint64_t learner_batches = 0;
  std::uint64_t bad_rows = 0;
  const auto learner = [&]() -> asio::awaitable<void> {
    for (std::size_t i = 0; i < c.prefetch; ++i) {
      const bool sent = co_await r.inbox().async_send(sequence_replay_msg(r.make_request()));
      if (!sent) co_return;
    }
    for (;;) {
      auto got = co_await r.samples().async_receive();
      if (!got) co_return;
      auto batch = std::move(*got);
      ++learner_batches;
      for (std::size_t i = 0; i < batch->size; ++i) {
        const std::uint32_t id = id_of(*batch, i);
        if (!row_is(*batch, i, id)) ++bad_rows;
        batch->priorities.push_back(static_cast<float>(id % 7) + 0.5f);
      }
      const bool sent = co_await r.inbox().async_send(sequence_replay_msg(std::move(batch)));
      if (!sent) co_return;
    }
  };

  asio::io_context replay_io;
  asio::io_context feeder_io;
  asio::io_context learner_io;
  std::exception_ptr failures[3];
  asio::co_spawn(replay_io, r.run(), [&](std::exception_ptr e) { failures[0] = e; });
  asio::co_spawn(feeder_io, feeder(), [&](std::exception_ptr e) { failures[1] = e; });
  asio::co_spawn(learner_io, learner(), [&](std::exception_ptr e) { failures[2] = e; });
  std::thread replay_thread([&] { replay_io.run(); });
  std::thread feeder_thread([&] { feeder_io.run(); });
  std::thread learner_thread([&] { learner_io.run(); });
  feeder_thread.join();
  learner_thread.join();
  replay_thread.join();
  for (const auto& f : failures) CHECK_FALSE(f);
  CHECK_FALSE(feeder_failed.load());
  r.drain();

  // Both sides got through: every sequence went in, and the learner trained throughout.
  CHECK(r.limiter().inserts() == sequences * steps_per_block);
  CHECK(r.stats().sequences.load() == sequences);
  CHECK(learner_batches > 0);
  CHECK(learner_batches <= r.stats().batches.load());  // the last ones may be left in samples() at the close
  CHECK(bad_rows == 0);
  // The ratio held within its window: 2 trained steps per env step.
  const double diff = r.limiter().diff();
  CHECK(diff >= r.limiter().min_diff());
  CHECK(diff <= r.limiter().max_diff());
  const double ratio =
      static_cast<double>(r.limiter().samples()) / static_cast<double>(r.limiter().inserts());
  CHECK(ratio == Approx(2.0).margin(0.05));
  CHECK(r.stats().priority_updates.load() + r.stats().stale_updates.load() > 0);
}
