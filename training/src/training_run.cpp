#include "coral/training/training_run.hpp"

#include <algorithm>

#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/core/json.hpp"
#include "coral/core/stall_watchdog.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"
#include "coral/training/agents_in_play.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/clip_recorder.hpp"
#include "coral/training/dashboard.hpp"
#include "coral/training/checkpoint_settings.hpp"
#include "coral/training/errors.hpp"
#include "coral/training/finite_checks.hpp"
#include "coral/training/video_writer.hpp"
#include "memory_budget.hpp"
#include "coral/training/option_checks.hpp"
#include "run_files.hpp"
#include "run_guards.hpp"
#include "tensorboard_file.hpp"
#include "coral/training/checkpoint_dir.hpp"

namespace coral::training {
namespace {

using clock = std::chrono::steady_clock;

using detail::out_of_range;

constexpr std::string_view common_columns = "seconds,env_steps,steps_per_second,episodes,mean_return,mean_length";

/// Refuses `--video-every` on a process that would record clips when they
/// could not be recorded: no run dir, an algorithm that cannot act outside
/// a run, no ffmpeg, an env that does not render.
void check_clips(const train_options& o, const algorithm_descriptor& algo) {
  if (o.run_dir.empty()) throw config_error(std::string(errors::video_every_needs_run_dir));
  if (!algo.acting) throw config_error(fmt::format(fmt::runtime(errors::video_every_cannot_act), o.algo));
  if (find_on_path("ffmpeg").empty()) throw config_error(std::string(errors::video_every_no_ffmpeg));
  bool renders = false;
  try {
    renders = env_renders(o.sampler.env, o.sampler.env_args, o.sampler.seed);
  } catch (const config_error&) {
    throw;
  } catch (const std::exception& e) {  // a renderer that cannot start
    throw config_error(fmt::format("--video-every: {}", e.what()));
  }
  if (!renders) throw config_error(fmt::format(fmt::runtime(errors::video_every_no_render), o.sampler.env));
}

}  // namespace

void training_run::validate(const train_options& options) {
  const auto algo = find_algorithm(options.algo);
  const auto o = with_algorithm_defaults(options);
  (void)actors::resolve_wiring(o.sampler);
  if (o.total_steps == 0) out_of_range("--total-steps", o.total_steps, "must be at least 1");
  for (auto h : o.hidden) {
    if (h == 0) out_of_range("--hidden", h, "layer widths must be at least 1");
  }
  if (!(o.progress_seconds >= 0)) out_of_range("--progress-seconds", o.progress_seconds, "must be >= 0");
  if (!(o.stall_seconds >= 0 && o.stall_seconds <= 1e6)) {
    out_of_range("--stall-seconds", o.stall_seconds, "must be in [0, 1000000] (0: no watchdog)");
  }
  if (o.resume && o.checkpoint_dir.empty()) throw config_error(std::string(errors::resume_needs_dir));
  if (o.remote && o.remote->size() < 2) {
    throw config_error(fmt::format(fmt::runtime(errors::distributed_needs_ranks), o.remote->size()));
  }
  check_setting_ranges(o);
  // The process that trains serves the live view: its port is checked here.
  if (o.dashboard.on && !sampler_rank(o)) dashboard::check(o.dashboard);
  if (o.video_every > max_video_every) {
    out_of_range("--video-every", o.video_every, fmt::format("must be in [0, {}] (0: no clips)", max_video_every));
  }
  if (algo->check) algo->check(o);
  {
    // What the env offers the algorithm, on env 0 as the run builds it:
    // first what binding it to batch rows checks (its mask's width, its
    // team ids), then what the algorithm needs.
    std::vector<std::unique_ptr<envs::env>> one;
    one.push_back(envs::registry::global().make(o.sampler.env, o.sampler.env_args, o.sampler.seed, 0));
    const envs::env& probe = *one.front();
    envs::env_batch batch(probe.max_agents(), probe.observation_space(), probe.action_space());
    try {
      const envs::env_slice bound(batch, 0, std::move(one));
      const envs::env& e = bound.at(0);
      if (e.max_agents() != 1 && !algo->multi_agent) {
        throw config_error(
            fmt::format(fmt::runtime(errors::multi_agent_unsupported), o.sampler.env, e.max_agents(), o.algo));
      }
      if (algo->check_env) algo->check_env(o, e);
    } catch (const config_error&) {
      throw;
    } catch (const usage_error& e) {
      throw config_error(fmt::format(fmt::runtime(errors::env_not_trainable), o.sampler.env, e.what()));
    }
  }
  detail::check_memory_budget(o, *algo);  // what the run allocates fits in this machine's memory
  // Last: it builds an env and renders a frame. The process that trains records the clips.
  if (o.video_every != 0 && !sampler_rank(o)) check_clips(o, *algo);
}

training_run::training_run(const train_options& options, std::ostream& progress, std::ostream& warnings)
    : options_(with_algorithm_defaults(options)),
      progress_(&progress),
      warnings_(&warnings),
      given_seed_(options.sampler.seed) {
  // Each sampler rank's envs and actions draw from streams of their own.
  if (sampler_rank(options_)) options_.sampler.seed ^= options_.remote->rank() * 0x9E3779B97F4A7C15ULL;
  // Once, before any plug-in reads it: the gates size their holds by it.
  options_.sampler = actors::resolve_auto(options_.sampler);
}

training_run::~training_run() = default;

void training_run::episode(double episode_return, double episode_length) {
  bool full = false;
  const double mean = stats_.add_episode(episode_return, episode_length, &full);
  if (sampler_rank(options_)) {
    bridge_->episode(episode_return, episode_length);  // the learner judges the run
    return;
  }
  if (!(target_ && full && mean >= *target_)) return;
  reached_target_.store(true);
  if (!options_.stop_when_solved) return;
  if (learner_rank(options_)) {
    end(actors::gate_end::requested);
  } else {
    gate_->request_end();
  }
}

void training_run::end(std::optional<actors::gate_end> why) {
  int none = -1;
  if (why) ended_.compare_exchange_strong(none, static_cast<int>(*why));
  if (runtime_ != nullptr) runtime_->request_stop();
}

void training_run::close_link(stop_reason why, const std::string& text) {
  const auto silent = bridge_->close(why, text);
  if (silent.empty()) return;
  const auto& remote = *options_.remote;
  say(fmt::format(fmt::runtime(errors::distributed_no_answer), remote.name(remote.rank()), silent, "its stop",
                  bridge_->silence_limit()));
}

void training_run::say(const std::string& line) {
  std::lock_guard lock(rows_mutex_);
  *progress_ << line << '\n' << std::flush;
  if (!*progress_) end(std::nullopt);
}

std::uint64_t training_run::env_steps() const {
  return learner_rank(options_) ? start_steps_ + bridge_->env_steps() : gate_->env_steps();
}

void training_run::publish_initial(std::vector<float> own) {
  if (!sampler_rank(options_)) {
    weights_.publish(std::move(own));
    return;
  }
  if (learner_weights_.size() != own.size()) {
    throw error(fmt::format(fmt::runtime(errors::distributed_mismatch), options_.remote->name(options_.remote->rank()),
                            "a network of weights", own.size(), learner_weights_.size()));
  }
  weights_.publish(std::move(learner_weights_), learner_version_);
}

std::vector<std::pair<std::string, std::string>> training_run::fingerprint() const {
  // Every setting of the run, as its config.toml has them (the seed as
  // given: each sampler rank derives its own streams from it), and the network.
  auto given = options_;
  given.sampler.seed = given_seed_;
  std::vector<std::pair<std::string, std::string>> f;
  for (auto& [key, value] : detail::run_settings(given)) {
    f.emplace_back("--" + key, std::move(value));
    // Every rank sends the same fields, env args or not.
    if (key == "env" && given.sampler.env_args.empty()) f.emplace_back("--env-arg", "[]");
  }
  f.emplace_back("the network", algorithm_->signature());
  return f;
}

void training_run::publish(std::vector<float> weights, std::string_view algo, std::uint64_t update) {
  if (options_.sampler.check_finite) detail::check_weights(algo, update, weights);
  weights_.publish(std::move(weights));
  if (bridge_) bridge_->published();  // the broadcast's latency counts from here
}

asio::awaitable<bool> training_run::tell_gate() {
  if (learner_rank(options_)) co_return !runtime_->stop_requested();  // no gate here: the bridge sends the weights
  const actors::gate_msg note(actors::weights_published{weights_.version()});
  const bool sent = co_await gate_->inbox().async_send(note);
  co_return sent && !runtime_->stop_requested();
}

asio::awaitable<bool> training_run::updated(const update_stats& st, std::uint64_t updates, std::uint64_t env_steps) {
  stats_.record_update(st, updates);
  // Hands the newest weights to the recorder, which never makes this wait.
  if (clips_ && updates % options_.video_every == 0) (void)clips_->request(updates, weights_.read().value);
  if (env_steps >= next_row_) {
    record();
    const auto every = algorithm_->metrics_every();
    next_row_ = every <= 1 ? 0 : (env_steps / every + 1) * every;
  }
  if (next_checkpoint_ != 0 && !options_.checkpoint_dir.empty() && env_steps >= next_checkpoint_) {
    auto c = checkpoint_base();
    const bool taken = co_await algorithm_->snapshot(c);
    if (!taken) co_return false;  // stopping: the final checkpoint follows the run
    write(c);
    next_checkpoint_ = (env_steps / options_.checkpoint_every + 1) * options_.checkpoint_every;
  }
  co_return !runtime_->stop_requested();
}

std::string training_run::make_row(row_stream stream, row_window& window) {
  const auto now = clock::now();
  stats_.set_env_steps(env_steps());
  const auto s = stats_.read();
  const double seconds = std::chrono::duration<double>(now - started_).count();
  const double dt = std::chrono::duration<double>(now - window.time).count();
  const double rate = dt > 0 ? static_cast<double>(s.env_steps - window.steps) / dt : 0.0;
  window = {s.env_steps, now};
  const auto part = algorithm_->row(stream, s, dt);
  // Multi-agent envs: the mean number of agents in play per env (episodes
  // and returns are per agent).
  const double agents = agents_ ? static_cast<double>(agents_->total()) / static_cast<double>(options_.sampler.num_envs) : 0;
  if (stream == row_stream::metrics) {
    return fmt::format("{:.3f},{},{:.1f},{},{},{},{}{},{}", seconds, s.env_steps, rate, s.episodes, s.mean_return,
                       s.mean_length, agents_ ? fmt::format("{:.3f},", agents) : std::string(), part, s.updates);
  }
  return fmt::format(
      "[{:7.1f}s] steps {:>9} ({:>7.0f}/s) episodes {:>6} return {:8.2f} length {:7.1f}{} | {} | updates {} ({:.2f} ms "
      "each, {:.1f} s in all){}",
      seconds, s.env_steps, rate, s.episodes, s.mean_return, s.mean_length,
      agents_ ? fmt::format(" agents {:.1f}", agents) : std::string(), part, s.updates,
      1e3 * s.last_update.seconds, s.learner_seconds, bridge_ ? " | " + bridge_->row(dt) : std::string());
}

void training_run::warn(const std::string& line) {
  std::lock_guard lock(rows_mutex_);
  *warnings_ << line << '\n' << std::flush;
}

void training_run::report() {
  std::lock_guard lock(rows_mutex_);
  *progress_ << make_row(row_stream::progress, progress_window_) << '\n' << std::flush;
  // Nobody reads the progress any more (`coral train | head -1`, a closed
  // terminal, a dead tee: EPIPE or EIO): a stop, checkpoint written.
  if (!*progress_) end(std::nullopt);
}

void training_run::record() {
  std::lock_guard lock(rows_mutex_);
  const bool to_file = metrics_->is_open();
  const bool to_events = tensorboard_ && tensorboard_->is_open();
  if (!to_file && !to_events && !options_.on_metrics_row) return;
  const auto row = make_row(row_stream::metrics, metrics_window_);
  if (to_file) metrics_->write_row(row);
  if (to_events) tensorboard_->write_row(row);
  if (options_.on_metrics_row && !options_.on_metrics_row(metrics_header_, row)) {
    stopped_by_caller_ = true;
    if (runtime_ != nullptr) runtime_->request_stop();
  }
}

checkpoint training_run::checkpoint_base() const {
  checkpoint c;
  c.env = options_.sampler.env;
  c.network = algorithm_->signature();
  c.seed = options_.sampler.seed;
  c.algo = options_.algo;
  c.set_record(std::string(run_settings_record), encode_run_settings(options_));
  return c;
}

void training_run::write(const checkpoint& c) {
  last_checkpoint_ = save_checkpoint(options_.checkpoint_dir, c, options_.keep_checkpoints).string();
}

void training_run::checkpoint_after_failure(runtime& rt, const std::string& failed_actor,
                                            const std::vector<std::string>& algorithm_actors) noexcept {
  if (options_.checkpoint_dir.empty()) return;
  const std::string last = last_checkpoint_.empty() ? std::string("none") : last_checkpoint_;
  try {
    for (const auto& name : algorithm_actors) {
      if (name == failed_actor) {
        say(fmt::format(fmt::runtime(errors::no_checkpoint_after_failure), name, "failed", last));
        return;
      }
      if (!rt.finished(name)) {
        say(fmt::format(fmt::runtime(errors::no_checkpoint_after_failure), name, "did not stop", last));
        return;
      }
    }
    algorithm_->finish();
    auto c = checkpoint_base();
    algorithm_->final_state(c);
    write(c);
    say(fmt::format(fmt::runtime(errors::checkpoint_after_failure), last_checkpoint_));
  } catch (const std::exception& e) {
    warn(fmt::format(fmt::runtime(errors::checkpoint_after_failure_failed), e.what(), last));
  }
}

bool training_run::learner_finishing(clock::time_point stop_began) {
  if (!activity_.busy()) return false;  // not in an update: what keeps the run is elsewhere
  const double waited = std::chrono::duration<double>(clock::now() - stop_began).count();
  if (options_.stall_seconds > 0 && waited >= options_.stall_seconds) return false;
  say(fmt::format(fmt::runtime(errors::stop_waits_for_learner), activity_.describe(), waited));
  return true;
}

std::uint64_t training_run::learner_progress() {
  auto& w = progress_watch_;
  const auto steps = env_steps();
  const auto begun = activity_.begun();
  if (steps != w.env_steps) {
    w.env_steps = steps;
    w.begun_then = begun;
  }
  // The update in progress when env steps last moved, and the one after it
  // (the update the sampler waits for), count for as long as they take.
  if (begun <= w.begun_then + 1) w.counted = activity_.steps();
  return w.counted;
}

std::uint16_t training_run::dashboard_port() const noexcept { return dashboard_ ? dashboard_->port() : 0; }

void training_run::start_clips() {
  const auto algo = find_algorithm(options_.algo);
  clip_recorder::options co{.dir = std::filesystem::path(options_.run_dir) / "videos",
                            .env = options_.sampler.env,
                            .env_args = options_.sampler.env_args,
                            .seed = options_.sampler.seed};
  // Actions drawn as in training (a sample; a Q-network epsilon-greedy), from a stream of the clips' own.
  const acting_options acting{
      .rows = 1, .seed = options_.sampler.seed ^ clip_env_index, .deterministic = false, .file = {}};
  clips_ = std::make_unique<clip_recorder>(
      std::move(co),
      [this, &algo, &acting](const envs::space& observation, const envs::space& action) {
        return algo->acting(options_, observation, action, nullptr, acting);
      },
      [this](const std::string& line) {
        std::lock_guard lock(rows_mutex_);
        *progress_ << line << '\n' << std::flush;
      },
      [this](const std::string& line) { warn(line); });
}

void training_run::serve_dashboard(runtime& rt, const std::string& title) {
  if (!learner_rank(options_)) {
    sampler_->chart(graph_);
    // Every group announces to the gate, which forwards to the ready channels.
    std::vector<std::string> groups;
    for (const auto& g : sampler_->groups()) groups.push_back(g->name());
    graph_.add_channel("gate inbox", std::move(groups), {"gate"}, gate_->inbox());
    auto* inbox = &gate_->inbox();
    graph_.add_activity("gate", [inbox] { return inbox->waiting_receivers() == 0; });
  }
  algorithm_->chart(graph_, *this);
  live_source source;
  source.title = title;
  source.actors = [&rt] { return rt.actor_names(); };
  source.finished = [&rt](const std::string& name) { return rt.finished(name); };
  source.counters = [this] {
    const auto s = stats_.read();
    live_counters c;
    c.env_steps = env_steps();
    c.updates = s.updates;
    c.episodes = s.episodes;
    if (s.window > 0) c.mean_return = s.mean_return;
    return c;
  };
  source.graph = &graph_;
  dashboard_->start(std::move(source));
}

void training_run::start() {
  const auto& o = options_;
  sampler_ = std::make_unique<actors::sampler>(o.sampler);
  const envs::env& probe = sampler_->first_env();
  target_ = o.target_return ? o.target_return : probe.solved_return();
  algorithm_ = find_algorithm(o.algo)->make(o, *sampler_);
  if (o.remote) {
    if (algorithm_->distribution() == nullptr) {
      throw config_error(fmt::format(fmt::runtime(errors::distributed_algo), o.algo));
    }
    bridge_ = o.remote->link(o, *algorithm_, *this);
  }
  if (sampler_rank(o)) {
    // The learner resumes and sets the start; this rank samples its share.
    auto start = bridge_->handshake_sampler(fingerprint());
    start_steps_ = start.start_steps;
    learner_weights_ = std::move(start.weights);
    learner_version_ = start.version;
    const auto left = o.total_steps > start_steps_ ? o.total_steps - start_steps_ : 0;
    const auto share = (left + sampler_ranks(o) - 1) / sampler_ranks(o);
    gate_ = std::make_unique<actors::gate>(sampler_->group_rows(),
                                           actors::gate::options{.env_steps = 0, .max_env_steps = std::max<std::uint64_t>(share, 1)});
    algorithm_->start(*this);
    sampler_->announce_to(gate_->inbox());
    metrics_ = std::make_unique<detail::metrics_file>(std::string(), std::string(), false);
    return;
  }
  if (o.resume) {
    const auto [c, file] = detail::read_for_resume(o, o.algo, algorithm_->signature(), *warnings_);
    std::string restored;
    try {
      restored = algorithm_->restore(c);
    } catch (const config_error& e) {
      // restore's config_error is the saved replay refusing this run's shape
      // (algorithm.hpp): a checkpoint of another run. The learner's own state
      // was matched by the signature above, and refuses with usage_error.
      throw checkpoint_error(fmt::format(fmt::runtime(errors::checkpoint_replay_mismatch), file.string(), e.what()));
    } catch (const usage_error& e) {
      throw checkpoint_error(fmt::format(fmt::runtime(errors::checkpoint_does_not_fit), file.string(), e.what()));
    }
    start_steps_ = c.learner.env_steps;
    resumed_from_ = file.string();
    *progress_ << fmt::format("resumed from {} ({} env steps, {} updates{}{})\n", resumed_from_, start_steps_,
                              c.learner.updates, restored.empty() ? "" : ", ", restored);
  }
  gate_ = std::make_unique<actors::gate>(
      sampler_->group_rows(), actors::gate::options{.env_steps = start_steps_, .max_env_steps = o.total_steps});
  algorithm_->start(*this);
  if (probe.max_agents() != 1) {
    agents_ = std::make_unique<agents_in_play>(algorithm_->gate_policy(), sampler_->batch(), sampler_->group_rows());
  }
  if (weights_.version() == 0) throw usage_error("training_run: the algorithm published no initial weights");
  if (bridge_) bridge_->handshake_learner(fingerprint(), {start_steps_, weights_.version(), *weights_.read().value});
  sampler_->announce_to(gate_->inbox());
  metrics_header_ = fmt::format("{},{}{},updates", common_columns, agents_ ? "agents_in_play," : "", algorithm_->columns());
  metrics_ = std::make_unique<detail::metrics_file>(o.run_dir, metrics_header_, o.resume, start_steps_);
  if (o.tensorboard && !o.run_dir.empty()) {
    tensorboard_ = std::make_unique<detail::tensorboard_file>(o.run_dir, metrics_header_, o.resume, start_steps_);
    // The settings as config.toml has them, as a Markdown code block (indented).
    std::string settings = "    [train]\n";
    for (const auto& [key, value] : detail::run_settings(o)) settings += fmt::format("    {} = {}\n", key, value);
    tensorboard_->write_text("config", settings, start_steps_);
  }
  if (o.checkpoint_every != 0) next_checkpoint_ = (start_steps_ / o.checkpoint_every + 1) * o.checkpoint_every;
  const auto every = algorithm_->metrics_every();
  next_row_ = every <= 1 ? 0 : (start_steps_ / every + 1) * every;
}

train_result training_run::run() {
  if (sampler_) throw usage_error("training_run: run() may be called only once");
  validate(options_);
  const auto& o = options_;
  const bool sampling = !learner_rank(o);  // this process runs env groups
  const bool learning = !sampler_rank(o);  // this process trains, reports and checkpoints
  // Bound before anything of the run is written, so that a port taken
  // since validate() refuses the run as cleanly.
  if (learning && o.dashboard.on) dashboard_ = std::make_unique<dashboard>(o.dashboard);
  if (learning) {
    locks_ = detail::prepare_run_dirs(options_);
    detail::write_run_config(options_);
  }
  try {
    start();
  } catch (const std::exception& e) {
    // The other ranks hear why, rather than wait for this one.
    if (bridge_) close_link(stop_reason::failed, e.what());
    throw;
  }
  if (learning && o.video_every != 0) start_clips();
  const auto& so = o.sampler;
  const auto& wiring = sampler_->wires();
  const auto bo = actors::batcher_options_behind_gate(so, wiring);
  std::string first_line;
  if (learning) {
    first_line = fmt::format(
        "coral train: env {}, {}, topology {}, {} envs in {} groups of {}, batch {}, {} sampling thread{}, {} executor, "
        "spin {} us, {}, target return {}{}{}",
        so.env, o.algo, actors::to_string(so.topo), so.num_envs, wiring.groups, wiring.envs_per_group, wiring.batch_size,
        so.threads, so.threads == 1 ? "" : "s", coral::to_string(so.executor),
        so.spin.count(),
        algorithm_->describe_setup(), target_ ? json::number(*target_) : "none",
        bo.min_batch_size != so.min_batch_size
            ? fmt::format(", dynamic batching behind the gate (min {} envs, {} us)", bo.min_batch_size,
                          bo.batch_timeout.count())
            : "",
        bridge_ ? fmt::format(", distributed: this rank learns, {} sampler rank{} run the envs and threads above each",
                              sampler_ranks(o), sampler_ranks(o) == 1 ? "" : "s")
                : "");
    *progress_ << first_line << '\n';
    if (dashboard_) {
      *progress_ << fmt::format("dashboard: {} (also /state.json and /metrics)\n", dashboard_->url()) << std::flush;
    }
  }

  started_ = clock::now();
  progress_window_ = {start_steps_, started_};
  metrics_window_ = progress_window_;
  std::vector<std::string> algorithm_actors;  // what the algorithm spawned, set below
  runtime* rt_seen = nullptr;
  std::optional<clock::time_point> stop_began;
  const auto exit_now = detail::exit_on_stop_timeout(*progress_);
  runtime rt({.mode = so.executor,
              .handle_signals = true,
              .stop_deadline = detail::train_stop_deadline,
              .on_stop_timeout =
                  [&](const std::string& what) {
                    // Actors that ignore the stop are abandoned; the learner's
                    // state is saved first when it is whole.
                    if (learning) checkpoint_after_failure(*rt_seen, std::string(), algorithm_actors);
                    if (clips_) clips_->abandon();  // no ffmpeg left to finish a partial file after the exit
                    exit_now(what);
                  },
              .keep_waiting =
                  [&] {
                    if (!stop_began) stop_began = clock::now() - detail::train_stop_deadline;
                    return learner_finishing(*stop_began);
                  }});
  rt_seen = &rt;
  runtime_ = &rt;
  rt.on_stop([this] {
    activity_.stop();
    gate_->close();
    algorithm_->close();
  });
  if (sampling) {
    sampler_->spawn(rt, algorithm_->policy(), bo, &algorithm_->consumer(), &weights_);
    auto pool = rt.pool(pool_options{.name = "sampling", .threads = so.threads, .pin = so.pin, .first_core = 0,
                                     .spin = so.spin});
    // The gate awaits its inbox only, closed at a stop above: no strand.
    rt.spawn("gate", pool,
             gate_->run(agents_ ? *agents_ : algorithm_->gate_policy(), sampler_->ready_channels(),
                        [this](actors::gate_end why) { end(why); }),
             actor_waits::channels_only);
  }
  if (learning) {
    const auto before = rt.actor_names().size();
    algorithm_->spawn(rt, *this);
    auto names = rt.actor_names();
    algorithm_actors.assign(names.begin() + static_cast<std::ptrdiff_t>(before), names.end());
  }
  if (bridge_) rt.spawn("bridge", rt.pool("bridge", 1), bridge_->run(rt));
  if (learning && o.progress_seconds > 0) {
    const auto period = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(o.progress_seconds));
    rt.spawn("progress", rt.pool("progress", 1), [this, period]() -> asio::awaitable<void> {
      asio::steady_timer timer(co_await asio::this_coro::executor);
      for (;;) {
        timer.expires_after(period);
        co_await timer.async_wait(asio::use_awaitable);
        report();
      }
    });
  }
  // The learner, which hears every rank, judges a distributed run's stall
  // and names the silent rank; a sampler rank's own watchdog waits twice as
  // long, for a learner that itself stopped answering. (Both at the same
  // limit, a healthy sampler rank, waiting on a stopped one's share, was
  // named as the failure.)
  stall_watchdog stall(stall_watchdog::limit_of(sampler_rank(o) ? 2 * o.stall_seconds : o.stall_seconds));
  if (sampling) sampler_->watch_by(stall);
  if (learning) stall.watch("learner steps", [this] { return learner_progress(); });
  // A sampler rank waits for the learner's weights while the learner is
  // busy: the learner's steps, as heard, count here (the learner's own
  // watchdog judges update after update on the same data).
  if (sampler_rank(o)) stall.watch("learner steps (rank 0)", [this] { return bridge_->learner_steps(); });
  stall.describe([this, learning](std::string& out) {
    if (!learner_rank(options_)) gate_->describe(out);
    if (learning) {
      out += "  " + activity_.describe() + "\n";
      const auto& w = progress_watch_;
      const auto since = activity_.begun() - std::min(activity_.begun(), w.begun_then);
      if (since > 1) out += fmt::format(fmt::runtime(errors::stall_same_data), since, w.env_steps);
    }
    algorithm_->describe(out);
    if (bridge_) bridge_->describe(out);
  });
  stall.spawn(rt);
  // Stops serving before the runtime and the actors its probes read go away.
  struct stop_serving {
    dashboard* d;
    ~stop_serving() {
      if (d != nullptr) d->stop();
    }
  } stop_dashboard{dashboard_.get()};
  if (dashboard_) serve_dashboard(rt, first_line);
  try {
    rt.run();
  } catch (const std::exception& e) {
    // What the run learned so far is kept: an env's fault or a stall does
    // not take the learner's state with it.
    const auto* failed = dynamic_cast<const actor_failed*>(&e);
    if (learning) checkpoint_after_failure(rt, failed != nullptr ? failed->actor() : std::string(), algorithm_actors);
    if (clips_) clips_->abandon();
    // The other ranks hear why before this one ends.
    if (bridge_) close_link(stop_reason::failed, e.what());
    throw;
  }
  runtime_ = nullptr;
  algorithm_->finish();

  const double wall = std::chrono::duration<double>(clock::now() - started_).count();
  if (learning) {
    report();
    record();
    if (!o.checkpoint_dir.empty()) {
      auto c = checkpoint_base();
      algorithm_->final_state(c);
      write(c);
    }
  }
  bool interrupted = ended_.load() < 0 || stopped_by_caller_;
  // A run that ended keeps the clip it asked for last; a stopped one drops it.
  if (clips_) interrupted ? clips_->abandon() : clips_->finish();
  if (bridge_) {
    const auto failure = bridge_->failure();
    const auto why = !failure.empty() ? stop_reason::failed
                     : interrupted    ? stop_reason::interrupted
                                      : stop_reason::ended;
    close_link(why, failure);
    if (!failure.empty()) throw error(failure);
    // A sampler stopped by the learner ends as the learner did.
    if (bridge_->stopped_by_peer()) interrupted = bridge_->interrupted();
  }
  const auto s = stats_.read();
  train_result result;
  result.wall_seconds = wall;
  // Solved when the last-100 mean reached the target at any episode: the
  // episodes that finish between that one and the end (envs in flight)
  // may pull the final mean back under it.
  result.solved = target_ && (reached_target_.load() || (s.window >= 100 && s.mean_return >= *target_));
  result.interrupted = interrupted;
  result.env_steps = env_steps();
  result.mean_return = s.mean_return;
  result.mean_length = s.mean_length;
  result.episodes = s.episodes;
  result.updates = algorithm_->updates();
  result.env_failures = sampler_ ? sampler_->env_failures() : 0;
  result.target_return = target_;
  result.checkpoint = last_checkpoint_;
  result.resumed_from = resumed_from_;
  result.metrics_written = metrics_->close(*warnings_);
  if (tensorboard_) (void)tensorboard_->close(*warnings_);
  return result;
}

std::string train_result::to_json(const train_options& o) const {
  return fmt::format(
      R"({{"solved":{},"interrupted":{},"env":{},"algo":{},"topology":{},"executor":{},"seed":{},"env_steps":{},)"
      R"("wall_seconds":{},"mean_return":{},"mean_length":{},"episodes":{},"updates":{},"target_return":{},)"
      R"("env_failures":{},"checkpoint":{},"resumed_from":{}}})",
      solved, interrupted, json::quote(o.sampler.env), json::quote(o.algo), json::quote(actors::to_string(o.sampler.topo)),
      json::quote(coral::to_string(o.sampler.executor)), o.sampler.seed, env_steps,
      json::number(wall_seconds), json::number(mean_return), json::number(mean_length), episodes, updates,
      target_return ? json::number(*target_return) : "null", env_failures, checkpoint.empty() ? "null" : json::quote(checkpoint),
      resumed_from.empty() ? "null" : json::quote(resumed_from));
}

}  // namespace coral::training
