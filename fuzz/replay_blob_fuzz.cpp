// libFuzzer target: replay_buffer::load (replay/src/replay_buffer.cpp), the
// loader of the replay state a DQN checkpoint carries.
//
// Input: one mode byte, then a blob. Mode bit 0 set: the blob's length field
// and its checksum are rewritten to match its bytes before loading, so the
// fuzzer reaches blobs that are internally consistent but invalid, as a
// crafted file would be; clear: the bytes are loaded as they are (damage).
// Bits 1-2 pick the loading buffer's alpha: the saved one, 0, 1 or 0.5 (the
// loader converts priorities between alphas). The buffer's shape is taken
// from the blob's own shape sections, within small bounds, so that every
// shape the seeds hold is reachable.
//
// A blob must either be refused with config_error, leaving the buffer as it
// was, or give a buffer that behaves: uniform and prioritized draws of
// sampleable slots with probabilities in (0, 1] and weights in [0, 1] (a
// weight underflows to 0 where a leaf is over 1e38 times the least), priority
// updates, inserts and cuts on every stream, and a save that loads into a
// fresh buffer and saves to the same bytes.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/replay_buffer.hpp"
#include "fuzz_support.hpp"
#include "replay_blob_layout.hpp"

namespace {

namespace replay = coral::replay;
using coral::fuzz::check;

double loading_alpha(std::uint8_t mode, std::span<const char> blob) {
  switch ((mode >> 1) & 3) {
    case 0: {
      const auto saved = coral::fuzz::blob_scalar<double>(blob, 6);
      return saved && *saved >= 0.0 && *saved <= 1.0 ? *saved : 0.6;
    }
    case 1:
      return 0.0;
    case 2:
      return 1.0;
    default:
      return 0.5;
  }
}

void check_draws(const replay::replay_buffer& b, const replay::sampled_batch& s, std::size_t count,
                 std::string_view kind) {
  check(s.keys.size() == count && s.weights.size() == count && s.probabilities.size() == count,
        "a sample has another size than asked");
  for (std::size_t i = 0; i < count; ++i) {
    const auto slot = s.keys[i].slot;
    const auto p = s.probabilities[i];
    const auto w = s.weights[i];
    if (slot >= b.capacity() || !b.sampleable(slot) || s.keys[i].generation != b.generation(slot) ||
        !(std::isfinite(p) && p > 0.0 && p <= 1.0) || !(w >= 0.0f && w <= 1.0f)) {
      coral::fuzz::fail(fmt::format(
          "{} draw {} of {}: slot {} (capacity {}, sampleable {}), generation {} (slot's {}), probability {}, "
          "weight {}; buffer: {} sampleable, total priority {}, max priority {}",
          kind, i, count, slot, b.capacity(), slot < b.capacity() && b.sampleable(slot), s.keys[i].generation,
          slot < b.capacity() ? b.generation(slot) : 0, p, w, b.size(), b.total_priority(), b.max_priority()));
    }
  }
}

// Draws, updates priorities from `noise`, inserts and cuts on every stream,
// and draws again; every draw must be valid.
void exercise(replay::replay_buffer& b, const replay::replay_config& c, std::span<const std::uint8_t> noise) {
  coral::rng rng(noise.size());
  replay::sampled_batch s;
  constexpr std::size_t draws = 7;
  auto draw_all = [&] {
    if (b.size() == 0) return;
    b.sample_uniform(rng, draws, s);
    check_draws(b, s, draws, "uniform");
    b.sample_prioritized(rng, draws, 0.4, s);
    check_draws(b, s, draws, "prioritized");
  };
  draw_all();
  if (b.size() > 0) {
    std::vector<float> td(draws);
    for (std::size_t i = 0; i < draws; ++i) td[i] = i < noise.size() ? static_cast<float>(noise[i]) / 16.0f : 1.0f;
    b.update_priorities(s.keys, td);
    draw_all();
  }
  std::vector<float> obs(c.obs_dim, 0.5f), next(c.obs_dim, -0.5f), cont(c.continuous_action_dim, 0.25f);
  std::vector<std::int32_t> disc(c.discrete_action_dim, 1);
  for (std::size_t stream = 0; stream < c.num_streams; ++stream) {
    for (std::uint32_t k = 0; k < 3; ++k) {
      const bool last = k == 2;
      b.insert(stream, replay::transition{.observation = obs,
                                          .discrete_action = disc,
                                          .continuous_action = cont,
                                          .n_step_return = 1.0f,
                                          .discount = 0.9f,
                                          .steps = last ? 1 : std::min<std::uint32_t>(k + 1, c.n_step),
                                          .next_observation = next,
                                          .last_of_episode = last});
    }
    b.insert(stream, replay::transition{.observation = obs,
                                        .discrete_action = disc,
                                        .continuous_action = cont,
                                        .n_step_return = 1.0f,
                                        .discount = 0.9f,
                                        .steps = 1,
                                        .next_observation = next});
    b.cut(stream);
  }
  draw_all();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t mode = data[0];
  std::vector<char> blob(data + 1, data + size);
  if ((mode & 1) != 0) coral::fuzz::repair_blob(blob);
  auto config = coral::fuzz::blob_shape(blob);
  if (!config) return 0;
  config->alpha = loading_alpha(mode, blob);
  std::optional<replay::replay_buffer> buffer;
  try {
    buffer.emplace(*config);
  } catch (const coral::config_error&) {
    return 0;  // a shape no buffer can have: nothing to load into
  }
  std::vector<char> before;
  buffer->save(before);
  try {
    buffer->load(blob);
  } catch (const coral::config_error&) {
    std::vector<char> after;
    buffer->save(after);
    check(after == before, "a refused blob changed the buffer");
    return 0;
  }

  // A loaded state saves and loads back to itself.
  std::vector<char> saved;
  buffer->save(saved);
  replay::replay_buffer copy(*config);
  copy.load(saved);
  std::vector<char> resaved;
  copy.save(resaved);
  check(resaved == saved, "a loaded buffer saved, loaded and saved again changed");

  exercise(*buffer, *config, {data, size});
  return 0;
}
