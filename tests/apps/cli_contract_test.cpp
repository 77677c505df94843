#include "coral/errors.hpp"

// The `coral` command's contract, tested on the real binary as a user runs
// it: a table of bad inputs, each with the exact message on stderr and the
// exit code (docs/cli.md), none of which may start anything or live longer
// than a few seconds.

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "child_process.hpp"
#include "coral/actors/errors.hpp"
#include "coral/actors/memory_budget.hpp"
#include "coral/actors/errors.hpp"
#include "coral/cli.hpp"
#include "coral/core/error.hpp"
#include "coral/envs/errors.hpp"
#include "coral/learners/errors.hpp"
#include "coral/training/errors.hpp"
#include "../support/scratch_dir.hpp"

namespace fs = std::filesystem;
using coral::test::last_line;
using coral::test::fresh_dir;
namespace cm = coral::cli::errors;
namespace lm = coral::learners::errors;
namespace te = coral::training::errors;
namespace ce = coral::errors;
namespace ee = coral::envs::errors;
using coral::cli::exit_code::failed;
using coral::cli::exit_code::ok;
using coral::cli::exit_code::rejected;

namespace {

// Every child is killed past this; each takes well under a second alone
// (most of it libtorch's start-up).
constexpr std::chrono::milliseconds child_limit{8000};
constexpr std::size_t parallel_children = 4;

template <class... Args>
std::string text(std::string_view format, Args&&... args) {
  return fmt::format(fmt::runtime(format), std::forward<Args>(args)...);
}

std::string error_line(const std::string& message) { return "error: " + message + "\n"; }

struct bad_input {
  std::vector<std::string> args;
  std::string err;  // the whole of stderr
  int exit_code = rejected;
};

// A fresh working directory for the children, so that anything a run would
// write (runs/, checkpoints) shows up there.

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Every run ended by itself (not killed at the time limit) with exit 0.
void check_all_ran(const std::vector<coral::test::outcome>& results) {
  for (const auto& r : results) {
    INFO(r.err);
    CHECK_FALSE(r.killed);
    CHECK(r.exit_code == ok);
  }
}

std::vector<coral::test::outcome> run_all(const std::vector<std::vector<std::string>>& args, const fs::path& cwd) {
  std::vector<coral::test::invocation> all;
  for (const auto& a : args) {
    coral::test::invocation inv;
    inv.argv.push_back(CORAL_BINARY);
    inv.argv.insert(inv.argv.end(), a.begin(), a.end());
    // A fixed figure, so that memory errors read the same on every machine.
    inv.extra_env = {"CORAL_MEMORY_AVAILABLE=1GiB"};
    inv.cwd = cwd.string();
    all.push_back(std::move(inv));
  }
  return coral::test::run_children(all, parallel_children, child_limit);
}

// Config files for the table, by name; each bad in one way.
const std::vector<std::pair<std::string, std::string>> bad_files = {
    {"header.toml", "[train\ntotal-steps = 100\n"},
    {"empty_checkpoint_dir.toml", "[train]\ncheckpoint-dir = \"\"\n"},
    {"double_equals.toml", "[train]\ntotal-steps = = 20000\n"},
    {"open_array.toml", "[train]\nhidden = [64, 64\n"},
    {"typo.toml", "[train]\nseed = 1\ntotal-stepz = 20000\n"},
    {"far_typo.toml", "[train]\nsteps-in-all = 20000\n"},
    {"section.toml", "[trian]\nseed = 1\n"},
    {"subsection.toml", "[train]\nseed = 1\n[train.network]\nwidth = 64\n"},
    {"top_level.toml", "total-steps = 20000\n"},
    {"top_level_unknown.toml", "colour = \"blue\"\n"},
    {"section_value.toml", "train = 5\n"},
    {"binary.toml", std::string("\x7f" "ELF\x02\x01\x01\x00\x00\x00", 10)},
    {"latin1.toml", "[train]\n# caf\xe9\nseed = 1\n"},
    {"string_for_number.toml", "[train]\ntotal-steps = \"20000\"\n"},
    {"array_for_scalar.toml", "[train]\nseed = [1, 2]\n"},
    {"negative.toml", "[train]\nnum-envs = -1\n"},
    {"fraction.toml", "[train]\nnum-envs = 2.5\n"},
    {"nan.toml", "[train]\nlearning-rate = nan\n"},
    {"group_word.toml", "[bench]\nenvs-per-group = \"four\"\n"},
    {"group_auto.toml", "[bench]\nenvs-per-group = \"auto\"\nsteps = 0\n"},
    {"group_zero.toml", "[bench]\nenvs-per-group = 0\n"},
    {"shards_negative.toml", "[bench]\nshards = -2\n"},
    {"spin_zero.toml", "[bench]\nspin-us = 0\nsteps = 0\n"},
    {"spin_word.toml", "[bench]\nspin-us = \"fast\"\n"},
    {"spin_auto.toml", "[bench]\nspin-us = \"auto\"\nsteps = 0\n"},
    {"array_element.toml", "[train]\nhidden = [64, \"wide\"]\n"},
    {"empty_array.toml", "[train]\nhidden = []\n"},
    {"switch_number.toml", "[train]\nkeep-going = 1\n"},
    {"table_for_flag.toml", "[train.hidden]\nwidth = 64\n"},
    {"string_for_switch.toml", "[bench]\njson = \"yes\"\n"},
    {"rollout_key.toml", "[envs.rollout]\nenv = \"cartpole\"\nstep = 2\n"},
    {"bad_value.toml", "[train]\ntopology = \"ring\"\n"},
    {"conflict.toml", "[train]\nexecutor = \"single\"\nthreads = 2\n"},
    {"other_algo.toml", "[train]\nalgo = \"dqn\"\ngae-lambda = 0.5\n"},
    // Nesting that made toml++ recurse until the stack overflowed (SIGSEGV, no message).
    {"deep_key.toml", "[train]\n" + std::string("a") + [] {
       std::string k;
       for (int i = 0; i < 39999; ++i) k += ".a";
       return k;
     }() + " = 1\n"},
    {"deep_header.toml", "seed = 1\n[" + [] {
       std::string k = "a";
       for (int i = 0; i < 39999; ++i) k += ".a";
       return k;
     }() + "]\n"},
    {"deep_array.toml", "[train]\nhidden = " + std::string(100000, '[') + std::string(100000, ']') + "\n"},
    {"deep_inline.toml", "[train]\n\nx = " + [] {
       std::string v;
       for (int i = 0; i < 5000; ++i) v += "{b=";
       return v + "1" + std::string(5000, '}');
     }() + "\n"},
    {"deep_mixed.toml", "[train]\nx = [{a.b.c = [[{d = [" + std::string(60, '[') + std::string(60, ']') + "]}]]}]\n"},
    // A model that includes a FIFO (made by the test): MuJoCo would block on it forever.
    {"includes_fifo.xml", "<mujoco model=\"x\">\n  <include file=\"part.xml\"/>\n</mujoco>\n"},
    // Not a checkpoint, for `coral eval`.
    {"foreign.ckpt", "PK\x03\x04 a zip file, or anything else that is not a coral checkpoint"},
};

std::string file_error(std::string_view format, const std::string& file, auto&&... args) {
  return error_line(text(format, file, args...));
}

std::vector<bad_input> bad_inputs() {
  const auto single_with_threads = error_line(text(cm::conflicting_flags, "--threads 2", "--executor single",
                                                   "the single executor runs every actor on one thread"));
  const auto batch_timeout_alone = error_line(text(cm::flag_needs, "--batch-timeout-us", "--min-batch-size",
                                                   "the timeout applies only to dynamic batching"));
  return {
      // Commands and flags CLI11 parses.
      {{"nosuchcmd"}, error_line(text(cm::unknown_command, "nosuchcmd", "envs, bench, tune, train, eval"))},
      {{}, error_line(text(cm::missing_command, "envs, bench, tune, train, eval"))},
      {{"--log-level", "debug"}, error_line(text(cm::missing_command, "envs, bench, tune, train, eval"))},
      {{"envs", "rolout"}, error_line(text(cm::unknown_command, "envs rolout", "envs rollout"))},
      {{"train", "--foo"}, error_line("The following argument was not expected: --foo")},
      {{"envs", "rollout"}, error_line("--env is required")},
      {{"--log-level", "loud", "envs"},
       error_line("--log-level: loud not in {trace,debug,info,warn,error,critical,off}")},
      {{"train", "--seed", "1", "--seed", "2"}, error_line("--seed: At Most 1 required but received 2")},
      // coral eval: the checkpoint and the episode count, before anything runs.
      {{"eval"}, error_line("--checkpoint is required")},
      {{"eval", "--checkpoint", "foreign.ckpt"}, file_error(te::checkpoint_not_coral, "foreign.ckpt")},
      {{"eval", "--checkpoint", "foreign.ckpt", "--episodes", "0"},
       error_line("--episodes: " + text(cm::episodes_out_of_range, "0", coral::cli::max_eval_episodes))},
      {{"eval", "--checkpoint", "foreign.ckpt", "--episodes", "-3"},
       error_line("--episodes: " + text(cm::negative_value, "-3"))},
      // Numbers: negative, fractional, too large, not finite (item 5, 12).
      {{"train", "--seed", "-1"}, error_line("--seed: " + text(cm::negative_value, "-1"))},
      {{"train", "--total-steps", "-5"}, error_line("--total-steps: " + text(cm::negative_value, "-5"))},
      {{"train", "--num-envs", "-1"}, error_line("--num-envs: " + text(cm::negative_value, "-1"))},
      {{"bench", "--num-envs", "-1"}, error_line("--num-envs: " + text(cm::negative_value, "-1"))},
      {{"envs", "rollout", "--env", "cartpole", "--seed", "-1"},
       error_line("--seed: " + text(cm::negative_value, "-1"))},
      {{"train", "--hidden", "64", "-64"}, error_line("--hidden: " + text(cm::negative_value, "-64"))},
      {{"train", "--seed", "1.5"}, error_line("--seed: " + text(cm::not_whole_number, "1.5"))},
      {{"bench", "--num-envs", "many"}, error_line("--num-envs: " + text(cm::not_whole_number, "many"))},
      // Decimal only (docs/cli.md): hex, padded and doubly signed values are refused, as env int keys refuse them.
      {{"bench", "--steps", "0x10"}, error_line("--steps: " + text(cm::not_whole_number, "0x10"))},
      {{"bench", "--steps", "0x1p3"}, error_line("--steps: " + text(cm::not_whole_number, "0x1p3"))},
      {{"bench", "--steps", "1e3 "}, error_line("--steps: " + text(cm::not_whole_number, "1e3 "))},
      {{"train", "--seed", "+-1e1"}, error_line("--seed: " + text(cm::not_whole_number, "+-1e1"))},
      // A signed flag's integer path too (from_chars alone reads `-0` after the `+`).
      {{"bench", "--batch-timeout-us", "+-0"}, error_line("--batch-timeout-us: " + text(cm::not_whole_number, "+-0"))},
      // Every wrong value of a count-or-auto flag names the whole allowed
      // set, with the flag's own smallest count.
      {{"bench", "--envs-per-group", "many"}, error_line("--envs-per-group: " + text(cm::bad_count_or_auto, "many", 1))},
      {{"bench", "--envs-per-group", "0"}, error_line("--envs-per-group: " + text(cm::bad_count_or_auto, "0", 1))},
      {{"train", "--envs-per-group", "-2"}, error_line("--envs-per-group: " + text(cm::bad_count_or_auto, "-2", 1))},
      {{"bench", "--shards", "many"}, error_line("--shards: " + text(cm::bad_count_or_auto, "many", 1))},
      {{"bench", "--shards", "0"}, error_line("--shards: " + text(cm::bad_count_or_auto, "0", 1))},
      {{"bench", "--shards", "-1"}, error_line("--shards: " + text(cm::bad_count_or_auto, "-1", 1))},
      {{"bench", "--shards", "1.5"}, error_line("--shards: " + text(cm::bad_count_or_auto, "1.5", 1))},
      {{"bench", "--shards", "1e30"}, error_line("--shards: " + text(cm::number_too_large, "1e30", "18446744073709551615"))},
      {{"bench", "--shards", "3"},
       error_line(text(coral::actors::errors::flag_out_of_range, "--shards", 3,
                       "it must divide --threads (2): each shard has threads of its own"))},
      {{"bench", "--num-envs", "6", "--batch-size", "3", "--shards", "2"},
       error_line(text(coral::actors::errors::flag_out_of_range, "--shards", 2,
                       "each shard's batch is the batch (3) / the shards, in whole groups of 1"))},
      {{"bench", "--shards", "2", "--policy", "mlp"},
       error_line(text(coral::actors::errors::flag_out_of_range, "--shards", 2,
                       "the mlp policy acts on one batch at a time: one shard (or auto)"))},
      // 0 once meant the topology's default, taken silently.
      {{"train", "--batch-size", "0"},
       error_line(text(coral::actors::errors::flag_out_of_range, "--batch-size", 0,
                       "must be at least 1; leave it out for the topology's default"))},
      {{"bench", "--batch-size", "0"},
       error_line(text(coral::actors::errors::flag_out_of_range, "--batch-size", 0,
                       "must be at least 1; leave it out for the topology's default"))},
      {{"bench", "--baseline-steps", "0"},
       error_line(text(coral::actors::errors::flag_out_of_range, "--baseline-steps", 0,
                       "must be at least 1; leave it out for as many as --steps, or give --no-baseline"))},
      {{"bench", "--baseline-threads", "0"},
       error_line(text(coral::actors::errors::flag_out_of_range, "--baseline-threads", 0,
                       "must divide --num-envs (8): each loop steps an equal share"))},
      {{"bench", "--num-envs", "8", "--baseline-threads", "3"},
       error_line(text(coral::actors::errors::flag_out_of_range, "--baseline-threads", 3,
                       "must divide --num-envs (8): each loop steps an equal share"))},
      {{"bench", "--num-envs", "8", "--baseline-threads", "16"},
       error_line(text(coral::actors::errors::flag_out_of_range, "--baseline-threads", 16,
                       "must divide --num-envs (8): each loop steps an equal share"))},
      {{"bench", "--no-baseline", "--baseline-threads", "2"},
       error_line(text(cm::conflicting_flags, "--baseline-threads", "--no-baseline", "the baseline is skipped"))},
      {{"--config", "group_word.toml", "bench"},
       file_error(cm::config_wrong_type, "group_word.toml", 2, "[bench] envs-per-group",
                  "a whole number >= 1 or \"auto\"", "a string (\"four\")")},
      // A count below the flag's smallest names the file's line.
      {{"--config", "group_zero.toml", "bench"},
       file_error(cm::config_wrong_type, "group_zero.toml", 2, "[bench] envs-per-group",
                  "a whole number >= 1 or \"auto\"", "0")},
      {{"--config", "shards_negative.toml", "bench"},
       file_error(cm::config_wrong_type, "shards_negative.toml", 2, "[bench] shards", "a whole number >= 1 or \"auto\"",
                  "-2")},
      // "auto" is taken from a file: the next error is the one after it.
      {{"--config", "group_auto.toml", "bench"},
       error_line(text(coral::errors::bad_value, "--steps", 0, "at least 1"))},
      {{"train", "--total-steps", "99999999999999999999"},
       error_line("--total-steps: " + text(cm::number_too_large, "99999999999999999999", "18446744073709551615"))},
      {{"train", "--target-return", "nan"}, error_line("--target-return: " + text(cm::not_finite, "nan"))},
      {{"train", "--target-return", "inf"}, error_line("--target-return: " + text(cm::not_finite, "inf"))},
      {{"train", "--gamma", "fast"}, error_line("--gamma: " + text(cm::not_a_number, "fast"))},
      {{"train", "--learning-rate", "1e300"},
       error_line("--learning-rate: " + text(cm::number_too_large, "1e300", "1000000"))},
      {{"train", "--learning-rate", "-inf"}, error_line("--learning-rate: " + text(cm::not_finite, "-inf"))},
      // Every number an algorithm takes has a range (issue 51: these
      // overflowed at the first update, or let a run never end).
      {{"train", "--value-coef", "1e38"}, error_line("--value-coef: " + text(cm::number_too_large, "1e38", "1000"))},
      {{"train", "--entropy-coef", "1e300"},
       error_line("--entropy-coef: " + text(cm::number_too_large, "1e300", "1000"))},
      {{"train", "--clip", "1e300"}, error_line("--clip: " + text(cm::number_too_large, "1e300", "1000"))},
      {{"train", "--clip", "0"},
       error_line(text(coral::actors::errors::flag_out_of_range, "--clip", "0", "must be in (0, 1000]"))},
      {{"train", "--entropy-coef", "-1"},
       error_line(text(coral::actors::errors::flag_out_of_range, "--entropy-coef", "-1", "must be in [0, 1000]"))},
      {{"train", "--algo", "dqn", "--replay-ratio", "1e300"},
       error_line("--replay-ratio: " + text(cm::number_too_large, "1e300", "10000"))},
      {{"train", "--algo", "r2d2", "--priority-eta", "2"},
       error_line("--priority-eta: " + text(cm::number_too_large, "2", "1"))},
      {{"train", "--progress-seconds", "1e300"},
       error_line("--progress-seconds: " + text(cm::number_too_large, "1e300", "86400"))},
      {{"bench", "--spin-us", "99999999999"},
       error_line("--spin-us: " + text(cm::number_too_large, "99999999999", "1000000"))},
      {{"bench", "--spin-us", "fast"}, error_line("--spin-us: " + text(cm::bad_count_or_auto, "fast", 0))},
      {{"bench", "--spin-us", ""}, error_line("--spin-us: " + text(cm::bad_count_or_auto, "", 0))},
      // `--flag=` is the flag's empty value, not the flag taking the next token.
      {{"train", "--seed=", "--total-steps", "100"}, error_line("--seed: " + text(cm::not_whole_number, ""))},
      {{"train", "--hidden=", "--total-steps=100"}, error_line("--hidden: " + text(cm::not_whole_number, ""))},
      {{"train", "--spin-us", "-1"}, error_line("--spin-us: " + text(cm::bad_count_or_auto, "-1", 0))},
      {{"bench", "--spin-us", "2.5"}, error_line("--spin-us: " + text(cm::bad_count_or_auto, "2.5", 0))},
      {{"--config", "spin_word.toml", "bench"},
       file_error(cm::config_wrong_type, "spin_word.toml", 2, "[bench] spin-us", "a whole number >= 0 or \"auto\"",
                  "a string (\"fast\")")},
      // "auto" is taken from a file, and spin 0 from the command line.
      {{"--config", "spin_auto.toml", "bench"},
       error_line(text(coral::errors::bad_value, "--steps", 0, "at least 1"))},
      {{"bench", "--spin-us", "0", "--steps", "0"},
       error_line(text(coral::errors::bad_value, "--steps", 0, "at least 1"))},
      // spin-us takes 0 from a file too (its smallest count is 0).
      {{"--config", "spin_zero.toml", "bench"}, error_line(text(coral::errors::bad_value, "--steps", 0, "at least 1"))},
      {{"train", "--batch-timeout-us", "-5", "--min-batch-size", "2"},
       error_line("--batch-timeout-us: " + text(cm::negative_value, "-5"))},
      // Runs that cannot fit in memory (1 GiB here), refused before anything is allocated.
      {{"train", "--num-envs", "100000000"},
       error_line(text(coral::actors::errors::memory_over_budget, "--num-envs", "100000000", "1.0 TiB",
                       "envs 429.2 GiB, rollout segments 251.8 GiB, PPO update tensors 238.4 GiB", "1.0 GiB"))},
      {{"train", "--horizon", "100000000"},
       error_line(text(coral::actors::errors::memory_over_budget, "--horizon", "100000000", "61.1 GiB",
                       "rollout segments 31.3 GiB, PPO update tensors 29.8 GiB, activations 425.7 KiB", "1.0 GiB"))},
      {{"train", "--hidden", "100000", "100000"},
       error_line(text(coral::actors::errors::memory_over_budget, "--hidden", "100000 100000", "522.7 GiB",
                       "network 521.6 GiB, activations 1.2 GiB, envs 36.0 KiB", "1.0 GiB"))},
      {{"train", "--env", "minatar/breakout", "--conv", "65536:1"},
       error_line(text(coral::actors::errors::memory_over_budget, "--conv", "65536:1", "101.2 GiB",
                       "network 43.8 GiB, activations 38.3 GiB, convolutions 19.2 GiB", "1.0 GiB"))},
      // Convolutions that do not fit the observation, or are not written as layers.
      {{"train", "--env", "minatar/breakout", "--conv", "16:11"},
       error_line(text(lm::conv_too_large, 1, "16:11", 11, 11, 10, 10, "give smaller windows or fewer layers"))},
      {{"train", "--algo", "dqn", "--conv", "16:3"}, error_line(text(lm::conv_needs_grid, "16:3", "a Box of shape (4)"))},
      {{"train", "--env", "minatar/breakout", "--conv", "0:3"},
       error_line(text(coral::errors::bad_value, "--conv", "0:3", lm::conv_allowed))},
      {{"train", "--lstm", "100000"},
       error_line(text(coral::actors::errors::memory_over_budget, "--lstm", "100000", "1.0 TiB",
                       "network 1.0 TiB, activations 1.5 GiB, recurrent state 18.3 MiB", "1.0 GiB"))},
      {{"train", "--algo", "dqn", "--replay-capacity", "1000000000"},
       error_line(text(coral::actors::errors::memory_over_budget, "--replay-capacity", "1000000000", "40.0 GiB",
                       "replay 40.0 GiB, activations 214.4 KiB, replay batches 45.0 KiB", "1.0 GiB"))},
      {{"train", "--num-envs", "18446744073709551615"},
       error_line(text(coral::actors::errors::memory_over_budget, "--num-envs", "18446744073709551615",
                       "176560.0 EiB", "envs 73728.0 EiB, rollout segments 43264.0 EiB, PPO update tensors 40960.0 EiB",
                       "1.0 GiB"))},
      // A MuJoCo env counts its mjData (3.4 MB for the humanoid; once 512 bytes, 700 times too few).
      {{"train", "--env", "humanoid", "--num-envs", "50000"},
       error_line(text(coral::actors::errors::memory_over_budget, "--num-envs", "50000", "172.2 GiB",
                       "envs 162.2 GiB, rollout segments 4.8 GiB, PPO update tensors 4.7 GiB", "1.0 GiB"))},
      {{"bench", "--num-envs", "100000000"},
       error_line(text(coral::actors::errors::memory_over_budget, "--num-envs", "100000000", "433.9 GiB",
                       "envs 429.2 GiB, env batch slabs 4.7 GiB", "1.0 GiB"))},
      // Flags that contradict each other (item 12).
      {{"train", "--run-dir", "x", "--no-run-dir"},
       error_line(text(cm::conflicting_flags, "--run-dir", "--no-run-dir", "give a run dir or none, not both"))},
      {{"train", "--executor", "single", "--threads", "2"},
       single_with_threads},
      {{"bench", "--executor", "single", "--threads", "2"},
       single_with_threads},
      {{"train", "--checkpoint-every", "5000"},
       error_line(text(cm::flag_needs, "--checkpoint-every", "--checkpoint-dir", "checkpoints are written there"))},
      {{"train", "--batch-timeout-us", "100"},
       batch_timeout_alone},
      {{"bench", "--batch-timeout-us", "100"},
       batch_timeout_alone},
      {{"bench", "--no-baseline", "--baseline-steps", "5"},
       error_line(text(cm::conflicting_flags, "--baseline-steps", "--no-baseline", "the baseline is skipped"))},
      // A setting the algorithm does not read: refused, not ignored, typed or from a file.
      {{"train", "--algo", "dqn", "--gae-lambda", "0.5"},
       error_line(text(te::setting_of_other_algo, "--gae-lambda", "PPO", "dqn"))},
      {{"train", "--algo", "dqn", "--no-anneal-lr"},
       error_line(text(te::setting_of_other_algo, "--no-anneal-lr", "PPO", "dqn"))},
      {{"train", "--algo", "dqn", "--seq-len", "40"},
       error_line(text(te::setting_of_other_algo, "--seq-len", "R2D2", "dqn"))},
      {{"train", "--replay-ratio", "4"},
       error_line(text(te::setting_of_other_algo, "--replay-ratio", "DQN and R2D2", "ppo"))},
      {{"train", "--algo", "r2d2", "--horizon", "32"},
       error_line(text(te::setting_of_other_algo, "--horizon", "PPO", "r2d2"))},
      {{"train", "--algo", "r2d2", "--no-double-dqn"},
       error_line(text(te::setting_of_other_algo, "--no-double-dqn", "DQN", "r2d2"))},
      {{"train", "--algo", "dqn", "--self-play"},
       error_line(text(te::setting_of_other_algo, "--self-play", "PPO", "dqn"))},
      // Multi-agent envs and self-play: refused before the run, naming the env.
      {{"train", "--env", "race", "--self-play"}, error_line(text(lm::self_play_one_team, "race"))},
      {{"--config", "other_algo.toml", "train"},
       error_line(text(te::setting_of_other_algo, "--gae-lambda", "PPO", "dqn"))},
      // Actions of `envs rollout`.
      {{"envs", "rollout", "--env", "race", "--actions", "0/1"},
       error_line(text(cm::wrong_action_count, "0/1", 1, 2, 4))},
      {{"envs", "rollout", "--env", "cartpole", "--actions", "1,0:1"},
       error_line(text(cm::wrong_scalar_count, "0:1", 2, 2, 1, "Discrete(2)"))},
      // Config files (item 4); the file is named as typed.
      {{"--config", "header.toml", "train"},
       file_error(cm::config_syntax, "header.toml", 1, 7, "Error while parsing table header: expected ']', saw '\\n'")},
      {{"--config", "double_equals.toml", "train"},
       file_error(cm::config_syntax, "double_equals.toml", 2, 15, "Error while parsing value: could not determine value type")},
      {{"--config", "open_array.toml", "train"},
       file_error(cm::config_syntax, "open_array.toml", 2, 18, "Error while parsing array: encountered end-of-file")},
      {{"--config", "typo.toml", "train"},
       file_error(cm::config_unknown_key, "typo.toml", 3, "total-stepz", "in [train]", "; did you mean 'total-steps'?")},
      {{"train", "--config", "typo.toml"},  // the form users type
       file_error(cm::config_unknown_key, "typo.toml", 3, "total-stepz", "in [train]", "; did you mean 'total-steps'?")},
      {{"train", "--config=far_typo.toml"},
       file_error(cm::config_unknown_key, "far_typo.toml", 2, "steps-in-all", "in [train]", "; see `coral train --help`")},
      {{"--config", "section.toml", "train"},
       file_error(cm::config_unknown_section, "section.toml", 1, "trian", "envs, envs.rollout, bench, tune, train, eval")},
      {{"--config", "subsection.toml", "train"},
       file_error(cm::config_unknown_section, "subsection.toml", 3, "train.network", "envs, envs.rollout, bench, tune, train, eval")},
      {{"--config", "top_level.toml", "train"},
       file_error(cm::config_top_level_key, "top_level.toml", 1, "total-steps", "log-level", "train")},
      {{"--config", "top_level_unknown.toml", "train"},
       file_error(cm::config_unknown_key, "top_level_unknown.toml", 1, "colour", "at the top level", "; see `coral --help`")},
      {{"--config", "section_value.toml", "train"},
       file_error(cm::config_wrong_type, "section_value.toml", 1, "train", "a section ([train])", "5")},
      {{"--config", "binary.toml", "train"}, file_error(cm::config_not_text, "binary.toml", 1, 0x00)},
      {{"--config", "latin1.toml", "train"}, file_error(cm::config_not_text, "latin1.toml", 2, 0xe9)},
      {{"--config", "string_for_number.toml", "train"},
       file_error(cm::config_wrong_type, "string_for_number.toml", 2, "[train] total-steps", "a whole number >= 0",
                  "a string (\"20000\")")},
      {{"--config", "array_for_scalar.toml", "train"},
       file_error(cm::config_wrong_type, "array_for_scalar.toml", 2, "[train] seed", "a whole number >= 0", "an array")},
      {{"--config", "negative.toml", "train"},
       file_error(cm::config_wrong_type, "negative.toml", 2, "[train] num-envs", "a whole number >= 0", "-1")},
      {{"--config", "fraction.toml", "train"},
       file_error(cm::config_wrong_type, "fraction.toml", 2, "[train] num-envs", "a whole number >= 0", "2.5")},
      {{"--config", "nan.toml", "train"},
       file_error(cm::config_wrong_type, "nan.toml", 2, "[train] learning-rate", "a finite number", "nan")},
      {{"--config", "array_element.toml", "train"},
       file_error(cm::config_wrong_type, "array_element.toml", 2, "[train] hidden[1]", "a whole number >= 0",
                  "a string (\"wide\")")},
      // An empty array once left the flag at its default, silently.
      {{"--config", "empty_array.toml", "train"},
       file_error(cm::config_wrong_type, "empty_array.toml", 2, "[train] hidden",
                  "a whole number >= 0 or a non-empty array of them", "an empty array")},
      {{"--config", "switch_number.toml", "train"},
       file_error(cm::config_wrong_type, "switch_number.toml", 2, "[train] keep-going", "true or false", "1")},
      {{"--config", "table_for_flag.toml", "train"},
       file_error(cm::config_wrong_type, "table_for_flag.toml", 1, "[train] hidden",
                  "a whole number >= 0 or an array of them", "a table")},
      {{"--config", "string_for_switch.toml", "train"},  // every section is checked, not only the command's
       file_error(cm::config_wrong_type, "string_for_switch.toml", 2, "[bench] json", "true or false",
                  "a string (\"yes\")")},
      {{"envs", "rollout", "--config", "rollout_key.toml"},
       file_error(cm::config_unknown_key, "rollout_key.toml", 3, "step", "in [envs.rollout]",
                  "; did you mean 'steps'?")},
      {{"--config", "bad_value.toml", "train"},
       error_line(text(coral::errors::bad_value, "--topology", "ring", "sync, double-buffer, pool"))},
      {{"--config", "conflict.toml", "train"},
       single_with_threads},
      {{"--config", "missing.toml", "train"}, file_error(cm::config_unreadable, "missing.toml", ce::input_missing)},
      // Anything but a regular file is refused before it is opened: a FIFO
      // once blocked forever, deaf to the first SIGINT.
      {{"--config", ".", "train"},
       file_error(cm::config_unreadable, ".", text(ce::input_not_regular, "a directory"))},
      {{"--config", "/dev/zero", "train"},
       file_error(cm::config_unreadable, "/dev/zero", text(ce::input_not_regular, "a character device"))},
      {{"--config", "fifo.toml", "train"},
       file_error(cm::config_unreadable, "fifo.toml", text(ce::input_not_regular, "a FIFO"))},
      {{"--config", "big.toml", "train"}, file_error(cm::config_too_large, "big.toml", 1 << 20)},
      {{"--config", "deep_key.toml", "train"}, file_error(cm::config_too_deep, "deep_key.toml", 2, 64)},
      {{"--config", "deep_header.toml", "train"}, file_error(cm::config_too_deep, "deep_header.toml", 2, 64)},
      {{"--config", "deep_array.toml", "train"}, file_error(cm::config_too_deep, "deep_array.toml", 2, 64)},
      {{"--config", "deep_inline.toml", "train"}, file_error(cm::config_too_deep, "deep_inline.toml", 3, 64)},
      {{"--config", "deep_mixed.toml", "train"}, file_error(cm::config_too_deep, "deep_mixed.toml", 2, 64)},
      // MuJoCo model files: what a path is, not "no such file".
      {{"train", "--env", "hopper", "--env-arg", "model=/dev/zero"},
       error_line(text(ee::mujoco_model_unreadable, "hopper", "/dev/zero", text(ce::input_not_regular, "a character device")))},
      {{"train", "--env", "hopper", "--env-arg", "model=."},
       error_line(text(ee::mujoco_model_unreadable, "hopper", ".", text(ce::input_not_regular, "a directory")))},
      {{"train", "--env", "hopper", "--env-arg", "model=nowhere.xml"},
       error_line(text(ee::mujoco_model_unreadable, "hopper", "nowhere.xml", ce::input_missing))},
      {{"train", "--env", "hopper", "--env-arg", "model=includes_fifo.xml"},
       error_line(text(ee::mujoco_model_names_unreadable, "hopper", "includes_fifo.xml", 2, "part.xml",
                       text(ce::input_not_regular, "a FIFO")))},
      // A bounded flag quotes its documented bound, not its type's.
      {{"bench", "--batch-timeout-us", "99999999999999999999", "--min-batch-size", "2"},
       error_line("--batch-timeout-us: " + text(cm::number_too_large, "99999999999999999999", 60000000))},
      {{"bench", "--batch-timeout-us", "60000001", "--min-batch-size", "2"},
       error_line("--batch-timeout-us: " + text(cm::number_too_large, "60000001", 60000000))},
      {{"train", "--config"}, error_line(std::string(cm::config_needs_file))},
      // An empty file or directory name once meant no checkpoints, no run
      // directory, and tune-<env>-<threads>t.toml: silently for the first
      // two, which lose what a run writes (an unset shell variable does it).
      {{"train", "--checkpoint-dir="}, error_line("--checkpoint-dir: " + text(cm::empty_name, "a directory name"))},
      {{"--config", "empty_checkpoint_dir.toml", "train"},
       error_line("--checkpoint-dir: " + text(cm::empty_name, "a directory name"))},
      {{"train", "--run-dir", ""}, error_line("--run-dir: " + text(cm::empty_name, "a directory name"))},
      {{"tune", "--out="}, error_line("--out: " + text(cm::empty_name, "a file name"))},
      {{"--config", "typo.toml", "train", "--config", "nan.toml"},
       error_line(text(cm::config_twice, "typo.toml", "nan.toml"))},
      // An env setting given twice: refused before anything starts, naming both values.
      {{"train", "--env-arg", "max_steps=100", "--env-arg", "max_steps=200"},
       error_line("env 'cartpole': config key 'max_steps' given twice ('100', then '200'); give it once")},
      // The run starts, then fails: exit 2 (a checkpoint that is not one).
      {{"train", "--resume", "--checkpoint-dir", "stray", "--no-run-dir"},
       // Passed over with a warning (stderr), then nothing is left to resume from.
       "warning: checkpoint 'stray/checkpoint-000000001000.ckpt' is not a coral checkpoint; skipped\n" +
           error_line("checkpoint 'stray/checkpoint-000000001000.ckpt' is not a coral checkpoint"),
       failed},
      // A rollout whose env fails: exit 2, naming the step (0: the first reset).
      {{"envs", "rollout", "--env", "faulty", "--env-arg", "throw_step=2", "--steps", "5"},
       error_line(text(cm::rollout_env_failed, "faulty", 2, "injected fault: step 2")), failed},
      {{"envs", "rollout", "--env", "faulty", "--env-arg", "throw_reset=1", "--steps", "5"},
       error_line(text(cm::rollout_env_failed, "faulty", 0, "reset failed: injected fault: reset 1")), failed},
  };
}

}  // namespace

TEST_CASE("every bad input is refused before anything starts, with its exact message and exit code",
          "[apps][cli][contract]") {
  const auto dir = fresh_dir("cli-contract-bad");
  for (const auto& [name, bytes] : bad_files) write_file(dir / name, bytes);
  write_file(dir / "big.toml", std::string((1 << 20) + 1, '#'));
  REQUIRE(::mkfifo((dir / "fifo.toml").c_str(), 0600) == 0);
  REQUIRE(::mkfifo((dir / "part.xml").c_str(), 0600) == 0);
  fs::create_directories(dir / "stray");
  write_file(dir / "stray" / "checkpoint-000000001000.ckpt", "not a checkpoint\n");

  const auto table = bad_inputs();
  std::vector<std::vector<std::string>> args;
  for (const auto& b : table) args.push_back(b.args);
  const auto results = run_all(args, dir);

  for (std::size_t i = 0; i < table.size(); ++i) {
    const auto& r = results[i];
    INFO("coral " << fmt::format("{}", fmt::join(table[i].args, " ")));
    CHECK_FALSE(r.killed);
    CHECK(r.exit_code == table[i].exit_code);
    CHECK(r.err == table[i].err);
    if (table[i].exit_code == rejected) CHECK(r.out.empty());  // nothing started, nothing printed
  }
  CHECK_FALSE(fs::exists(dir / "runs"));  // no run wrote metrics
  UNSCOPED_INFO(table.size() << " bad inputs");
  fs::remove_all(dir);
}

TEST_CASE("envs that cannot be built under an address-space limit are named, with how many were built",
          "[apps][cli][contract]") {
  // The estimate counts resident memory; `ulimit -v` also counts what MuJoCo
  // reserves, so the run passes the check and fails while building envs.
  // Once: "MuJoCo error: Could not allocate memory", naming nothing.
  const auto dir = fresh_dir("cli-contract-ulimit");
  coral::test::invocation inv;
  inv.argv = {"/bin/sh", "-c",
              fmt::format("ulimit -v 4000000 && exec {} bench --env humanoid --num-envs 2000 --steps 10", CORAL_BINARY)};
  inv.extra_env = {"CORAL_MEMORY_AVAILABLE=1TiB"};
  inv.cwd = dir.string();
  const auto r = coral::test::run_children({inv}, 1, std::chrono::milliseconds(60000)).front();
  INFO(r.err);
  CHECK_FALSE(r.killed);
  CHECK(r.exit_code == failed);
  const std::regex line(R"(error: env 'humanoid': (\d+) of 2000 envs built, then building the next failed: )"
                        R"(MuJoCo error: Could not allocate memory\n)");
  std::smatch m;
  REQUIRE(std::regex_match(r.err, m, line));
  CHECK(std::stoul(m[1]) > 0);
  CHECK(std::stoul(m[1]) < 2000);
  fs::remove_all(dir);
}

TEST_CASE("a config file works before or after the command, and typed flags win over it", "[apps][cli][contract]") {
  const auto dir = fresh_dir("cli-contract-good");
  write_file(dir / "run.toml",
             "log-level = \"warn\"\n"
             "[train]\n"
             "env = \"bandit\"\n"
             "total-steps = 256\n"
             "hidden = [8, 8]\n"
             "executor = \"single\"\n"
             "progress-seconds = 0\n"
             "no-run-dir = true\n"
             "[envs.rollout]\n"
             "env = \"cartpole\"\n"
             "steps = 2\n"
             "env-arg = [\"max_steps=1\"]\n");
  const auto results = run_all({{"--config", "run.toml", "train"},
                                {"train", "--config", "run.toml", "--seed", "7", "--hidden", "4"},
                                {"train", "--config", "run.toml", "--run-dir", "typed"},
                                {"envs", "rollout", "--config", "run.toml"},
                                {"train", "--help"}},
                               dir);
  check_all_ran(results);
  CHECK(last_line(results[0].out).starts_with(R"({"solved":false,"interrupted":false,"env":"bandit",)"));
  CHECK(results[0].out.find(" 221 parameters") != std::string::npos);  // hidden 8 8 from the file
  CHECK(last_line(results[1].out).find(R"("seed":7,)") != std::string::npos);
  CHECK(results[1].out.find(" 41 parameters") != std::string::npos);  // --hidden 4 replaced the file's list
  CHECK(fs::exists(dir / "typed" / "metrics.csv"));  // --run-dir typed wins over the file's no-run-dir
  CHECK(results[3].out.find(R"("step":2,)") != std::string::npos);
  CHECK(results[3].out.find(R"("truncated":true)") != std::string::npos);  // max_steps=1 from the file
  CHECK(results[4].out.find("--config") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("`--flag=` on the command line is the flag's empty value, as in a config file, not a flag that takes the next token",
          "[apps][cli][contract]") {
  // `coral train --run-dir= --total-steps=100` made a directory named
  // `--total-steps=100` and trained to the default target: CLI11 read
  // `--run-dir=` as --run-dir without its value and took the next token.
  // The empty name is now refused as such, naming --run-dir.
  const auto dir = fresh_dir("cli-contract-empty-equals");
  const auto results = run_all({{"train", "--run-dir=", "--total-steps=100"},
                                {"envs", "rollout", "--env=cartpole", "--steps=2", "--actions="},
                                {"envs", "--env="}},
                               dir);
  CHECK(results[0].exit_code == 1);
  CHECK(last_line(results[0].err) == "error: --run-dir: " + text(cm::empty_name, "a directory name"));
  CHECK(fs::is_empty(dir));  // no run directory, of any name
  check_all_ran({results[1], results[2]});
  CHECK(results[1].out.find(R"("step":2,)") != std::string::npos);  // random actions: the empty --actions
  CHECK(results[2].out.find("cartpole") != std::string::npos);      // every env: the empty --env
  fs::remove_all(dir);
}

TEST_CASE("an empty string in a config file is the flag's empty value, not a flag that takes the next word",
          "[apps][cli][contract]") {
  // fuzz/regressions/config/empty-string: the file's `env = ""` became
  // `--env=`, which CLI11 reads as --env without its value, taking the next
  // word (here `rollout`) for it or failing with "1 required TEXT missing".
  const auto dir = fresh_dir("cli-contract-empty-string");
  write_file(dir / "empty.toml",
             "[envs]\n"
             "env = \"\"\n"
             "[envs.rollout]\n"
             "env = \"cartpole\"\n"
             "steps = 2\n"
             "actions = \"\"\n");
  const auto results = run_all({{"--config", "empty.toml", "envs", "rollout"}, {"--config", "empty.toml", "envs"}}, dir);
  check_all_ran(results);
  CHECK(results[0].out.find(R"("step":2,)") != std::string::npos);  // random actions: the empty --actions
  CHECK(results[1].out.find("cartpole") != std::string::npos);      // every env: the empty --env
  fs::remove_all(dir);
}

TEST_CASE("`coral` hands a run that needs libtorch to coral-torch, and names what is missing when it cannot",
          "[apps][cli][contract][torch]") {
  // A copy of the torch-free `coral` alone in a directory: nothing to hand
  // a torch run to. Beside it, a directory named coral-torch: there, but not
  // a program. `--help`, a refused flag and a run on the fused engine need
  // neither.
  const auto dir = fresh_dir("cli-contract-hand-over");
  const auto lone = dir / "lone";
  const auto broken = dir / "broken";
  for (const auto& d : {lone, broken}) {
    fs::create_directories(d / "bin");
    fs::copy_file(CORAL_BINARY, d / "bin" / "coral");
  }
  fs::create_directories(broken / "bin" / "coral-torch");
  auto run = [&](const fs::path& program, std::vector<std::string> args) {
    coral::test::invocation inv;
    inv.argv.push_back(program.string());
    inv.argv.insert(inv.argv.end(), args.begin(), args.end());
    inv.cwd = dir.string();
    return coral::test::run_children({inv}, 1, child_limit).front();
  };
  const auto missing = run(lone / "bin" / "coral", {"train", "--no-run-dir", "--total-steps", "2048", "--backend", "torch"});
  CHECK(missing.exit_code == rejected);
  CHECK(missing.err == error_line(text(cm::torch_program_missing,
                                       fmt::format("{} and {}", (lone / "bin" / "coral-torch").string(),
                                                   (lone / "libexec" / "coral" / "coral-torch").string()))));
  CHECK(missing.out.empty());
  const auto unstartable =
      run(broken / "bin" / "coral", {"train", "--no-run-dir", "--total-steps", "2048", "--backend", "torch"});
  CHECK(unstartable.exit_code == rejected);
  CHECK(unstartable.err ==
        error_line(text(cm::torch_program_failed, (broken / "bin" / "coral-torch").string(), "Permission denied")));
  const auto help = run(lone / "bin" / "coral", {"train", "--help"});
  CHECK(help.exit_code == ok);
  CHECK(help.out.find("--algo") != std::string::npos);
  const auto refused = run(lone / "bin" / "coral", {"train", "--seed", "-1"});
  CHECK(refused.exit_code == rejected);
  CHECK(refused.err.find("--seed") != std::string::npos);
  // The default run is the fused engine's: the lone coral trains it itself.
  const auto fused = run(lone / "bin" / "coral", {"train", "--no-run-dir", "--total-steps", "2048", "--seed", "3"});
  INFO(fused.err);
  CHECK(fused.exit_code == ok);
  CHECK(fused.out.find("on the fused backend") != std::string::npos);
  CHECK(last_line(fused.out).find(R"("algo":"ppo")") != std::string::npos);
  // The real one, beside its coral-torch: a torch run trains there, in this process.
  const auto handed =
      run(CORAL_BINARY, {"train", "--no-run-dir", "--total-steps", "2048", "--seed", "3", "--backend", "torch"});
  INFO(handed.err);
  CHECK(handed.exit_code == ok);
  CHECK(handed.out.find("on the torch backend") != std::string::npos);
  CHECK(last_line(handed.out).find(R"("algo":"ppo")") != std::string::npos);
  fs::remove_all(dir);
}
