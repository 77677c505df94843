#pragma once
/// \file
/// Error texts of the training composition: checkpoints, run files, options every run takes, distributed runs
/// (fmt format strings); tests assert them exactly.

#include <string_view>

namespace coral::training::errors {

/// A checkpoint file shorter than its header says: path, size, expected size.
inline constexpr std::string_view checkpoint_truncated = "checkpoint '{}' is truncated: {} bytes, expected {}";
/// A file that does not start with coral's checkpoint magic: path.
inline constexpr std::string_view checkpoint_not_coral = "checkpoint '{}' is not a coral checkpoint";
/// A checkpoint of another format version: path, its version, ours.
inline constexpr std::string_view checkpoint_version = "checkpoint '{}' has format version {}, expected {}";
/// Payload checksum mismatch: path.
inline constexpr std::string_view checkpoint_corrupted = "checkpoint '{}' is corrupted: checksum mismatch";
/// A well-formed checkpoint whose record is missing or malformed: path, record name.
inline constexpr std::string_view checkpoint_bad_record = "checkpoint '{}' has a missing or malformed record '{}'";
/// A counter record beyond any run's: path, record, its value, the largest taken.
inline constexpr std::string_view checkpoint_count_too_large =
    "checkpoint '{}': record '{}' is {}, more than any run counts to (at most {})";
/// A weight, Adam moment or statistic that is NaN or infinite: path, record, element, value.
inline constexpr std::string_view checkpoint_not_finite =
    "checkpoint '{}': record '{}' holds a non-finite value (element {} = {})";
/// A checkpoint whose records do not fit in the memory this process may use: path, its size in bytes.
inline constexpr std::string_view checkpoint_no_memory = "checkpoint '{}' ({} bytes) does not fit in memory";
/// A checkpoint whose weights do not fit this run's network: path, what the learner said.
inline constexpr std::string_view checkpoint_does_not_fit = "checkpoint '{}' does not fit this run's network: {}";
/// A checkpoint made for another network or env: path, what, its value, this run's.
inline constexpr std::string_view checkpoint_mismatch = "checkpoint '{}' does not match this run: {} is {}, expected {}";
/// A checkpoint whose saved replay has another shape than this run's (its
/// capacity, streams or rows follow --replay-capacity, --num-envs, --n-step
/// and R2D2's sequence flags): path, the replay's own message.
inline constexpr std::string_view checkpoint_replay_mismatch =
    "checkpoint '{}' does not match this run: {}; resume with the replay flags it was written with";
/// A checkpoint without the run's settings (written by an older coral),
/// where they are needed to rebuild the env and network (`coral eval`,
/// load_policy): path.
inline constexpr std::string_view checkpoint_no_settings =
    "checkpoint '{}' does not hold its run's settings (an older coral wrote it); resume the run for one more "
    "checkpoint with this coral's `coral train --resume`, which writes them";
/// A checkpoint that cannot be read or written: path, reason.
inline constexpr std::string_view checkpoint_io = "checkpoint '{}': {}";
/// `--resume` with no checkpoint in the directory: the directory.
inline constexpr std::string_view no_checkpoint = "--resume: no checkpoint in '{}'";
/// `--resume` without `--checkpoint-dir`.
inline constexpr std::string_view resume_needs_dir = "--resume: requires --checkpoint-dir";
/// An env with several agents per env given to an algorithm that trains
/// single-agent envs only: env, agents, algo.
inline constexpr std::string_view multi_agent_unsupported =
    "--env: '{}' has {} agent slots per env; --algo {} trains single-agent envs (--algo ppo, dqn and r2d2 train "
    "multi-agent ones)";
/// An env that cannot be bound to batch rows (a mask of another width than
/// its action space's, a team id out of range; envs/env_slice.hpp): the env,
/// the binding's refusal.
inline constexpr std::string_view env_not_trainable = "--env: '{}' cannot be bound to batch rows: {}";
/// A setting given to an algorithm that does not read it (it differs from
/// its default): the flag (or, where no flag sets it alone, the field, such
/// as `dqn.learning_rate`), the algorithms that read it ("PPO", "DQN and
/// R2D2"), this run's --algo.
inline constexpr std::string_view setting_of_other_algo = "{}: {} only; --algo {} does not take it";
/// A checkpoint written by another algorithm: path, its algo, this run's.
inline constexpr std::string_view checkpoint_algo = "checkpoint '{}' was written by --algo {}, this run is --algo {}";
/// A loss term came out NaN or infinite: algo, term, value, update number.
inline constexpr std::string_view non_finite_loss =
    "{} learner: the {} is not finite ({}) at update {}: training diverged (lower --learning-rate, or "
    "--allow-non-finite to go on)";
/// A weight came out NaN or infinite: algo, parameter index, value, update number.
inline constexpr std::string_view non_finite_weight =
    "{} learner: weight {} is not finite ({}) after update {}: training diverged (lower --learning-rate, or "
    "--allow-non-finite to go on)";
// Run and checkpoint directories (see docs/training.md, "Checkpoints").

/// A --run-dir or --checkpoint-dir that cannot be created or written: flag, path, reason.
inline constexpr std::string_view dir_unusable = "{}: cannot use '{}': {}";
/// The reason dir_unusable gives for a path that exists and is not a directory.
inline constexpr std::string_view not_a_directory = "it exists and is not a directory";
/// The reason dir_unusable gives when a test file cannot be written: the system's reason.
inline constexpr std::string_view not_writable = "cannot write a file there: {}";
/// A fresh run (no --resume) into a directory that holds checkpoints: directory, one of them.
inline constexpr std::string_view checkpoint_dir_in_use =
    "--checkpoint-dir: '{}' already holds checkpoints ('{}'); pass --resume to continue that run, or choose another "
    "directory";
/// A metrics.csv whose header is not this run's (another algorithm's run): path.
inline constexpr std::string_view metrics_header_differs =
    "--run-dir: '{}' holds metrics of another kind of run (its header differs); choose another --run-dir";
/// A name like a checkpoint's that --resume passes over: why (a checkpoint_* text).
inline constexpr std::string_view checkpoint_skipped = "warning: {}; skipped";
/// A name like a checkpoint's on a directory (or anything but a regular file): path.
inline constexpr std::string_view checkpoint_not_a_file = "checkpoint '{}' is not a regular file";
/// metrics.csv could not be written (full disk, vanished directory): path, reason.
inline constexpr std::string_view metrics_write_failed = "warning: could not write '{}': {}; its rows are incomplete";
/// gnuplot is not installed.
inline constexpr std::string_view gnuplot_not_found = "warning: gnuplot not found; no learning_curve.png";
/// gnuplot ran and failed: how it ended.
inline constexpr std::string_view gnuplot_failed = "warning: gnuplot failed ({}); no learning_curve.png";
// Distributed runs (--distributed: rank 0 learns, the other ranks sample).

/// --distributed in a job of fewer than two ranks: how many it has.
inline constexpr std::string_view distributed_needs_ranks =
    "--distributed: needs at least 2 ranks (rank 0 learns, the others sample): start it with mpirun -np N, N >= 2; "
    "this job has {}";
/// An algorithm without a distributed form: its name.
inline constexpr std::string_view distributed_algo = "--distributed: --algo {} has no distributed form";
/// A sampler rank started with other settings than the learner: the rank, what differs, its value, the learner's.
inline constexpr std::string_view distributed_mismatch =
    "--distributed: {} runs {} '{}', the learner (rank 0) runs '{}': start every rank with the same flags";
/// A rank that did not hear from another in time: who waited, for whom, what for, seconds.
inline constexpr std::string_view distributed_no_answer = "--distributed: {} heard nothing from {} ({}) for {} s";

/// Another run holds the directory: the flag, the directory, the holder's PID.
inline constexpr std::string_view dir_locked =
    "{}: '{}' is in use by another coral run (PID {}); wait for it to end or choose another directory";
/// After a failure: the final checkpoint was written (its file).
inline constexpr std::string_view checkpoint_after_failure = "checkpoint written after the failure: {}";
/// After a failure, no checkpoint: the algorithm's actor, what it did ("failed",
/// "did not stop"), the last checkpoint written (or "none").
inline constexpr std::string_view no_checkpoint_after_failure =
    "no checkpoint written after the failure: actor '{}' {}, so the learner's state is in doubt; the last checkpoint: {}";
/// After a failure, writing the checkpoint failed: why, the last checkpoint (or "none").
inline constexpr std::string_view checkpoint_after_failure_failed =
    "warning: the checkpoint after the failure could not be written: {}; the last checkpoint: {}";
/// A stop waits past its deadline for the learner's step: what it does, seconds waited.
inline constexpr std::string_view stop_waits_for_learner =
    "stopping: waiting for the learner to finish its step ({}; {:.0f} s since the stop)";
/// A stall report's line: updates begun since env steps last moved, at how many env steps.
inline constexpr std::string_view stall_same_data =
    "  the learner began {} updates since env steps last moved (at {}): it trains on the same data over and over\n";

// Video files (video_writer.hpp).
/// A video path whose name ends in neither .mp4 nor .gif: the path.
inline constexpr std::string_view video_bad_extension = "video '{}': the file name must end in .mp4 or .gif";
/// A video path whose folder is missing (or not a folder): the path, the folder.
inline constexpr std::string_view video_no_directory = "video '{}': the directory '{}' does not exist";
/// A video path that names a directory: the path.
inline constexpr std::string_view video_is_directory = "video '{}' is a directory";
/// ffmpeg is not on PATH: the path of the video it was to write.
inline constexpr std::string_view video_ffmpeg_not_found =
    "video '{}': ffmpeg is not installed (no ffmpeg on PATH); install it (Debian: apt install ffmpeg)";
/// ffmpeg could not be started: the video's path, why.
inline constexpr std::string_view video_ffmpeg_spawn = "video '{}': cannot start ffmpeg: {}";
/// ffmpeg stopped with an error: the video's path, how it ended, the end of what it wrote on stderr.
inline constexpr std::string_view video_ffmpeg_failed = "video '{}': ffmpeg failed ({}): {}";
/// A frame of another size than the video's first: the path, frame number, its height and width, the first's.
inline constexpr std::string_view video_frame_size = "video '{}': frame {} is {}x{} (height x width), the first was {}x{}";
/// finish() before any frame: the path.
inline constexpr std::string_view video_no_frames = "video '{}': no frames to write";

// Clips of a training run (`--video-every`, clip_recorder.hpp).
/// --video-every without a run dir to put the clips in.
inline constexpr std::string_view video_every_needs_run_dir =
    "--video-every needs a run dir: the clips go to <run dir>/videos (drop --no-run-dir)";
/// --video-every without ffmpeg on PATH.
inline constexpr std::string_view video_every_no_ffmpeg =
    "--video-every: ffmpeg is not installed (no ffmpeg on PATH); install it (Debian: apt install ffmpeg)";
/// --video-every for an env whose render() draws nothing: the env name.
inline constexpr std::string_view video_every_no_render =
    "--video-every: env '{}' does not render (docs/envs.md lists the envs that do)";
/// --video-every for an algorithm without an acting policy outside a run: the algorithm.
inline constexpr std::string_view video_every_cannot_act =
    "--video-every: --algo {} has no policy that acts outside a run (its descriptor's `acting`)";
/// A clip that could not be recorded (a warning; the run goes on): the clip's path, why.
inline constexpr std::string_view clip_not_written = "warning: clip '{}' not written: {}";
/// A clip written (a progress line): the clip's path, frames (the episode's steps, capped), its return.
inline constexpr std::string_view clip_written = "clip: {} ({} frames, return {})";

/// The live view's port is taken: the port, the address.
inline constexpr std::string_view dashboard_port_in_use =
    "--dashboard-port {}: the port is in use on {}; give another, or 0 for any free port";
/// The live view cannot listen for another reason: the port, the address, why.
inline constexpr std::string_view dashboard_cannot_listen = "--dashboard-port {}: cannot listen on {}: {}";
/// --dashboard-bind is not an address: what was given.
inline constexpr std::string_view dashboard_bad_bind =
    "--dashboard-bind '{}' is not an IPv4 or IPv6 address (127.0.0.1 keeps the page on this machine)";
}  // namespace coral::training::errors
