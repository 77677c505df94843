#pragma once
/// \file
/// Error texts of the built-in algorithms and networks (fmt format strings); tests assert them exactly.

#include <string_view>

namespace coral::learners::errors {

/// An action space PPO cannot act in: its text.
inline constexpr std::string_view unsupported_action_space = "--env: action space {} is not supported (Discrete, MultiDiscrete, Box, and Dict/Tuple of them)";
/// `--algo dqn` on an action space other than one Discrete: its text.
inline constexpr std::string_view dqn_needs_discrete =
    "--algo dqn: the action space must be one Discrete, not {}";
/// A Q-network (q_policy) given stacked frames: how many.
inline constexpr std::string_view dqn_no_frames = "q_policy: a Q-network acts on one observation (stacked frames are PPO's), not {} frames";
/// `--algo r2d2` on an action space other than one Discrete: its text.
inline constexpr std::string_view r2d2_needs_discrete = "--algo r2d2: the action space must be one Discrete, not {}";
/// Requirement (flag_out_of_range) of `--learning-starts` at or past the end: --total-steps.
inline constexpr std::string_view dqn_starts_too_late =
    "must be below --total-steps {}: no update could happen before the run ends";
/// Requirement of `--replay-batch` above the replay's size: --replay-capacity.
inline constexpr std::string_view dqn_batch_over_capacity =
    "must be at most --replay-capacity {}: every batch would draw transitions over and over";
/// Requirement of `--replay-batch` above what the rate limiter grants over the
/// run: the grant, --replay-ratio, --total-steps, --learning-starts.
inline constexpr std::string_view dqn_batch_over_grant =
    "must be at most the {} transitions the rate limiter lets the learner sample over the run "
    "(--replay-ratio {} x (--total-steps {} - --learning-starts {}))";
/// Requirement of `--prefetch` whose batches in flight exceed the replay:
/// --replay-batch, the transitions in flight, --replay-capacity.
inline constexpr std::string_view dqn_prefetch_over_capacity =
    "--prefetch x --replay-batch {} = {} transitions in flight must be at most --replay-capacity {}";
/// Requirement of `--prefetch` whose batches in flight exceed what the rate
/// limiter grants over the run: --replay-batch, in flight, the grant,
/// --replay-ratio, --total-steps, --learning-starts.
inline constexpr std::string_view dqn_prefetch_over_grant =
    "--prefetch x --replay-batch {} = {} transitions in flight must be at most the {} the rate limiter lets the "
    "learner sample over the run (--replay-ratio {} x (--total-steps {} - --learning-starts {})); the learner "
    "would wait for batches that are never filled";

/// `--frames` above 1 or `--lstm` on a multi-agent env with PPO: the flag,
/// its value, the env, its agent slots.
inline constexpr std::string_view multi_agent_memory =
    "{} {}: '{}' has {} agent slots per env, and PPO with memory across steps trains single-agent envs only "
    "(--algo r2d2 trains a recurrent policy on them)";

/// `--lstm` on an env that masks actions (with masks on): the width, the
/// env. The recurrent loss has no masks yet.
inline constexpr std::string_view masked_lstm =
    "--lstm {}: '{}' masks actions, and recurrent PPO trains without action masks (add --no-action-masks to train "
    "it with every action seen as legal)";
/// `--self-play` on an env whose slots are all in one team: the env.
inline constexpr std::string_view self_play_one_team =
    "--self-play: '{}' has one team; self-play needs an env whose agent slots form two teams or more (tictactoe, "
    "connect4)";
/// `--self-play-eval-games` on an env without a reference opponent to
/// play: the env, why (the env's refusal of opponent=reference, or what
/// the match env lacks).
inline constexpr std::string_view self_play_no_reference =
    "--self-play-eval-games: '{}' has no reference opponent to play with opponent=reference and side=first|second "
    "({})";
/// A match episode against the reference opponent that does not end: the
/// env, the steps it ran.
inline constexpr std::string_view match_too_long = "self-play match: an episode of '{}' ran past {} steps";
/// A checkpoint's self-play pool whose snapshots are not this run's
/// network (training_run names the checkpoint): the snapshots, their
/// weights each, the network's weights.
inline constexpr std::string_view self_play_pool_mismatch =
    "its self-play pool holds {} snapshot(s) of {} weights, the network has {}";
/// A checkpoint's self-play pool record whose size is not that of the
/// snapshots its header counts: its bytes, the snapshots, their weights.
inline constexpr std::string_view self_play_pool_malformed =
    "its self-play pool record is {} bytes, not {} snapshot(s) of {} weights";

/// A stop signal while the initial weights were drawn (a large layer's
/// orthogonal matrix): the run had not started.
inline constexpr std::string_view init_interrupted =
    "interrupted while drawing the network's initial weights (a {}x{} orthogonal matrix); no run was started";

/// What a `--conv` value may be (core's bad_value's "allowed" part).
inline constexpr std::string_view conv_allowed =
    "CHANNELS:KERNEL or CHANNELS:KERNEL:STRIDE per layer, whole numbers from 1 to 65536, e.g. 16:3 32:3:2; or none "
    "alone";
/// `--conv` layers over an observation that is no grid: the layers, the observation space.
inline constexpr std::string_view conv_needs_grid =
    "--conv: {} needs a grid observation (a Box of shape (height, width, channels)), and the env's is {}; give "
    "--conv none or leave it out";
/// A convolution whose window does not fit its input: the layer (1-based),
/// its text, the window side, the input grid's height and width, and what
/// to do.
inline constexpr std::string_view conv_too_large =
    "--conv: layer {} ({}) has a {}x{} window over a {}x{} grid: its output would be empty; {}";
/// A convolution given stacked frames: --frames, the convolutions.
inline constexpr std::string_view conv_no_frames =
    "--frames {}: a network with convolutions (--conv {}) reads one observation, not stacked frames; give --frames "
    "1 or --conv none";

/// A torch learner made in a process without coral::learners_torch linked:
/// what was made. (The `coral` command hands such runs to coral-torch first.)
inline constexpr std::string_view torch_not_linked =
    "{} needs libtorch, and this program is linked without coral::learners_torch";
/// The fused engine's MLP actor-critic (fused::actor_critic) given a
/// recurrent network: its --lstm width.
inline constexpr std::string_view fused_needs_mlp =
    "fused engine: the MLP actor-critic has no LSTM, and was given --lstm {} (fused::recurrent_actor_critic has one)";
/// The fused engine's recurrent actor-critic given a network without an LSTM.
inline constexpr std::string_view fused_needs_lstm =
    "fused engine: the recurrent actor-critic needs --lstm above 0 (fused::actor_critic is the MLP one)";
/// A recurrent PPO minibatch whose per-step data is not rows × steps long:
/// its rows, steps, and the steps' rows given.
inline constexpr std::string_view fused_recurrent_minibatch_shape =
    "fused engine: a recurrent minibatch of {} rows of {} steps has {} steps' data";
/// A fused pass over more rows than its buffers hold: the rows, the most.
inline constexpr std::string_view fused_too_many_rows =
    "fused engine: a pass of {} rows, more than the {} its buffers were made for";

// Trained policies outside a run (trained_policy.hpp, `coral eval`).

/// A directory given as a checkpoint that holds none: the directory.
inline constexpr std::string_view no_checkpoint_in_dir =
    "'{}' holds no checkpoint (checkpoint-*.ckpt files, as --checkpoint-dir writes them)";
/// A checkpoint of an algorithm that cannot act outside a run: path, algo.
inline constexpr std::string_view algo_cannot_act = "checkpoint '{}': --algo {} has no policy that acts outside a run";
/// trained_policy::act() given action masks of another size: bytes given, rows, mask width.
inline constexpr std::string_view policy_mask_size =
    "trained_policy: {} action mask bytes given, expected {} rows x {}";
/// trained_policy::act() given a mask row that rules out every value of a
/// component: row, component.
inline constexpr std::string_view policy_mask_empty =
    "trained_policy: the action mask of row {} rules out every value of action component {}";
/// trained_policy::act() given observations of another size: floats given, rows, observation width.
inline constexpr std::string_view policy_observation_size =
    "trained_policy: {} observation floats given, expected {} rows x {}";
/// trained_policy::reset() of a row past the end: the row, rows.
inline constexpr std::string_view policy_row_out_of_range = "trained_policy: row {} is out of range ({} rows)";

}  // namespace coral::learners::errors
