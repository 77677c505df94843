// `coral train`: PPO or DQN on any registered env, on any topology, with progress,
// metrics, checkpoints and a final JSON line (see shared/DESIGN.md's contract
// and docs/training.md).

#include <algorithm>
#include <any>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "coral/cli.hpp"
#include "coral/core/error.hpp"
#include "coral/dashboard_flags.hpp"
#include "coral/flag_checks.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/train.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/errors.hpp"
#include "coral/sampler_flags.hpp"
#ifdef CORAL_HAVE_MPI
#include <iostream>

#include <mpi.h>

#include "coral/distributed/bridge.hpp"
#include "coral/distributed/mpi_transport.hpp"
#endif

namespace coral::cli {
namespace {

// Beyond this bound the progress period overflows its clock's integer.
constexpr double max_progress_seconds = 86'400;

struct train_flags {
  training::train_options o;
  sampler_flags sampler;
  double target_return = 0;  // used when the flag was given
  bool keep_going = false;
  std::string run_dir;       // default: runs/<env>-<algo>-<topology>-seed<seed>
  bool no_run_dir = false;
  bool no_tensorboard = false;
  bool distributed = false;
  dashboard_flags dashboard;
};

/// One algorithm setting on the command line: declared once for every
/// registered algorithm that declares its name, stored here by its kind and
/// applied to the algorithm that runs (its descriptor's fields).
struct algorithm_flag {
  std::string name;
  training::option_kind kind = training::option_kind::number;
  CLI::Option* option = nullptr;
  bool on = false;
  std::uint64_t whole = 0;
  double number = 0;
  std::vector<std::size_t> list;
  [[nodiscard]] training::option_value value() const {
    switch (kind) {
      case training::option_kind::on_off: return on;
      case training::option_kind::whole: return whole;
      case training::option_kind::number: return number;
      case training::option_kind::whole_list: return list;
    }
    return number;
  }
};

/// Flags whose presence matters, not only their value.
struct given_flags {
  const CLI::Option* target_return = nullptr;
  const CLI::Option* run_dir = nullptr;
  const CLI::Option* checkpoint_every = nullptr;
  /// The algorithms' settings, one per name.
  std::shared_ptr<std::vector<algorithm_flag>> algorithm_flags;
};

/// The options of the algorithm that runs: its descriptor's defaults, then
/// each of its settings given (typed or from a config file). A setting given
/// that only other algorithms declare is refused, whatever its value.
std::any algorithm_options(const std::vector<algorithm_flag>& flags, const std::string& algo) {
  const auto d = training::find_algorithm(algo);
  auto options = d->defaults();
  for (const auto& f : flags) {
    if (f.option->count() == 0) continue;
    training::check_setting_declared(f.name, algo);
    for (const auto& field : d->fields) {
      if (field.name == f.name) field.set(options, f.value());
    }
  }
  return options;
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

/// `--algo`'s help: each registered algorithm and what it is.
std::string algo_help() {
  std::string help;
  for (const auto& d : training::registered_algorithms()) {
    help += fmt::format("{}{}{}", help.empty() ? "" : "; ", d->name, d->summary.empty() ? "" : " (" + d->summary + ")");
  }
  return help.empty() ? "the algorithm" : help;
}

/// Declares one flag per setting name of the registered algorithms, its help
/// naming which algorithms take it and their defaults.
std::shared_ptr<std::vector<algorithm_flag>> add_algorithm_flags(CLI::App& cmd) {
  struct declarer {
    const training::algorithm_descriptor* algo;
    const training::option_field* field;
  };
  std::vector<std::pair<std::string, std::vector<declarer>>> names;
  const auto algos = training::registered_algorithms();
  for (const auto& d : algos) {
    for (const auto& field : d->fields) {
      auto at = std::find_if(names.begin(), names.end(), [&](const auto& n) { return n.first == field.name; });
      if (at == names.end()) at = names.insert(names.end(), {field.name, {}});
      at->second.push_back({d.get(), &field});
    }
  }
  auto flags = std::make_shared<std::vector<algorithm_flag>>();
  flags->reserve(names.size());  // CLI11 binds to the elements: no reallocation after
  for (const auto& [name, who] : names) {
    const auto& first = *who.front().field;
    auto default_of = [](const declarer& x) {
      return x.field->default_text.empty() ? training::to_text(x.field->get(x.algo->defaults())) : x.field->default_text;
    };
    bool same_help = true;
    bool same_default = true;
    std::string algos_text;
    for (const auto& x : who) {
      same_help = same_help && x.field->help == first.help;
      same_default = same_default && default_of(x) == default_of(who.front());
      algos_text += (algos_text.empty() ? "" : ", ") + x.algo->name;
    }
    std::string help;
    if (same_help) {
      help = algos_text + ": " + first.help;
    } else {
      for (const auto& x : who) help += fmt::format("{}{}: {}", help.empty() ? "" : "; ", x.algo->name, x.field->help);
    }
    if (first.range) help += " in " + first.range->text();
    if (first.kind != training::option_kind::on_off) {
      if (same_default) {
        help += " (default " + default_of(who.front()) + ")";
      } else {
        std::string each;
        for (const auto& x : who) each += fmt::format("{}{} {}", each.empty() ? "" : ", ", x.algo->name, default_of(x));
        help += " (default: " + each + ")";
      }
    }
    auto& f = flags->emplace_back();
    f.name = name;
    f.kind = first.kind;
    const std::string flag = "--" + name;
    switch (f.kind) {
      case training::option_kind::on_off: f.option = cmd.add_flag(flag, f.on, help); break;
      case training::option_kind::whole: f.option = cmd.add_option(flag, f.whole, help); break;
      case training::option_kind::number:
        f.option = cmd.add_option(flag, f.number, help);
        if (first.range) f.option->check(at_most(first.range->high));
        break;
      case training::option_kind::whole_list: f.option = cmd.add_option(flag, f.list, help); break;
    }
  }
  return flags;
}

void run_train(std::ostream& out, std::ostream& err, train_flags& f, const given_flags& given, const run_hooks& hooks) {
  check_conflicts(f, given);
  const bool target_given = given.target_return->count() > 0;
  const bool run_dir_given = given.run_dir->count() > 0;
  auto& o = f.o;
  o.sampler = to_sampler_options(f.sampler);
  if (target_given) o.target_return = f.target_return;
  o.stop_when_solved = !f.keep_going;
  o.algo_options = algorithm_options(*given.algorithm_flags, o.algo);
  if (f.no_run_dir) {
    o.run_dir.clear();
  } else {
    o.run_dir = run_dir_given ? f.run_dir
                              : fmt::format("runs/{}-{}-{}-seed{}", o.sampler.env, o.algo, f.sampler.topology, o.sampler.seed);
  }
  o.tensorboard = !f.no_tensorboard;
  o.dashboard = to_dashboard_options(f.dashboard);
  o.on_metrics_row = hooks.on_metrics_row;
  learners::validate(o);  // every flag, before anything starts
  if (!learners::torch_linked() && learners::needs_torch(o)) {
    if (hooks.hand_over) hooks.hand_over();
    throw config_error(fmt::format(fmt::runtime(learners::errors::torch_not_linked), fmt::format("--algo {}", o.algo)));
  }
#ifdef CORAL_HAVE_MPI
  // A rank waits at most --stall-seconds (at least 10 s) for the others, at the start too.
  if (f.distributed) o.remote = distributed::over(distributed::mpi_transport::start(distributed::bridge::silence_limit(o)));
#endif
  training::train_result result;
  try {
    result = learners::train(o, out, err);
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
  if (!training::sampler_rank(o)) {  // samplers leave the run's lines to the learner
    if (result.metrics_written) out << fmt::format("metrics: {}/metrics.csv\n", o.run_dir);
    out << result.to_json(o) << '\n' << std::flush;
  }
  o.remote.reset();  // MPI ends with the run
}

}  // namespace

void add_train_command(CLI::App& app, std::ostream& out, std::ostream& err, const run_hooks& hooks) {
  auto f = std::make_shared<train_flags>();
  auto& o = f->o;
  auto* cmd = app.add_subcommand("train", "train an agent with PPO, DQN or R2D2; the last line is one JSON object");
  learners::register_builtin_algorithms();
  cmd->add_option("--algo", o.algo, algo_help())->capture_default_str();
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
  cmd->add_option("--hidden", o.hidden,
                  "hidden layer widths, e.g. --hidden 64 64 (default: 32 32, tanh; 128, ReLU, after convolutions)");
  cmd->add_option("--conv", o.conv,
                  "convolutions before the hidden layers, CHANNELS:KERNEL[:STRIDE] per layer (no padding, ReLU "
                  "after each), e.g. --conv 16:3 32:3:2, or none (default: 16:3, MinAtar's, for a grid observation, "
                  "a Box of shape (height, width, channels); none otherwise)");
  cmd->add_option("--backend", o.backend,
                  "what computes the updates: fused (coral's CPU engine, where it has the network; torch otherwise) "
                  "or torch (the libtorch twin)")
      ->check(CLI::IsMember({"fused", "torch"}))
      ->capture_default_str();
  auto algorithm_flags = add_algorithm_flags(*cmd);
  cmd->add_option("--checkpoint-dir", o.checkpoint_dir, "write checkpoints here (at the end, on SIGINT, and every "
                                                        "--checkpoint-every steps)")
      ->check(non_empty("a directory name"));
  auto* checkpoint_every =
      cmd->add_option("--checkpoint-every", o.checkpoint_every, "env steps between checkpoints (0: only at the end)")
          ->capture_default_str();
  cmd->add_option("--keep-checkpoints", o.keep_checkpoints, "checkpoints kept, the newest (0: all)")->capture_default_str();
  cmd->add_flag("--resume", o.resume, "continue from the newest checkpoint in --checkpoint-dir");
  auto* run_dir = cmd->add_option("--run-dir", f->run_dir,
                                  "metrics.csv, learning_curve.png and a TensorBoard event file go here (default "
                                  "runs/<env>-<algo>-<topology>-seed<S>)")
                      ->check(non_empty("a directory name"));
  cmd->add_flag("--no-run-dir", f->no_run_dir, "write no metrics files");
  cmd->add_flag("--no-tensorboard", f->no_tensorboard,
                "write no TensorBoard event file (events.out.tfevents.*) in the run dir");
  cmd->add_option("--progress-seconds", o.progress_seconds, "seconds between progress lines (0: none; at most a day)")
      ->check(at_most(max_progress_seconds))
      ->capture_default_str();
  cmd->add_option("--stall-seconds", o.stall_seconds,
                  "stop the run, with a report of every actor and channel, when no env step and no learner update "
                  "happened for this long (0: never)")
      ->capture_default_str();
  cmd->add_option("--video-every", o.video_every,
                  fmt::format("every N updates, record one episode of the current policy (at most {} steps) into "
                              "<run dir>/videos/update-<updates>.mp4, on a low-priority thread that skips a request "
                              "while a clip is being written; needs ffmpeg and an env that renders (0: none; at most {})",
                              training::max_clip_steps, training::max_video_every))
      ->check(at_most(static_cast<double>(training::max_video_every)))
      ->capture_default_str();
  add_dashboard_flags(*cmd, f->dashboard,
                      "its actors and channels, how busy each actor is, its rates and learning curve");
  const given_flags given{target, run_dir, checkpoint_every, std::move(algorithm_flags)};
  cmd->callback([&out, &err, f, given, hooks] { run_train(out, err, *f, given, hooks); });
}

}  // namespace coral::cli
