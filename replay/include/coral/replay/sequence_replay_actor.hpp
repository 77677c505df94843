#pragma once
/// \file
/// The sequence replay actor: the one owner of R2D2's sequence_buffer and
/// its rate limiter. It is basic_replay_actor (see basic_replay_actor.hpp
/// for the protocol) over sequence_storage, below:
///
/// - a `sequence_block` from the sampling side (the sequence feeder) carries
///   whole sequences and the env steps they account for. A block must
///   account for at least one env step (the inbox is sized in env steps);
///   steps still in open sequences may be counted in the block that
///   carries them later or earlier, as long as every env step is counted
///   once;
/// - a `sequence_batch` is the learner's request, handed back with one new
///   priority per draw in `priorities` (empty: no update).
///
/// The replay ratio. The limiter counts inserted env steps and sampled
/// units; with `ratio_counts = ratio_unit::trained_steps` (the default) a
/// sampled sequence counts its trained slots, length − burn_in, so
/// samples_per_insert is the number of times each env step is trained on
/// (with overlap = burn_in every step is in the trained part of exactly one
/// sequence), the figure DQN's ratio gives; with `ratio_unit::draws` it is
/// sampled sequences per env step.
///
/// Stats: sequences added (`sequences`) and sampled (`sampled`), batches,
/// sample time (sample_ns / batches per batch), replay size, stale updates,
/// and the priorities' min, max and mean as sequence_buffer defines them.
///
/// Thread safety: as basic_replay_actor's.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "coral/core/rng.hpp"
#include "coral/replay/basic_replay_actor.hpp"
#include "coral/replay/sequence.hpp"
#include "coral/replay/sequence_buffer.hpp"

namespace coral::replay {

/// Counters the progress line reads; each is updated by the actor alone.
struct sequence_replay_stats : replay_counters {
  std::atomic<std::uint64_t> sequences{0};  ///< sequences inserted
  std::atomic<double> priority_min{0.0};    ///< smallest priority held (NaN: unknown, see sequence_buffer)
  std::atomic<double> priority_max{0.0};    ///< largest priority seen
  std::atomic<double> priority_mean{0.0};   ///< mean priority held
};

/// The sequence replay actor's storage: a sequence_buffer (see
/// basic_replay_actor.hpp for what a storage provides).
class sequence_storage {
 public:
  using config_type = sequence_buffer_config;
  using buffer_type = sequence_buffer;
  using block_type = sequence_block;
  using batch_type = sequence_batch;
  using stats_type = sequence_replay_stats;
  /// The first bytes of a saved sequence_replay_actor state.
  static constexpr char state_magic[8] = {'C', 'R', 'L', 'S', 'A', 'C', 'T', '1'};
  /// Why a state that does not start with them is refused.
  static constexpr std::string_view state_name = "not a sequence replay actor state";

  /// The env streams.
  [[nodiscard]] static std::size_t streams(const sequence_buffer_config& c) noexcept { return c.num_streams; }
  /// length − burn_in (1 for a layout the buffer will refuse).
  [[nodiscard]] static std::uint64_t trained_steps_per_draw(const sequence_buffer_config& c) noexcept {
    return c.layout.length > c.layout.burn_in ? c.layout.length - c.layout.burn_in : 1;
  }

  /// Builds the buffer (its config_errors).
  explicit sequence_storage(const sequence_buffer_config& config) : buffer_(config) {}
  [[nodiscard]] sequence_buffer& buffer() noexcept { return buffer_; }
  [[nodiscard]] const sequence_buffer& buffer() const noexcept { return buffer_; }
  /// Sequences held.
  [[nodiscard]] std::size_t size() const noexcept { return buffer_.size(); }
  /// Reserves a request's arrays for `n` draws.
  void reserve(sequence_batch& b, std::size_t n) const;
  /// Inserts the block's sequences; counts them.
  void insert(sequence_block& block, sequence_replay_stats& stats);
  /// Draws `n` sequences into `b` (all but its sequence number).
  void fill(sequence_batch& b, std::size_t n, bool prioritized, double beta, coral::rng& rng);
  /// Applies the priorities handed back in `b`, if any and if `prioritized`
  /// (a uniform replay reads none, so it neither stores nor checks them),
  /// and empties them.
  update_result apply_update(sequence_batch& b, bool prioritized);
  /// Stores the priority statistics.
  void publish(sequence_replay_stats& stats) const noexcept;
  /// The buffer's blob.
  void save(std::vector<char>& out) const { buffer_.save(out); }
  /// Replaces the buffer with a blob save() wrote.
  void load(std::span<const char> in) { buffer_.load(in); }
  /// Nothing: a stored sequence is complete, whatever happens to its episode.
  void resumed() noexcept {}

 private:
  sequence_buffer buffer_;
};

/// Settings of a sequence_replay_actor.
using sequence_replay_actor_config = basic_replay_actor_config<sequence_buffer_config>;

/// The replay actor of sequences (R2D2).
using sequence_replay_actor = basic_replay_actor<sequence_storage>;

extern template class basic_replay_actor<sequence_storage>;

/// What the sequence replay actor's inbox takes: a sequence_block, a
/// sequence_batch (a request, or one handed back) or a snapshot_request.
using sequence_replay_msg = sequence_replay_actor::message;

}  // namespace coral::replay
