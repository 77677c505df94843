#include "coral/sampler_flags.hpp"

#include <chrono>

#include <fmt/format.h>

#include "coral/actors/errors.hpp"
#include "coral/actors/memory_budget.hpp"
#include "coral/core/error.hpp"
#include "coral/core/executor.hpp"
#include "coral/envs/config.hpp"
#include "coral/config_file.hpp"
#include "coral/flag_checks.hpp"
#include "coral/errors.hpp"

namespace coral::cli {

void add_sampler_flags(CLI::App& cmd, sampler_flags& f, const sampler_flag_defaults& defaults) {
  auto& o = f.options;
  o.threads = defaults.threads;
  cmd.add_option("--env", o.env, "env name (see `coral envs`)")->capture_default_str();
  cmd.add_option("--env-arg", f.env_args, "env setting key=value (repeatable)");
  f.topology_flag = cmd.add_option("--topology", f.topology, "sync, double-buffer or pool")->capture_default_str();
  cmd.add_option("--executor", f.executor, "threads, or single (every actor on one thread; deterministic)")
      ->capture_default_str();
  cmd.add_option("--seed", o.seed, defaults.seed_help)->capture_default_str();
  cmd.add_option("--num-envs", o.num_envs, "number of envs")->capture_default_str();
  cmd.add_option("--envs-per-group", f.envs_per_group,
                 "envs stepped back to back by one actor, or auto: chosen from the env's measured step time and "
                 "--threads (docs/cli.md)")
      ->type_name(std::string(auto_or_count_type))
      ->capture_default_str();
  f.batch_size_flag = cmd.add_option("--batch-size", o.batch_size,
                                     "envs per batch (default: all for sync, half for double-buffer, a quarter for "
                                     "pool)");
  cmd.add_option("--min-batch-size", o.min_batch_size,
                 "dynamic batching: act on this many envs once --batch-timeout-us passed (0: off, the default)");
  f.batch_timeout_flag = cmd.add_option("--batch-timeout-us", f.batch_timeout_us,
                                        "dynamic batching timeout in microseconds (at most a minute)")
                             ->check(non_negative_whole())
                             ->check(at_most(max_batch_timeout_us));
  f.threads_flag = cmd.add_option("--threads", o.threads, defaults.threads_help)->capture_default_str();
  cmd.add_option("--spin-us", f.spin_us,
                 "microseconds an idle sampling thread polls before blocking (at most 1 s), or auto: none for envs "
                 "cheaper than a hand-off between cores, 50 otherwise (docs/cli.md)")
      ->type_name(std::string(auto_or_count_type))
      ->check(at_most(max_spin_us))
      ->capture_default_str();
  cmd.add_flag("--pin", o.pin, "pin sampling threads to cores");
  cmd.add_flag("--inference-thread", o.inference_thread,
               "run the batcher on a thread of its own instead of the sampling threads");
  cmd.add_option("--on-env-error", f.on_env_error, "fail, or reset the failing env and go on")->capture_default_str();
  cmd.add_flag("--allow-non-finite", f.allow_non_finite, defaults.allow_non_finite_help);
}

actors::sampler_options to_sampler_options(const sampler_flags& f) {
  auto fail = [](std::string_view format, auto&&... args) {
    throw config_error(fmt::format(fmt::runtime(format), args...));
  };
  auto o = f.options;
  if (f.executor == "single" && f.threads_flag->count() > 0 && o.threads > 1) {
    fail(errors::conflicting_flags, fmt::format("--threads {}", o.threads), "--executor single",
         "the single executor runs every actor on one thread");
  }
  // 0 is how the options say "the topology's default": given, it would be
  // taken silently as that.
  if (f.batch_size_flag->count() > 0 && o.batch_size == 0) {
    fail(actors::errors::flag_out_of_range, "--batch-size", 0,
         "must be at least 1; leave it out for the topology's default");
  }
  if (f.batch_timeout_flag->count() > 0 && o.min_batch_size == 0) {
    fail(errors::flag_needs, "--batch-timeout-us", "--min-batch-size", "the timeout applies only to dynamic batching");
  }
  if (const auto k = count_or_auto_value("--envs-per-group", f.envs_per_group)) {  // at least 1
    o.envs_per_group = static_cast<std::size_t>(*k);
  } else {
    o.envs_per_group = 0;  // auto
  }
  o.env_args = envs::parse_env_args(f.env_args);
  o.topo = actors::parse_topology(f.topology);
  o.executor = parse_executor_mode(f.executor);
  o.on_env_error = actors::parse_env_error_policy(f.on_env_error);
  o.check_finite = !f.allow_non_finite;
  o.batch_timeout = std::chrono::microseconds(f.batch_timeout_us);
  // at_most(max_spin_us) bounds it, so the count fits the duration.
  const auto spin = count_or_auto_value("--spin-us", f.spin_us);
  o.spin = spin ? std::chrono::microseconds(static_cast<std::int64_t>(*spin)) : actors::spin_auto;
  return o;
}

void check_sampler_memory(const actors::sampler_options& o) {
  const auto shape = actors::probe_env_shape(o);
  actors::memory_estimate estimate;
  actors::add_sampler_memory(estimate, o, shape);
  auto at_default = o;
  at_default.num_envs = actors::sampler_options{}.num_envs;
  actors::memory_estimate smaller;
  actors::add_sampler_memory(smaller, at_default, shape);
  actors::check_memory(estimate, {{"--num-envs", fmt::format("{}", o.num_envs), smaller.total()}},
                       actors::available_memory());
}

}  // namespace coral::cli
