#pragma once
/// \file
/// Sequences for recurrent replay (R2D2): the layout of one sequence, the
/// blocks of them the sampling side sends to the sequence replay, and the
/// batches the learner trains on. Torch-free data only; the sequence feeder
/// (sampling side), the sequence buffer and its actor (storage and
/// prioritized sampling) and the R2D2 learner all use these.
///
/// A sequence is `length` consecutive step slots of one env row (one
/// stream), never two episodes. Its first `burn_in` slots only warm the
/// recurrent state up (the learner runs them without gradient); the loss
/// covers slots [burn_in, length). Within an episode, sequence k covers the
/// episode's steps [k·stride − burn_in, k·stride − burn_in + length), with
/// stride = length − overlap: the first sequence of an episode starts with
/// burn_in padding slots before the episode's first step, so that every
/// step of an episode falls in the trained part of some sequence (with
/// overlap = burn_in, of exactly one). At the episode's end the open
/// sequences are closed and padded after it; one whose trained part holds
/// no step is not sent.
///
/// Per slot i: the observation o_i the action was chosen from, the action
/// a_i, the reward r_i that followed, and flags (sequence_flag). Slot
/// `length` of the observations is the observation after the last slot: o_L
/// for a sequence cut mid-episode (the bootstrap of its last steps). A
/// truncated episode's final observation goes in the observation slot right
/// after its last step. Padding slots are zeros with no flag.
///
/// The recurrent state stored with a sequence is the state the acting
/// policy had before its first valid slot (zeros when that slot starts an
/// episode): the learner starts its unroll from it.
///
/// Action masks (layout mask_dim > 0, an env that masks): per observation
/// slot, the actions legal there (mask_dim bytes, 1 = legal): at a step's
/// slot the mask its action was chosen under, at the observation after the
/// last step the mask of that observation (every action for a truncated
/// episode's final observation, whose mask the env does not give). The
/// learner's bootstrap maximises over them. Padding slots' masks are zeros
/// (no action legal; never bootstrapped from).
///
/// A multi-agent env's row is an agent slot: its sequences hold the slot's
/// own acted steps, one after another, and an episode is its agent's (see
/// training/sequence_feeder.hpp).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace coral::replay {

/// Bits of a slot's flags.
enum sequence_flag : std::uint8_t {
  slot_valid = 1,       ///< a real step (not padding)
  slot_first = 2,       ///< the first step of an episode: the state is reset before it
  slot_terminated = 4,  ///< the step ended its episode, terminated: no bootstrap after it
  slot_truncated = 8,   ///< the step ended its episode, truncated: bootstrap from the next observation slot
};

/// The shape of every sequence of a run.
struct sequence_layout {
  std::size_t length = 80;      ///< slots per sequence, burn-in included (`--seq-len`)
  std::size_t burn_in = 40;     ///< leading slots that only warm the state (`--burn-in`), < length
  std::size_t overlap = 40;     ///< slots shared by consecutive sequences of an episode (`--seq-overlap`), < length
  std::size_t obs_dim = 0;      ///< floats per observation
  std::size_t discrete_dim = 1; ///< int32 per action
  std::size_t state_dim = 0;    ///< floats of recurrent state stored per sequence
  std::size_t mask_dim = 0;     ///< bytes of action mask per observation slot (0: the env does not mask)

  /// Steps between the starts of consecutive sequences of an episode.
  [[nodiscard]] std::size_t stride() const noexcept { return length - overlap; }
  /// Floats of observations per sequence: (length + 1) × obs_dim.
  [[nodiscard]] std::size_t observation_floats() const noexcept { return (length + 1) * obs_dim; }
  /// Bytes of action masks per sequence: (length + 1) × mask_dim.
  [[nodiscard]] std::size_t mask_bytes() const noexcept { return (length + 1) * mask_dim; }
};

/// Sequences on their way from the sampling side to the sequence replay,
/// struct-of-arrays, sequence-major. Reused: clear() keeps capacity.
struct sequence_block {
  sequence_layout layout;
  std::uint64_t env_steps = 0;           ///< env steps this block accounts for (the rate limiter's unit)
  std::vector<std::uint32_t> streams;    ///< per sequence: the env row (stream) it came from
  std::vector<float> observations;       ///< per sequence: (length + 1) × obs_dim
  std::vector<std::int32_t> actions;     ///< per sequence: length × discrete_dim
  std::vector<float> rewards;            ///< per sequence: length
  std::vector<std::uint8_t> flags;       ///< per sequence: length (sequence_flag bits)
  std::vector<float> states;             ///< per sequence: state_dim
  std::vector<std::uint8_t> masks;       ///< per sequence: (length + 1) × mask_dim

  /// Sequences held.
  [[nodiscard]] std::size_t size() const noexcept { return streams.size(); }
  /// Empties it, keeping its memory.
  void clear() noexcept {
    env_steps = 0;
    streams.clear();
    observations.clear();
    actions.clear();
    rewards.clear();
    flags.clear();
    states.clear();
    masks.clear();
  }
};

/// Where a sampled sequence lives, for its priority update: its slot and
/// the generation of the slot when it was drawn (an update whose generation
/// no longer matches is stale and ignored).
struct sequence_key {
  std::uint32_t slot = 0;
  std::uint64_t generation = 0;
};

/// A batch of sequences the learner trains on, gathered into contiguous
/// arrays (row i of each belongs to draw i, laid out as in sequence_block),
/// and the priorities it hands back.
struct sequence_batch {
  sequence_layout layout;
  std::size_t size = 0;                  ///< draws; 0 while the batch is an unfilled request
  std::vector<float> observations;       ///< size × (length + 1) × obs_dim
  std::vector<std::int32_t> actions;     ///< size × length × discrete_dim
  std::vector<float> rewards;            ///< size × length
  std::vector<std::uint8_t> flags;       ///< size × length
  std::vector<float> states;             ///< size × state_dim
  std::vector<std::uint8_t> masks;       ///< size × (length + 1) × mask_dim
  std::vector<float> weights;            ///< importance weights (1 for uniform)
  std::vector<sequence_key> keys;        ///< what was drawn
  /// Written by the learner: one new priority per draw (η·max|δ| + (1−η)·mean|δ|). Empty: no update.
  std::vector<float> priorities;
  std::uint64_t sequence = 0;            ///< 0, 1, 2, ... in the order served
};

}  // namespace coral::replay
