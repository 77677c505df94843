#pragma once
/// \file
/// `sequence_buffer`: a fixed-capacity ring of whole sequences (R2D2's
/// replay) with proportional prioritized and uniform sampling.
///
/// Storage. One ring of `capacity` slots for every stream: the k-th sequence
/// inserted (k = 0, 1, ...) goes to slot k mod capacity, so the oldest
/// sequence is overwritten first whatever stream it came from. Per-stream
/// rings, as replay_buffer has, are there to find a transition's bootstrap
/// observation in its own stream; a sequence carries its own (observation
/// slot `length`), is sampleable from the moment it is written, and one ring
/// keeps the replay's age the same for every stream. Each field of a slot
/// (observations, actions, rewards, flags, recurrent state, action masks,
/// laid out as in sequence_block) is one contiguous row of a slab allocated once in the
/// constructor: inserting copies rows in, sampling copies rows out, and
/// neither allocates (a sequence_batch's vectors grow only the first time).
/// memory_bytes() says what a config will allocate, for the run's memory
/// check.
///
/// Priorities. A sequence is inserted with the largest priority seen so far
/// (1 at first). Its leaf in the priority tree is priority^alpha, a float,
/// kept within [FLT_MIN, FLT_MAX]; an empty slot's leaf is 0. Prioritized
/// sampling is stratified: the total mass is split into B equal strata and
/// one sequence is drawn in each, with importance weight (N P(i))^−beta
/// divided by its largest possible value (N P_min)^−beta, so the largest
/// weight is 1. Uniform sampling draws among the N sequences held, weight 1.
/// update_priorities sets priority = value + epsilon.
///
/// Generations. The k-th sequence inserted gives its slot generation k + 1
/// (0: never written). A draw carries the generation it saw; a priority
/// update whose generation no longer matches (the slot was overwritten
/// since) is stale and ignored. The generation is not stored: the insert
/// count and the slot's place in the ring give it.
///
/// Priority statistics, for the metrics: max_priority() is the largest
/// priority seen (what new sequences get), not necessarily one still held;
/// min_priority() is the tree's smallest leaf to the power 1/alpha (exact up
/// to the float leaf; NaN when alpha is 0, where every leaf is 1);
/// mean_priority() is a running sum of the held priorities over size(),
/// recomputed exactly once per `capacity` changes so that rounding does not
/// accumulate.
///
/// Persistence. save() appends the whole state as a versioned blob of named
/// sections with a checksum (the format of detail/saved_state.hpp, magic
/// "coralsq"); load() replaces the state of a buffer of the same layout and
/// capacity with it, leaving the buffer untouched when it throws.
///
/// Thread safety: none, not even for const calls (sampling reuses scratch
/// space). The sequence replay actor owns the buffer.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "coral/core/slab.hpp"
#include "coral/core/rng.hpp"
#include "coral/replay/priority_tree.hpp"
#include "coral/replay/sequence.hpp"

namespace coral::replay {

/// Settings of a sequence_buffer.
struct sequence_buffer_config {
  sequence_layout layout;        ///< the shape of every sequence
  std::size_t capacity = 0;      ///< sequences held, at least 1
  std::size_t num_streams = 1;   ///< env rows that send sequences; a sequence's stream is below it
  double alpha = 0.6;            ///< priority exponent, in [0, 1]
  double epsilon = 1e-6;         ///< added to every updated priority, > 0
};

/// The sequence replay's storage.
class sequence_buffer {
 public:
  /// Allocates everything; throws coral::config_error (errors::seq_zero_capacity,
  /// seq_zero_streams, seq_bad_layout, seq_bad_exponent, seq_bad_epsilon).
  explicit sequence_buffer(const sequence_buffer_config& config);

  /// Bytes a buffer with `config` allocates (its slabs, priorities and tree),
  /// for the run's memory check before anything is allocated.
  [[nodiscard]] static double memory_bytes(const sequence_buffer_config& config) noexcept;

  /// Appends the block's sequences in order, each with the max priority,
  /// overwriting the oldest when full. Throws coral::config_error before
  /// writing anything when the block's layout differs from the buffer's
  /// (errors::seq_layout_mismatch, naming the first field that differs), an
  /// array has the wrong length (seq_size_mismatch) or a stream is out of
  /// range (seq_bad_stream).
  void insert(const sequence_block& block);

  /// Draws `count` sequences with P(i) = p_i^alpha / Σ p^alpha, one per
  /// stratum of the total mass, with importance exponent `beta`, and gathers
  /// them into `out` (size, layout, every array, weights and keys; its
  /// priorities emptied; its `sequence` left to the caller). Throws
  /// coral::config_error (errors::seq_empty, seq_bad_exponent).
  void sample(std::size_t count, double beta, coral::rng& rng, sequence_batch& out) const;

  /// Draws `count` sequences uniformly with replacement (weights 1) and
  /// gathers them as sample() does. Throws coral::config_error (errors::seq_empty).
  void sample_uniform(std::size_t count, coral::rng& rng, sequence_batch& out) const;

  /// Sets priority priorities[i] + epsilon for each key whose slot still
  /// holds the drawn sequence and ignores the others (stale). Returns how
  /// many it applied. Throws coral::config_error, applying none, when the
  /// lengths differ (errors::seq_size_mismatch) or a priority is negative or
  /// not finite (seq_bad_priority): a learner whose loss diverged must not
  /// poison the tree.
  std::size_t update_priorities(std::span<const sequence_key> keys, std::span<const float> priorities);

  /// Appends the buffer's whole state to `out` as one blob: the layout,
  /// capacity, streams, alpha and epsilon, the insert count, the max
  /// priority, every slot's arrays (the masks only where the layout has
  /// them, so that a blob without masks is what it always was) and its
  /// priority (not to the alpha: load raises them to its own alpha), and a
  /// checksum. The tree is not stored.
  void save(std::vector<char>& out) const;

  /// Replaces the buffer's state with exactly one blob written by save().
  /// The blob must come from a buffer of the same capacity, num_streams and
  /// layout (a blob that names no mask_dim has none: 0); alpha and epsilon
  /// may differ (the leaves are rebuilt as priority^alpha with this
  /// buffer's alpha, bit for bit what the saved buffer had when the alphas
  /// agree). Throws coral::config_error, leaving
  /// the buffer unchanged: errors::seq_malformed_state (with a state_*
  /// reason) for a truncated, garbled or inconsistent blob,
  /// seq_unsupported_state_version, or seq_state_shape_mismatch naming the
  /// first differing field and both values.
  void load(std::span<const char> in);

  /// Observations of the sequence in `slot`: (length + 1) × obs_dim.
  [[nodiscard]] std::span<const float> observations(std::size_t slot) const noexcept { return observations_.row(slot); }
  /// Actions of the sequence in `slot`: length × discrete_dim.
  [[nodiscard]] std::span<const std::int32_t> actions(std::size_t slot) const noexcept { return actions_.row(slot); }
  /// Rewards of the sequence in `slot`: length.
  [[nodiscard]] std::span<const float> rewards(std::size_t slot) const noexcept { return rewards_.row(slot); }
  /// Flags (sequence_flag bits) of the sequence in `slot`: length.
  [[nodiscard]] std::span<const std::uint8_t> flags(std::size_t slot) const noexcept { return flags_.row(slot); }
  /// Recurrent state stored with the sequence in `slot`: state_dim.
  [[nodiscard]] std::span<const float> state(std::size_t slot) const noexcept { return states_.row(slot); }
  /// Action masks of the sequence in `slot`: (length + 1) × mask_dim (empty without masks).
  [[nodiscard]] std::span<const std::uint8_t> masks(std::size_t slot) const noexcept { return masks_.row(slot); }
  /// Priority (not to the alpha) of the sequence in `slot`; 0 for an empty slot.
  [[nodiscard]] float priority(std::size_t slot) const noexcept { return priorities_[slot]; }
  /// Tree leaf (priority^alpha) of `slot`; 0 for an empty slot.
  [[nodiscard]] float leaf(std::size_t slot) const noexcept { return tree_.get(slot); }
  /// Generation of `slot`: 1 + the insert number of the sequence it holds, 0 if never written.
  [[nodiscard]] std::uint64_t generation(std::size_t slot) const noexcept;

  /// The slot the next insert writes.
  [[nodiscard]] std::size_t head() const noexcept { return static_cast<std::size_t>(inserts_ % config_.capacity); }
  /// Sequences held: min(inserts, capacity).
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Slots in all.
  [[nodiscard]] std::size_t capacity() const noexcept { return config_.capacity; }
  /// Sequences inserted since construction.
  [[nodiscard]] std::uint64_t inserts() const noexcept { return inserts_; }
  /// The settings.
  [[nodiscard]] const sequence_buffer_config& config() const noexcept { return config_; }
  /// Σ priority^alpha over the sequences held.
  [[nodiscard]] double total_priority() const noexcept { return tree_.total(); }
  /// The largest priority seen, given to new sequences.
  [[nodiscard]] double max_priority() const noexcept { return max_priority_; }
  /// The smallest priority held (see the file comment); NaN when empty or alpha is 0.
  [[nodiscard]] double min_priority() const noexcept;
  /// The mean priority held (see the file comment); 0 when empty.
  [[nodiscard]] double mean_priority() const noexcept {
    return size_ == 0 ? 0.0 : priority_sum_ / static_cast<double>(size_);
  }

 private:
  void gather(std::size_t count, sequence_batch& out) const;  // scratch_slots_ into out
  void changed_priorities(std::size_t changes) noexcept;     // the running sum's exact recount, when due

  sequence_buffer_config config_;
  slab<float> observations_;
  slab<std::int32_t> actions_;
  slab<float> rewards_;
  slab<std::uint8_t> flags_;
  slab<float> states_;
  slab<std::uint8_t> masks_;
  std::vector<float> priorities_;  // per slot, not to the alpha; 0 while empty
  priority_tree tree_;             // leaf priority^alpha per slot, 0 while empty
  double max_priority_ = 1.0;
  float max_leaf_ = 1.0f;          // the leaf of max_priority_
  double priority_sum_ = 0.0;      // Σ priorities_ (running; recounted exactly every `capacity` changes)
  std::size_t changes_since_recount_ = 0;
  std::uint64_t inserts_ = 0;
  std::size_t size_ = 0;
  // Reused by sampling and updates; they grow only with the batch size.
  mutable std::vector<double> scratch_masses_;
  mutable std::vector<std::size_t> scratch_slots_;
  std::vector<float> scratch_leaves_;
};

}  // namespace coral::replay
