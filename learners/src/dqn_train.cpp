// `coral train --algo dqn`: the sampler's actors, the replay feeder, the
// replay actor and the DQN learner on one runtime (see docs/training.md).

#include "dqn_train.hpp"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/actors/sampler.hpp"
#include "coral/channels/latest.hpp"
#include "coral/core/runtime.hpp"
#include "coral/core/stall_watchdog.hpp"
#include "coral/learners/checkpoint.hpp"
#include "coral/learners/rollout.hpp"
#include "coral/replay/replay_actor.hpp"
#include "coral/replay/replay_feeder.hpp"
#include "finite_checks.hpp"
#include "run_guards.hpp"
#include "train_common.hpp"

namespace coral::learners {
namespace {

using clock = std::chrono::steady_clock;
using detail::number;
using detail::out_of_range;

/// What a progress line and a metrics row show.
struct dqn_row {
  double seconds = 0;
  double steps_per_second = 0;
  stats_snapshot s;
  std::uint64_t replay_size = 0;
  double inserts_per_second = 0;   ///< env steps inserted per second
  double samples_per_second = 0;   ///< transitions sampled per second
  double replay_ratio = 0;         ///< transitions sampled per env step inserted, over the whole run
  double sample_us = 0;            ///< time to sample and gather one batch, mean since the last row
  std::size_t inbox = 0;           ///< messages waiting for the replay actor
  std::size_t ready_batches = 0;   ///< sampled batches waiting for the learner
  std::size_t waiting_requests = 0;  ///< learner requests the rate limiter holds
  std::size_t held_groups = 0;     ///< env groups the rate limiter holds
  double epsilon_low = 0;
  double epsilon_high = 0;
};

constexpr std::string_view csv_header =
    "seconds,env_steps,steps_per_second,episodes,mean_return,mean_length,td_loss,mean_q,mean_abs_td,replay_size,"
    "inserts_per_second,samples_per_second,replay_ratio,sample_us,inbox_depth,ready_batches,waiting_requests,"
    "held_groups,updates";

std::string csv_line(const dqn_row& r) {
  const auto& u = r.s.last_update;
  return fmt::format("{:.3f},{},{:.1f},{},{},{},{},{},{},{},{:.1f},{:.1f},{:.3f},{:.2f},{},{},{},{},{}", r.seconds,
                     r.s.env_steps, r.steps_per_second, r.s.episodes, r.s.mean_return, r.s.mean_length, u.td_loss,
                     u.mean_q, u.mean_abs_td, r.replay_size, r.inserts_per_second, r.samples_per_second,
                     r.replay_ratio, r.sample_us, r.inbox, r.ready_batches, r.waiting_requests, r.held_groups,
                     r.s.updates);
}

std::string progress_line(const dqn_row& r) {
  const auto& u = r.s.last_update;
  return fmt::format(
      "[{:7.1f}s] steps {:>9} ({:>7.0f}/s) episodes {:>6} return {:8.2f} length {:7.1f} | loss {:.4f} q {:+.3f} "
      "|td| {:.4f} eps {:.3f}-{:.3f} | replay {} ins {:.0f}/s smp {:.0f}/s ratio {:.2f} sample {:.1f} us | queues "
      "inbox {} ready {} held-req {} held-groups {} | updates {} ({:.2f} ms each)",
      r.seconds, r.s.env_steps, r.steps_per_second, r.s.episodes, r.s.mean_return, r.s.mean_length, u.td_loss, u.mean_q,
      u.mean_abs_td, r.epsilon_low, r.epsilon_high, r.replay_size, r.inserts_per_second, r.samples_per_second,
      r.replay_ratio, r.sample_us, r.inbox, r.ready_batches, r.waiting_requests, r.held_groups, r.s.updates,
      1e3 * u.seconds);
}

/// The signature of the Q network's parameter layout.
std::string q_signature(const std::vector<std::size_t>& widths) {
  return fmt::format("q-mlp widths=[{}]", fmt::join(widths, ","));
}

/// The replay capacity for `rows` streams: --replay-capacity rounded up to a multiple of rows.
std::size_t stream_capacity(const train_options& o, std::size_t rows) {
  return (o.dqn.replay_capacity + rows - 1) / rows;
}

}  // namespace

void validate_dqn(const train_options& o) {
  const auto& d = o.dqn;
  if (o.frames != 1) throw config_error(fmt::format(fmt::runtime(messages::dqn_no_frames), o.frames));
  if (d.n_step == 0) out_of_range("--n-step", d.n_step, "must be at least 1");
  if (d.batch_size == 0) out_of_range("--replay-batch", d.batch_size, "must be at least 1");
  if (!(d.replay_ratio > 0)) out_of_range("--replay-ratio", d.replay_ratio, "must be > 0");
  if (d.prefetch == 0) out_of_range("--prefetch", d.prefetch, "must be at least 1");
  if (!(d.learning_rate > 0)) out_of_range("--learning-rate", d.learning_rate, "must be > 0");
  if (!(d.gamma > 0 && d.gamma <= 1)) out_of_range("--gamma", d.gamma, "must be in (0, 1]");
  if (!(d.priority_alpha >= 0 && d.priority_alpha <= 1)) {
    out_of_range("--priority-alpha", d.priority_alpha, "must be in [0, 1]");
  }
  if (!(d.priority_beta >= 0 && d.priority_beta <= 1)) {
    out_of_range("--priority-beta", d.priority_beta, "must be in [0, 1]");
  }
  if (d.target_update == 0) out_of_range("--target-update", d.target_update, "must be at least 1");
  if (!(d.huber_delta > 0)) out_of_range("--huber-delta", d.huber_delta, "must be > 0");
  if (!(d.max_grad_norm >= 0)) out_of_range("--max-grad-norm", d.max_grad_norm, "must be >= 0");
  if (!(d.epsilon_base >= 0 && d.epsilon_base <= 1)) {
    out_of_range("--epsilon-base", d.epsilon_base, "must be in [0, 1]");
  }
  if (!(d.epsilon_alpha >= 0)) out_of_range("--epsilon-alpha", d.epsilon_alpha, "must be >= 0");
  if (d.publish_every == 0) out_of_range("--publish-every", d.publish_every, "must be at least 1");
  const std::size_t rows = o.sampler.num_envs;  // single-agent envs: one row each
  if (rows > 0 && stream_capacity(o, rows) < d.n_step + 2) {
    out_of_range("--replay-capacity", d.replay_capacity,
                 fmt::format("must hold at least n-step + 2 = {} transitions per env ({} envs)", d.n_step + 2, rows));
  }
  // Settings under which the learner could never (or barely ever) train:
  // refused here, by the numbers, rather than found out as 0 updates at the end.
  auto why = [](std::string_view text, const auto&... args) { return fmt::format(fmt::runtime(text), args...); };
  if (d.learning_starts >= o.total_steps) {
    out_of_range("--learning-starts", d.learning_starts, why(messages::dqn_starts_too_late, o.total_steps));
  }
  // The rate limiter lets the learner sample replay_ratio transitions per
  // env step inserted after learning starts (give or take its window).
  const double grant = d.replay_ratio * static_cast<double>(o.total_steps - d.learning_starts);
  const auto batch = static_cast<double>(d.batch_size);
  if (d.batch_size > d.replay_capacity) {
    out_of_range("--replay-batch", d.batch_size, why(messages::dqn_batch_over_capacity, d.replay_capacity));
  }
  if (batch > grant) {
    out_of_range("--replay-batch", d.batch_size,
                 why(messages::dqn_batch_over_grant, number(grant), number(d.replay_ratio), o.total_steps,
                     d.learning_starts));
  }
  const double in_flight = batch * static_cast<double>(d.prefetch);
  if (in_flight > static_cast<double>(d.replay_capacity)) {
    out_of_range("--prefetch", d.prefetch,
                 why(messages::dqn_prefetch_over_capacity, d.batch_size, number(in_flight), d.replay_capacity));
  }
  if (in_flight > grant) {
    out_of_range("--prefetch", d.prefetch,
                 why(messages::dqn_prefetch_over_grant, d.batch_size, number(in_flight), number(grant),
                     number(d.replay_ratio), o.total_steps, d.learning_starts));
  }
}

train_result train_dqn(const train_options& o, std::ostream& progress) {
  const auto& so = o.sampler;
  const auto& d = o.dqn;
  actors::sampler sampler(so);
  const auto& wiring = sampler.wires();
  const envs::env& probe = sampler.first_env();
  if (probe.max_agents() != 1) {
    throw config_error(fmt::format(fmt::runtime(messages::multi_agent_unsupported), so.env, probe.max_agents()));
  }
  const auto target = o.target_return ? o.target_return : probe.solved_return();
  envs::env_batch& batch = sampler.batch();
  const auto spec = network_spec::from_spaces(sampler.observation_space(), sampler.action_space(), o.hidden, 1);
  const auto widths = q_network_widths(spec, sampler.action_space().to_string());
  const std::string signature = q_signature(widths);

  use_one_torch_thread();
  dqn_learner learner(spec, d, so.seed);
  const std::size_t rows = batch.rows();
  const auto bo = gated_batcher_options(so, wiring);
  replay::replay_actor_config rc;
  rc.buffer = {.capacity = stream_capacity(o, rows) * rows,
               .num_streams = rows,
               .obs_dim = batch.obs_dim(),
               .discrete_action_dim = batch.discrete_action_dim(),
               .continuous_action_dim = batch.continuous_action_dim(),
               .n_step = d.n_step,
               .alpha = d.priority_alpha,
               .epsilon = d.priority_epsilon};
  rc.samples_per_insert = d.replay_ratio;
  rc.min_size = d.learning_starts;
  rc.max_group_steps = so.envs_per_group;
  rc.batcher_hold = replay::batcher_hold(wiring, bo, so.envs_per_group);
  rc.batch_size = d.batch_size;
  rc.prefetch = d.prefetch;
  rc.prioritized = d.prioritized;
  rc.beta_start = d.priority_beta;
  rc.beta_end = 1.0;
  rc.beta_steps = o.total_steps;
  rc.seed = so.seed;
  replay::replay_actor replay(rc);

  std::uint64_t start_steps = 0;
  std::string resumed_from;
  if (o.resume) {
    const auto [c, file] = detail::read_for_resume(o, "dqn", signature, progress);
    resumed_from = file.string();
    learner.restore(c.learner, c.target_parameters);
    replay.load(c.replay);
    start_steps = c.learner.env_steps;
    progress << fmt::format("resumed from {} ({} env steps, {} updates, {} transitions in replay)\n", file.string(),
                            start_steps, c.learner.updates, replay.buffer().size());
  }

  latest<std::vector<float>> weights;
  weights.publish(learner.weights());
  training_stats stats;
  replay::replay_feeder::options fo;
  fo.n_step = d.n_step;
  fo.gamma = d.gamma;
  fo.env_steps = start_steps;
  fo.max_env_steps = o.total_steps;
  const bool stop_when_solved = o.stop_when_solved && target.has_value();
  replay::replay_feeder feeder(
      batch, sampler.group_rows(), replay,
      [&](double episode_return, double episode_length) {
        bool full = false;
        const double mean = stats.add_episode(episode_return, episode_length, &full);
        return stop_when_solved && full && mean >= *target;
      },
      fo);
  sampler.announce_to(feeder.ready());
  // A resumed run draws fresh actions: the policy's streams depend on the steps done.
  q_policy policy(spec, rows, so.seed ^ (start_steps * 0x9E3779B97F4A7C15ULL), d, start_steps);

  // Metrics.
  detail::metrics_file csv(o.run_dir, csv_header, o.resume);
  const auto started = clock::now();
  struct window {
    std::uint64_t steps = 0;
    std::uint64_t inserted = 0;
    std::uint64_t sampled = 0;
    std::uint64_t batches = 0;
    std::uint64_t sample_ns = 0;
    clock::time_point time;
  };
  const auto& rs = replay.stats();
  auto make_row = [&](window& before) {
    dqn_row r;
    const auto now = clock::now();
    r.seconds = std::chrono::duration<double>(now - started).count();
    stats.set_env_steps(feeder.env_steps());
    r.s = stats.read();
    const double dt = std::chrono::duration<double>(now - before.time).count();
    const auto inserted = rs.env_steps.load();
    const auto sampled = rs.sampled.load();
    const auto batches = rs.batches.load();
    const auto sample_ns = rs.sample_ns.load();
    if (dt > 0) {
      r.steps_per_second = static_cast<double>(r.s.env_steps - before.steps) / dt;
      r.inserts_per_second = static_cast<double>(inserted - before.inserted) / dt;
      r.samples_per_second = static_cast<double>(sampled - before.sampled) / dt;
    }
    r.replay_ratio = inserted > 0 ? static_cast<double>(sampled) / static_cast<double>(inserted) : 0.0;
    r.sample_us = batches > before.batches
                      ? 1e-3 * static_cast<double>(sample_ns - before.sample_ns) / static_cast<double>(batches - before.batches)
                      : 0.0;
    r.replay_size = rs.size.load();
    r.inbox = replay.inbox().size();
    r.ready_batches = replay.samples().size();
    r.waiting_requests = rs.waiting_requests.load();
    r.held_groups = feeder.held_groups();
    r.epsilon_low = policy.epsilon(rows - 1);
    r.epsilon_high = policy.epsilon(0);
    before = {r.s.env_steps, inserted, sampled, batches, sample_ns, now};
    return r;
  };
  window print_window{start_steps, 0, 0, 0, 0, started};
  window csv_window = print_window;
  std::mutex row_mutex;  // the progress actor and the learner both make rows
  auto report = [&] {
    std::lock_guard lock(row_mutex);
    progress << progress_line(make_row(print_window)) << '\n' << std::flush;
  };
  auto record = [&] {
    std::lock_guard lock(row_mutex);
    if (csv.is_open()) csv.write_row(csv_line(make_row(csv_window)));
  };
  progress << fmt::format(
      "coral train: env {}, dqn, topology {}, {} envs in {} groups of {}, batch {}, {} sampling thread{}, {} executor, "
      "Q network [{}], {} replay of {} transitions, {}-step returns, replay ratio {}, replay batch {}, prefetch {}, "
      "epsilons {:.4f} to {:.4f} after {} steps, target return {}\n",
      so.env, actors::to_string(so.topo), so.num_envs, wiring.groups, so.envs_per_group, wiring.batch_size, so.threads,
      so.threads == 1 ? "" : "s", so.executor == executor_mode::single ? "single" : "threads", fmt::join(widths, ","),
      d.prioritized ? "prioritized" : "uniform", rc.buffer.capacity, d.n_step, d.replay_ratio, d.batch_size,
      d.prefetch, policy.schedule().rung(rows - 1), policy.schedule().rung(0), d.exploration_steps,
      target ? number(*target) : "none");

  // Checkpoints: the learner's state with a copy of the replay that the
  // replay actor takes of itself on a snapshot_request and sends back by
  // value, so that the buffer is never shared and no code of ours runs on
  // the replay actor. The learner writes periodic checkpoints on its own
  // thread, the final one is written after the run: one thread at a time.
  std::string last_checkpoint;
  auto make_checkpoint = [&] {
    learner.set_env_steps(feeder.env_steps());
    checkpoint c;
    c.env = so.env;
    c.network = signature;
    c.seed = so.seed;
    c.learner = learner.state();
    c.algo = "dqn";
    c.target_parameters = learner.target_weights();
    return c;
  };
  auto write = [&](const checkpoint& c) {
    const auto file = save_checkpoint(o.checkpoint_dir, c, o.keep_checkpoints);
    last_checkpoint = file.string();
  };
  std::uint64_t next_checkpoint =
      o.checkpoint_every == 0 ? 0 : (start_steps / o.checkpoint_every + 1) * o.checkpoint_every;
  const std::uint64_t record_every = std::max<std::uint64_t>(1000, rows);  // env steps between metrics rows
  std::uint64_t next_record = start_steps + record_every;

  std::atomic<int> finished{-1};  // a feed_end, or -1 (stopped otherwise)
  runtime rt({.mode = so.executor,
              .handle_signals = true,
              .stop_deadline = detail::train_stop_deadline,
              .on_stop_timeout = detail::exit_on_stop_timeout(progress)});
  rt.on_stop([&] {
    feeder.close();
    replay.close();
  });
  sampler.spawn(rt, policy, bo, &feeder, &weights);
  auto sampling = rt.pool(pool_options{.name = "sampling", .threads = so.threads, .pin = so.pin, .first_core = 0,
                                       .spin = so.spin});
  rt.spawn("replay-feeder", sampling, feeder.run(sampler.ready_channels(), [&](replay::feed_end why) {
    finished.store(static_cast<int>(why));
    rt.request_stop();
  }));
  rt.spawn("replay", rt.pool("replay", 1), replay.run());
  rt.spawn("learner", rt.pool("learner", 1), [&]() -> asio::awaitable<void> {
    for (std::size_t i = 0; i < d.prefetch; ++i) {
      const bool sent = co_await replay.inbox().async_send(replay::replay_msg(replay.make_request()));
      if (!sent) co_return;
    }
    for (;;) {
      auto got = co_await replay.samples().async_receive();
      if (!got || rt.stop_requested()) co_return;
      auto b = std::move(*got);
      const auto st = learner.update(*b);
      stats.record_update(st, learner.updates());
      if (so.check_finite) detail::check_loss_terms("dqn", learner.updates(), {{"td loss", st.td_loss}});
      if (learner.updates() % d.publish_every == 0) {
        auto w = learner.weights();
        if (so.check_finite) detail::check_weights("dqn", learner.updates(), w);
        weights.publish(std::move(w));
      }
      const bool sent = co_await replay.inbox().async_send(replay::replay_msg(std::move(b)));
      if (!sent) co_return;
      const auto steps = feeder.env_steps();
      if (steps >= next_record) {
        record();
        next_record = (steps / record_every + 1) * record_every;
      }
      if (next_checkpoint != 0 && !o.checkpoint_dir.empty() && steps >= next_checkpoint) {
        auto c = make_checkpoint();
        replay::replay_msg ask(replay::snapshot_request{c.learner.env_steps});
        const bool asked = co_await replay.inbox().async_send(std::move(ask));
        if (!asked) co_return;
        auto snapshot = co_await replay.snapshots().async_receive();
        if (!snapshot) co_return;  // stopping: the final checkpoint follows the run
        c.replay = std::move(snapshot->state);
        write(c);
        next_checkpoint = (steps / o.checkpoint_every + 1) * o.checkpoint_every;
      }
    }
  });
  detail::spawn_progress(rt, o.progress_seconds, report);
  stall_watchdog stall(stall_watchdog::limit_of(o.stall_seconds));
  sampler.watch_by(stall);
  stall.watch("learner updates", [&] { return stats.read().updates; });
  stall.describe([&](std::string& out) {
    out += fmt::format("  replay: {} message(s) in its inbox, {} batch(es) waiting for the learner, {} env group(s) "
                       "held by the rate limiter\n",
                       replay.inbox().size(), replay.samples().size(), feeder.held_groups());
  });
  stall.spawn(rt);
  rt.run();
  replay.drain();  // inserts still in flight belong in the final checkpoint

  const double wall = std::chrono::duration<double>(clock::now() - started).count();
  report();
  record();
  if (!o.checkpoint_dir.empty()) {
    auto c = make_checkpoint();
    c.replay = replay.save();
    write(c);
  }
  auto result = detail::make_result(stats.read(), target, finished.load() < 0, feeder.env_steps(), learner.updates(),
                                    last_checkpoint, wall);
  result.resumed_from = resumed_from;
  result.metrics_written = csv.close(progress);
  return result;
}

}  // namespace coral::learners
