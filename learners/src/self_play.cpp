// Self-play's acting side (the learner's and the snapshots' policies over
// one batch) and its match against an env's reference opponent.

#include "coral/learners/self_play.hpp"
#include "self_play_run.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/core/interrupts.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"
#include "coral/learners/errors.hpp"

namespace coral::learners {

void add_snapshot(std::vector<std::vector<float>>& pool, std::vector<float> weights, std::size_t capacity) {
  if (capacity == 0) throw usage_error("add_snapshot: a pool of capacity 0");
  if (pool.size() == capacity) pool.erase(pool.begin());
  pool.push_back(std::move(weights));
}

self_play_policy::self_play_policy(const network_spec& spec, std::size_t rows, std::uint64_t seed, std::size_t agents,
                                   std::size_t teams, std::span<const std::int32_t> row_teams,
                                   const snapshot_pool& pool, double latest, bool use_masks)
    : spec_(spec),
      rows_(rows),
      seed_(seed),
      use_masks_(use_masks),
      latest_(latest),
      pool_(&pool),
      learner_(std::make_unique<mlp_policy>(spec, rows, seed)),
      learner_team_(rows, 0),
      learner_rows_(rows, 0),
      drawn_(rows, 0),
      rng_(coral::env_seed{seed ^ 0x73656C662D706C61ULL, 0}) {  // "self-pla": draws apart from the policies'
  if (agents == 0 || teams == 0 || row_teams.size() != rows) {
    throw usage_error("self_play_policy: rows, agents and teams do not fit");
  }
  learner_->set_use_masks(use_masks);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t env = r / agents;
    learner_team_[r] = static_cast<std::size_t>(row_teams[r]) == env % teams ? 1 : 0;
    learner_rows_[r] = learner_team_[r];
  }
  learner_ranges_.reserve(rows);
}

void self_play_policy::refresh_snapshots() {
  const auto current = pool_->read();
  if (current.version == pool_version_ || !current.value) return;
  pool_version_ = current.version;
  const auto& snapshots = *current.value;
  pool_size_ = snapshots.size();
  while (snapshots_.size() < pool_size_) {
    // Each snapshot draws from streams of its own (its index in the seed).
    auto p = std::make_unique<mlp_policy>(spec_, rows_, seed_ ^ (0x9E3779B97F4A7C15ULL * (snapshots_.size() + 1)));
    p->set_use_masks(use_masks_);
    snapshots_.push_back(std::move(p));
    snapshot_ranges_.emplace_back().reserve(rows_);
  }
  for (std::size_t k = 0; k < pool_size_; ++k) snapshots_[k]->load_weights(snapshots[k]);
}

void self_play_policy::load_weights(std::span<const float> weights) {
  learner_->load_weights(weights);
  refresh_snapshots();
}

void self_play_policy::act(const actors::policy_rows& rows) {
  refresh_snapshots();
  if (pool_size_ == 0) throw usage_error("self_play_policy: the snapshot pool is empty");
  auto& batch = rows.batch;
  const auto term = std::as_const(batch).terminated();
  const auto trunc = std::as_const(batch).truncated();
  const auto failed = std::as_const(batch).failed();
  const auto lengths = std::as_const(batch).episode_lengths();
  learner_ranges_.clear();
  for (auto& r : snapshot_ranges_) r.clear();
  for (const auto& range : rows.ranges) {
    for (std::uint32_t r = range.first; r < range.first + range.count; ++r) {
      if (!rows.active(r)) continue;
      if (learner_team_[r] == 0) {
        // An opponent's episode starts: it draws whom it plays as for the episode.
        const bool starts = term[r] != 0 || trunc[r] != 0 || failed[r] != 0 || lengths[r] == 0;
        if (starts || (drawn_[r] != learner_draw && drawn_[r] >= pool_size_)) {
          drawn_[r] = rng_.uniform() < latest_ ? learner_draw : static_cast<std::size_t>(rng_.below(pool_size_));
          learner_rows_[r] = drawn_[r] == learner_draw ? 1 : 0;
        }
      }
      if (learner_rows_[r] != 0) {
        learner_ranges_.push_back({r, 1});
      } else {
        snapshot_ranges_[drawn_[r]].push_back({r, 1});
      }
    }
  }
  if (!learner_ranges_.empty()) {
    learner_->act({.batch = batch, .ranges = learner_ranges_, .log_probs = rows.log_probs, .values = rows.values});
  }
  for (std::size_t k = 0; k < pool_size_; ++k) {
    if (snapshot_ranges_[k].empty()) continue;
    snapshots_[k]->act({.batch = batch, .ranges = snapshot_ranges_[k], .log_probs = {}, .values = {}});
  }
}

envs::config_args reference_args(envs::config_args args, const std::string& side) {
  std::erase_if(args, [](const auto& kv) { return kv.first == "opponent" || kv.first == "side"; });
  args.emplace_back("opponent", "reference");
  args.emplace_back("side", side);
  return args;
}

match_score play_reference(const network_spec& spec, std::span<const float> weights, const std::string& env,
                           const envs::config_args& args, std::size_t games, std::uint64_t seed,
                           std::int64_t longest) {
  std::vector<std::unique_ptr<envs::env>> one;
  one.push_back(envs::registry::global().make(env, args, seed, 0));
  envs::env_batch batch(1, one.front()->observation_space(), one.front()->action_space());
  envs::env_slice slice(batch, 0, std::move(one));
  mlp_policy policy(spec, 1, seed);
  policy.load_weights(weights);
  policy.set_deterministic(true);
  const actors::row_range row{0, 1};
  match_score score;
  slice.reset_all();
  std::int64_t steps = 0;
  // A stop signal ends the match where it is (the run is stopping).
  while (score.games() < games && !interrupted()) {
    policy.act({.batch = batch, .ranges = std::span(&row, 1), .log_probs = {}, .values = {}});
    slice.step_all();
    if (batch.terminated()[0] != 0 || batch.truncated()[0] != 0) {
      score.add(batch.episode_returns()[0]);
      steps = 0;
    } else if (++steps > longest) {
      throw error(fmt::format(fmt::runtime(errors::match_too_long), env, longest));
    }
  }
  return score;
}

}  // namespace coral::learners

namespace coral::learners::detail {
namespace {

/// The three fractions of a score, comma-separated; nan without games.
std::string fractions(const match_score& s) {
  if (s.games() == 0) return "nan,nan,nan";
  const auto n = static_cast<double>(s.games());
  return fmt::format("{:.4f},{:.4f},{:.4f}", static_cast<double>(s.wins) / n, static_cast<double>(s.draws) / n,
                     static_cast<double>(s.losses) / n);
}

/// "W/D/L w/d/l" in percent.
std::string percents(const match_score& s) {
  if (s.games() == 0) return "-";
  const auto n = static_cast<double>(s.games());
  return fmt::format("{:.0f}/{:.0f}/{:.0f}%", 100.0 * static_cast<double>(s.wins) / n,
                     100.0 * static_cast<double>(s.draws) / n, 100.0 * static_cast<double>(s.losses) / n);
}

constexpr std::size_t score_window = 100;

// The pool record: u64 snapshots, u64 weights each, then the snapshots'
// floats one after another, oldest first.
constexpr std::size_t pool_header_bytes = 2 * sizeof(std::uint64_t);
constexpr std::string_view pool_record = "self_play_pool";
constexpr std::string_view returns_record = "self_play_returns";

}  // namespace

void self_play_run::check(const training::train_options& o, const envs::env& probe) {
  const auto& p = training::options_of<ppo_options>(o);
  if (!p.self_play) return;
  if (probe.team_count() < 2) throw config_error(fmt::format(fmt::runtime(errors::self_play_one_team), o.sampler.env));
  if (p.self_play_eval_games == 0) return;
  const auto refuse = [&](const std::string& why) {
    throw config_error(fmt::format(fmt::runtime(errors::self_play_no_reference), o.sampler.env, why));
  };
  for (const char* side : {"first", "second"}) {
    std::unique_ptr<envs::env> match;
    try {
      match = envs::registry::global().make(o.sampler.env, reference_args(o.sampler.env_args, side), o.sampler.seed, 0);
    } catch (const config_error& e) {
      refuse(e.what());
    }
    if (match->max_agents() != 1) refuse(fmt::format("it has {} agent slots there, not one", match->max_agents()));
    if (!(match->observation_space() == probe.observation_space()) || !(match->action_space() == probe.action_space())) {
      refuse("its spaces there differ from the training env's");
    }
  }
}

self_play_run::saved_state self_play_run::saved_pool(const training::checkpoint& c, std::size_t weights) {
  saved_state saved;
  const auto* bytes = c.record(pool_record);
  if (bytes == nullptr) return saved;
  std::uint64_t count = 0, each = 0;
  if (bytes->size() >= pool_header_bytes) {
    std::memcpy(&count, bytes->data(), sizeof(count));
    std::memcpy(&each, bytes->data() + sizeof(count), sizeof(each));
  }
  // Divisions only: a forged count or width cannot overflow a product.
  const std::uint64_t body = bytes->size() - std::min(bytes->size(), pool_header_bytes);
  const bool fits = bytes->size() >= pool_header_bytes && count > 0 && each > 0 && each <= body / sizeof(float) &&
                    body % (each * sizeof(float)) == 0 && body / (each * sizeof(float)) == count;
  if (!fits) {
    throw usage_error(fmt::format(fmt::runtime(errors::self_play_pool_malformed), bytes->size(), count, each));
  }
  if (each != weights) throw usage_error(fmt::format(fmt::runtime(errors::self_play_pool_mismatch), count, each, weights));
  const char* at = bytes->data() + pool_header_bytes;
  for (std::uint64_t k = 0; k < count; ++k) {
    auto& snapshot = saved.pool.emplace_back(weights);
    std::memcpy(snapshot.data(), at, weights * sizeof(float));
    at += weights * sizeof(float);
  }
  for (const float r : c.floats(returns_record)) saved.returns.push_back(r);
  return saved;
}

void self_play_run::save(training::checkpoint& c) const {
  const std::uint64_t count = snapshots_.size();
  const std::uint64_t each = snapshots_.empty() ? 0 : snapshots_.front().size();
  std::vector<char> bytes(pool_header_bytes + count * each * sizeof(float));
  std::memcpy(bytes.data(), &count, sizeof(count));
  std::memcpy(bytes.data() + sizeof(count), &each, sizeof(each));
  char* at = bytes.data() + pool_header_bytes;
  for (const auto& snapshot : snapshots_) {
    std::memcpy(at, snapshot.data(), snapshot.size() * sizeof(float));
    at += snapshot.size() * sizeof(float);
  }
  c.set_record(std::string(pool_record), std::move(bytes));
  std::vector<float> returns;
  {
    std::lock_guard lock(mutex_);
    returns.assign(window_.begin(), window_.end());
  }
  c.set_floats(std::string(returns_record), returns);
}

self_play_run::self_play_run(const training::train_options& o, const network_spec& spec, actors::sampler& s,
                             std::uint64_t seed, std::vector<float> initial, saved_state saved)
    : options_(&o), p_(&training::options_of<ppo_options>(o)), spec_(spec) {
  if (saved.pool.empty()) {
    add_snapshot(snapshots_, std::move(initial), p_->self_play_pool);
  } else {
    // The saved pool as it was; a smaller --self-play-pool keeps its newest.
    for (auto& snapshot : saved.pool) add_snapshot(snapshots_, std::move(snapshot), p_->self_play_pool);
  }
  for (const double r : saved.returns) episode(r);
  pool_.publish(snapshots_);
  const auto& probe = s.first_env();
  policy_ = std::make_unique<self_play_policy>(spec, s.rows(), seed, probe.max_agents(), probe.team_count(),
                                               std::as_const(s.batch()).teams(), pool_, p_->self_play_latest,
                                               p_->ppo.action_masks);
  columns_ = ",pool_win,pool_draw,pool_loss";
  if (p_->self_play_eval_games > 0) {
    columns_ += ",ref_first_win,ref_first_draw,ref_first_loss,ref_second_win,ref_second_draw,ref_second_loss";
  }
}

void self_play_run::wire(training::rollout_assembler& a) const {
  a.record_acted_from(policy_->learner_rows());
  a.record_actions_from(policy_->learner().sampled_actions());
  a.record_states_from(policy_->learner().recurrent_states());
}

void self_play_run::episode(double r) {
  std::lock_guard lock(mutex_);
  window_.push_back(r);
  if (window_.size() > score_window) window_.pop_front();
}

void self_play_run::updated(std::uint64_t updates, const std::vector<float>& weights) {
  if (updates % p_->self_play_refresh != 0) return;
  add_snapshot(snapshots_, weights, p_->self_play_pool);
  pool_.publish(snapshots_);
  if (p_->self_play_eval_games == 0) return;
  // A fresh seed per match: the reference's ties are drawn anew each time.
  const std::uint64_t seed = options_->sampler.seed ^ (updates * 0x9E3779B97F4A7C15ULL);
  const auto& env = options_->sampler.env;
  const auto& args = options_->sampler.env_args;
  const auto games = p_->self_play_eval_games;
  const auto first = play_reference(spec_, weights, env, reference_args(args, "first"), games, seed);
  const auto second = play_reference(spec_, weights, env, reference_args(args, "second"), games, seed + 1);
  std::lock_guard lock(mutex_);
  first_ = first;
  second_ = second;
}

std::string self_play_run::row(training::row_stream stream) const {
  std::lock_guard lock(mutex_);
  match_score pool;
  for (const double r : window_) pool.add(r);
  const bool matched = p_->self_play_eval_games > 0;
  if (stream == training::row_stream::metrics) {
    return "," + fractions(pool) + (matched ? "," + fractions(first_) + "," + fractions(second_) : std::string());
  }
  return fmt::format("pool W/D/L {}{}", percents(pool),
                     matched ? fmt::format(" | reference 1st {} 2nd {}", percents(first_), percents(second_))
                             : std::string());
}

}  // namespace coral::learners::detail
