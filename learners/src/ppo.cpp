// `--algo ppo`: the rollout assembler as step consumer, the policy-lag gate,
// and the PPO learner actor, plugged into the training composition.

#include "algorithms.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "coral/envs/registry.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/mlp_policy.hpp"
#include "coral/learners/ppo.hpp"
#include "coral/learners/network.hpp"
#include "coral/training/policy_lag_gate.hpp"
#include "coral/learners/ppo_learner.hpp"
#include "coral/training/rollout.hpp"
#include "coral/training/running_moments.hpp"
#include "coral/training/errors.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/training_run.hpp"
#include "coral/training/finite_checks.hpp"
#include "coral/training/option_checks.hpp"
#include "coral/distributed/segment_wire.hpp"
#include "memory_math.hpp"
#include "ppo_shared.hpp"
#include "self_play_run.hpp"

namespace coral::learners {
namespace {

using namespace training;

/// The actor-critic a run of `o` trains over envs of these spaces.
network_spec spec_of(const train_options& o, const envs::space& observation, const envs::space& action) {
  const auto& p = options_of<ppo_options>(o);
  auto spec = network_spec::from_spaces(observation, action, o.hidden, p.frames, o.conv);
  spec.normalize_observations = p.normalize_observations;
  spec.lstm = p.lstm;
  if (p.one_hot) spec.one_hot = categorical_elements(observation);
  return spec;
}

/// The signature a run of `o` with a network of `spec` writes into its checkpoints.
std::string ppo_signature(const train_options& o, const network_spec& spec) {
  return network_signature(spec) + (options_of<ppo_options>(o).ppo.scale_rewards ? " reward_scale" : "");
}

/// The policy a PPO checkpoint acts with outside a run: the batcher's
/// mlp_policy with the weights the learner publishes after restoring `c`
/// (its parameters, then the normaliser's block from its moments); none
/// loaded without a checkpoint.
std::unique_ptr<actors::policy> ppo_acting(const train_options& o, const envs::space& observation,
                                           const envs::space& action, const checkpoint* c, const acting_options& a) {
  const auto spec = spec_of(o, observation, action);
  auto policy = std::make_unique<mlp_policy>(spec, a.rows, a.seed);
  policy->set_deterministic(a.deterministic);
  policy->set_use_masks(options_of<ppo_options>(o).ppo.action_masks);
  if (c == nullptr) return policy;
  check_acting_network(*c, ppo_signature(o, spec), a.file);
  auto weights = c->learner.parameters;
  if (spec.normalize_observations) {
    running_moments moments(spec.input_dim());
    try {
      moments.load(c->learner.observation_moments);
    } catch (const usage_error&) {
      throw training::checkpoint_error(
          fmt::format(fmt::runtime(training::errors::checkpoint_bad_record), a.file, "observation_moments"));
    }
    const auto block = normalizer_block(moments);
    weights.insert(weights.end(), block.begin(), block.end());
  }
  policy->load_weights(weights);
  return policy;
}

constexpr std::string_view ppo_columns =
    "policy_loss,value_loss,entropy,approx_kl,clip_fraction,learning_rate,mean_policy_lag,max_policy_lag";

class ppo final : public algorithm, public distribution_part {
 public:
  ppo(const train_options& o, actors::sampler& s)
      : options_(o),
        p_(options_of<ppo_options>(o)),
        sampler_(&s),
        spec_(make_spec(o, s)),
        learner_(spec_, config_of(o), o.sampler.seed, o.total_steps) {}

  // The reward scaler's state is in the checkpoint only when it is on: a run
  // with it does not resume a run without it, nor the other way round.
  std::string signature() const override { return ppo_signature(options_, spec_); }

  std::string restore(const checkpoint& c) override {
    learner_.restore(c.learner);
    if (!p_.self_play) return {};
    // A self-play run's pool goes on as it was (none in a checkpoint of a
    // run without --self-play, or of an older format: it starts anew).
    saved_self_play_ = detail::self_play_run::saved_pool(c, learner_.weights().size());
    return saved_self_play_.pool.empty() ? std::string()
                                         : fmt::format("{} self-play snapshots", saved_self_play_.pool.size());
  }

  void start(training::training_run& run) override {
    run_ = &run;
    run.publish_initial(learner_.weights());
    assembler_ = std::make_unique<training::rollout_assembler>(
        sampler_->batch(), sampler_->group_rows(),
        [this, &run](double r, double l) {
          if (self_play_) self_play_->episode(r);
          run.episode(r, l);
        },
        training::rollout_assembler::options{.horizon = p_.horizon,
                                   .frames = p_.frames,
                                   .segments_in_flight = training::policy_lag_gate::segments_in_flight(lag()),
                                   .state_dim = spec_.state_dim()});
    gate_ = std::make_unique<training::policy_lag_gate>(*assembler_, run.weights(), lag());
    // A resumed run draws fresh actions: the policy's streams depend on the steps done.
    const std::uint64_t acting_seed = options_.sampler.seed ^ (run.start_steps() * 0x9E3779B97F4A7C15ULL);
    if (p_.self_play) {
      // The learner's rows act with its weights, the opponents' with the pool's.
      self_play_ = std::make_unique<detail::self_play_run>(options_, spec_, *sampler_, acting_seed, learner_.weights(),
                                                           std::move(saved_self_play_));
      self_play_->wire(*assembler_);
      columns_ = std::string(ppo_columns) + std::string(self_play_->columns());
      return;
    }
    policy_ = std::make_unique<mlp_policy>(spec_, sampler_->rows(), acting_seed);
    policy_->set_use_masks(p_.ppo.action_masks);
    // The learner scores the unclipped Gaussian samples; the envs get them clipped.
    assembler_->record_actions_from(policy_->sampled_actions());
    // A recurrent row's segment starts from the state the policy had there.
    assembler_->record_states_from(policy_->recurrent_states());
  }
  actors::policy& policy() override { return self_play_ ? self_play_->policy() : *policy_; }
  actors::step_consumer& consumer() override { return *assembler_; }
  actors::gate_policy& gate_policy() override { return *gate_; }

  void spawn(runtime& rt, training::training_run& run) override {
    rt.spawn("learner", rt.pool("learner", 1), [this, &rt, &run]() -> asio::awaitable<void> {
      for (;;) {
        auto seg = co_await assembler_->segments().async_receive();
        if (!seg || rt.stop_requested()) co_return;
        const auto st = learner_.update(**seg, run.weights().version(), &run.activity());
        if (options_.sampler.check_finite) {
          training::detail::check_loss_terms("ppo", learner_.updates(),
                                   {{"policy loss", st.policy_loss}, {"value loss", st.value_loss}, {"entropy", st.entropy}});
        }
        run.publish(learner_.weights(), "ppo", learner_.updates());
        // The gate first: with lag 0 the sampler waits for these weights,
        // not for the metrics row or a checkpoint.
        const bool told = co_await run.tell_gate();
        // A snapshot for the pool (and a match) while the sampler goes on.
        if (self_play_) self_play_->updated(learner_.updates(), learner_.weights());
        const bool going = co_await run.updated(st, learner_.updates(), learner_.env_steps());
        if (!told || !going) co_return;
      }
    });
  }
  void close() noexcept override { assembler_->close(); }

  std::string describe_setup() const override {
    return fmt::format("horizon {}, max policy lag {}, {} parameters on the {} backend{}{}{}{}", p_.horizon,
                       p_.max_policy_lag, parameter_count(spec_),
                       backend_name(config_of(options_)),
                       spec_.conv.empty() ? std::string() : ", conv " + spec_.conv.to_string(),
                       spec_.lstm > 0 ? fmt::format(", lstm {}", spec_.lstm) : std::string(),
                       spec_.normalize_observations ? ", obs norm" : "",
                       p_.ppo.scale_rewards ? ", reward scale" : "");
  }
  std::string_view columns() const override { return columns_; }
  std::string row(training::row_stream stream, const training::stats_snapshot& s, double) override {
    const auto& u = s.last_update;
    if (stream == training::row_stream::metrics) {
      return fmt::format("{},{},{},{},{},{},{},{}{}", u.policy_loss, u.value_loss, u.entropy, u.approx_kl,
                         u.clip_fraction, u.learning_rate, u.mean_policy_lag, u.max_policy_lag,
                         self_play_ ? self_play_->row(stream) : std::string());
    }
    return fmt::format("pg {:+.4f} v {:.4f} ent {:.3f} kl {:.4f} clip {:.3f} lr {:.2e} | lag {:.2f} (max {}){}",
                       u.policy_loss, u.value_loss, u.entropy, u.approx_kl, u.clip_fraction, u.learning_rate,
                       u.mean_policy_lag, u.max_policy_lag,
                       self_play_ ? " | " + self_play_->row(stream) : std::string());
  }
  void describe(std::string& out) override {
    out += fmt::format("  rollout assembler: {} segment(s) waiting for the learner\n", assembler_->segments().size());
  }
  void chart(actor_graph& graph, training::training_run& run) override {
    // The assembler is the batcher's step consumer: its segments come from
    // the batchers' actors (on a distributed learner, from the bridge).
    const auto senders = learner_rank(options_) ? std::vector<std::string>{"bridge"} : sampler_->batcher_names();
    graph.add_channel("segments", senders, {"learner"}, assembler_->segments());
    auto* activity = &run.activity();
    graph.add_activity("learner", [activity] { return activity->busy(); });
    auto* stats = &run.stats();
    graph.add_figure("policy_lag", "Mean policy lag (learner version minus acting version) of the last segment trained on.",
                     [stats] { return stats->read().last_update.mean_policy_lag; });
  }

  asio::awaitable<bool> snapshot(checkpoint& c) override {
    final_state(c);
    co_return true;
  }
  void final_state(checkpoint& c) override {
    c.learner = learner_.state();
    if (self_play_) self_play_->save(c);
  }
  std::uint64_t updates() const override { return learner_.updates(); }

  // Distributed: each sampler rank sends its segments; the learner trains on
  // segment k once every rank's segment k arrived, joined row-wise.
  distribution_part* distribution() override { return this; }
  bool take(std::vector<std::byte>& out) override {
    auto seg = assembler_->segments().try_receive();
    if (!seg) return false;
    distributed::wire::writer w(out);
    distributed::encode_segment(**seg, w);
    return true;
  }
  bool accept(std::size_t index, std::span<const std::byte> in, const std::string& from) override {
    distributed::wire::reader r(in, from);
    auto seg = distributed::decode_segment(r);
    r.finish("segment");
    if (seg.rows != sampler_->rows() || seg.horizon != p_.horizon || seg.obs_dim != assembler_width() ||
        seg.discrete_dim != sampler_->batch().discrete_action_dim() ||
        seg.continuous_dim != sampler_->batch().continuous_action_dim() || seg.state_dim != spec_.state_dim() ||
        seg.mask_dim != (sampler_->batch().has_action_masks() ? sampler_->batch().action_mask_dim() : 0)) {
      r.bad("segment shape");
    }
    auto& parts = parts_[seg.index];
    if (parts.empty()) parts.resize(sampler_ranks(options_));
    if (index >= parts.size() || parts[index]) r.bad("segment index (sent twice)");
    // Policy lag at arrival, per rank: the learner's version now against the acting ones.
    const auto now = run_->weights().version();
    std::uint64_t sum = 0, most = 0;
    for (const auto v : seg.policy_versions) {
      const auto lag = now > v ? now - v : 0;
      sum += lag;
      most = std::max(most, lag);
    }
    if (index < lags_.size() && !seg.policy_versions.empty()) {
      lags_[index].mean.store(static_cast<double>(sum) / static_cast<double>(seg.policy_versions.size()));
      lags_[index].max.store(most);
    }
    parts[index] = std::move(seg);
    pump();
    return true;
  }
  void pump() override {
    for (;;) {
      if (!joined_) {
        if (parts_.empty()) return;
        auto& parts = parts_.begin()->second;
        if (!std::all_of(parts.begin(), parts.end(), [](const auto& p) { return p.has_value(); })) return;
        std::vector<training::rollout_segment> all;
        for (auto& p : parts) all.push_back(std::move(*p));
        parts_.erase(parts_.begin());
        joined_ = std::make_unique<training::rollout_segment>(distributed::join_segments(all));
      }
      if (!assembler_->segments().try_send(std::move(joined_))) return;
      joined_.reset();
    }
  }
  std::string rank_row(std::size_t index) const override {
    if (index >= lags_.size()) return {};
    return fmt::format("lag {:.2f}/{}", lags_[index].mean.load(), lags_[index].max.load());
  }

 private:
  /// PPO's config with the run's backend.
  static ppo_config config_of(const train_options& o) { return with_backend(options_of<ppo_options>(o).ppo, o); }

  static network_spec make_spec(const train_options& o, const actors::sampler& s) {
    return spec_of(o, s.observation_space(), s.action_space());
  }

  /// The width of a segment's observation rows (stacked frames).
  std::size_t assembler_width() const { return sampler_->batch().obs_dim() * p_.frames; }

  struct rank_lag {
    std::atomic<double> mean{0};
    std::atomic<std::uint64_t> max{0};
  };
  /// --max-policy-lag, capped at the segments the run can produce: a larger
  /// bound lets the same steps through, and lag + 2 segments must fit the
  /// assembler's channel (2^64 − 1 wrapped to a channel of one segment).
  std::size_t lag() const {
    const std::uint64_t segment = static_cast<std::uint64_t>(p_.horizon) * sampler_->rows();
    return static_cast<std::size_t>(std::min<std::uint64_t>(p_.max_policy_lag, options_.total_steps / segment + 1));
  }

  const train_options& options_;
  const ppo_options& p_;
  actors::sampler* sampler_;
  network_spec spec_;
  ppo_learner learner_;
  std::unique_ptr<training::rollout_assembler> assembler_;
  std::unique_ptr<training::policy_lag_gate> gate_;
  std::unique_ptr<mlp_policy> policy_;
  std::unique_ptr<detail::self_play_run> self_play_;  // with --self-play, instead of policy_
  detail::self_play_run::saved_state saved_self_play_;  // a resumed self-play run's, until start()
  std::string columns_{ppo_columns};
  training::training_run* run_ = nullptr;
  // Learner of a distributed run: the parts of each segment index, and a joined
  // segment waiting for room in the learner's channel.
  std::map<std::uint64_t, std::vector<std::optional<training::rollout_segment>>> parts_;
  std::unique_ptr<training::rollout_segment> joined_;
  std::vector<rank_lag> lags_ = std::vector<rank_lag>(sampler_ranks(options_));
};

/// What PPO needs of the env: memory across steps (stacked frames, an LSTM)
/// only where a row's steps are one agent's (a single-agent env: on a
/// multi-agent one a slot's steps are not consecutive rows of a segment),
/// an LSTM only without action masks (its loss has none), and self-play's
/// teams and reference opponent.
void check_ppo_env(const train_options& o, const envs::env& probe) {
  const auto& p = options_of<ppo_options>(o);
  const auto agents = probe.max_agents();
  if (agents > 1 && p.frames > 1) {
    throw config_error(
        fmt::format(fmt::runtime(learners::errors::multi_agent_memory), "--frames", p.frames, o.sampler.env, agents));
  }
  if (agents > 1 && p.lstm > 0) {
    throw config_error(
        fmt::format(fmt::runtime(learners::errors::multi_agent_memory), "--lstm", p.lstm, o.sampler.env, agents));
  }
  if (p.lstm > 0 && p.ppo.action_masks && probe.action_mask_size() != 0) {
    throw config_error(fmt::format(fmt::runtime(learners::errors::masked_lstm), p.lstm, o.sampler.env));
  }
  detail::self_play_run::check(o, probe);
}

void check_ppo_options(const train_options& o) {
  using training::detail::out_of_range;
  const auto& p = options_of<ppo_options>(o);
  if (p.horizon == 0) out_of_range("--horizon", p.horizon, "must be at least 1");
  if (p.frames == 0) out_of_range("--frames", p.frames, "must be at least 1");
  if (p.ppo.epochs == 0) out_of_range("--epochs", p.ppo.epochs, "must be at least 1");
  if (p.ppo.minibatch_size == 0) out_of_range("--minibatch-size", p.ppo.minibatch_size, "must be at least 1");
  if (p.self_play_pool == 0) out_of_range("--self-play-pool", p.self_play_pool, "must be at least 1");
  if (p.self_play_refresh == 0) out_of_range("--self-play-refresh", p.self_play_refresh, "must be at least 1");
  // Each refresh plays them on the learner's thread, the update waiting.
  if (p.self_play_eval_games > max_self_play_eval_games) {
    out_of_range("--self-play-eval-games", p.self_play_eval_games,
                 fmt::format("must be at most {}", max_self_play_eval_games));
  }
  if (p.frames > 1) {
    // Stacked frames and convolutions do not go together (from_spaces()
    // refuses them): asked of the env's spaces here, before the run.
    const auto env = envs::registry::global().make(o.sampler.env, o.sampler.env_args, o.sampler.seed, 0);
    (void)network_spec::from_spaces(env->observation_space(), env->action_space(), o.hidden, p.frames, o.conv);
  }
}


void add_ppo_memory(actors::memory_estimate& e, const train_options& o, const actors::env_shape& s) {
  const auto& p = options_of<ppo_options>(o);
  const double rows = static_cast<double>(o.sampler.num_envs) * static_cast<double>(s.agents);
  const double horizon = static_cast<double>(p.horizon);
  double d = static_cast<double>(s.obs_dim) * static_cast<double>(std::max<std::size_t>(p.frames, 1));
  const double nd = static_cast<double>(s.discrete_action_dim);
  const double nc = static_cast<double>(s.continuous_action_dim);
  // One segment: T + 1 observations per row, then per step the actions, log
  // probability, value, reward (floats), two flags and the policy version.
  const double segment = rows * ((horizon + 1) * 4 * d + horizon * (4 * nd + 4 * nc + 4 + 4 + 4 + 1 + 1 + 8));
  // Segments open under the lag gate: up to max_policy_lag + 1 (counted
  // without the learner's, to stay a lower bound), never more than the run has.
  const double run_segments = std::ceil(static_cast<double>(o.total_steps) / std::max(1.0, rows * horizon));
  const double live = std::min(static_cast<double>(p.max_policy_lag) + 1, std::max(1.0, run_segments));
  e.add("rollout segments", live * segment);
  const double samples = rows * horizon;
  // The update's tensors: observations, advantages, returns, order (int64)
  // and actions as int64.
  e.add("PPO update tensors", samples * (4 * d + 4 + 4 + 8 + 8 * nd + 4 * nc));
  if (p.frames > 1) e.add("frame stacks", 2 * rows * 4 * d);
  const double heads = static_cast<double>(s.action_choices) + nc;
  const double minibatch = std::min(static_cast<double>(p.ppo.minibatch_size), samples);
  // The dense layers read the convolutions' output where there are some.
  const auto layers = resolve_layers(o.hidden, o.conv, s.obs_shape);
  const auto& hidden = layers.hidden;
  // Self-play keeps up to --self-play-pool snapshots of the weights (float),
  // one more each --self-play-refresh updates: as many as the run can add.
  const auto add_pool = [&](double parameters) {
    if (!p.self_play) return;
    const double updates = run_segments;
    const double snapshots = std::min(static_cast<double>(p.self_play_pool),
                                      1 + std::floor(updates / static_cast<double>(std::max<std::size_t>(p.self_play_refresh, 1))));
    e.add("self-play pool", snapshots * parameters * 4);
  };
  const double conv_parameters = static_cast<double>(layers.conv.parameter_count());
  if (!layers.conv.empty()) {
    detail::add_conv_memory(e, layers.conv, 3 * minibatch + 2 * rows, detail::ppo_bytes_per_parameter);
    d = static_cast<double>(layers.conv.output_dim());
  }
  if (p.lstm > 0) {
    // One trunk: the encoder (the hidden layers), the cell (4H gates over
    // its input and h, two biases) and two linear heads.
    const double h = static_cast<double>(p.lstm);
    const double enc = static_cast<double>(hidden.back());
    const std::vector<std::size_t> inner(hidden.begin(), hidden.end() - 1);
    const double params = detail::mlp_parameters(d, inner, enc) + 4 * h * (enc + h + 2) + (h + 1) * (heads + 1) + nc;
    e.add("network", params * detail::ppo_bytes_per_parameter);
    add_pool(params + conv_parameters);
    // The policy's state and its copy per row; each segment's initial states.
    e.add("recurrent state", 2 * rows * 2 * h * 4 + live * rows * 2 * h * 4);
    // The update's unroll over every step without gradient (h and c kept),
    // and a minibatch's with it (input, gates, h and c per step, twice for
    // backward); at least one whole row per minibatch.
    const double rows_steps = std::max(minibatch, horizon);
    e.add("activations", (samples * 2 * h + rows_steps * 2 * (enc + 6 * h) + 2 * rows * (enc + 4 * h)) * 4);
    return;
  }
  const double actor = detail::mlp_parameters(d, hidden, heads) + nc;
  const double critic = detail::mlp_parameters(d, hidden, 1);
  e.add("network", (actor + critic) * detail::ppo_bytes_per_parameter);
  add_pool(actor + critic + conv_parameters);
  const double widths = detail::mlp_widths(d, hidden, heads) + detail::mlp_widths(d, hidden, 1);
  // Forward and backward of a minibatch, and the acting batch's forward.
  e.add("activations", (3 * minibatch + 2 * rows) * widths * 4);
}

}  // namespace

void register_ppo() {
  using O = ppo_options;
  algorithm_descriptor d;
  d.name = "ppo";
  d.title = "PPO";
  d.summary = "PPO with GAE and a clipped surrogate (recurrent with --lstm)";
  d.defaults = [] { return std::any(O{}); };
  d.fields = {
      sizing(field<O>("horizon", "steps per env per rollout segment", [](O& o) -> std::size_t& { return o.horizon; })),
      sizing(field<O>("max-policy-lag", "how many updates older than the learner the acting weights may be (0: strictly on-policy)",
                      [](O& o) -> std::size_t& { return o.max_policy_lag; })),
      sizing(field<O>("frames", "observations stacked into the policy input (memory needs 5)",
                      [](O& o) -> std::size_t& { return o.frames; })),
      sizing(field<O>("lstm", "width of an LSTM after the hidden layers, the policy's memory across steps (0: none)",
                      [](O& o) -> std::size_t& { return o.lstm; })),
      field<O>("obs-norm",
               "normalise observations by their running mean and std (clipped to +-10), kept in checkpoints and "
               "restored on --resume",
               [](O& o) -> bool& { return o.normalize_observations; }),
      field<O>("epochs", "epochs per segment", [](O& o) -> std::size_t& { return o.ppo.epochs; }),
      sizing(field<O>("minibatch-size", "samples per minibatch", [](O& o) -> std::size_t& { return o.ppo.minibatch_size; })),
      over(field<O>("learning-rate", "Adam step size", [](O& o) -> double& { return o.ppo.learning_rate; }), 0, 1e6),
      switch_off<O>("no-anneal-lr", "keep the learning rate constant", [](O& o) -> bool& { return o.ppo.anneal_lr; }),
      over(field<O>("adam-epsilon", "Adam's epsilon", [](O& o) -> double& { return o.ppo.adam_epsilon; }), 0, 1),
      over(field<O>("gamma", "discount", [](O& o) -> double& { return o.ppo.gamma; }), 0, 1),
      within(field<O>("gae-lambda", "GAE lambda", [](O& o) -> double& { return o.ppo.gae_lambda; }), 0, 1),
      over(field<O>("clip", "surrogate (and value) clip range", [](O& o) -> double& { return o.ppo.clip; }), 0, 1000),
      switch_off<O>("no-clip-value-loss", "plain squared-error value loss",
                    [](O& o) -> bool& { return o.ppo.clip_value_loss; }),
      switch_off<O>("no-advantage-norm", "do not normalise advantages per minibatch",
                    [](O& o) -> bool& { return o.ppo.normalize_advantages; }),
      within(field<O>("value-coef", "value loss coefficient", [](O& o) -> double& { return o.ppo.value_coef; }), 0, 1000),
      within(field<O>("entropy-coef", "entropy bonus coefficient", [](O& o) -> double& { return o.ppo.entropy_coef; }), 0, 1000),
      within(field<O>("max-grad-norm", "gradient norm clip, 0: off", [](O& o) -> double& { return o.ppo.max_grad_norm; }), 0, 1e9),
      field<O>("self-play",
               "train one team of each env against frozen snapshots of the policy (an env of two teams or more); "
               "the other teams' rows act but are not trained on",
               [](O& o) -> bool& { return o.self_play; }),
      field<O>("self-play-pool", "snapshots the opponents draw from, the latest always among them",
               [](O& o) -> std::size_t& { return o.self_play_pool; }),
      field<O>("self-play-refresh", "updates between snapshots added to the pool",
               [](O& o) -> std::size_t& { return o.self_play_refresh; }),
      within(field<O>("self-play-latest",
                      "share of opponent episodes played by the learner itself, both sides trained (mirror matches)",
                      [](O& o) -> double& { return o.self_play_latest; }),
             0, 1),
      field<O>("self-play-eval-games",
               "at each snapshot, games per side against the env's reference opponent (opponent=reference), "
               "played greedily and reported (0: none)",
               [](O& o) -> std::size_t& { return o.self_play_eval_games; }),
      switch_off<O>("no-one-hot",
                    "feed the observation's Discrete and MultiDiscrete elements as their index, not one-hot",
                    [](O& o) -> bool& { return o.one_hot; }),
      switch_off<O>("no-action-masks",
                    "act and train as if every action were legal (an env that masks then gets illegal actions)",
                    [](O& o) -> bool& { return o.ppo.action_masks; }),
      field<O>("reward-scale",
               "divide the rewards trained on by a running std of the discounted return (clipped to +-10)",
               [](O& o) -> bool& { return o.ppo.scale_rewards; }),
  };
  d.check = check_ppo_options;
  d.memory = add_ppo_memory;
  d.multi_agent = true;
  d.check_env = check_ppo_env;
  d.make = plugin<ppo>();
  d.needs_torch = torch_chosen;
  d.acting = ppo_acting;
  register_algorithm(std::move(d));
}

}  // namespace coral::learners
