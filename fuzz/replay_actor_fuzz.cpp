// libFuzzer target: replay_actor::load (replay/src/basic_replay_actor_impl.hpp),
// the loader of the replay actor's state a DQN checkpoint carries: its
// limiter's counters, its sampling generator and batches served, then the
// replay buffer's blob.
//
// Input: one mode byte, then a state. Mode bit 0 set: the length field and
// the checksum of the buffer's blob in the state are rewritten to match its
// bytes (as in the replay_blob target), so that the fuzzer gets past them;
// bit 1: prioritized sampling, else uniform; bits 2-3 pick the ratio of
// samples per insert, bits 4-5 the inserts before sampling starts; bit 6
// inserts a few transitions after the load. The buffer's shape is the
// blob's own, within small bounds, and its alpha the saved one.
//
// A state must either be refused with config_error, leaving the actor as it
// was, or give an actor whose state saves, loads into a fresh actor and
// saves to the same bytes, and which then runs: on a single-threaded
// io_context it takes inserts and sample requests, serves batches of valid
// draws while its limiter allows, takes their priorities back, answers a
// snapshot request with a state that loads, and ends once its inbox is
// closed.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/core/rng.hpp"
#include "coral/replay/replay_actor.hpp"
#include "fuzz_support.hpp"
#include "replay_blob_layout.hpp"

namespace {

namespace replay = coral::replay;
using coral::fuzz::check;

// The state's layout (basic_replay_actor_impl.hpp): an 8-byte magic, the u64
// counters inserts, samples and batches served, the generator, then the
// buffer's blob.
constexpr std::size_t blob_offset = 8 + 3 * 8 + sizeof(coral::rng);

replay::replay_actor_config actor_config(std::uint8_t mode, std::span<const char> blob) {
  replay::replay_actor_config c;
  c.buffer = *coral::fuzz::blob_shape(blob);
  const auto alpha = coral::fuzz::blob_scalar<double>(blob, 6);
  c.buffer.alpha = alpha && *alpha >= 0.0 && *alpha <= 1.0 ? *alpha : 0.6;
  c.prioritized = (mode & 2) != 0;
  constexpr double ratios[] = {8.0, 0.5, 1.0, 64.0};
  c.samples_per_insert = ratios[(mode >> 2) & 3];
  constexpr std::uint64_t min_sizes[] = {0, 1, 16, 1000};
  c.min_size = min_sizes[(mode >> 4) & 3];
  c.batch_size = 4;
  c.prefetch = 2;
  c.beta_steps = 100;
  return c;
}

void check_batch(const replay::replay_actor& actor, const replay::sample_batch& b) {
  const auto& c = actor.config();
  check(b.size == c.batch_size, "a served batch has another size than the actor's");
  check(b.keys.size() == b.size && b.weights.size() == b.size && b.returns.size() == b.size &&
            b.discounts.size() == b.size && b.observations.size() == b.size * c.buffer.obs_dim,
        "a served batch's arrays disagree with its size");
  for (std::size_t i = 0; i < b.size; ++i) {
    const float w = b.weights[i];
    if (b.keys[i].slot >= c.buffer.capacity || !(w >= 0.0f && w <= 1.0f)) {
      coral::fuzz::fail(fmt::format("served draw {}: slot {} (capacity {}), weight {}", i, b.keys[i].slot,
                                    c.buffer.capacity, w));
    }
  }
}

// Runs `actor` by hand: inserts (if `insert`), the requests, the batches it
// serves handed back with TD errors, then the close.
void exercise(replay::replay_actor& actor, bool insert) {
  const auto& c = actor.config().buffer;
  asio::io_context io;
  bool ended = false;
  std::exception_ptr failure;
  asio::co_spawn(io, actor.run(), [&](std::exception_ptr e) {
    ended = true;
    failure = std::move(e);
  });
  if (insert && c.num_streams > 0) {
    auto block = std::make_unique<replay::insert_block>(c.obs_dim, c.discrete_action_dim, c.continuous_action_dim);
    const std::vector<float> obs(c.obs_dim, 0.5f), next(c.obs_dim, -0.5f), cont(c.continuous_action_dim, 0.25f);
    const std::vector<std::int32_t> disc(c.discrete_action_dim, 1);
    for (std::uint32_t k = 0; k < 3; ++k) {
      block->push(0, replay::transition{.observation = obs,
                                        .discrete_action = disc,
                                        .continuous_action = cont,
                                        .n_step_return = 1.0f,
                                        .discount = 0.9f,
                                        .steps = 1,
                                        .next_observation = next,
                                        .last_of_episode = k == 2});
    }
    block->env_steps = 3;
    check(actor.inbox().try_send(replay::replay_msg(std::move(block))), "the inbox refused an insert");
  }
  for (std::size_t i = 0; i < actor.config().prefetch; ++i) {
    check(actor.inbox().try_send(replay::replay_msg(actor.make_request())), "the inbox refused a request");
  }
  io.poll();
  for (int round = 0; round < 2; ++round) {
    while (auto b = actor.samples().try_receive()) {
      check_batch(actor, **b);
      (*b)->td_errors.assign((*b)->size, 0.5f + static_cast<float>(round));
      check(actor.inbox().try_send(replay::replay_msg(std::move(*b))), "the inbox refused a returned batch");
    }
    io.poll();
  }
  // What a checkpoint takes of it now loads into a fresh actor.
  check(actor.inbox().try_send(replay::replay_msg(replay::snapshot_request{1})), "the inbox refused a snapshot request");
  io.poll();
  const auto snapshot = actor.snapshots().try_receive();
  check(snapshot.has_value(), "the actor did not answer a snapshot request");
  replay::replay_actor(actor.config()).load(snapshot->state);
  actor.inbox().close();
  io.poll();
  if (failure) std::rethrow_exception(failure);
  check(ended, "the actor did not end once its inbox was closed");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t mode = data[0];
  std::vector<char> state(data + 1, data + size);
  if (state.size() < blob_offset) return 0;
  const auto blob = std::span(state).subspan(blob_offset);
  if ((mode & 1) != 0) coral::fuzz::repair_blob(blob);
  if (!coral::fuzz::blob_shape(blob)) return 0;
  const auto config = actor_config(mode, blob);
  std::optional<replay::replay_actor> actor;
  try {
    actor.emplace(config);
  } catch (const coral::config_error&) {
    return 0;  // a shape no actor can have: nothing to load into
  }
  const std::vector<char> before = actor->save();
  try {
    actor->load(state);
  } catch (const coral::config_error&) {
    check(actor->save() == before, "a refused state changed the actor");
    return 0;
  }

  // A loaded state saves and loads back to itself.
  const std::vector<char> saved = actor->save();
  replay::replay_actor copy(config);
  copy.load(saved);
  check(copy.save() == saved, "a loaded actor saved, loaded and saved again changed");
  check(actor->stats().size.load() == actor->buffer().size(), "the actor's size counter disagrees with its buffer");

  exercise(*actor, (mode & 64) != 0);
  return 0;
}
