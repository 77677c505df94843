// `--algo dqn`: the replay feeder as step consumer, the rate-limit gate,
// the replay actor and the DQN learner actor, plugged into the training
// composition (see docs/training.md).

#include "algorithms.hpp"
#include "coral/core/json.hpp"

#include <chrono>
#include <deque>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/network.hpp"
#include "coral/learners/q_policy.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/training_run.hpp"
#include "coral/training/rate_limit_gate.hpp"
#include "coral/replay/replay_actor.hpp"
#include "coral/training/replay_feeder.hpp"
#include "coral/training/finite_checks.hpp"
#include "coral/training/option_checks.hpp"
#include "coral/training/replay_snapshot.hpp"
#include "coral/distributed/wire.hpp"
#include "memory_math.hpp"
#include "q_fields.hpp"
#include "q_options_check.hpp"
#include "replay_chart.hpp"
#include "replay_distribution.hpp"

namespace coral::learners {
namespace {

using namespace training;
using training::detail::out_of_range;

/// DQN's options (its descriptor's options type).
const dqn_config& dqn_of(const train_options& o) { return options_of<dqn_config>(o); }

/// The signature of the Q network's parameter layout.
std::string q_signature(const std::vector<std::size_t>& widths, const conv_spec& conv) {
  return fmt::format("q-mlp widths=[{}]{}", fmt::join(widths, ","), conv_signature(conv));
}

/// The replay capacity for `rows` streams: --replay-capacity rounded up to a multiple of rows.
std::size_t stream_capacity(const train_options& o, std::size_t rows) {
  return (dqn_of(o).replay_capacity + rows - 1) / rows;
}

/// Bytes of action mask stored with each transition: the batch's mask width
/// where the env masks and --no-action-masks is not given, else 0.
std::size_t stored_mask_dim(const train_options& o, actors::sampler& s) {
  return dqn_of(o).action_masks && s.batch().has_action_masks() ? s.batch().action_mask_dim() : 0;
}

/// The replay actor's settings for a run of `o` over `s`. A distributed
/// run's learner keeps one stream per row of every sampler rank; a sampler
/// rank's replay actor only passes inserts to the bridge and holds nothing.
replay::replay_actor_config replay_config(const train_options& o, actors::sampler& s) {
  const auto& d = dqn_of(o);
  const auto& so = o.sampler;
  const std::size_t rows = s.rows() * (learner_rank(o) ? sampler_ranks(o) : 1);
  const auto& batch = s.batch();
  replay::replay_actor_config rc;
  rc.buffer = {.capacity = sampler_rank(o) ? rows * (d.n_step + 2) : stream_capacity(o, rows) * rows,
               .num_streams = rows,
               .obs_dim = batch.obs_dim(),
               .discrete_action_dim = batch.discrete_action_dim(),
               .continuous_action_dim = batch.continuous_action_dim(),
               .n_step = d.n_step,
               .alpha = d.priority_alpha,
               .epsilon = d.priority_epsilon,
               .mask_dim = stored_mask_dim(o, s)};
  rc.samples_per_insert = d.replay_ratio;
  rc.min_size = d.learning_starts;
  // The gate and the limiter count rows (an env's agent slots each): a
  // group's step and what the batcher holds are in rows too.
  const std::size_t agents = s.first_env().max_agents();
  rc.max_group_steps = s.wires().envs_per_group * agents;
  rc.batcher_hold = agents * training::batcher_hold(s.wires(), actors::batcher_options_behind_gate(so, s.wires()));
  rc.batch_size = d.batch_size;
  rc.prefetch = d.prefetch;
  rc.prioritized = d.prioritized;
  rc.beta_start = d.priority_beta;
  rc.beta_end = 1.0;
  rc.beta_steps = o.total_steps;
  rc.seed = so.seed;
  return rc;
}

/// The policy a DQN checkpoint acts with outside a run: q_policy with the
/// online network of `c` (none loaded without one), greedy, or
/// epsilon-greedy with eval_epsilon.
std::unique_ptr<actors::policy> dqn_acting(const train_options& o, const envs::space& observation,
                                           const envs::space& action, const checkpoint* c, const acting_options& a) {
  const auto spec = network_spec::from_spaces(observation, action, o.hidden, 1, o.conv);
  if (c != nullptr) {
    check_acting_network(*c, q_signature(q_network_widths(spec, action.to_string()), spec.conv), a.file);
  }
  auto config = dqn_of(o);
  config.epsilon_base = eval_epsilon;
  config.epsilon_alpha = 0;
  config.exploration_steps = 0;
  auto policy = std::make_unique<q_policy>(spec, a.rows, a.seed, config);
  if (c != nullptr) policy->load_weights(c->learner.parameters);
  policy->set_deterministic(a.deterministic);
  return policy;
}

class dqn final : public algorithm {
 public:
  dqn(const train_options& o, actors::sampler& s)
      : options_(o),
        sampler_(&s),
        spec_(network_spec::from_spaces(s.observation_space(), s.action_space(), o.hidden, 1, o.conv)),
        widths_(q_network_widths(spec_, s.action_space().to_string())),
        learner_(spec_, with_backend(dqn_of(o), o), o.sampler.seed),
        replay_(replay_config(o, s)) {}

  std::string signature() const override { return q_signature(widths_, spec_.conv); }

  std::string restore(const checkpoint& c) override {
    learner_.restore(c.learner, c.floats("target_parameters"));
    replay_.load(c.record("replay") != nullptr ? *c.record("replay") : std::vector<char>{});
    return fmt::format("{} transitions in replay", replay_.buffer().size());
  }

  void start(training::training_run& run) override {
    run_ = &run;
    run.publish_initial(learner_.weights());
    distribution_.start();
    if (!learner_rank(options_)) {  // the sampling side
      feeder_ = std::make_unique<training::replay_feeder>(
          sampler_->batch(), replay_, [&run](double r, double l) { run.episode(r, l); },
          training::replay_feeder::options{.n_step = dqn_of(options_).n_step,
                                           .gamma = dqn_of(options_).gamma,
                                           .mask_dim = stored_mask_dim(options_, *sampler_)});
      gate_ = std::make_unique<training::rate_limit_gate>(replay_, run.gate());
    }
    // A resumed run draws fresh actions: the policy's streams depend on the steps done.
    const auto steps = run.start_steps();
    policy_ = std::make_unique<q_policy>(spec_, sampler_->rows(), options_.sampler.seed ^ (steps * 0x9E3779B97F4A7C15ULL),
                                         dqn_of(options_), steps, sampler_->first_env().max_agents());
    // A resumed replay carries its counters: rates count from them.
    const auto& rs = replay_.stats();
    windows_[0] = windows_[1] = {rs.env_steps.load(), rs.sampled.load(), rs.batches.load(), rs.sample_ns.load()};
  }
  actors::policy& policy() override { return *policy_; }
  actors::step_consumer& consumer() override { return *feeder_; }
  actors::gate_policy& gate_policy() override { return *gate_; }

  void spawn(runtime& rt, training::training_run& run) override {
    rt.spawn("replay", rt.pool("replay", 1), replay_.run());
    rt.spawn("learner", rt.pool("learner", 1), [this, &rt, &run]() -> asio::awaitable<void> {
      const auto& d = dqn_of(options_);
      for (std::size_t i = 0; i < d.prefetch; ++i) {
        const bool sent = co_await replay_.inbox().async_send(replay::replay_msg(replay_.make_request()));
        if (!sent) co_return;
      }
      for (;;) {
        auto got = co_await replay_.samples().async_receive();
        if (!got || rt.stop_requested()) co_return;
        auto b = std::move(*got);
        run.activity().begin(learner_.updates() + 1, 1);
        const auto st = learner_.update(*b);
        (void)run.activity().step();
        run.activity().end();
        if (options_.sampler.check_finite) training::detail::check_loss_terms("dqn", learner_.updates(), {{"td loss", st.td_loss}});
        if (learner_.updates() % d.publish_every == 0) run.publish(learner_.weights(), "dqn", learner_.updates());
        const bool sent = co_await replay_.inbox().async_send(replay::replay_msg(std::move(b)));
        if (!sent) co_return;
        const bool going = co_await run.updated(st, learner_.updates(), run.env_steps());
        if (!going) co_return;
      }
    });
  }
  void close() noexcept override { replay_.close(); }
  /// Inserts still in flight belong in the final checkpoint.
  void finish() override {
    if (!sampler_rank(options_)) replay_.drain();
  }

  std::string describe_setup() const override {
    const auto& d = dqn_of(options_);
    const std::size_t rungs = policy_->schedule().rows();
    return fmt::format(
        "Q network {}[{}] on the {} backend, {} replay of {} transitions, {}-step returns, replay ratio {}, replay "
        "batch {}, prefetch {}, epsilons {:.4f} to {:.4f} after {} steps",
        spec_.conv.empty() ? std::string() : "conv " + spec_.conv.to_string() + " ", fmt::join(widths_, ","), backend_name(with_backend(d, options_)), d.prioritized ? "prioritized" : "uniform", replay_.config().buffer.capacity, d.n_step,
        d.replay_ratio, d.batch_size, d.prefetch, policy_->schedule().rung(rungs - 1), policy_->schedule().rung(0),
        d.exploration_steps);
  }
  std::string_view columns() const override {
    return "td_loss,mean_q,mean_abs_td,replay_size,inserts_per_second,samples_per_second,replay_ratio,sample_us,"
           "inbox_depth,ready_batches,waiting_requests,held_groups";
  }
  std::string row(training::row_stream stream, const training::stats_snapshot& s, double dt) override {
    auto& before = windows_[stream == training::row_stream::progress ? 0 : 1];
    const auto& rs = replay_.stats();
    const auto inserted = rs.env_steps.load();
    const auto sampled = rs.sampled.load();
    const auto batches = rs.batches.load();
    const auto sample_ns = rs.sample_ns.load();
    const double inserts_per_second = dt > 0 ? static_cast<double>(inserted - before.inserted) / dt : 0.0;
    const double samples_per_second = dt > 0 ? static_cast<double>(sampled - before.sampled) / dt : 0.0;
    const double ratio = inserted > 0 ? static_cast<double>(sampled) / static_cast<double>(inserted) : 0.0;
    const double sample_us =
        batches > before.batches
            ? 1e-3 * static_cast<double>(sample_ns - before.sample_ns) / static_cast<double>(batches - before.batches)
            : 0.0;
    before = {inserted, sampled, batches, sample_ns};
    const auto& u = s.last_update;
    const auto size = rs.size.load();
    const auto inbox = replay_.inbox().size();
    const auto ready = replay_.samples().size();
    const auto waiting = rs.waiting_requests.load();
    const auto held = learner_rank(options_) ? 0 : run_->gate().held();
    const std::size_t rows = sampler_->rows();
    if (stream == training::row_stream::metrics) {
      return fmt::format("{},{},{},{},{:.1f},{:.1f},{:.3f},{:.2f},{},{},{},{}", u.td_loss, u.mean_q, u.mean_abs_td,
                         size, inserts_per_second, samples_per_second, ratio, sample_us, inbox, ready, waiting, held);
    }
    // A distributed learner acts on nothing: the epsilons are the sampler ranks'.
    const auto eps = learner_rank(options_)
                         ? std::string("on the sampler ranks")
                         : fmt::format("{:.3f}-{:.3f}", policy_->epsilon(rows - 1), policy_->epsilon(0));
    return fmt::format("loss {:.4f} q {:+.3f} |td| {:.4f} eps {} | replay {} ins {:.0f}/s smp {:.0f}/s "
                       "ratio {:.2f} sample {:.1f} us | queues inbox {} ready {} held-req {} held-groups {}",
                       u.td_loss, u.mean_q, u.mean_abs_td, eps, size, inserts_per_second, samples_per_second, ratio,
                       sample_us, inbox, ready, waiting, held);
  }
  std::uint64_t metrics_every() const override { return std::max<std::uint64_t>(1000, sampler_->rows()); }
  void describe(std::string& out) override {
    out += fmt::format("  replay: {} message(s) in its inbox, {} batch(es) waiting for the learner\n",
                       replay_.inbox().size(), replay_.samples().size());
  }
  void chart(actor_graph& graph, training::training_run& run) override {
    learners::detail::chart_replay(graph, run, replay_, 1.0, "Transitions sampled per env step inserted into replay, over the run.");
  }


  // Checkpoints: the learner's state with a copy of the replay that the
  // replay actor takes of itself on a snapshot_request and sends back by
  // value, so that the buffer is never shared and no code of ours runs on
  // the replay actor.
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

  // Distributed: see replay_distribution.hpp.
  distribution_part* distribution() override { return &distribution_; }

 private:
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
  };

  const train_options& options_;
  actors::sampler* sampler_;
  network_spec spec_;
  std::vector<std::size_t> widths_;
  dqn_learner learner_;
  replay::replay_actor replay_;
  training::training_run* run_ = nullptr;
  std::unique_ptr<training::replay_feeder> feeder_;
  std::unique_ptr<training::rate_limit_gate> gate_;
  std::unique_ptr<q_policy> policy_;
  window windows_[2];  // per row_stream
  detail::replay_distribution<replay::replay_actor, replay::insert_block> distribution_{
      replay_, sampler_->rows(), sampler_ranks(options_), [this] {
        const auto& batch = sampler_->batch();
        return std::make_unique<replay::insert_block>(batch.obs_dim(), batch.discrete_action_dim(),
                                                      batch.continuous_action_dim(),
                                                      stored_mask_dim(options_, *sampler_));
      }};
};

/// Each replay stream (an env's row: an env, or one agent slot of it) must
/// hold n-step + 2 transitions.
void check_stream_capacity(const train_options& o, std::size_t agents) {
  const auto& d = dqn_of(o);
  const std::size_t rows = o.sampler.num_envs * agents;
  if (rows > 0 && stream_capacity(o, rows) < d.n_step + 2) {
    out_of_range("--replay-capacity", d.replay_capacity,
                 agents == 1 ? fmt::format("must hold at least n-step + 2 = {} transitions per env ({} envs)",
                                           d.n_step + 2, rows)
                             : fmt::format("must hold at least n-step + 2 = {} transitions per agent slot ({} envs "
                                           "of {} slots)",
                                           d.n_step + 2, o.sampler.num_envs, agents));
  }
}

void check_dqn_options(const train_options& o) {
  const auto& d = dqn_of(o);
  detail::check_q_options(d);
  check_stream_capacity(o, 1);
  // Settings under which the learner could never (or barely ever) train:
  // refused here, by the numbers, rather than found out as 0 updates at the end.
  auto why = [](std::string_view text, const auto&... args) { return fmt::format(fmt::runtime(text), args...); };
  if (d.learning_starts >= o.total_steps) {
    out_of_range("--learning-starts", d.learning_starts, why(errors::dqn_starts_too_late, o.total_steps));
  }
  // The rate limiter lets the learner sample replay_ratio transitions per
  // env step inserted after learning starts (give or take its window).
  const double grant = d.replay_ratio * static_cast<double>(o.total_steps - d.learning_starts);
  const auto batch = static_cast<double>(d.batch_size);
  if (d.batch_size > d.replay_capacity) {
    out_of_range("--replay-batch", d.batch_size, why(errors::dqn_batch_over_capacity, d.replay_capacity));
  }
  if (batch > grant) {
    out_of_range("--replay-batch", d.batch_size,
                 why(errors::dqn_batch_over_grant, json::number(grant), json::number(d.replay_ratio), o.total_steps,
                     d.learning_starts));
  }
  const double in_flight = batch * static_cast<double>(d.prefetch);
  if (in_flight > static_cast<double>(d.replay_capacity)) {
    out_of_range("--prefetch", d.prefetch,
                 why(errors::dqn_prefetch_over_capacity, d.batch_size, json::number(in_flight), d.replay_capacity));
  }
  if (in_flight > grant) {
    out_of_range("--prefetch", d.prefetch,
                 why(errors::dqn_prefetch_over_grant, d.batch_size, json::number(in_flight), json::number(grant),
                     json::number(d.replay_ratio), o.total_steps, d.learning_starts));
  }
}


void add_dqn_memory(actors::memory_estimate& e, const train_options& o, const actors::env_shape& s) {
  const auto& q = options_of<dqn_config>(o);
  const double rows = static_cast<double>(o.sampler.num_envs) * static_cast<double>(s.agents);
  const double d = static_cast<double>(s.obs_dim);
  const double nd = static_cast<double>(s.discrete_action_dim);
  const double nc = static_cast<double>(s.continuous_action_dim);
  // Slots: the capacity rounded up to whole streams; per slot the
  // observation and action, return, discount (floats), steps (uint16),
  // state (byte), pending priority (double) and the priority tree's leaf
  // (float). Generations and the tree's inner nodes are left out: their
  // pages are touched lazily (measured: 49.5 bytes a slot on cartpole, this
  // counts 43), and the action mask where the env masks.
  const double slots = std::ceil(static_cast<double>(q.replay_capacity) / std::max(1.0, rows)) * std::max(1.0, rows);
  const double mask = q.action_masks ? static_cast<double>(s.action_mask_bytes) : 0.0;
  e.add("replay", slots * (4 * d + 4 * nd + 4 * nc + 4 + 4 + 2 + 1 + 8 + 4 + mask));
  const double batch = static_cast<double>(q.batch_size);
  // Prefetched batches and the one being learned from: observation and next
  // observation, action, return, discount, weight, key and probability.
  e.add("replay batches", (static_cast<double>(q.prefetch) + 1) * batch * (8 * d + 4 * nd + 4 * nc + 4 + 4 + 4 + 16 + 8));
  e.add("n-step assembly", rows * (static_cast<double>(q.n_step) + 1) * (4 * d + 16));
  const double out = static_cast<double>(s.action_choices);
  // The dense layers read the convolutions' output where there are some.
  const auto layers = resolve_layers(o.hidden, o.conv, s.obs_shape);
  const double in = layers.conv.empty() ? d : static_cast<double>(layers.conv.output_dim());
  if (!layers.conv.empty()) detail::add_conv_memory(e, layers.conv, 6 * batch + 2 * rows, detail::dqn_bytes_per_parameter);
  e.add("network", detail::mlp_parameters(in, layers.hidden, out) * detail::dqn_bytes_per_parameter);
  // Online network on o and o', target on o': forward and backward.
  e.add("activations", (6 * batch + 2 * rows) * detail::mlp_widths(in, layers.hidden, out) * 4);
}

}  // namespace

void register_dqn() {
  algorithm_descriptor d;
  d.name = "dqn";
  d.title = "DQN";
  d.summary = "Ape-X-style DQN: prioritized replay actor, double DQN, n-step returns";
  d.defaults = [] { return std::any(dqn_config{}); };
  d.fields = detail::q_fields<dqn_config>([](dqn_config& o) -> dqn_config& { return o; }, "transitions", true);
  d.fields.push_back(training::switch_off<dqn_config>(
      "no-action-masks", "act and bootstrap as if every action were legal (an env that masks then gets illegal actions)",
      [](dqn_config& o) -> bool& { return o.action_masks; }));
  d.check = check_dqn_options;
  // A multi-agent env's slots are replay streams of their own.
  d.check_env = [](const train_options& o, const envs::env& probe) { check_stream_capacity(o, probe.max_agents()); };
  d.multi_agent = true;
  d.memory = add_dqn_memory;
  d.make = plugin<dqn>();
  d.needs_torch = torch_chosen;
  d.acting = dqn_acting;
  register_algorithm(std::move(d));
}

}  // namespace coral::learners
