// `coral bench`: sampling throughput of a topology, against the plain
// for-loop over the same envs, measured in the same process.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "coral/actors/builtin_policy.hpp"
#include "coral/actors/errors.hpp"
#include "coral/actors/memory_budget.hpp"
#include "coral/actors/sampler.hpp"
#include "coral/cli.hpp"
#include "coral/core/interrupts.hpp"
#include "coral/core/json.hpp"
#include "coral/core/runtime.hpp"
#include "coral/core/stall_watchdog.hpp"
#include "coral/core/exit_codes.hpp"
#include "coral/config_file.hpp"
#include "coral/dashboard_flags.hpp"
#include "coral/training/dashboard.hpp"
#include "coral/errors.hpp"
#include "coral/flag_checks.hpp"
#include "coral/sampler_flags.hpp"
#ifdef CORAL_HAVE_TRAIN
#include "coral/learners/mlp_policy.hpp"
#include "coral/learners/network.hpp"
#endif

namespace coral::cli {
namespace {

/// Policy `name` for `rows` rows of sampler `s`'s envs: random and constant
/// from actors (a random one drawing row r from streams[r]); mlp (an
/// untrained 32x32 actor-critic, the one `coral train` starts from) when
/// coral is built with libtorch.
std::unique_ptr<actors::policy> make_bench_policy(const std::string& name, const actors::sampler& s,
                                                  std::size_t rows, std::uint64_t seed,
                                                  std::span<const std::uint64_t> streams) {
  if (name != "random" && name != "constant" && name != "mlp") {
    throw config_error(
        fmt::format(fmt::runtime(coral::errors::bad_value), "--policy", name, "random, constant, mlp"));
  }
  if (name == "mlp") {
#ifdef CORAL_HAVE_TRAIN
    const auto spec = learners::network_spec::from_spaces(s.observation_space(), s.action_space(), {32, 32}, 1);
    return std::make_unique<learners::mlp_policy>(spec, rows, seed);
#else
    throw config_error(fmt::format(fmt::runtime(coral::errors::bad_value), "--policy", name,
                                   "random, constant (mlp needs coral built with CORAL_WITH_TORCH=ON)"));
#endif
  }
  return actors::make_builtin_policy(name, s.action_space(), rows, seed, streams);
}

/// The policies of the plain loops: each made as the sampler's is, for the
/// loop's rows, a random one drawing each env's own stream from its start
/// (so env i takes the actions it takes in the sampler). `s` must outlive
/// the loops.
actors::loop_policy_factory loop_policies(const std::string& name, const actors::sampler& s, std::uint64_t seed) {
  return [&name, &s, seed](std::size_t first_row, std::size_t rows) {
    std::vector<std::uint64_t> streams(rows);
    std::iota(streams.begin(), streams.end(), first_row);
    return make_bench_policy(name, s, rows, seed, streams);
  };
}

struct bench_flags {
  sampler_flags sampler;
  std::string shards = "auto";  // a count, or auto
  std::string policy = "random";
  std::uint64_t steps = 2'000'000;
  std::uint64_t baseline_steps = 0;  // 0: as many as --steps
  std::size_t baseline_threads = 1;
  bool no_baseline = false;
  bool json = false;
  double stall_seconds = 30;
  dashboard_flags dashboard;
};

/// Flags whose presence matters, not only their value.
struct given_flags {
  const CLI::Option* baseline_steps = nullptr;
  const CLI::Option* baseline_threads = nullptr;
};

/// Refuses flags that contradict each other, and a sampler that cannot fit
/// in this machine's memory (naming --num-envs), before anything is built.
void check_bench_flags(const bench_flags& f, const given_flags& g, const actors::sampler_options& o) {
  if (g.baseline_steps->count() > 0 && f.no_baseline) {
    throw config_error(fmt::format(fmt::runtime(errors::conflicting_flags), "--baseline-steps", "--no-baseline",
                                   "the baseline is skipped"));
  }
  // 0 inside means "as many as --steps": given, it would be taken silently
  // as that.
  if (g.baseline_steps->count() > 0 && f.baseline_steps == 0) {
    throw config_error(fmt::format(fmt::runtime(actors::errors::flag_out_of_range), "--baseline-steps", 0,
                                   "must be at least 1; leave it out for as many as --steps, or give "
                                   "--no-baseline"));
  }
  if (g.baseline_threads->count() > 0 && f.no_baseline) {
    throw config_error(fmt::format(fmt::runtime(errors::conflicting_flags), "--baseline-threads", "--no-baseline",
                                   "the baseline is skipped"));
  }
  if (f.baseline_threads == 0 || o.num_envs % f.baseline_threads != 0) {
    throw config_error(fmt::format(fmt::runtime(actors::errors::flag_out_of_range), "--baseline-threads",
                                   f.baseline_threads,
                                   fmt::format("must divide --num-envs ({}): each loop steps an equal share",
                                               o.num_envs)));
  }
  (void)actors::resolve_wiring(o);  // the flags' own errors first
  check_sampler_memory(o);
}

/// The shard count `--shards` asks for: a count, or auto (actors::shards_auto)
/// where the policy acts on disjoint rows at once (random, constant), else
/// one. Throws config_error for 0, or more than one with the mlp policy.
std::size_t shards_of(const bench_flags& f) {
  const auto n = count_or_auto_value("--shards", f.shards);  // at least 1
  const bool concurrent_policy = f.policy != "mlp";
  if (!n) return concurrent_policy ? actors::shards_auto : 1;
  if (*n > 1 && !concurrent_policy) {
    throw config_error(fmt::format(fmt::runtime(actors::errors::flag_out_of_range), "--shards", *n,
                                   "the mlp policy acts on one batch at a time: one shard (or auto)"));
  }
  return static_cast<std::size_t>(*n);
}

void run_bench(std::ostream& out, const bench_flags& f, const given_flags& given) {
  actors::sampler_options o = to_sampler_options(f.sampler);
  o.shards = shards_of(f);
  if (!(f.stall_seconds >= 0 && f.stall_seconds <= 1e6)) {
    throw config_error(fmt::format(fmt::runtime(coral::errors::bad_value), "--stall-seconds", f.stall_seconds,
                                   "0 (no watchdog) to 1000000"));
  }
  if (f.steps == 0) {
    throw config_error(fmt::format(fmt::runtime(coral::errors::bad_value), "--steps", 0, "at least 1"));
  }
  check_bench_flags(f, given, o);
  const auto dashboard_options = to_dashboard_options(f.dashboard);
  std::optional<training::dashboard> dashboard;  // bound before anything starts: a port in use refuses the run
  if (dashboard_options.on) dashboard.emplace(dashboard_options);

  actors::sampler s(o);  // validates every flag before anything starts
  const auto& so = s.options();  // with the group size auto chose
  const auto streams = s.row_streams();
  auto pol = make_bench_policy(f.policy, s, s.rows(), o.seed, streams);
  const auto& w = s.wires();
  const std::string sharding =
      w.shards == 1 ? std::string()
                    : fmt::format(" in {} shards (each {} envs, batch {}, {} thread{})", w.shards,
                                  o.num_envs / w.shards, w.batch_size, o.threads / w.shards,
                                  o.threads / w.shards == 1 ? "" : "s");
  const auto first_line = fmt::format(
      "coral bench: env {}, topology {}, {} envs in {} groups of {}, batch {}, {} thread{}{}, {} executor, spin {} us",
      o.env, actors::to_string(o.topo), o.num_envs, w.groups, so.envs_per_group, w.all_shards_batch(), o.threads,
      o.threads == 1 ? "" : "s", sharding, f.sampler.executor, so.spin.count());
  out << first_line << '\n';
  if (dashboard) out << fmt::format("dashboard: {} (also /state.json and /metrics)\n", dashboard->url());
  out << std::flush;  // a line to watch while a long run goes on

  // A first SIGINT/SIGTERM stops whichever loop runs (the sampler's runtime
  // or the baseline) and the command prints what was measured; a second one
  // prints the sampler's line, if measured, and ends the process at once.
  std::mutex said_mutex;  // the sampler's line: written here, read by the signal watcher
  std::string sampler_line;
  auto fail_now = [&](std::string_view why) {
    {
      std::lock_guard lock(said_mutex);
      out << sampler_line << std::flush;
    }
    std::cerr << "error: " << why << std::endl;
    std::fflush(nullptr);
    std::_Exit(exit_codes::run_failed);
  };
  interrupt_scope interrupts([] {}, [&] {
    std::lock_guard lock(said_mutex);
    out << sampler_line << "interrupted again: exiting with what was measured so far\n" << std::flush;
  });

  runtime rt({.mode = o.executor,
              .handle_signals = true,
              .on_stop_timeout = [&](const std::string& what) {
                fail_now(fmt::format("{} (abandoned; exiting)", what));
              }});
  s.spawn(rt, *pol, f.steps);
  stall_watchdog stall(stall_watchdog::limit_of(f.stall_seconds));
  s.watch_by(stall);
  stall.spawn(rt);
  actor_graph graph;
  // Stops serving before the runtime, the sampler and the graph its probes read go away.
  struct stop_serving {
    std::optional<training::dashboard>& d;
    ~stop_serving() {
      if (d) d->stop();
    }
  } stop_dashboard{dashboard};
  if (dashboard) {
    s.chart(graph);
    training::live_source source;
    source.title = first_line;
    source.actors = [&rt] { return rt.actor_names(); };
    source.finished = [&rt](const std::string& name) { return rt.finished(name); };
    source.counters = [&s] { return training::live_counters{.env_steps = s.stats().env_steps}; };
    source.graph = &graph;
    dashboard->start(std::move(source));
  }
  rt.run();
  if (dashboard) dashboard->stop();  // the baseline that follows has no actors to show
  const auto st = s.stats();
  const double seconds = static_cast<double>(st.run_ns) * 1e-9;
  const double sps = seconds > 0 ? static_cast<double>(st.env_steps) / seconds : 0.0;
  const double bps = seconds > 0 ? static_cast<double>(st.batches) / seconds : 0.0;
  {
    std::lock_guard lock(said_mutex);
    sampler_line = fmt::format("sampler:  {} env steps in {:.3f} s = {:.0f} steps/s, {:.0f} batches/s, batcher idle {:.1f}%{}\n",
                               st.env_steps, seconds, sps, bps, 100.0 * st.idle_fraction,
                               interrupted() ? " (interrupted)" : "");
    out << sampler_line << std::flush;
  }
  if (s.env_failures() > 0) out << fmt::format("env failures survived: {}\n", s.env_failures());

  double baseline_sps = 0;
  const bool run_baseline = !f.no_baseline && !interrupted();
  const std::size_t loops = f.baseline_threads;
  const std::string loops_said =
      loops == 1 ? fmt::format("plain for-loop over the same {} envs on 1 thread", o.num_envs)
                 : fmt::format("{} plain for-loops side by side, {} of the same {} envs each on a thread of its own",
                               loops, o.num_envs / loops, o.num_envs);
  if (run_baseline) {
    out << fmt::format("baseline: running {}{}\n", loops == 1 ? "the " : "", loops_said) << std::flush;
    const auto r = actors::run_plain_loops(o, loops, loop_policies(f.policy, s, o.seed),
                                           f.baseline_steps == 0 ? f.steps : f.baseline_steps, interrupted);
    baseline_sps = r.seconds > 0 ? static_cast<double>(r.env_steps) / r.seconds : 0.0;
    out << fmt::format("baseline: {}: {:.0f} steps/s\n", loops_said, baseline_sps);
    out << fmt::format("speedup over the plain loop{}: {:.2f}x\n", loops == 1 ? "" : "s", sps / baseline_sps);
  }
  if (f.json) {
    out << fmt::format(
        R"({{"env":{},"topology":{},"executor":{},"policy":{},"num_envs":{},"envs_per_group":{},"groups":{},)"
        R"("batch_size":{},"threads":{},"shards":{},"spin_us":{},"env_steps":{},"seconds":{},"steps_per_second":{},)"
        R"("batches_per_second":{},)"
        R"("idle_fraction":{},"baseline_threads":{},"baseline_steps_per_second":{},"speedup":{},"env_failures":{},)"
        R"("interrupted":{}}})"
        "\n",
        json::quote(o.env), json::quote(actors::to_string(o.topo)), json::quote(f.sampler.executor), json::quote(f.policy),
        o.num_envs, so.envs_per_group, w.groups, w.all_shards_batch(), o.threads, w.shards, so.spin.count(),
        st.env_steps, json::number(seconds),
        json::number(sps), json::number(bps), json::number(st.idle_fraction), loops,
        run_baseline ? json::number(baseline_sps) : "null",
        run_baseline && baseline_sps > 0 ? json::number(sps / baseline_sps) : "null", s.env_failures(),
        interrupted());
  }
}

}  // namespace

void add_bench_command(CLI::App& app, std::ostream& out) {
  auto flags = std::make_shared<bench_flags>();
  auto* cmd = app.add_subcommand("bench", "measure sampling throughput of a topology against a plain for-loop");
  add_sampler_flags(*cmd, flags->sampler, {.threads = 2});
  cmd->add_option("--shards", flags->shards,
                  "independent samplers, each with its own threads, envs, share of the batch and batcher, or auto: "
                  "one per thread where the envs and batch split evenly and the policy allows (docs/cli.md)")
      ->type_name(std::string(auto_or_count_type))
      ->capture_default_str();
  cmd->add_option("--policy", flags->policy, "random, constant, or mlp (an untrained actor-critic)")
      ->capture_default_str();
  cmd->add_option("--steps", flags->steps, "env steps to sample")->capture_default_str();
  auto* baseline_steps =
      cmd->add_option("--baseline-steps", flags->baseline_steps, "env steps for the plain loop (default --steps)");
  auto* baseline_threads = cmd->add_option(
      "--baseline-threads", flags->baseline_threads,
      "run the baseline as this many plain loops side by side, each on its own thread and share of the envs: "
      "what the machine gives that many threads that share nothing")
      ->capture_default_str();
  cmd->add_flag("--no-baseline", flags->no_baseline, "skip the plain for-loop baseline");
  cmd->add_flag("--json", flags->json, "end with one JSON object on its own line");
  cmd->add_option("--stall-seconds", flags->stall_seconds,
                  "stop, with a report of every env group and channel, when no env step happened for this long "
                  "(0: never)")
      ->capture_default_str();
  add_dashboard_flags(*cmd, flags->dashboard, "its env groups, batchers and channels, how busy each is, steps/s");
  const given_flags given{baseline_steps, baseline_threads};
  cmd->callback([&out, flags, given] { run_bench(out, *flags, given); });
}

}  // namespace coral::cli
