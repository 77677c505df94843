#include "coral/learners/train.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <fmt/format.h>

#include "coral/actors/sampler.hpp"
#include "coral/actors/messages.hpp"
#include "coral/channels/latest.hpp"
#include "coral/core/error.hpp"
#include "coral/core/logging.hpp"
#include "coral/core/runtime.hpp"
#include "coral/core/stall_watchdog.hpp"
#include "coral/envs/registry.hpp"
#include "coral/learners/checkpoint.hpp"
#include "coral/learners/messages.hpp"
#include "coral/learners/network.hpp"
#include "coral/learners/rollout.hpp"
#include "dqn_train.hpp"
#include "finite_checks.hpp"
#include "run_guards.hpp"
#include "memory_budget.hpp"
#include "train_common.hpp"

namespace coral::learners {
namespace {

using detail::number;
using detail::out_of_range;
using detail::quote;

using clock = std::chrono::steady_clock;

/// One progress row, as printed and as written to metrics.csv.
struct progress_row {
  double seconds = 0;
  double steps_per_second = 0;
  stats_snapshot s;
};

constexpr std::string_view csv_header =
    "seconds,env_steps,steps_per_second,episodes,mean_return,mean_length,policy_loss,value_loss,entropy,approx_kl,"
    "clip_fraction,learning_rate,mean_policy_lag,max_policy_lag,updates";

std::string csv_line(const progress_row& r) {
  const auto& u = r.s.last_update;
  return fmt::format("{:.3f},{},{:.1f},{},{},{},{},{},{},{},{},{},{},{},{}", r.seconds, r.s.env_steps,
                     r.steps_per_second, r.s.episodes, r.s.mean_return, r.s.mean_length, u.policy_loss, u.value_loss,
                     u.entropy, u.approx_kl, u.clip_fraction, u.learning_rate, u.mean_policy_lag, u.max_policy_lag,
                     r.s.updates);
}

std::string progress_line(const progress_row& r) {
  const auto& u = r.s.last_update;
  return fmt::format(
      "[{:7.1f}s] steps {:>9} ({:>7.0f}/s) episodes {:>6} return {:8.2f} length {:7.1f} | pg {:+.4f} v {:.4f} "
      "ent {:.3f} kl {:.4f} clip {:.3f} lr {:.2e} | lag {:.2f} (max {}) updates {} ({:.1f} ms each, {:.1f} s in all)",
      r.seconds, r.s.env_steps, r.steps_per_second, r.s.episodes, r.s.mean_return, r.s.mean_length, u.policy_loss,
      u.value_loss, u.entropy, u.approx_kl, u.clip_fraction, u.learning_rate, u.mean_policy_lag, u.max_policy_lag,
      r.s.updates, 1e3 * u.seconds, r.s.learner_seconds);
}

}  // namespace

void validate(const train_options& o) {
  if (o.algo != "ppo" && o.algo != "dqn") {
    throw config_error(fmt::format(fmt::runtime(coral::messages::bad_value), "--algo", o.algo, "ppo, dqn"));
  }
  (void)actors::resolve_wiring(o.sampler);
  // What both algorithms take.
  if (o.total_steps == 0) out_of_range("--total-steps", o.total_steps, "must be at least 1");
  if (o.hidden.empty()) out_of_range("--hidden", "(none)", "give at least one layer width");
  for (auto h : o.hidden) {
    if (h == 0) out_of_range("--hidden", h, "layer widths must be at least 1");
  }
  if (!(o.progress_seconds >= 0)) out_of_range("--progress-seconds", o.progress_seconds, "must be >= 0");
  if (!(o.stall_seconds >= 0 && o.stall_seconds <= 1e6)) {
    out_of_range("--stall-seconds", o.stall_seconds, "must be in [0, 1000000] (0: no watchdog)");
  }
  if (o.resume && o.checkpoint_dir.empty()) throw config_error(std::string(messages::resume_needs_dir));
  detail::check_memory_budget(o);  // what the run allocates fits in this machine's memory
  if (o.algo == "dqn") {
    validate_dqn(o);
    return;
  }
  if (o.horizon == 0) out_of_range("--horizon", o.horizon, "must be at least 1");
  if (o.frames == 0) out_of_range("--frames", o.frames, "must be at least 1");
  if (o.ppo.epochs == 0) out_of_range("--epochs", o.ppo.epochs, "must be at least 1");
  if (o.ppo.minibatch_size == 0) out_of_range("--minibatch-size", o.ppo.minibatch_size, "must be at least 1");
  if (!(o.ppo.learning_rate > 0)) out_of_range("--learning-rate", o.ppo.learning_rate, "must be > 0");
  if (!(o.ppo.gamma > 0 && o.ppo.gamma <= 1)) out_of_range("--gamma", o.ppo.gamma, "must be in (0, 1]");
  if (!(o.ppo.gae_lambda >= 0 && o.ppo.gae_lambda <= 1)) out_of_range("--gae-lambda", o.ppo.gae_lambda, "must be in [0, 1]");
  if (!(o.ppo.clip > 0)) out_of_range("--clip", o.ppo.clip, "must be > 0");
  if (!(o.ppo.max_grad_norm >= 0)) out_of_range("--max-grad-norm", o.ppo.max_grad_norm, "must be >= 0");
  if (!(o.ppo.entropy_coef >= 0)) out_of_range("--entropy-coef", o.ppo.entropy_coef, "must be >= 0");
  if (!(o.ppo.value_coef >= 0)) out_of_range("--value-coef", o.ppo.value_coef, "must be >= 0");
}

std::string train_result::to_json(const train_options& o) const {
  return fmt::format(
      R"({{"solved":{},"interrupted":{},"env":{},"algo":{},"topology":{},"executor":{},"seed":{},"env_steps":{},)"
      R"("wall_seconds":{},"mean_return":{},"mean_length":{},"episodes":{},"updates":{},"target_return":{},)"
      R"("checkpoint":{},"resumed_from":{}}})",
      solved, interrupted, quote(o.sampler.env), quote(o.algo), quote(actors::to_string(o.sampler.topo)),
      quote(o.sampler.executor == executor_mode::single ? "single" : "threads"), o.sampler.seed, env_steps,
      number(wall_seconds), number(mean_return), number(mean_length), episodes, updates,
      target_return ? number(*target_return) : "null", checkpoint.empty() ? "null" : quote(checkpoint),
      resumed_from.empty() ? "null" : quote(resumed_from));
}

train_result train(const train_options& o, std::ostream& progress) {
  validate(o);
  detail::prepare_run_dirs(o);
  if (o.algo == "dqn") return train_dqn(o, progress);
  const auto& so = o.sampler;
  // The sampler builds the envs, the batch, the groups and the batcher's
  // ready channels; the rollout assembler is put between groups and batcher.
  actors::sampler sampler(so);
  const auto& wiring = sampler.wires();
  const envs::env& probe = sampler.first_env();
  if (probe.max_agents() != 1) {
    throw config_error(fmt::format(fmt::runtime(messages::multi_agent_unsupported), so.env, probe.max_agents()));
  }
  const auto target = o.target_return ? o.target_return : probe.solved_return();
  envs::env_batch& batch = sampler.batch();
  const auto spec = network_spec::from_spaces(sampler.observation_space(), sampler.action_space(), o.hidden, o.frames);

  // The learner, and where it starts from.
  use_one_torch_thread();
  ppo_learner learner(spec, o.ppo, so.seed, o.total_steps);
  const std::string signature = network_signature(spec);
  std::string resumed_from;
  if (o.resume) {
    const auto [c, file] = detail::read_for_resume(o, "ppo", signature, progress);
    learner.restore(c.learner);
    resumed_from = file.string();
    progress << fmt::format("resumed from {} ({} env steps, {} updates)\n", resumed_from, c.learner.env_steps,
                            c.learner.updates);
  }
  const std::uint64_t start_steps = learner.env_steps();

  latest<std::vector<float>> weights;
  weights.publish(learner.weights());
  training_stats stats;
  rollout_assembler::options ao;
  ao.horizon = o.horizon;
  ao.max_policy_lag = o.max_policy_lag;
  ao.frames = o.frames;
  ao.env_steps = start_steps;
  ao.max_env_steps = o.total_steps;
  if (o.stop_when_solved) ao.target_return = target;
  rollout_assembler assembler(batch, sampler.group_rows(), weights, stats, ao);
  sampler.announce_to(assembler.ready());  // groups announce to the assembler, which forwards
  // A resumed run draws fresh actions: the policy's streams depend on the steps done.
  mlp_policy policy(spec, batch.rows(), so.seed ^ (start_steps * 0x9E3779B97F4A7C15ULL));
  const auto bo = gated_batcher_options(so, wiring);

  // Metrics files.
  detail::metrics_file csv(o.run_dir, csv_header, o.resume);
  const auto started = clock::now();
  std::uint64_t last_steps = start_steps;
  auto last_time = started;
  // A row: the statistics now, with the step rate since the caller's last row.
  auto make_row = [&](std::uint64_t& steps_before, clock::time_point& time_before) {
    progress_row r;
    const auto now = clock::now();
    r.seconds = std::chrono::duration<double>(now - started).count();
    r.s = stats.read();
    const double dt = std::chrono::duration<double>(now - time_before).count();
    r.steps_per_second = dt > 0 ? static_cast<double>(r.s.env_steps - steps_before) / dt : 0.0;
    steps_before = r.s.env_steps;
    time_before = now;
    return r;
  };
  // Progress lines come from the progress actor (and once at the end);
  // metrics rows from the learner after every update (and once at the end).
  auto report = [&] { progress << progress_line(make_row(last_steps, last_time)) << '\n' << std::flush; };
  std::uint64_t csv_steps = start_steps;
  auto csv_time = started;
  auto record = [&] {
    if (csv.is_open()) csv.write_row(csv_line(make_row(csv_steps, csv_time)));
  };
  progress << fmt::format(
      "coral train: env {}, ppo, topology {}, {} envs in {} groups of {}, batch {}, {} sampling thread{}, {} executor, "
      "horizon {}, max policy lag {}, {} parameters, target return {}{}\n",
      so.env, actors::to_string(so.topo), so.num_envs, wiring.groups, so.envs_per_group, wiring.batch_size, so.threads,
      so.threads == 1 ? "" : "s", so.executor == executor_mode::single ? "single" : "threads", o.horizon,
      o.max_policy_lag, parameter_count(spec), target ? number(*target) : "none",
      bo.min_batch_size != so.min_batch_size
          ? fmt::format(", dynamic batching behind the lag gate (min {} envs, {} us)", bo.min_batch_size,
                        bo.batch_timeout.count())
          : "");

  // Checkpoints.
  std::string last_checkpoint;
  auto save = [&] {
    if (o.checkpoint_dir.empty()) return;
    checkpoint c;
    c.env = so.env;
    c.network = signature;
    c.seed = so.seed;
    c.learner = learner.state();
    last_checkpoint = save_checkpoint(o.checkpoint_dir, c, o.keep_checkpoints).string();
  };
  std::uint64_t next_checkpoint =
      o.checkpoint_every == 0 ? 0 : (start_steps / o.checkpoint_every + 1) * o.checkpoint_every;

  std::atomic<int> finished{-1};  // a finish_reason, or -1 (stopped otherwise)
  runtime rt({.mode = so.executor,
              .handle_signals = true,
              .stop_deadline = detail::train_stop_deadline,
              .on_stop_timeout = detail::exit_on_stop_timeout(progress)});
  rt.on_stop([&] { assembler.close(); });  // the sampler closes its own channels
  sampler.spawn(rt, policy, bo, &assembler, &weights);
  auto sampling = rt.pool(pool_options{.name = "sampling", .threads = so.threads, .pin = so.pin, .first_core = 0,
                                       .spin = so.spin});
  rt.spawn("rollout-assembler", sampling,
           assembler.run(sampler.ready_channels(), [&](finish_reason why) {
             finished.store(static_cast<int>(why));
             rt.request_stop();
           }));
  rt.spawn("learner", rt.pool("learner", 1), [&]() -> asio::awaitable<void> {
    for (;;) {
      auto seg = co_await assembler.segments().async_receive();
      if (!seg || rt.stop_requested()) co_return;
      const auto st = learner.update(**seg, weights.version());
      auto w = learner.weights();
      if (so.check_finite) {
        detail::check_loss_terms("ppo", learner.updates(),
                                 {{"policy loss", st.policy_loss}, {"value loss", st.value_loss}, {"entropy", st.entropy}});
        detail::check_weights("ppo", learner.updates(), w);
      }
      weights.publish(std::move(w));
      stats.record_update(st, learner.updates());
      record();
      const bool sent = co_await assembler.ready().async_send(actors::ready_msg{rollout_assembler::published});
      if (!sent) co_return;
      if (next_checkpoint != 0 && learner.env_steps() >= next_checkpoint) {
        save();
        next_checkpoint = (learner.env_steps() / o.checkpoint_every + 1) * o.checkpoint_every;
      }
    }
  });
  detail::spawn_progress(rt, o.progress_seconds, report);
  stall_watchdog stall(stall_watchdog::limit_of(o.stall_seconds));
  sampler.watch_by(stall);
  stall.watch("learner updates", [&] { return stats.read().updates; });
  stall.describe([&](std::string& out) {
    out += fmt::format("  rollout assembler: {} ready message(s) buffered, {} segment(s) waiting for the learner\n",
                       assembler.ready().size(), assembler.segments().size());
  });
  stall.spawn(rt);
  rt.run();

  const double wall = std::chrono::duration<double>(clock::now() - started).count();
  report();
  record();
  save();
  auto result = detail::make_result(stats.read(), target, finished.load() < 0, assembler.env_steps(), learner.updates(),
                                    last_checkpoint, wall);
  result.resumed_from = resumed_from;
  result.metrics_written = csv.close(progress);
  return result;
}

}  // namespace coral::learners
