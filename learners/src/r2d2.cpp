// `--algo r2d2`: the sequence feeder as step consumer, the rate-limit gate,
// the sequence replay actor and the R2D2 learner actor, plugged into the
// training composition (see docs/training.md, "R2D2").

#include "algorithms.hpp"

#include <chrono>
#include <mutex>

#include <fmt/format.h>

#include "coral/core/json.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/network.hpp"
#include "coral/learners/r2d2.hpp"
#include "coral/learners/r2d2_learner.hpp"
#include "coral/learners/r2d2_policy.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/training_run.hpp"
#include "coral/training/rate_limit_gate.hpp"
#include "coral/training/sequence_feeder.hpp"
#include "coral/replay/sequence_replay_actor.hpp"
#include "coral/training/finite_checks.hpp"
#include "coral/training/option_checks.hpp"
#include "coral/training/replay_snapshot.hpp"
#include "memory_math.hpp"
#include "q_fields.hpp"
#include "q_options_check.hpp"
#include "replay_chart.hpp"
#include "replay_distribution.hpp"

namespace coral::learners {
namespace {

using namespace training;
using training::detail::out_of_range;

/// R2D2's options (its descriptor's options type).
const r2d2_options& r2d2_of(const train_options& o) { return options_of<r2d2_options>(o); }

network_spec spec_of(const train_options& o, const envs::space& observation, const envs::space& action) {
  auto spec = network_spec::from_spaces(observation, action, o.hidden, 1, o.conv);
  if (spec.nvec.size() != 1 || spec.continuous_dim() != 0) {
    throw config_error(fmt::format(fmt::runtime(errors::r2d2_needs_discrete), action.to_string()));
  }
  spec.lstm = r2d2_of(o).lstm;
  return spec;
}

network_spec make_spec(const train_options& o, const actors::sampler& s) {
  return spec_of(o, s.observation_space(), s.action_space());
}

/// The signature of the recurrent Q-network of `spec`.
std::string r2d2_signature(const network_spec& spec) {
  return fmt::format("r2d2 lstm={} hidden=[{}] obs={} actions={} params={}{}", spec.lstm, fmt::join(spec.hidden, ","),
                     spec.input_dim(), spec.nvec.front(), r2d2_parameter_count(spec), conv_signature(spec.conv));
}

/// The policy an R2D2 checkpoint acts with outside a run: r2d2_policy with
/// the online network of `c` (none loaded without one), greedy, or
/// epsilon-greedy with eval_epsilon.
std::unique_ptr<actors::policy> r2d2_acting(const train_options& o, const envs::space& observation,
                                            const envs::space& action, const checkpoint* c, const acting_options& a) {
  const auto spec = spec_of(o, observation, action);
  if (c != nullptr) check_acting_network(*c, r2d2_signature(spec), a.file);
  auto config = r2d2_of(o).q;
  config.epsilon_base = eval_epsilon;
  config.epsilon_alpha = 0;
  config.exploration_steps = 0;
  auto policy = std::make_unique<r2d2_policy>(spec, a.rows, a.seed, config, 0);
  if (c != nullptr) policy->load_weights(c->learner.parameters);
  policy->set_deterministic(a.deterministic);
  return policy;
}

/// Bytes of action mask stored per observation slot: the batch's mask
/// width where the env masks and --no-action-masks is not given, else 0.
std::size_t sequence_mask_dim(const train_options& o, actors::sampler& s) {
  return r2d2_of(o).q.action_masks && s.batch().has_action_masks() ? s.batch().action_mask_dim() : 0;
}

replay::sequence_layout make_layout(const train_options& o, actors::sampler& s) {
  return {.length = r2d2_of(o).sequences.seq_len,
          .burn_in = r2d2_of(o).sequences.burn_in,
          .overlap = r2d2_of(o).sequences.effective_overlap(),
          .obs_dim = s.batch().obs_dim(),
          .discrete_dim = 1,
          .state_dim = 2 * r2d2_of(o).lstm,
          .mask_dim = sequence_mask_dim(o, s)};
}

/// The sequence replay's settings for a run of `o` over `s`: --replay-capacity
/// sequences, the replay ratio in trained slots per env step.
replay::sequence_replay_actor_config replay_config(const train_options& o, actors::sampler& s) {
  const auto& d = r2d2_of(o).q;
  const auto& so = o.sampler;
  // A distributed run's learner keeps one stream per row of every sampler
  // rank; a sampler rank's replay actor only passes sequences to the link
  // and holds next to nothing.
  const std::size_t rows = s.rows() * (learner_rank(o) ? sampler_ranks(o) : 1);
  replay::sequence_replay_actor_config rc;
  rc.buffer = {.layout = make_layout(o, s),
               .capacity = sampler_rank(o) ? 2 * rows : d.replay_capacity,
               .num_streams = rows,
               .alpha = d.priority_alpha,
               .epsilon = d.priority_epsilon};
  rc.samples_per_insert = d.replay_ratio;
  rc.ratio_counts = replay::ratio_unit::trained_steps;
  rc.min_size = d.learning_starts;
  // The gate and the limiter count rows (an env's agent slots each): a
  // group's step and what the batcher holds are in rows too.
  const std::size_t agents = s.first_env().max_agents();
  rc.max_group_steps = s.wires().envs_per_group * agents;
  rc.batcher_hold = agents * training::batcher_hold(s.wires(), actors::batcher_options_behind_gate(so, s.wires()));
  rc.batch_size = d.batch_size * r2d2_of(o).sequences.prefetch_batches;
  rc.prefetch = d.prefetch;
  rc.prioritized = d.prioritized;
  rc.beta_start = d.priority_beta;
  rc.beta_end = 1.0;
  rc.beta_steps = o.total_steps;
  rc.seed = so.seed;
  return rc;
}

class r2d2 final : public algorithm {
 public:
  r2d2(const train_options& o, actors::sampler& s)
      : options_(o),
        sampler_(&s),
        spec_(make_spec(o, s)),
        learner_(spec_, with_backend(r2d2_of(o).q, o), r2d2_of(o).sequences, o.sampler.seed),
        replay_(replay_config(o, s)) {}

  std::string signature() const override { return r2d2_signature(spec_); }

  std::string restore(const checkpoint& c) override {
    learner_.restore(c.learner, c.floats("target_parameters"));
    replay_.load(c.record("replay") != nullptr ? *c.record("replay") : std::vector<char>{});
    return fmt::format("{} sequences in replay", replay_.buffer().size());
  }

  void start(training::training_run& run) override {
    run_ = &run;
    run.publish_initial(learner_.weights());
    const auto steps = run.start_steps();
    // A resumed run draws fresh actions: the policy's streams depend on the steps done.
    policy_ = std::make_unique<r2d2_policy>(spec_, sampler_->rows(),
                                            options_.sampler.seed ^ (steps * 0x9E3779B97F4A7C15ULL), r2d2_of(options_).q,
                                            steps, sampler_->first_env().max_agents());
    distribution_.start();
    if (!learner_rank(options_)) start_sampling(run);
    const auto& rs = replay_.stats();
    windows_[0] = windows_[1] = {rs.env_steps.load(), rs.sampled.load(), rs.batches.load(), rs.sample_ns.load(),
                                 learner_.updates()};
  }
  /// The sampling side: the sequence feeder as step consumer and the
  /// rate-limit gate (not on a distributed run's learner, which samples nothing).
  void start_sampling(training::training_run& run) {
    training::sequence_sink sink{
        .take_block =
            [this]() -> std::unique_ptr<replay::sequence_block> {
          auto b = replay_.free_blocks().try_receive();
          return b ? std::move(*b) : nullptr;
        },
        .send =
            [this](std::unique_ptr<replay::sequence_block> b) {
              auto& inbox = replay_.inbox();
              if (!inbox.try_send(replay::sequence_replay_msg(std::move(b))) && !inbox.is_closed()) {
                throw usage_error(fmt::format("r2d2: the sequence replay's inbox is full ({} messages)", inbox.size()));
              }
            }};
    feeder_ = std::make_unique<training::sequence_feeder>(sampler_->batch(), replay_.buffer().config().layout,
                                                        std::move(sink),
                                                        [&run](double r, double l) { run.episode(r, l); });
    feeder_->record_states_from(policy_->recurrent_states());
    gate_ = std::make_unique<training::rate_limit_gate>(replay_, run.gate());
  }

  actors::policy& policy() override { return *policy_; }
  actors::step_consumer& consumer() override { return *feeder_; }
  actors::gate_policy& gate_policy() override { return *gate_; }

  void spawn(runtime& rt, training::training_run& run) override {
    rt.spawn("replay", rt.pool("replay", 1), replay_.run());
    rt.spawn("learner", rt.pool("learner", 1), [this, &rt, &run]() -> asio::awaitable<void> {
      const auto& d = r2d2_of(options_).q;
      for (std::size_t i = 0; i < d.prefetch; ++i) {
        const bool sent = co_await replay_.inbox().async_send(replay::sequence_replay_msg(replay_.make_request()));
        if (!sent) co_return;
      }
      for (;;) {
        auto got = co_await replay_.samples().async_receive();
        if (!got || rt.stop_requested()) co_return;
        auto b = std::move(*got);
        // A request holds prefetch_batches batches: the learner trains on each in turn.
        const auto st = train_on(*b, run.activity());
        if (options_.sampler.check_finite) {
          training::detail::check_loss_terms("r2d2", learner_.updates(), {{"td loss", st.base.td_loss}});
        }
        if (learner_.updates() % d.publish_every < r2d2_of(options_).sequences.prefetch_batches) {
          run.publish(learner_.weights(), "r2d2", learner_.updates());
        }
        const bool sent = co_await replay_.inbox().async_send(replay::sequence_replay_msg(std::move(b)));
        if (!sent) co_return;
        const bool going = co_await run.updated(st.base, learner_.updates(), run.env_steps());
        if (!going) co_return;
      }
    });
  }
  void close() noexcept override { replay_.close(); }
  void finish() override {
    if (!sampler_rank(options_)) replay_.drain();
  }

  // Distributed: see replay_distribution.hpp.
  distribution_part* distribution() override { return &distribution_; }

  std::string describe_setup() const override {
    const auto& d = r2d2_of(options_).q;
    const auto& l = replay_.buffer().config().layout;
    const std::size_t rungs = policy_->schedule().rows();
    return fmt::format(
        "R2D2 lstm {} hidden [{}]{} on the {} backend, {} replay of {} sequences of {} (burn-in {}, overlap {}), "
        "{}-step returns, replay ratio {} trained steps per env step, batch {} x {} per request, prefetch {}, target "
        "update {}, epsilons {:.4f} to {:.4f} after {} steps",
        spec_.lstm, fmt::join(spec_.hidden, ","),
        spec_.conv.empty() ? std::string() : " conv " + spec_.conv.to_string(), backend_name(with_backend(d, options_)), d.prioritized ? "prioritized" : "uniform", d.replay_capacity,
        l.length, l.burn_in, l.overlap, d.n_step, d.replay_ratio, d.batch_size, r2d2_of(options_).sequences.prefetch_batches,
        d.prefetch, d.target_update, policy_->schedule().rung(rungs - 1), policy_->schedule().rung(0),
        d.exploration_steps);
  }
  std::string_view columns() const override {
    return "td_loss,mean_q,q_max,mean_abs_td,grad_norm,learner_steps_per_second,updates_per_second,sample_us,"
           "burn_in_ms,learn_ms,replay_size,sequences_added,sequences_sampled,replay_ratio,inbox_depth,"
           "priority_mean,priority_min,priority_max,stale_updates";
  }
  std::string row(training::row_stream stream, const training::stats_snapshot& s, double dt) override {
    auto& before = windows_[stream == training::row_stream::progress ? 0 : 1];
    const auto& rs = replay_.stats();
    const auto inserted = rs.env_steps.load();
    const auto sampled = rs.sampled.load();
    const auto batches = rs.batches.load();
    const auto sample_ns = rs.sample_ns.load();
    const auto updates = learner_.updates();
    const auto& l = replay_.buffer().config().layout;
    const double trained_per_update = static_cast<double>(r2d2_of(options_).q.batch_size * (l.length - l.burn_in));
    const double updates_per_second = dt > 0 ? static_cast<double>(updates - before.updates) / dt : 0.0;
    const double learner_steps_per_second = updates_per_second * trained_per_update;
    const double ratio = inserted > 0 ? static_cast<double>(sampled) * static_cast<double>(l.length - l.burn_in) /
                                            static_cast<double>(inserted)
                                      : 0.0;
    const double sample_us =
        batches > before.batches
            ? 1e-3 * static_cast<double>(sample_ns - before.sample_ns) / static_cast<double>(batches - before.batches)
            : 0.0;
    before = {inserted, sampled, batches, sample_ns, updates};
    const auto& u = s.last_update;
    last_figures last;
    {
      std::lock_guard lock(last_mutex_);
      last = last_;
    }
    const auto size = rs.size.load();
    const auto added = rs.sequences.load();
    const auto inbox = replay_.inbox().size();
    if (stream == training::row_stream::metrics) {
      return fmt::format("{},{},{},{},{},{:.1f},{:.2f},{:.2f},{:.3f},{:.3f},{},{},{},{:.3f},{},{},{},{},{}", u.td_loss,
                         u.mean_q, last.q_max, u.mean_abs_td, last.grad_norm, learner_steps_per_second,
                         updates_per_second, sample_us, 1e3 * last.burn_in_seconds, 1e3 * last.learn_seconds, size,
                         added, sampled, ratio, inbox, rs.priority_mean.load(), rs.priority_min.load(),
                         rs.priority_max.load(), rs.stale_updates.load());
    }
    const std::size_t rungs = policy_->schedule().rows();
    return fmt::format("loss {:.4f} q {:+.3f} qmax {:+.3f} |td| {:.4f} grad {:.2f} eps {:.3f}-{:.3f} | "
                       "learn {:.0f} steps/s {:.1f} upd/s sample {:.0f} us burn-in {:.1f} ms learn {:.1f} ms | "
                       "replay {} added {} sampled {} ratio {:.2f} inbox {} prio {:.3f}/{:.3f}/{:.3f}",
                       u.td_loss, u.mean_q, last.q_max, u.mean_abs_td, last.grad_norm, policy_->schedule().epsilon(rungs - 1),
                       policy_->schedule().epsilon(0), learner_steps_per_second, updates_per_second, sample_us,
                       1e3 * last.burn_in_seconds, 1e3 * last.learn_seconds, size, added, sampled, ratio, inbox,
                       rs.priority_min.load(), rs.priority_mean.load(), rs.priority_max.load());
  }
  std::uint64_t metrics_every() const override { return std::max<std::uint64_t>(1000, sampler_->rows()); }
  void describe(std::string& out) override {
    out += fmt::format("  sequence replay: {} message(s) in its inbox, {} batch(es) waiting for the learner\n",
                       replay_.inbox().size(), replay_.samples().size());
  }
  void chart(actor_graph& graph, training::training_run& run) override {
    const auto& l = replay_.buffer().config().layout;
    learners::detail::chart_replay(graph, run, replay_, static_cast<double>(l.length - l.burn_in),
                         "Trained steps per env step inserted into replay, over the run.");
  }


  asio::awaitable<bool> snapshot(checkpoint& c) override {
    fill_learner(c);
    std::vector<char> saved;
    const bool taken = co_await training::detail::snapshot_replay(replay_, c.learner.env_steps, saved);
    c.set_record("replay", std::move(saved));
    co_return taken;
  }
  void final_state(checkpoint& c) override {
    fill_learner(c);
    c.set_record("replay", replay_.save());
  }
  std::uint64_t updates() const override { return learner_.updates(); }

 private:
  /// Trains on each of the request's prefetch_batches batches in turn and
  /// puts the priorities of all of them back in `b`.
  r2d2_update_stats train_on(replay::sequence_batch& b, training::learner_activity& activity) {
    const std::size_t per = r2d2_of(options_).q.batch_size;
    const std::size_t parts = std::max<std::size_t>(b.size / std::max<std::size_t>(per, 1), 1);
    r2d2_update_stats st;
    // One step per batch; the batches of a request are trained whole (the
    // replay takes their priorities back together), a stop or not.
    activity.begin(learner_.updates() + 1, parts);
    if (parts == 1) {
      st = learner_.update(b);
      (void)activity.step();
    } else {
      split_.resize(parts);
      b.priorities.assign(b.size, 0.0f);
      for (std::size_t k = 0; k < parts; ++k) {
        slice(b, k * per, per, split_[k]);
        const auto one = learner_.update(split_[k]);
        (void)activity.step();
        std::copy(split_[k].priorities.begin(), split_[k].priorities.end(),
                  b.priorities.begin() + static_cast<std::ptrdiff_t>(k * per));
        st = one;
      }
    }
    activity.end();
    std::lock_guard lock(last_mutex_);
    last_ = {st.q_max, st.grad_norm, st.burn_in_seconds, st.learn_seconds};
    return st;
  }
  /// Draws [from, from + n) of `b` into `out` (reusing its vectors).
  static void slice(const replay::sequence_batch& b, std::size_t from, std::size_t n, replay::sequence_batch& out) {
    const auto& l = b.layout;
    out.layout = l;
    out.size = n;
    auto part = [&](const auto& src, auto& dst, std::size_t per) {
      dst.assign(src.begin() + static_cast<std::ptrdiff_t>(from * per),
                 src.begin() + static_cast<std::ptrdiff_t>((from + n) * per));
    };
    part(b.observations, out.observations, l.observation_floats());
    part(b.actions, out.actions, l.length * l.discrete_dim);
    part(b.rewards, out.rewards, l.length);
    part(b.flags, out.flags, l.length);
    part(b.states, out.states, l.state_dim);
    part(b.masks, out.masks, l.mask_bytes());
    part(b.weights, out.weights, 1);
    part(b.keys, out.keys, 1);
  }

  void fill_learner(checkpoint& c) {
    learner_.set_env_steps(run_->env_steps());
    c.learner = learner_.state();
    c.set_floats("target_parameters", learner_.target_weights());
  }

  struct window {
    std::uint64_t inserted = 0;
    std::uint64_t sampled = 0;
    std::uint64_t batches = 0;
    std::uint64_t sample_ns = 0;
    std::uint64_t updates = 0;
  };
  /// The last update's figures beyond update_stats, for the rows (written by
  /// the learner, read by the progress line).
  struct last_figures {
    double q_max = 0;
    double grad_norm = 0;
    double burn_in_seconds = 0;
    double learn_seconds = 0;
  };

  const train_options& options_;
  actors::sampler* sampler_;
  network_spec spec_;
  r2d2_learner learner_;
  replay::sequence_replay_actor replay_;
  training::training_run* run_ = nullptr;
  std::unique_ptr<r2d2_policy> policy_;
  std::unique_ptr<training::sequence_feeder> feeder_;
  std::unique_ptr<training::rate_limit_gate> gate_;
  detail::replay_distribution<replay::sequence_replay_actor, replay::sequence_block> distribution_{
      replay_, sampler_->rows(), sampler_ranks(options_), [this] {
        auto b = std::make_unique<replay::sequence_block>();
        b->layout = replay_.buffer().config().layout;
        return b;
      }};
  std::vector<replay::sequence_batch> split_;
  std::mutex last_mutex_;  // guards last_
  last_figures last_;
  window windows_[2];  // per row_stream
};

void check_r2d2_options(const train_options& o) {
  const auto& d = r2d2_of(o).q;
  const auto& r = r2d2_of(o).sequences;
  if (r2d2_of(o).lstm == 0) out_of_range("--lstm", r2d2_of(o).lstm, "must be at least 1: R2D2's Q-network is recurrent");
  if (r.seq_len < 2) out_of_range("--seq-len", r.seq_len, "must be at least 2");
  if (r.burn_in >= r.seq_len) {
    out_of_range("--burn-in", r.burn_in, fmt::format("must be less than --seq-len ({})", r.seq_len));
  }
  if (r.effective_overlap() >= r.seq_len) {
    out_of_range("--seq-overlap", r.overlap, fmt::format("must be less than --seq-len ({})", r.seq_len));
  }
  if (r.prefetch_batches == 0) out_of_range("--prefetch-batches", r.prefetch_batches, "must be at least 1");
  detail::check_q_options(d);
  if (d.learning_starts >= o.total_steps) {
    out_of_range("--learning-starts", d.learning_starts,
                 fmt::format(fmt::runtime(errors::dqn_starts_too_late), o.total_steps));
  }
  // A request holds batch × prefetch-batches sequences; the requests in
  // flight must fit in the replay.
  const double request = static_cast<double>(d.batch_size) * static_cast<double>(r.prefetch_batches);
  if (request > static_cast<double>(d.replay_capacity)) {
    // The flag at fault: --prefetch-batches when it is what multiplies the batch past the replay.
    if (r.prefetch_batches > 1 && d.batch_size <= d.replay_capacity) {
      out_of_range("--prefetch-batches", r.prefetch_batches,
                   fmt::format("times --replay-batch ({}) must fit in --replay-capacity ({} sequences)", d.batch_size,
                               d.replay_capacity));
    }
    out_of_range("--replay-batch", d.batch_size,
                 fmt::format("times --prefetch-batches ({}) must fit in --replay-capacity ({} sequences)",
                             r.prefetch_batches, d.replay_capacity));
  }
}

void add_r2d2_memory(actors::memory_estimate& e, const train_options& o, const actors::env_shape& s) {
  const auto& r = options_of<r2d2_options>(o);
  const auto& q = r.q;
  const double rows = static_cast<double>(o.sampler.num_envs) * static_cast<double>(s.agents);
  const double d = static_cast<double>(s.obs_dim);
  const double len = static_cast<double>(r.sequences.seq_len);
  const double h = static_cast<double>(r.lstm);
  // The sequence buffer's own figure; a batch holds the same per sequence.
  replay::sequence_buffer_config buffer;
  const std::size_t mask_dim = q.action_masks ? s.action_mask_bytes : 0;
  buffer.layout = {.length = r.sequences.seq_len, .burn_in = 0, .overlap = 0, .obs_dim = s.obs_dim, .discrete_dim = 1,
                   .state_dim = 2 * r.lstm, .mask_dim = mask_dim};
  buffer.capacity = q.replay_capacity;
  e.add("replay", replay::sequence_buffer::memory_bytes(buffer));
  buffer.capacity = 1;
  const double sequence = replay::sequence_buffer::memory_bytes(buffer);
  const double batch = static_cast<double>(q.batch_size) * static_cast<double>(r.sequences.prefetch_batches);
  e.add("replay batches", (static_cast<double>(q.prefetch) + 1) * batch * (sequence + 4 + 16));
  // The feeder's ring of the last seq-len steps per row, and the states of its open sequences.
  e.add("sequence assembly",
        rows * len * (4 * d + 9 + static_cast<double>(mask_dim)) + rows * 4 * 2 * h * 4);
  // The online and target networks: the trunk and a linear Q head.
  // The dense layers read the convolutions' output where there are some.
  const auto layers = resolve_layers(o.hidden, o.conv, s.obs_shape);
  const auto& hidden = layers.hidden;
  const double in = layers.conv.empty() ? d : static_cast<double>(layers.conv.output_dim());
  if (!layers.conv.empty()) {
    detail::add_conv_memory(e, layers.conv, 3 * batch * (len + 1), detail::dqn_bytes_per_parameter);
  }
  const double enc = hidden.empty() ? in : static_cast<double>(hidden.back());
  const std::vector<std::size_t> inner(hidden.begin(), hidden.empty() ? hidden.end() : hidden.end() - 1);
  const double out = static_cast<double>(s.action_choices);
  const double params = (hidden.empty() ? 0.0 : detail::mlp_parameters(in, inner, enc)) + 4 * h * (enc + h + 2) + (h + 1) * out;
  e.add("network", params * detail::dqn_bytes_per_parameter);
  // Both networks unrolled over every slot of a batch (the online one kept
  // for backward: input, gates, h and c per slot), and the acting state.
  e.add("activations", 3 * batch * (len + 1) * (enc + 6 * h + out) * 4 + 2 * rows * 2 * h * 4);
}

}  // namespace

void register_r2d2() {
  using O = r2d2_options;
  algorithm_descriptor d;
  d.name = "r2d2";
  d.title = "R2D2";
  d.summary = "recurrent DQN on stored sequences with burn-in (Kapturowski et al. 2019)";
  d.defaults = [] { return std::any(O{}); };
  d.fields = detail::q_fields<O>([](O& o) -> dqn_config& { return o.q; }, "sequences", false);
  d.fields.push_back(sizing(field<O>("lstm", "width of the Q-network's LSTM", [](O& o) -> std::size_t& { return o.lstm; })));
  d.fields.push_back(sizing(field<O>("seq-len", "slots per replayed sequence, burn-in included",
                                     [](O& o) -> std::size_t& { return o.sequences.seq_len; })));
  d.fields.push_back(field<O>("burn-in", "leading slots of a sequence that only warm the LSTM state up",
                              [](O& o) -> std::size_t& { return o.sequences.burn_in; }));
  auto overlap = field<O>("seq-overlap", "slots shared by consecutive sequences of an episode",
                          [](O& o) -> std::size_t& { return o.sequences.overlap; });
  // Read as the overlap in effect, so that a run's settings name a number.
  overlap.get = [](const std::any& a) -> option_value {
    return option_value(std::uint64_t{std::any_cast<const O&>(a).sequences.effective_overlap()});
  };
  d.fields.push_back(shown_default(std::move(overlap), "seq-len / 2"));
  d.fields.push_back(field<O>("prefetch-batches", "batches the learner asks the replay for per request (amortises the round trip)",
                              [](O& o) -> std::size_t& { return o.sequences.prefetch_batches; }));
  d.fields.push_back(within(field<O>("priority-eta", "sequence priority = eta max|td| + (1 - eta) mean|td|",
                                     [](O& o) -> double& { return o.sequences.priority_eta; }), 0, 1));
  d.fields.push_back(over(field<O>("rescale-epsilon", "epsilon of the value rescaling h(x) = sign(x)(sqrt(|x|+1) - 1) + epsilon x",
                                   [](O& o) -> double& { return o.sequences.rescale_epsilon; }), 0, 1));
  d.fields.push_back(switch_off<O>(
      "no-action-masks", "act and bootstrap as if every action were legal (an env that masks then gets illegal actions)",
      [](O& o) -> bool& { return o.q.action_masks; }));
  d.check = check_r2d2_options;
  // A multi-agent env's slots are streams of their own, each cut into its agent's sequences.
  d.multi_agent = true;
  d.memory = add_r2d2_memory;
  d.make = plugin<r2d2>();
  d.needs_torch = torch_chosen;
  d.acting = r2d2_acting;
  register_algorithm(std::move(d));
}

}  // namespace coral::learners
