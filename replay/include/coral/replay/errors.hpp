#pragma once
/// \file
/// Error texts of coral::replay. Each is a fmt format string or a plain
/// text; tests assert them exactly. Misuse throws coral::config_error.

#include <string_view>

namespace coral::replay::errors {
/// A replay buffer asked for with capacity zero or not a multiple of its streams.
inline constexpr std::string_view bad_capacity =
    "replay_buffer: capacity {} must be a positive multiple of num_streams {}";
/// A replay buffer or assembler asked for with zero streams.
inline constexpr std::string_view zero_streams = "replay_buffer: num_streams must be at least 1";
/// A stream's share of the buffer too small to hold n + 2 slots.
inline constexpr std::string_view stream_too_small =
    "replay_buffer: each stream needs at least n_step + 2 = {} slots, has {}";
/// n-step of zero.
inline constexpr std::string_view zero_n_step = "n_step must be at least 1";
/// A discount outside [0, 1].
inline constexpr std::string_view bad_gamma = "gamma {} must be in [0, 1]";
/// A priority exponent or importance exponent outside its range.
inline constexpr std::string_view bad_exponent = "replay_buffer: {} {} must be in [0, 1]";
/// A non-positive priority epsilon.
inline constexpr std::string_view bad_epsilon = "replay_buffer: epsilon {} must be positive";
/// A stream index out of range.
inline constexpr std::string_view bad_stream = "replay_buffer: stream {} out of range (num_streams {})";
/// Sampling from a buffer with no complete transition.
inline constexpr std::string_view empty_buffer = "replay_buffer: no transition to sample";
/// Batch arrays of different lengths.
inline constexpr std::string_view size_mismatch = "replay_buffer: {} has {} elements, expected {}";
/// A priority update's TD error that is infinite or not a number: draw, value.
inline constexpr std::string_view bad_td_error =
    "replay_buffer: the TD error of draw {} is {}; it must be a finite number";
/// An inserted transition whose n-step offset does not fit the buffer's n_step.
inline constexpr std::string_view bad_steps = "replay_buffer: transition steps {} not in [1, {}]";
/// A blob given to replay_buffer::load that cannot be read; {} is one of the
/// state_* reasons below.
inline constexpr std::string_view malformed_state = "replay_buffer: saved state is malformed ({})";
/// A saved state written in another format version: its version, the one this build reads.
inline constexpr std::string_view unsupported_state_version =
    "replay_buffer: saved state has format version {}, this build reads version {}";
/// A saved state of a buffer of another shape: the config field, its saved value, this buffer's.
inline constexpr std::string_view state_shape_mismatch = "replay_buffer: saved state has {} {}, this buffer has {}";
/// Reason: the blob does not start with the replay_buffer magic bytes.
inline constexpr std::string_view state_bad_magic = "not a replay_buffer state";
/// Reason: the blob was written on a machine of the other byte order.
inline constexpr std::string_view state_byte_order = "written with another byte order";
/// Reason: the blob is shorter than its header says: bytes present, bytes needed.
inline constexpr std::string_view state_truncated = "truncated: {} of {} bytes";
/// Reason: the blob is longer than its header says: bytes present, bytes expected.
inline constexpr std::string_view state_trailing = "{} bytes where the header says {}";
/// Reason: bytes left over after the last section: how many.
inline constexpr std::string_view state_extra = "{} bytes after the checksum section";
/// Reason: the checksum over the blob does not match the one stored in it.
inline constexpr std::string_view state_checksum = "checksum mismatch";
/// Reason: a section of the wrong name, element size or count: found, expected.
inline constexpr std::string_view state_bad_section = "section '{}' of {} x {} bytes where '{}' of {} x {} was expected";
/// Reason: a slot whose stored value is impossible: field, slot, value.
inline constexpr std::string_view state_bad_slot = "{} of slot {} is {}";
/// Reason: a stored counter that disagrees with the slots: counter, its value, the value the slots give.
inline constexpr std::string_view state_bad_counter = "{} is {} but the slots give {}";
/// Reason: a stored value outside the range save() writes: what, its value, the range.
inline constexpr std::string_view state_bad_value = "{} is {}, outside {}";
/// A rate limiter with a negative or zero ratio.
inline constexpr std::string_view bad_ratio = "rate_limiter: samples_per_insert {} must be positive";
/// A rate limiter whose error buffer is too small to ever allow both sides.
inline constexpr std::string_view small_error_buffer =
    "rate_limiter: error_buffer {} must be at least (samples_per_insert + 1) / 2 = {}";
/// A replay actor asked for with batch size zero.
inline constexpr std::string_view zero_batch = "replay_actor: batch_size must be at least 1";
/// A replay actor asked for with no prefetched batches.
inline constexpr std::string_view zero_prefetch = "replay_actor: prefetch must be at least 1";
/// A replay feeder whose replay has another number of streams than the batch has rows: streams, rows.
inline constexpr std::string_view feeder_streams =
    "replay_feeder: the replay has {} streams, the batch {} rows (one stream per row)";
/// The replay actor's inbox refused a block: it is sized so that this cannot happen.
inline constexpr std::string_view inbox_full = "replay_feeder: the replay inbox is full ({} blocks); inserts would be lost";
/// A snapshot request answered while the previous answer still waits in snapshots().
inline constexpr std::string_view snapshot_unclaimed =
    "replay_actor: a snapshot was asked for before the previous one was taken from snapshots()";
/// A replay actor state that load() cannot read: what was wrong.
inline constexpr std::string_view actor_state_malformed = "replay_actor: saved state is malformed ({})";
/// A sequence layout of length zero.
inline constexpr std::string_view zero_sequence_length = "sequence layout: length must be at least 1";
/// A sequence layout whose burn_in or overlap is not below its length: the field, its value, the length.
inline constexpr std::string_view sequence_part_too_long = "sequence layout: {} {} must be less than length {}";
/// A sequence feeder whose layout does not fit the batch: the field, the layout's value, the batch's.
inline constexpr std::string_view sequence_feeder_shape = "sequence_feeder: the layout has {} {}, the batch {}";
/// A sequence feeder built with a sink that has no send function.
inline constexpr std::string_view sequence_feeder_no_send = "sequence_feeder: the sink has no send function";
/// A recurrent state span of the wrong size: its floats, rows × state_dim.
inline constexpr std::string_view sequence_feeder_states_size =
    "sequence_feeder: the recurrent states span has {} floats, expected rows x state_dim = {}";
/// consume() with state_dim > 0 before record_states_from(): the state_dim.
inline constexpr std::string_view sequence_feeder_no_states =
    "sequence_feeder: state_dim is {} but no recurrent states were given (record_states_from)";
/// R2D2 math given arrays of mismatched sizes: the array, its elements, the elements expected.
inline constexpr std::string_view r2d2_size_mismatch = "r2d2 math: {} has {} elements, expected {}";
/// A sequence priority mix outside [0, 1].
inline constexpr std::string_view bad_priority_eta = "sequence priority: eta {} must be in [0, 1]";
/// A sequence buffer asked for with no capacity.
inline constexpr std::string_view seq_zero_capacity = "sequence_buffer: capacity must be at least 1 sequence";
/// A sequence buffer asked for with zero streams.
inline constexpr std::string_view seq_zero_streams = "sequence_buffer: num_streams must be at least 1";
/// A sequence layout that cannot hold a trained slot: length, burn_in, overlap.
inline constexpr std::string_view seq_bad_layout =
    "sequence_buffer: the layout needs 0 <= burn_in < length and overlap < length (length {}, burn_in {}, overlap {})";
/// A sequence buffer's priority or importance exponent outside [0, 1]: name, value.
inline constexpr std::string_view seq_bad_exponent = "sequence_buffer: {} {} must be in [0, 1]";
/// A sequence buffer's non-positive priority epsilon.
inline constexpr std::string_view seq_bad_epsilon = "sequence_buffer: epsilon {} must be positive";
/// A block or batch of another layout than the buffer's: field, its value, the buffer's.
inline constexpr std::string_view seq_layout_mismatch = "sequence_buffer: the block has {} {}, the buffer {}";
/// Arrays of a block or an update of the wrong length: which, its length, the length expected.
inline constexpr std::string_view seq_size_mismatch = "sequence_buffer: {} has {} elements, expected {}";
/// A sequence from a stream out of range: stream, num_streams.
inline constexpr std::string_view seq_bad_stream = "sequence_buffer: stream {} out of range (num_streams {})";
/// A priority that is negative or not a number: draw, value.
inline constexpr std::string_view seq_bad_priority =
    "sequence_buffer: the priority of draw {} is {}; it must be a finite number >= 0";
/// Sampling from a buffer that holds no sequence.
inline constexpr std::string_view seq_empty = "sequence_buffer: no sequence to sample";
/// A blob given to sequence_buffer::load that cannot be read: a state_* reason.
inline constexpr std::string_view seq_malformed_state = "sequence_buffer: saved state is malformed ({})";
/// A sequence buffer state of another format version: its version, the one this build reads.
inline constexpr std::string_view seq_unsupported_state_version =
    "sequence_buffer: saved state has format version {}, this build reads version {}";
/// A sequence buffer state of another shape: the field, its saved value, this buffer's.
inline constexpr std::string_view seq_state_shape_mismatch = "sequence_buffer: saved state has {} {}, this buffer has {}";
/// Reason: the blob does not start with the sequence_buffer magic bytes.
inline constexpr std::string_view seq_state_bad_magic = "not a sequence_buffer state";
}  // namespace coral::replay::errors
