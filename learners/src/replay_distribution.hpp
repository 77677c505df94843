#pragma once
// Private: a replay-based algorithm across ranks (DQN's transitions, R2D2's
// sequences). A sampler rank's feeder fills insert blocks as in one process;
// the link takes them from the (never running) replay actor's inbox and the
// learner's replay actor gets them with the streams of that rank. The rate
// limit is the learner's: each sampler rank is granted the env steps the
// learner received from it, the steps it may always have on the way, and an
// equal share of the allowance left.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "coral/distributed/wire.hpp"
#include "coral/replay/replay_buffer.hpp"
#include "coral/replay/sequence.hpp"
#include "coral/training/algorithm.hpp"

namespace coral::learners::detail {

// How each kind of block crosses the wire.

inline void encode_block(const replay::insert_block& b, distributed::wire::writer& w) {
  w.put<std::uint64_t>(b.env_steps);
  w.put_vector(b.streams);
  w.put_vector(b.observations);
  w.put_vector(b.next_observations);
  w.put_vector(b.discrete);
  w.put_vector(b.continuous);
  w.put_vector(b.returns);
  w.put_vector(b.discounts);
  w.put_vector(b.steps);
  w.put_vector(b.last_of_episode);
  w.put_vector(b.masks);
  w.put_vector(b.next_masks);
  w.put_vector(b.cuts);
}
inline void decode_block(distributed::wire::reader& r, replay::insert_block& b) {
  b.env_steps = r.get<std::uint64_t>("insert env steps");
  r.get_vector(b.streams, "insert streams");
  const auto n = b.streams.size();
  auto sized = [&r](auto& v, std::string_view field, std::size_t expected) {
    r.get_vector(v, field);
    if (v.size() != expected) r.bad(field);
  };
  sized(b.observations, "insert observations", n * b.obs_dim);
  sized(b.next_observations, "insert next observations", n * b.obs_dim);
  sized(b.discrete, "insert discrete actions", n * b.discrete_dim);
  sized(b.continuous, "insert continuous actions", n * b.continuous_dim);
  sized(b.returns, "insert returns", n);
  sized(b.discounts, "insert discounts", n);
  sized(b.steps, "insert steps", n);
  sized(b.last_of_episode, "insert last_of_episode", n);
  sized(b.masks, "insert action masks", n * b.mask_dim);
  sized(b.next_masks, "insert next action masks", n * b.mask_dim);
  r.get_vector(b.cuts, "insert cuts");
}

inline void encode_block(const replay::sequence_block& b, distributed::wire::writer& w) {
  w.put<std::uint64_t>(b.env_steps);
  w.put_vector(b.streams);
  w.put_vector(b.observations);
  w.put_vector(b.actions);
  w.put_vector(b.rewards);
  w.put_vector(b.flags);
  w.put_vector(b.states);
  w.put_vector(b.masks);
}

inline void decode_block(distributed::wire::reader& r, replay::sequence_block& b) {
  b.env_steps = r.get<std::uint64_t>("sequence env steps");
  r.get_vector(b.streams, "sequence streams");
  const auto n = b.streams.size();
  const auto& l = b.layout;
  auto sized = [&r](auto& v, std::string_view field, std::size_t expected) {
    r.get_vector(v, field);
    if (v.size() != expected) r.bad(field);
  };
  sized(b.observations, "sequence observations", n * l.observation_floats());
  sized(b.actions, "sequence actions", n * l.length * l.discrete_dim);
  sized(b.rewards, "sequence rewards", n * l.length);
  sized(b.flags, "sequence flags", n * l.length);
  sized(b.states, "sequence states", n * l.state_dim);
  sized(b.masks, "sequence action masks", n * l.mask_bytes());
}

/// Moves the streams of `b` (a sampler's rows 0..rows) to that sampler's
/// place among the learner's streams (index × rows on).
inline void shift_streams(replay::insert_block& b, std::size_t index, std::size_t rows, distributed::wire::reader& r) {
  for (auto& stream : b.streams) {
    if (stream >= rows) r.bad("insert stream");
    stream += static_cast<std::uint32_t>(index * rows);
  }
  for (auto& stream : b.cuts) {
    if (stream >= rows) r.bad("insert cut");
    stream += static_cast<std::uint32_t>(index * rows);
  }
}

inline void shift_streams(replay::sequence_block& b, std::size_t index, std::size_t rows, distributed::wire::reader& r) {
  for (auto& stream : b.streams) {
    if (stream >= rows) r.bad("sequence stream");
    stream += static_cast<std::uint32_t>(index * rows);
  }
}

/// The distribution_part of an algorithm whose sampling side feeds `Actor`
/// (replay::replay_actor or replay::sequence_replay_actor) with `Block`s.
/// Thread safety: as distribution_part (the link's actor, one call at a time).
template <class Actor, class Block>
class replay_distribution final : public training::distribution_part {
 public:
  /// `rows`: a sampler rank's rows (streams); `ranks`: the sampler ranks;
  /// `make_block`: an empty block of the replay's shape.
  replay_distribution(Actor& replay, std::size_t rows, std::size_t ranks, std::function<std::unique_ptr<Block>()> make_block)
      : replay_(&replay), rows_(rows), make_block_(std::move(make_block)), received_(ranks), granted_(ranks) {}

  /// At the run's start: the inserts the replay already counts (a resumed run's).
  void start() { base_inserts_ = replay_->limiter().inserts(); }

  bool take(std::vector<std::byte>& out) override {
    constexpr std::size_t max_bytes = 256 * 1024;  // blocks batched into one message up to this size
    // A block per batcher step would be a message per few env steps: blocks
    // wait up to half a millisecond to go together (the allowance leaves
    // every rank a group's steps on the way, so nothing waits on them longer).
    constexpr auto max_wait = std::chrono::microseconds(500);
    constexpr std::size_t enough_blocks = 64;
    const auto now = std::chrono::steady_clock::now();
    if (replay_->inbox().size() < enough_blocks && now - last_take_ < max_wait) return false;
    last_take_ = now;
    const auto count_at = out.size();
    distributed::wire::writer w(out);
    w.put<std::uint64_t>(0);
    std::uint64_t blocks = 0;
    while (out.size() < max_bytes) {
      auto msg = replay_->inbox().try_receive();
      if (!msg) break;
      auto* block = std::get_if<std::unique_ptr<Block>>(&*msg);
      if (block == nullptr) continue;  // only inserts reach a sampler rank's replay
      encode_block(**block, w);
      ++blocks;
      (*block)->clear();
      (void)replay_->free_blocks().try_send(std::move(*block));
    }
    std::memcpy(out.data() + count_at, &blocks, sizeof(blocks));
    if (blocks == 0) out.resize(count_at);
    return blocks > 0;
  }

  bool accept(std::size_t index, std::span<const std::byte> in, const std::string& from) override {
    distributed::wire::reader r(in, from);
    const auto blocks = r.get<std::uint64_t>("insert blocks");
    for (std::uint64_t b = 0; b < blocks; ++b) {
      auto block = make_block_();
      decode_block(r, *block);
      shift_streams(*block, index, rows_, r);
      received_[index] += block->env_steps;
      received_all_ += block->env_steps;
      inserts_.push_back(std::move(block));
    }
    r.finish("insert blocks");
    pump();
    return true;
  }

  void pump() override {
    while (!inserts_.empty()) {
      if (!replay_->inbox().try_send(typename Actor::message(std::move(inserts_.front())))) return;
      inserts_.pop_front();
    }
  }

  bool control(std::size_t index, std::vector<std::byte>& out) override {
    const auto allowance = replay_->insert_allowance();
    const auto used = base_inserts_ + received_all_;
    const auto left = allowance > used ? allowance - used : 0;
    const auto in_flight = replay_->steps_in_flight();
    const auto grant = received_[index] + in_flight + left / received_.size();
    if (grant <= granted_[index]) return false;
    // Small raises wait while the rank has room (a message per served batch
    // was most of the wire); near its grant the rank hears of every raise.
    const bool has_room = granted_[index] > received_[index] + 2 * in_flight;
    if (has_room && grant - granted_[index] < std::max<std::uint64_t>(in_flight, 1)) return false;
    granted_[index] = grant;
    distributed::wire::writer(out).put<std::uint64_t>(grant);
    return true;
  }

  void apply_control(std::span<const std::byte> in, const std::string& from) override {
    distributed::wire::reader r(in, from);
    const auto grant = r.get<std::uint64_t>("insert allowance");
    r.finish("insert allowance");
    replay_->grant(grant);
  }

 private:
  Actor* replay_;
  std::size_t rows_;
  std::function<std::unique_ptr<Block>()> make_block_;
  // The learner's: what each sampler rank sent and was granted, and inserts
  // waiting for room in the replay's inbox.
  std::uint64_t base_inserts_ = 0;
  std::uint64_t received_all_ = 0;
  std::vector<std::uint64_t> received_;
  std::vector<std::uint64_t> granted_;
  std::deque<std::unique_ptr<Block>> inserts_;
  std::chrono::steady_clock::time_point last_take_;  // a sampler rank's: when take() last sent
};

}  // namespace coral::learners::detail
