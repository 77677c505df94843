#pragma once
/// \file
/// `replay_buffer`: a fixed-capacity ring of n-step transitions with uniform
/// and proportional prioritized sampling.
///
/// Storage scheme (each observation stored once). The capacity is split into
/// num_streams equal rings, one per env stream (an env, or one agent of it),
/// and a stream's items are written in its own ring in the order its
/// nstep_assembler emits them. An item is one of:
/// - a transition: o_t, a_t, the n-step return, the discount and k = steps;
///   its bootstrap observation o_{t+k} is the observation of the item k slots
///   further in the same ring, never a second copy;
/// - a frame: the final observation of an episode, written right after the
///   episode's last transition (last_of_episode, k = 1). It costs one slot per
///   episode and is never sampled.
/// A transition is pending, and cannot be sampled, until the item k slots
/// later has been written: within an episode that is n inserts later. A ring
/// overwrites its oldest items first, and an item's bootstrap slot is always
/// newer than the item, so a live transition always has its bootstrap
/// observation. Per slot the buffer holds the observation, the action rows,
/// return, discount, k (uint16), a state byte and the priority, and with a
/// mask_dim the action mask of the observation (a frame's: the final
/// observation's, as the transition's next_action_mask gave it), so that a
/// transition's bootstrap mask is the one stored with its bootstrap item.
///
/// Priorities. A transition is inserted with the largest priority seen so far
/// (1 at first). Its leaf in the priority tree is priority^alpha, a float;
/// pending transitions, frames and empty slots have leaf 0, which the tree
/// leaves out of both its sum and its minimum. update_priorities sets
/// priority = |td error| + epsilon.
/// Sampling is stratified: the total mass is split into B equal strata and
/// one item is drawn in each. Importance weights are (N P(i))^−beta divided by
/// their largest possible value, (N P_min)^−beta, so the largest weight is 1.
///
/// Every write to a slot gives it a new generation: one more than the
/// position of the item in its stream (items written to the stream before
/// it), so 0 for a slot never written. It is not stored: the stream's head
/// and the slot's place in the ring give it, which spares the sample and the
/// update an 8 MB array read at random. A sample carries the generation it
/// saw, and a priority update whose generation no longer matches (the slot
/// was overwritten since) is ignored.
///
/// Cuts. An episode that ends without its final observation (the env was
/// reset after a failure, or the run resumed from a checkpoint) leaves up to n
/// pending transitions whose bootstrap items will never be written. cut()
/// marks them abandoned: never sampleable, not completed by the next
/// episode's items, dropped when their slots are overwritten.
///
/// Persistence. save() appends the whole state to a byte vector as a
/// versioned blob of named sections with a checksum; load() replaces the
/// state of a buffer of the same shape with it, leaving the buffer untouched
/// when it throws. Priorities are stored as priority^alpha together with the
/// alpha that made them, and load() converts them to the loading buffer's
/// alpha (see load()).
///
/// Thread safety: none, not even for const calls (sampling reuses scratch
/// space). The replay actor owns the buffer; inserts, samples and
/// priority updates reach it as messages.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "coral/core/slab.hpp"
#include "coral/core/rng.hpp"
#include "coral/replay/detail/divider.hpp"
#include "coral/replay/detail/key_kernels.hpp"
#include "coral/replay/detail/saved_state.hpp"  // saved_state_checksum
#include "coral/replay/priority_tree.hpp"
#include "coral/replay/transition.hpp"

namespace coral::replay {

/// Settings of a replay_buffer.
struct replay_config {
  std::size_t capacity = 0;               ///< slots in all, a positive multiple of num_streams
  std::size_t num_streams = 1;            ///< env streams; each gets capacity / num_streams slots
  std::size_t obs_dim = 0;                ///< floats per observation
  std::size_t discrete_action_dim = 1;    ///< int32 per action
  std::size_t continuous_action_dim = 0;  ///< floats per action
  std::size_t n_step = 1;                 ///< the largest k a transition may have
  double alpha = 0.6;                     ///< priority exponent, in [0, 1]
  double epsilon = 1e-6;                  ///< added to |td error|, > 0
  std::size_t mask_dim = 0;               ///< bytes per action mask kept with each observation (0: none)
};

/// Struct-of-arrays views of `count` transitions of one stream, in order.
struct transition_batch {
  std::size_t count = 0;                          ///< number of transitions
  std::span<const float> observations;           ///< count × obs_dim
  std::span<const std::int32_t> discrete_actions;  ///< count × discrete_action_dim
  std::span<const float> continuous_actions;     ///< count × continuous_action_dim
  std::span<const float> n_step_returns;         ///< count
  std::span<const float> discounts;              ///< count
  std::span<const std::uint32_t> steps;          ///< count, each in [1, n_step]
  std::span<const std::uint8_t> last_of_episode;  ///< count, 0 or 1 (then steps must be 1)
  std::span<const float> next_observations;      ///< count × obs_dim; only rows with last_of_episode are read
  std::span<const std::uint8_t> action_masks;      ///< count × mask_dim: the legal actions at each observation
  std::span<const std::uint8_t> next_action_masks;  ///< count × mask_dim; as next_observations
};

/// Which item a sample drew: its slot and the generation it had then.
struct sample_key {
  std::size_t slot = 0;            ///< slot index in [0, capacity)
  std::uint64_t generation = 0;    ///< the slot's generation when sampled
};

/// A sampled batch. Reused across calls: its vectors are resized, so they
/// allocate only when the batch grows.
struct sampled_batch {
  std::vector<sample_key> keys;        ///< one per draw
  std::vector<double> probabilities;   ///< P(i) of each draw
  std::vector<float> weights;          ///< importance weights, largest possible = 1
};

/// The replay buffer.
class replay_buffer {
 public:
  /// Allocates everything; throws coral::config_error (errors::bad_capacity,
  /// zero_streams, stream_too_small, zero_n_step, bad_exponent, bad_epsilon).
  explicit replay_buffer(const replay_config& config);

  /// Appends one transition to `stream`'s ring (and, if it is the last of its
  /// episode, the final-observation frame). Throws coral::config_error on a
  /// bad stream or steps (errors::bad_stream, bad_steps).
  void insert(std::size_t stream, const transition& t);

  /// Appends `batch.count` transitions to `stream`'s ring in order; the tree
  /// ancestors are recomputed once per level for the whole run. Throws
  /// coral::config_error (errors::bad_stream, size_mismatch, bad_steps)
  /// before writing anything.
  void insert(std::size_t stream, const transition_batch& batch);

  /// Draws `batch` transitions uniformly with replacement among the complete
  /// ones (weights 1). Throws coral::config_error (errors::empty_buffer)
  /// when there is none.
  void sample_uniform(coral::rng& rng, std::size_t batch, sampled_batch& out) const;

  /// Draws `batch` transitions with P(i) = p_i^alpha / Σ p^alpha, one per
  /// stratum of the total mass, with importance exponent `beta`. Throws
  /// coral::config_error (errors::empty_buffer) when there is none.
  void sample_prioritized(coral::rng& rng, std::size_t batch, double beta, sampled_batch& out) const;

  /// Sets priority |td_errors[i]| + epsilon for each key whose slot still
  /// holds the sampled item; ignores the others. Returns how many it applied.
  /// Throws coral::config_error, applying none, when the lengths differ
  /// (errors::size_mismatch) or a TD error is infinite or not a number
  /// (errors::bad_td_error): a learner whose loss diverged must not poison
  /// the tree.
  std::size_t update_priorities(std::span<const sample_key> keys, std::span<const float> td_errors);

  /// Ends the episode in progress on `stream` without its final observation.
  /// Its pending transitions (those whose bootstrap item was not written yet)
  /// can never be completed correctly, so they become unsampleable for good:
  /// the next episode's items do not complete them, and they leave the ring
  /// when their slots are overwritten. Complete transitions are untouched, and
  /// the next insert on the stream starts a fresh episode. Does nothing right
  /// after an episode's last transition (its frame completed everything).
  /// Call it, and clear the stream's nstep_assembler, when an env is reset
  /// after a failure, and for every stream after load() when a run resumes.
  /// Throws coral::config_error on a bad stream (errors::bad_stream).
  void cut(std::size_t stream);

  /// Appends the buffer's whole state to `out` as one self-describing,
  /// versioned binary blob: a header (magic, format version, byte order,
  /// length), then named sections (the shape and alpha/epsilon of the config,
  /// the counters, max priority, the stream heads and every slot array,
  /// priorities as priority^alpha) and a checksum. Written in this machine's
  /// byte order; the tree is not stored (load rebuilds it).
  void save(std::vector<char>& out) const;

  /// Replaces the buffer's state with exactly one blob written by save().
  /// The blob must come from a buffer of the same shape (capacity,
  /// num_streams, obs_dim, discrete_action_dim, continuous_action_dim,
  /// n_step, mask_dim); alpha and epsilon may differ. This buffer keeps its own config:
  /// priorities stored at the saved alpha a are converted to this alpha a' as
  /// (p^a)^(a'/a), rounded to float like update_priorities' leaves (exact
  /// when a' == a, which reproduces every leaf bit for bit); a blob saved with
  /// a = 0 holds no per-transition priority, so every transition then gets
  /// the max priority. epsilon only affects later updates. The tree is
  /// rebuilt from the slots, so sampling with the same rng state draws what
  /// the saved buffer would have drawn.
  /// Throws coral::config_error, leaving the buffer unchanged:
  /// errors::malformed_state (with a state_* reason) for a truncated,
  /// garbled or inconsistent blob, unsupported_state_version, or
  /// state_shape_mismatch naming the first differing field and both values.
  void load(std::span<const char> in);

  /// Observation o_t of the item in `slot`.
  [[nodiscard]] std::span<const float> observation(std::size_t slot) const noexcept {
    return observations_.row(slot);
  }
  /// Bootstrap observation o_{t+k} of the transition in `slot`.
  [[nodiscard]] std::span<const float> next_observation(std::size_t slot) const noexcept {
    return observations_.row(bootstrap_slot(slot));
  }
  /// Int32 part of the action of the transition in `slot`.
  [[nodiscard]] std::span<const std::int32_t> discrete_action(std::size_t slot) const noexcept {
    return discrete_.row(slot);
  }
  /// The legal actions at the bootstrap observation o_{t+k} of the
  /// transition in `slot` (mask_dim bytes; empty without masks).
  [[nodiscard]] std::span<const std::uint8_t> next_action_mask(std::size_t slot) const noexcept {
    return masks_.row(bootstrap_slot(slot));
  }
  /// Float part of the action of the transition in `slot`.
  [[nodiscard]] std::span<const float> continuous_action(std::size_t slot) const noexcept {
    return continuous_.row(slot);
  }
  /// n-step return of the transition in `slot`.
  [[nodiscard]] float n_step_return(std::size_t slot) const noexcept { return returns_[slot]; }
  /// Discount to the bootstrap (γ^k, or 0) of the transition in `slot`.
  [[nodiscard]] float discount(std::size_t slot) const noexcept { return discounts_[slot]; }
  /// k of the transition in `slot`.
  [[nodiscard]] std::uint32_t steps(std::size_t slot) const noexcept { return steps_[slot]; }
  /// Current priority^alpha (|td| + epsilon, to the alpha) of the item in
  /// `slot`; 0 for a frame or an empty slot.
  [[nodiscard]] double priority(std::size_t slot) const noexcept {
    return states_[slot] == state_complete ? tree_.get(slot) : priorities_[slot];
  }
  /// Current generation of `slot`: 1 + the position in its stream of the
  /// item it holds (0 if it was never written).
  [[nodiscard]] std::uint64_t generation(std::size_t slot) const noexcept {
    const std::size_t stream = stream_of_.quotient(slot);
    const std::size_t r = slot - stream * stream_capacity_;  // place in the ring
    const std::size_t head_r = ring_heads_[stream];         // where the next item goes
    const std::uint64_t lap = heads_[stream] - head_r;      // position of this lap's first item
    // Written in this lap, in the one before, or never. Selects, not
    // branches: for random slots r < head_r is a coin flip to the predictor.
    const bool this_lap = r < head_r;
    const std::uint64_t gen = lap + r + 1 - (this_lap ? 0 : stream_capacity_);
    return this_lap || lap > 0 ? gen : 0;
  }
  /// Whether `slot` holds a transition that can be sampled.
  [[nodiscard]] bool sampleable(std::size_t slot) const noexcept { return states_[slot] == state_complete; }

  /// Number of transitions that can be sampled.
  [[nodiscard]] std::size_t size() const noexcept { return complete_; }
  /// Slots in all.
  [[nodiscard]] std::size_t capacity() const noexcept { return config_.capacity; }
  /// Slots per stream.
  [[nodiscard]] std::size_t stream_capacity() const noexcept { return stream_capacity_; }
  /// Items (transitions and frames) written since construction.
  [[nodiscard]] std::uint64_t inserts() const noexcept { return inserts_; }
  /// Σ priority^alpha over the sampleable transitions.
  [[nodiscard]] double total_priority() const noexcept { return tree_.total(); }
  /// The largest priority seen, given to new transitions.
  [[nodiscard]] double max_priority() const noexcept { return max_priority_; }

 private:
  static constexpr std::uint8_t state_empty = 0;
  static constexpr std::uint8_t state_frame = 1;
  static constexpr std::uint8_t state_pending = 2;
  static constexpr std::uint8_t state_complete = 3;
  static constexpr std::uint8_t state_abandoned = 4;  // pending when its stream was cut: never completes

  [[nodiscard]] std::size_t bootstrap_slot(std::size_t slot) const noexcept {
    const std::size_t base = slot - slot % stream_capacity_;
    return base + (slot - base + steps_[slot]) % stream_capacity_;
  }
  std::size_t claim(std::size_t stream);  // next slot of the stream's ring, its old item dropped
  void advance(std::size_t stream, std::size_t count) noexcept;  // the stream's head, count slots on (not past the ring's end)
  void validate(std::size_t stream, const transition_batch& batch) const;
  void complete_and_refresh(std::size_t stream, std::uint64_t old_head);
  // What generation() reads, for the batch kernels; no magic (so no kernel)
  // for slots that need more than 32 bits.
  [[nodiscard]] detail::stream_heads heads_view() const noexcept {
    const bool fits = config_.capacity <= (std::size_t{1} << 32);
    return {heads_.data(), ring_heads_.data(), stream_capacity_, fits ? stream_of_.magic() : 0, config_.num_streams};
  }

  replay_config config_;
  std::size_t stream_capacity_;
  slab<float> observations_;
  slab<std::int32_t> discrete_;
  slab<float> continuous_;
  slab<std::uint8_t> masks_;  // the action mask of each slot's observation
  std::vector<float> returns_;
  std::vector<float> discounts_;
  std::vector<std::uint16_t> steps_;
  coral::huge_vector<std::uint8_t> states_;
  std::vector<double> priorities_;  // priority^alpha given at insert, until the transition completes
  std::vector<std::uint64_t> heads_;       // items written per stream, ever
  std::vector<std::size_t> ring_heads_;    // heads_ % stream capacity: the slot the next item takes
  detail::divider stream_of_;              // slot / stream capacity
  priority_tree tree_;  // leaf priority^alpha of complete transitions, 0 for every other slot
  double max_priority_ = 1.0;
  double max_leaf_ = 1.0;  // max_priority_^alpha
  std::uint64_t inserts_ = 0;
  std::size_t complete_ = 0;
  // Reused by sampling and updates; they grow only with the batch size.
  mutable std::vector<std::size_t> scratch_slots_;
  std::vector<float> scratch_values_;
};

}  // namespace coral::replay
