// `coral train`: PPO or DQN on any registered env, on any topology, with progress,
// metrics, checkpoints and a final JSON line (see shared/DESIGN.md's contract
// and docs/training.md).

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "coral/cli.hpp"
#include "coral/core/error.hpp"
#include "coral/flag_checks.hpp"
#include "coral/learners/train.hpp"
#include "coral/errors.hpp"
#include "coral/sampler_flags.hpp"
#ifdef CORAL_HAVE_MPI
#include <iostream>

#include <mpi.h>

#include "coral/distributed/mpi_transport.hpp"
#endif

namespace coral::cli {
namespace {

// Beyond these bounds the progress period overflows its clock's integer, or
// (the learning rate) the squared value loss overflows a float within the
// first updates.
constexpr double max_learning_rate = 1e6;
constexpr double max_progress_seconds = 86'400;

struct train_flags {
  learners::train_options o;
  sampler_flags sampler;
  double target_return = 0;  // used when the flag was given
  bool no_anneal_lr = false;
  bool no_clip_value_loss = false;
  bool no_advantage_norm = false;
  bool keep_going = false;
  std::string run_dir;       // default: runs/<env>-<topology>-seed<seed>
  bool no_run_dir = false;
  // Flags every algorithm takes, with defaults of their own.
  std::optional<double> learning_rate;
  std::optional<double> gamma;
  std::optional<double> max_grad_norm;
  std::optional<double> adam_epsilon;
  bool uniform_replay = false;
  bool no_double_dqn = false;
  bool distributed = false;
};

/// A flag DQN and R2D2 share whose default differs for R2D2: set to it
/// when the flag was not given.
struct r2d2_default {
  const CLI::Option* flag = nullptr;
  std::function<void(learners::train_options&)> set;
};

/// Flags whose presence matters, not only their value.
struct given_flags {
  const CLI::Option* target_return = nullptr;
  const CLI::Option* run_dir = nullptr;
  const CLI::Option* checkpoint_every = nullptr;
  std::vector<r2d2_default> r2d2_defaults;
  /// The command, for the flags given at all (check_flags_read).
  const CLI::App* command = nullptr;
};

/// Refuses a flag given (typed or from a config file) that only other
/// algorithms read, whatever its value: validate() refuses one set to
/// another value than its default, but cannot see one given at its default.
void check_flags_read(const given_flags& g, const std::string& algo) {
  for (const CLI::Option* opt : g.command->get_options()) {
    if (opt->count() == 0) continue;
    for (const std::string& name : opt->get_lnames()) learners::check_flag_read("--" + name, algo);
  }
}

/// Flags that contradict each other, rejected before anything starts.
void check_conflicts(const train_flags& f, const given_flags& g) {
  auto fail = [](std::string_view format, auto&&... args) {
    throw config_error(fmt::format(fmt::runtime(format), args...));
  };
  if (g.run_dir->count() > 0 && f.no_run_dir) {
    fail(errors::conflicting_flags, "--run-dir", "--no-run-dir", "give a run dir or none, not both");
  }
  if (g.checkpoint_every->count() > 0 && f.o.checkpoint_dir.empty()) {
    fail(errors::flag_needs, "--checkpoint-every", "--checkpoint-dir", "checkpoints are written there");
  }
}

void run_train(std::ostream& out, train_flags& f, const given_flags& given, const run_hooks& hooks) {
  check_conflicts(f, given);
  const bool target_given = given.target_return->count() > 0;
  const bool run_dir_given = given.run_dir->count() > 0;
  auto& o = f.o;
  o.sampler = to_sampler_options(f.sampler);
  if (target_given) o.target_return = f.target_return;
  o.ppo.anneal_lr = !f.no_anneal_lr;
  o.ppo.clip_value_loss = !f.no_clip_value_loss;
  o.ppo.normalize_advantages = !f.no_advantage_norm;
  o.stop_when_solved = !f.keep_going;
  if (o.algo == "r2d2") {
    // R2D2's defaults where they differ from DQN's (the paper's, or what the
    // small envs need; docs/training.md, "R2D2"), for the flags not given.
    for (const auto& d : given.r2d2_defaults) {
      if (d.flag->count() == 0) d.set(o);
    }
    o.dqn.learning_rate = 1e-3;
    o.dqn.gamma = 0.997;
    o.dqn.max_grad_norm = 40;
  }
  // A flag every algorithm takes sets the config of the algorithm that runs
  // (DQN's for R2D2): the other keeps its defaults, as the option checks
  // require of a config the algorithm does not read.
  const bool q_learning = o.algo == "dqn" || o.algo == "r2d2";
  auto shared = [&o, q_learning](const std::optional<double>& flag, double learners::ppo_config::*ppo,
                                 double learners::dqn_config::*dqn) {
    if (flag) (q_learning ? o.dqn.*dqn : o.ppo.*ppo) = *flag;
  };
  shared(f.learning_rate, &learners::ppo_config::learning_rate, &learners::dqn_config::learning_rate);
  shared(f.gamma, &learners::ppo_config::gamma, &learners::dqn_config::gamma);
  shared(f.max_grad_norm, &learners::ppo_config::max_grad_norm, &learners::dqn_config::max_grad_norm);
  shared(f.adam_epsilon, &learners::ppo_config::adam_epsilon, &learners::dqn_config::adam_epsilon);
  o.dqn.prioritized = !f.uniform_replay;
  o.dqn.double_dqn = !f.no_double_dqn;
  if (f.no_run_dir) {
    o.run_dir.clear();
  } else {
    o.run_dir = run_dir_given ? f.run_dir
                              : fmt::format("runs/{}-{}-seed{}", o.sampler.env, f.sampler.topology, o.sampler.seed);
  }
  o.on_metrics_row = hooks.on_metrics_row;
  learners::validate(o);  // every flag, before anything starts
  check_flags_read(given, o.algo);
#ifdef CORAL_HAVE_MPI
  if (f.distributed) o.remote = distributed::mpi_transport::start();
#endif
  learners::train_result result;
  try {
    result = learners::train(o, out);
  } catch (const config_error& e) {
#ifdef CORAL_HAVE_MPI
    // Refused on this rank before the ranks met (a run dir in use, no
    // checkpoint to resume): the others would wait for it, so the job ends here.
    if (o.remote && o.remote->size() > 1) {
      std::cerr << "error: " << e.what() << '\n' << std::flush;
      MPI_Abort(MPI_COMM_WORLD, exit_code::rejected);
    }
#endif
    o.remote.reset();
    throw;
  }
  if (!learners::sampler_rank(o)) {  // samplers leave the run's lines to the learner
    if (result.metrics_written) out << fmt::format("metrics: {}/metrics.csv\n", o.run_dir);
    out << result.to_json(o) << '\n' << std::flush;
  }
  o.remote.reset();  // MPI ends with the run
}

}  // namespace

void add_train_command(CLI::App& app, std::ostream& out, const run_hooks& hooks) {
  auto f = std::make_shared<train_flags>();
  auto& o = f->o;
  auto* cmd = app.add_subcommand("train", "train an agent with PPO, DQN or R2D2; the last line is one JSON object");
  cmd->add_option("--algo", o.algo, "ppo, dqn (Ape-X-style: prioritized replay actor, double DQN), or r2d2 (recurrent DQN on sequences; "
                  "needs --lstm)")->capture_default_str();
  // One sampling thread by default: the learner has the other core.
  add_sampler_flags(*cmd, f->sampler,
                    {.threads = 1,
                     .threads_help = "sampling threads (the learner has a thread of its own)",
                     .seed_help = "seed of the envs, the network and the sampling",
                     .allow_non_finite_help = "pass NaN/infinite rewards, observations, losses and weights on instead "
                                              "of stopping the run"});
  cmd->add_option("--total-steps", o.total_steps, "env steps to run at most")->capture_default_str();
#ifdef CORAL_HAVE_MPI  // a build without MPI has no such flag
  cmd->add_flag("--distributed", f->distributed,
                "run under mpirun -np N (N >= 2): rank 0 learns, the other ranks sample with the flags above each "
                "(docs/distributed.md)");
#endif
  auto* target = cmd->add_option("--target-return", f->target_return,
                                 "mean return over the last 100 episodes that counts as solved (default: the env's)");
  cmd->add_flag("--keep-going", f->keep_going, "do not stop when solved; run --total-steps");
  cmd->add_option("--max-policy-lag", o.max_policy_lag,
                  "ppo: how many updates older than the learner the acting weights may be (0: strictly on-policy)")
      ->capture_default_str();
  cmd->add_option("--horizon", o.horizon, "ppo: steps per env per rollout segment")->capture_default_str();
  cmd->add_option("--epochs", o.ppo.epochs, "ppo: epochs per segment")->capture_default_str();
  cmd->add_option("--minibatch-size", o.ppo.minibatch_size, "ppo: samples per minibatch")->capture_default_str();
  cmd->add_option("--learning-rate", f->learning_rate, "Adam step size, at most 1e6 (default: ppo 5e-3, dqn 5e-4, r2d2 1e-3)")
      ->check(at_most(max_learning_rate));
  cmd->add_flag("--no-anneal-lr", f->no_anneal_lr,
                "ppo: keep the learning rate constant (dqn and r2d2 never anneal it)");
  cmd->add_option("--gamma", f->gamma, "discount (default 0.99; r2d2 0.997)");
  cmd->add_option("--gae-lambda", o.ppo.gae_lambda, "ppo: GAE lambda")->capture_default_str();
  cmd->add_option("--clip", o.ppo.clip, "ppo: surrogate (and value) clip range")->capture_default_str();
  cmd->add_flag("--no-clip-value-loss", f->no_clip_value_loss, "ppo: plain squared-error value loss");
  cmd->add_flag("--no-advantage-norm", f->no_advantage_norm, "ppo: do not normalise advantages per minibatch");
  cmd->add_option("--value-coef", o.ppo.value_coef, "ppo: value loss coefficient")->capture_default_str();
  cmd->add_option("--entropy-coef", o.ppo.entropy_coef, "ppo: entropy bonus coefficient")->capture_default_str();
  cmd->add_option("--max-grad-norm", f->max_grad_norm, "gradient norm clip, 0: off (default: ppo 0.5, dqn 10, r2d2 40)");
  cmd->add_option("--adam-epsilon", f->adam_epsilon, "Adam's epsilon, added to the root of the second moment (default 1e-5)");
  cmd->add_flag("--obs-norm", o.normalize_observations,
                "ppo: normalise observations by their running mean and std (clipped to +-10), kept in checkpoints and "
                "applied by the acting policy");
  cmd->add_flag("--reward-scale", o.ppo.scale_rewards,
                "ppo: divide the rewards trained on by a running std of the discounted return (clipped to +-10)");
  // DQN and its replay.
  auto& dm = o.dqn;
  std::vector<r2d2_default> r2d2_defaults;
  auto r2d2_differs = [&r2d2_defaults](const CLI::Option* flag, std::function<void(learners::train_options&)> set) {
    r2d2_defaults.push_back({flag, std::move(set)});
  };
  r2d2_differs(cmd->add_option("--n-step", dm.n_step, "dqn, r2d2 (default 5): env steps summed into each return")
                   ->capture_default_str(),
               [](learners::train_options& t) { t.dqn.n_step = 5; });
  r2d2_differs(cmd->add_option("--replay-batch", dm.batch_size,
                               "dqn: transitions per update; r2d2 (default 32): sequences per update")
                   ->capture_default_str(),
               [](learners::train_options& t) { t.dqn.batch_size = 32; });
  r2d2_differs(cmd->add_option("--replay-ratio", dm.replay_ratio,
                               "dqn: transitions sampled per env step inserted (the rate limiter holds it); r2d2 "
                               "(default 4): trained slots sampled per env step inserted")
                   ->capture_default_str(),
               [](learners::train_options& t) { t.dqn.replay_ratio = 4; });
  r2d2_differs(cmd->add_option("--replay-capacity", dm.replay_capacity,
                               "dqn: transitions the replay holds; r2d2 (default 20000): sequences")
                   ->capture_default_str(),
               [](learners::train_options& t) { t.dqn.replay_capacity = 20'000; });
  cmd->add_option("--learning-starts", dm.learning_starts, "dqn, r2d2: env steps in the replay before the first update")
      ->capture_default_str();
  cmd->add_option("--prefetch", dm.prefetch, "dqn, r2d2: sampled batches the learner keeps in flight")
      ->capture_default_str();
  cmd->add_flag("--uniform-replay", f->uniform_replay, "dqn, r2d2: sample uniformly instead of by priority");
  r2d2_differs(cmd->add_option("--priority-alpha", dm.priority_alpha, "dqn, r2d2 (default 0.9): priority exponent")
                   ->capture_default_str(),
               [](learners::train_options& t) { t.dqn.priority_alpha = 0.9; });
  r2d2_differs(cmd->add_option("--priority-beta", dm.priority_beta,
                               "dqn, r2d2 (default 0.6): importance exponent at the start (annealed to 1)")
                   ->capture_default_str(),
               [](learners::train_options& t) { t.dqn.priority_beta = 0.6; });
  r2d2_differs(cmd->add_option("--target-update", dm.target_update,
                               "dqn, r2d2 (default 400): updates between target network copies")
                   ->capture_default_str(),
               [](learners::train_options& t) { t.dqn.target_update = 400; });
  // R2D2's own.
  auto& rm = o.r2d2;
  cmd->add_option("--seq-len", rm.seq_len, "r2d2: slots per replayed sequence, burn-in included")->capture_default_str();
  cmd->add_option("--burn-in", rm.burn_in, "r2d2: leading slots of a sequence that only warm the LSTM state up")
      ->capture_default_str();
  cmd->add_option("--seq-overlap", rm.overlap,
                  "r2d2: slots shared by consecutive sequences of an episode (default: seq-len / 2)");
  cmd->add_option("--prefetch-batches", rm.prefetch_batches,
                  "r2d2: batches the learner asks the replay for per request (amortises the round trip)")
      ->capture_default_str();
  cmd->add_option("--priority-eta", rm.priority_eta, "r2d2: sequence priority = eta max|td| + (1 - eta) mean|td|")
      ->capture_default_str();
  cmd->add_option("--rescale-epsilon", rm.rescale_epsilon,
                  "r2d2: epsilon of the value rescaling h(x) = sign(x)(sqrt(|x|+1) - 1) + epsilon x")
      ->capture_default_str();
  cmd->add_flag("--no-double-dqn", f->no_double_dqn,
                "dqn: bootstrap with max of the target network (r2d2 is always double-Q)");
  cmd->add_option("--epsilon-base", dm.epsilon_base,
                  "dqn, r2d2: Ape-X ladder, env i of N explores with base^(1+alpha*i/(N-1))")
      ->capture_default_str();
  cmd->add_option("--epsilon-alpha", dm.epsilon_alpha, "dqn, r2d2: Ape-X ladder exponent")->capture_default_str();
  cmd->add_option("--exploration-steps", dm.exploration_steps,
                  "dqn, r2d2: env steps over which each epsilon falls from 1 to its rung")
      ->capture_default_str();
  cmd->add_option("--publish-every", dm.publish_every, "dqn, r2d2: updates between weight publications to the policy")
      ->capture_default_str();
  cmd->add_option("--hidden", o.hidden, "hidden layer widths, e.g. --hidden 64 64")->capture_default_str();
  cmd->add_option("--frames", o.frames, "ppo: observations stacked into the policy input (memory needs 5)")
      ->capture_default_str();
  r2d2_differs(cmd->add_option("--lstm", o.lstm,
                               "ppo: width of an LSTM after the hidden layers, the policy's memory across steps (0: "
                               "none); r2d2 (default 64): its Q-network's")
                   ->capture_default_str(),
               [](learners::train_options& t) { t.lstm = 64; });
  cmd->add_option("--checkpoint-dir", o.checkpoint_dir, "write checkpoints here (at the end, on SIGINT, and every "
                                                        "--checkpoint-every steps)")
      ->check(non_empty("a directory name"));
  auto* checkpoint_every =
      cmd->add_option("--checkpoint-every", o.checkpoint_every, "env steps between checkpoints (0: only at the end)")
          ->capture_default_str();
  cmd->add_option("--keep-checkpoints", o.keep_checkpoints, "checkpoints kept, the newest (0: all)")->capture_default_str();
  cmd->add_flag("--resume", o.resume, "continue from the newest checkpoint in --checkpoint-dir");
  auto* run_dir = cmd->add_option("--run-dir", f->run_dir,
                                  "metrics.csv and learning_curve.png go here (default runs/<env>-<topology>-seed<S>)")
                      ->check(non_empty("a directory name"));
  cmd->add_flag("--no-run-dir", f->no_run_dir, "write no metrics files");
  cmd->add_option("--progress-seconds", o.progress_seconds, "seconds between progress lines (0: none; at most a day)")
      ->check(at_most(max_progress_seconds))
      ->capture_default_str();
  cmd->add_option("--stall-seconds", o.stall_seconds,
                  "stop the run, with a report of every actor and channel, when no env step and no learner update "
                  "happened for this long (0: never)")
      ->capture_default_str();
  const given_flags given{target, run_dir, checkpoint_every, std::move(r2d2_defaults), cmd};
  cmd->callback([&out, f, given, hooks] { run_train(out, *f, given, hooks); });
}

}  // namespace coral::cli
