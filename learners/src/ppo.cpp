// `--algo ppo`: the rollout assembler as step consumer, the policy-lag gate,
// and the PPO learner actor, plugged into the training composition.

#include "algorithms.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "coral/learners/mlp_policy.hpp"
#include "coral/learners/network.hpp"
#include "coral/learners/policy_lag_gate.hpp"
#include "coral/learners/ppo_learner.hpp"
#include "coral/learners/rollout.hpp"
#include "coral/learners/training_run.hpp"
#include "finite_checks.hpp"
#include "option_checks.hpp"
#include "segment_wire.hpp"

namespace coral::learners {
namespace {

class ppo final : public algorithm {
 public:
  ppo(const train_options& o, actors::sampler& s)
      : options_(o),
        sampler_(&s),
        spec_(make_spec(o, s)),
        learner_(spec_, o.ppo, o.sampler.seed, o.total_steps) {}

  // The reward scaler's state is in the checkpoint only when it is on: a run
  // with it does not resume a run without it, nor the other way round.
  std::string signature() const override {
    return network_signature(spec_) + (options_.ppo.scale_rewards ? " reward_scale" : "");
  }

  std::string restore(const checkpoint& c) override {
    learner_.restore(c.learner);
    return {};
  }

  void start(training_run& run) override {
    run_ = &run;
    run.publish_initial(learner_.weights());
    assembler_ = std::make_unique<rollout_assembler>(
        sampler_->batch(), sampler_->group_rows(), [&run](double r, double l) { run.episode(r, l); },
        rollout_assembler::options{.horizon = options_.horizon,
                                   .frames = options_.frames,
                                   .segments_in_flight = policy_lag_gate::segments_in_flight(lag()),
                                   .state_dim = spec_.state_dim()});
    gate_ = std::make_unique<policy_lag_gate>(*assembler_, run.weights(), lag());
    // A resumed run draws fresh actions: the policy's streams depend on the steps done.
    policy_ = std::make_unique<mlp_policy>(spec_, sampler_->rows(),
                                           options_.sampler.seed ^ (run.start_steps() * 0x9E3779B97F4A7C15ULL));
    // The learner scores the unclipped Gaussian samples; the envs get them clipped.
    assembler_->record_actions_from(policy_->sampled_actions());
    // A recurrent row's segment starts from the state the policy had there.
    assembler_->record_states_from(policy_->recurrent_states());
  }
  actors::policy& policy() override { return *policy_; }
  actors::step_consumer& consumer() override { return *assembler_; }
  actors::gate_policy& gate_policy() override { return *gate_; }

  void spawn(runtime& rt, training_run& run) override {
    rt.spawn("learner", rt.pool("learner", 1), [this, &rt, &run]() -> asio::awaitable<void> {
      for (;;) {
        auto seg = co_await assembler_->segments().async_receive();
        if (!seg || rt.stop_requested()) co_return;
        const auto st = learner_.update(**seg, run.weights().version());
        if (options_.sampler.check_finite) {
          detail::check_loss_terms("ppo", learner_.updates(),
                                   {{"policy loss", st.policy_loss}, {"value loss", st.value_loss}, {"entropy", st.entropy}});
        }
        run.publish(learner_.weights(), "ppo", learner_.updates());
        // The gate first: with lag 0 the sampler waits for these weights,
        // not for the metrics row or a checkpoint.
        const bool told = co_await run.tell_gate();
        const bool going = co_await run.updated(st, learner_.updates(), learner_.env_steps());
        if (!told || !going) co_return;
      }
    });
  }
  void close() noexcept override { assembler_->close(); }

  std::string describe_setup() const override {
    return fmt::format("horizon {}, max policy lag {}, {} parameters{}{}{}", options_.horizon, options_.max_policy_lag,
                       parameter_count(spec_), spec_.lstm > 0 ? fmt::format(", lstm {}", spec_.lstm) : std::string(),
                       spec_.normalize_observations ? ", obs norm" : "",
                       options_.ppo.scale_rewards ? ", reward scale" : "");
  }
  std::string_view columns() const override {
    return "policy_loss,value_loss,entropy,approx_kl,clip_fraction,learning_rate,mean_policy_lag,max_policy_lag";
  }
  std::string row(row_stream stream, const stats_snapshot& s, double) override {
    const auto& u = s.last_update;
    if (stream == row_stream::metrics) {
      return fmt::format("{},{},{},{},{},{},{},{}", u.policy_loss, u.value_loss, u.entropy, u.approx_kl,
                         u.clip_fraction, u.learning_rate, u.mean_policy_lag, u.max_policy_lag);
    }
    return fmt::format("pg {:+.4f} v {:.4f} ent {:.3f} kl {:.4f} clip {:.3f} lr {:.2e} | lag {:.2f} (max {})",
                       u.policy_loss, u.value_loss, u.entropy, u.approx_kl, u.clip_fraction, u.learning_rate,
                       u.mean_policy_lag, u.max_policy_lag);
  }
  void describe(std::string& out) override {
    out += fmt::format("  rollout assembler: {} segment(s) waiting for the learner\n", assembler_->segments().size());
  }

  asio::awaitable<bool> snapshot(checkpoint& c) override {
    final_state(c);
    co_return true;
  }
  void final_state(checkpoint& c) override { c.learner = learner_.state(); }
  std::uint64_t updates() const override { return learner_.updates(); }

  // Distributed: each sampler rank sends its segments; the learner trains on
  // segment k once every rank's segment k arrived, joined row-wise.
  bool distributed() const override { return true; }
  bool take(std::vector<std::byte>& out) override {
    auto seg = assembler_->segments().try_receive();
    if (!seg) return false;
    wire::writer w(out);
    detail::encode_segment(**seg, w);
    return true;
  }
  bool accept(std::size_t index, std::span<const std::byte> in, const std::string& from) override {
    wire::reader r(in, from);
    auto seg = detail::decode_segment(r);
    r.finish("segment");
    if (seg.rows != sampler_->rows() || seg.horizon != options_.horizon || seg.obs_dim != assembler_width() ||
        seg.discrete_dim != sampler_->batch().discrete_action_dim() ||
        seg.continuous_dim != sampler_->batch().continuous_action_dim() || seg.state_dim != spec_.state_dim()) {
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
        std::vector<rollout_segment> all;
        for (auto& p : parts) all.push_back(std::move(*p));
        parts_.erase(parts_.begin());
        joined_ = std::make_unique<rollout_segment>(detail::join_segments(all));
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
  static network_spec make_spec(const train_options& o, const actors::sampler& s) {
    auto spec = network_spec::from_spaces(s.observation_space(), s.action_space(), o.hidden, o.frames);
    spec.normalize_observations = o.normalize_observations;
    spec.lstm = o.lstm;
    return spec;
  }

  /// The width of a segment's observation rows (stacked frames).
  std::size_t assembler_width() const { return sampler_->batch().obs_dim() * options_.frames; }

  struct rank_lag {
    std::atomic<double> mean{0};
    std::atomic<std::uint64_t> max{0};
  };
  /// --max-policy-lag, capped at the segments the run can produce: a larger
  /// bound lets the same steps through, and lag + 2 segments must fit the
  /// assembler's channel (2^64 − 1 wrapped to a channel of one segment).
  std::size_t lag() const {
    const std::uint64_t segment = static_cast<std::uint64_t>(options_.horizon) * sampler_->rows();
    return static_cast<std::size_t>(std::min<std::uint64_t>(options_.max_policy_lag, options_.total_steps / segment + 1));
  }

  const train_options& options_;
  actors::sampler* sampler_;
  network_spec spec_;
  ppo_learner learner_;
  std::unique_ptr<rollout_assembler> assembler_;
  std::unique_ptr<policy_lag_gate> gate_;
  std::unique_ptr<mlp_policy> policy_;
  training_run* run_ = nullptr;
  // Learner of a distributed run: the parts of each segment index, and a joined
  // segment waiting for room in the learner's channel.
  std::map<std::uint64_t, std::vector<std::optional<rollout_segment>>> parts_;
  std::unique_ptr<rollout_segment> joined_;
  std::vector<rank_lag> lags_ = std::vector<rank_lag>(sampler_ranks(options_));
};

void check_ppo_options(const train_options& o) {
  using detail::out_of_range;
  detail::check_settings_read(o);
  if (o.horizon == 0) out_of_range("--horizon", o.horizon, "must be at least 1");
  if (o.frames == 0) out_of_range("--frames", o.frames, "must be at least 1");
  if (o.ppo.epochs == 0) out_of_range("--epochs", o.ppo.epochs, "must be at least 1");
  if (o.ppo.minibatch_size == 0) out_of_range("--minibatch-size", o.ppo.minibatch_size, "must be at least 1");
  if (!(o.ppo.learning_rate > 0)) out_of_range("--learning-rate", o.ppo.learning_rate, "must be > 0");
  if (!(o.ppo.gamma > 0 && o.ppo.gamma <= 1)) out_of_range("--gamma", o.ppo.gamma, "must be in (0, 1]");
  if (!(o.ppo.gae_lambda >= 0 && o.ppo.gae_lambda <= 1)) {
    out_of_range("--gae-lambda", o.ppo.gae_lambda, "must be in [0, 1]");
  }
  if (!(o.ppo.clip > 0)) out_of_range("--clip", o.ppo.clip, "must be > 0");
  if (!(o.ppo.max_grad_norm >= 0)) out_of_range("--max-grad-norm", o.ppo.max_grad_norm, "must be >= 0");
  if (!(o.ppo.adam_epsilon > 0 && o.ppo.adam_epsilon <= 1)) {
    out_of_range("--adam-epsilon", o.ppo.adam_epsilon, "must be in (0, 1]");
  }
  if (!(o.ppo.entropy_coef >= 0)) out_of_range("--entropy-coef", o.ppo.entropy_coef, "must be >= 0");
  if (!(o.ppo.value_coef >= 0)) out_of_range("--value-coef", o.ppo.value_coef, "must be >= 0");
}

}  // namespace

void register_ppo() {
  register_algorithm(
      "ppo",
      [](const train_options& o, actors::sampler& s) {
        use_one_torch_thread();
        return std::make_unique<ppo>(o, s);
      },
      check_ppo_options);
}

}  // namespace coral::learners
