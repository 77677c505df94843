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

namespace {

namespace replay = coral::replay;
using coral::fuzz::check;

// The blob's layout (replay_buffer.cpp): a 24-byte header (magic, version,
// byte order, total length at offset 16), then sections of a 24-byte header
// and their elements; the first ones are the u64 scalars capacity, streams,
// obs_dim, disc_dim, cont_dim, n_step and the double alpha, and the last 8
// bytes are the checksum of everything before them.
constexpr std::size_t length_offset = 16;
constexpr std::size_t first_scalar = 24 + 24;
constexpr std::size_t scalar_stride = 24 + 8;

template <class T>
std::optional<T> scalar_at(std::span<const char> blob, std::size_t index) {
  const std::size_t at = first_scalar + index * scalar_stride;
  if (blob.size() < at + sizeof(T)) return std::nullopt;
  T v;
  std::memcpy(&v, blob.data() + at, sizeof v);
  return v;
}

// The shape the blob claims, if it is one this target builds (small, so
// that a run stays fast and within libFuzzer's memory limit).
std::optional<replay::replay_config> shape_of(std::span<const char> blob) {
  const auto capacity = scalar_at<std::uint64_t>(blob, 0);
  const auto streams = scalar_at<std::uint64_t>(blob, 1);
  const auto obs = scalar_at<std::uint64_t>(blob, 2);
  const auto disc = scalar_at<std::uint64_t>(blob, 3);
  const auto cont = scalar_at<std::uint64_t>(blob, 4);
  const auto n = scalar_at<std::uint64_t>(blob, 5);
  if (!n || *capacity > 512 || *streams > 64 || *obs > 16 || *disc > 4 || *cont > 4 || *n > 16) return std::nullopt;
  replay::replay_config c;
  c.capacity = *capacity;
  c.num_streams = *streams;
  c.obs_dim = *obs;
  c.discrete_action_dim = *disc;
  c.continuous_action_dim = *cont;
  c.n_step = *n;
  return c;
}

double loading_alpha(std::uint8_t mode, std::span<const char> blob) {
  switch ((mode >> 1) & 3) {
    case 0: {
      const auto saved = scalar_at<double>(blob, 6);
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
  coral::envs::rng rng(noise.size());
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
  if ((mode & 1) != 0 && blob.size() >= length_offset + 8 + 8) {
    const std::uint64_t length = blob.size();
    std::memcpy(blob.data() + length_offset, &length, sizeof length);
    const std::uint64_t sum = replay::saved_state_checksum(std::span(blob).first(blob.size() - 8));
    std::memcpy(blob.data() + blob.size() - 8, &sum, sizeof sum);
  }
  auto config = shape_of(blob);
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
