#include "coral/training/sequence_feeder.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <span>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/errors.hpp"

using coral::replay::sequence_block;
using coral::training::sequence_feeder;
using coral::replay::sequence_layout;
using coral::training::sequence_sink;
namespace replay = coral::replay;

namespace {

constexpr std::size_t obs_dim = 2;
constexpr std::size_t state_dim = 2;

/// How a planned episode ends: its last step terminated or truncated, or
/// its env failed after `length` steps were chosen (the outcome of the last
/// one never comes).
enum class end_kind { terminated, truncated, failed };

struct episode_plan {
  int length = 0;
  end_kind end = end_kind::terminated;
};

/// Episode step t of episode e of row r, observed: a value no other step has.
float obs_value(std::uint32_t r, int e, int t) { return 10000.0f * static_cast<float>(r + 1) + 100.0f * e + t; }
std::int32_t action_value(int e, int t) { return 100 * e + t; }
float reward_value(int e, int t) { return static_cast<float>(t + 1) + 0.5f * static_cast<float>(e); }
/// The state the policy had before acting on step t > 0.
std::vector<float> policy_state(std::uint32_t r, int e, int t) {
  return {obs_value(r, e, t) + 0.25f, -obs_value(r, e, t)};
}

/// Plays a row's planned episodes into the batch, one consume() at a time,
/// as env_slice and the policy would write it.
class row_script {
 public:
  row_script(std::uint32_t row, std::vector<episode_plan> plan) : row_(row), plan_(std::move(plan)) {}

  /// Every planned episode's outcome has been written.
  [[nodiscard]] bool done() const noexcept { return episode_ >= static_cast<int>(plan_.size()); }

  /// Writes the row's next step: the outcome of the previous step, the
  /// new observation and action, and the policy's state before acting.
  void write(coral::envs::env_batch& b, std::span<float> states) {
    const std::uint32_t r = row_;
    b.rewards()[r] = 0.0f;
    b.terminated()[r] = 0;
    b.truncated()[r] = 0;
    b.failed()[r] = 0;
    if (step_ > 0) {
      const auto& plan = plan_[static_cast<std::size_t>(episode_)];
      if (step_ == plan.length) {
        if (plan.end == end_kind::failed) {
          b.failed()[r] = 1;
          b.episode_returns()[r] = 0.0f;
          b.episode_lengths()[r] = 0;
        } else {
          b.rewards()[r] = reward_value(episode_, step_ - 1);
          (plan.end == end_kind::terminated ? b.terminated() : b.truncated())[r] = 1;
          std::ranges::fill(b.final_observations().row(r), obs_value(r, episode_, step_));
          b.final_observations().row(r)[1] += 0.5f;
          b.episode_returns()[r] = running_return_ + b.rewards()[r];
          b.episode_lengths()[r] = step_;
        }
        ++episode_;
        step_ = 0;
        running_return_ = 0.0f;
      } else {
        b.rewards()[r] = reward_value(episode_, step_ - 1);
        running_return_ += b.rewards()[r];
      }
    }
    b.observations().row(r)[0] = obs_value(r, episode_, step_);
    b.observations().row(r)[1] = obs_value(r, episode_, step_) + 0.5f;
    b.discrete_actions().row(r)[0] = action_value(episode_, step_);
    // At an episode's start the policy's storage still holds the old
    // episode's state: the feeder must store zeros, not this.
    const auto state = step_ == 0 ? std::vector<float>(state_dim, -1.0f) : policy_state(r, episode_, step_);
    std::ranges::copy(state, states.begin() + static_cast<std::ptrdiff_t>(r * state_dim));
    ++step_;
  }

  [[nodiscard]] const std::vector<episode_plan>& plan() const noexcept { return plan_; }

 private:
  std::uint32_t row_;
  std::vector<episode_plan> plan_;
  int episode_ = 0;
  int step_ = 0;  // the next step to choose in episode_
  float running_return_ = 0.0f;
};

/// One sequence as received, copied out of its block.
struct sequence_copy {
  std::uint32_t stream = 0;
  std::vector<float> observations;
  std::vector<std::int32_t> actions;
  std::vector<float> rewards;
  std::vector<std::uint8_t> flags;
  std::vector<float> state;
};

/// The sequence of row r's episode e holding, per slot, the episode steps
/// `steps` (−1: padding), as sequence.hpp defines it.
sequence_copy expected_sequence(const sequence_layout& layout, std::uint32_t r, int e, const episode_plan& plan,
                                const std::vector<int>& steps, bool with_state = true) {
  const std::size_t length = layout.length;
  REQUIRE(steps.size() == length);
  sequence_copy s;
  s.stream = r;
  s.observations.assign((length + 1) * obs_dim, 0.0f);
  s.actions.assign(length, 0);
  s.rewards.assign(length, 0.0f);
  s.flags.assign(length, 0);
  s.state.assign(with_state ? state_dim : 0, 0.0f);
  int first = -1;
  int last_slot = -1;
  for (std::size_t i = 0; i < length; ++i) {
    const int t = steps[i];
    if (t < 0) continue;
    if (first < 0) first = t;
    last_slot = static_cast<int>(i);
    s.observations[i * obs_dim] = obs_value(r, e, t);
    s.observations[i * obs_dim + 1] = obs_value(r, e, t) + 0.5f;
    s.actions[i] = action_value(e, t);
    s.rewards[i] = reward_value(e, t);
    std::uint8_t f = replay::slot_valid;
    if (t == 0) f |= replay::slot_first;
    if (t == plan.length - 1 && plan.end == end_kind::terminated) f |= replay::slot_terminated;
    if (t == plan.length - 1 && plan.end == end_kind::truncated) f |= replay::slot_truncated;
    s.flags[i] = f;
  }
  REQUIRE(first >= 0);
  const int last = steps[static_cast<std::size_t>(last_slot)];
  const auto after = static_cast<std::size_t>(last_slot + 1) * obs_dim;
  if (last < plan.length - 1) {
    // Cut mid-episode: the next observation bootstraps the last steps.
    s.observations[after] = obs_value(r, e, last + 1);
    s.observations[after + 1] = obs_value(r, e, last + 1) + 0.5f;
  } else if (plan.end == end_kind::truncated) {
    s.observations[after] = obs_value(r, e, plan.length);
    s.observations[after + 1] = obs_value(r, e, plan.length) + 0.5f;
  }
  if (with_state && first > 0) s.state = policy_state(r, e, first);
  return s;
}

/// Every sequence of an episode by sequence.hpp's formula: sequence k holds
/// steps [k·stride − burn_in, k·stride − burn_in + length); the ones with a
/// step in their trained part (or, for a failed episode, only the ones
/// complete before the failure).
std::vector<std::vector<int>> formula_steps(const sequence_layout& layout, const episode_plan& plan) {
  const auto length = static_cast<int>(layout.length);
  const auto burn_in = static_cast<int>(layout.burn_in);
  const auto stride = static_cast<int>(layout.stride());
  std::vector<std::vector<int>> out;
  for (int k = 0;; ++k) {
    const int start = k * stride - burn_in;
    if (plan.end == end_kind::failed ? start + length - 1 > plan.length - 2 : k * stride > plan.length - 1) break;
    std::vector<int> steps(layout.length);
    for (int i = 0; i < length; ++i) {
      const int t = start + i;
      steps[static_cast<std::size_t>(i)] = (t >= 0 && t < plan.length) ? t : -1;
    }
    out.push_back(steps);
  }
  return out;
}

/// A feeder over `rows` rows with a sink that records what it is sent.
class harness {
 public:
  harness(std::size_t rows, sequence_layout layout)
      : batch_(rows, obs_dim, 1, 0), states_(rows * state_dim, 0.0f) {
    layout.obs_dim = obs_dim;
    layout.discrete_dim = 1;
    layout_ = layout;
    sequence_sink sink{.take_block =
                           [this]() -> std::unique_ptr<sequence_block> {
                             if (free_.empty()) return nullptr;
                             auto b = std::move(free_.back());
                             free_.pop_back();
                             return b;
                           },
                       .send = [this](std::unique_ptr<sequence_block> b) { receive(std::move(b)); }};
    feeder_ = std::make_unique<sequence_feeder>(
        batch_, layout, std::move(sink),
        [this](double ret, double len) { episodes_.emplace_back(ret, len); });
    if (layout.state_dim > 0) feeder_->record_states_from(states_);
  }

  /// Steps the rows listed (any order, any subset) once; rows not listed
  /// are scribbled over, as rows of groups still in flight may be.
  void step(std::vector<row_script>& scripts, std::vector<std::uint32_t> rows) {
    std::ranges::sort(rows);
    for (std::uint32_t r = 0; r < batch_.rows(); ++r) {
      if (std::ranges::binary_search(rows, r)) {
        scripts[r].write(batch_, states_);
        continue;
      }
      std::ranges::fill(batch_.observations().row(r), -7.0f);
      batch_.rewards()[r] = -7.0f;
      batch_.terminated()[r] = 1;
      batch_.truncated()[r] = 1;
      batch_.failed()[r] = 1;
      std::fill_n(states_.begin() + static_cast<std::ptrdiff_t>(r * state_dim), state_dim, -7.0f);
    }
    std::vector<coral::actors::row_range> ranges;
    for (const std::uint32_t r : rows) {
      if (!ranges.empty() && ranges.back().first + ranges.back().count == r) {
        ++ranges.back().count;
      } else {
        ranges.push_back({r, 1});
      }
    }
    consumed_ += rows.size();
    feeder_->consume({.batch = batch_, .ranges = ranges});
  }

  /// Steps every row in order until each script is done.
  void run_in_order(std::vector<row_script>& scripts) {
    while (!std::ranges::all_of(scripts, [](const row_script& s) { return s.done(); })) {
      std::vector<std::uint32_t> rows;
      for (std::uint32_t r = 0; r < scripts.size(); ++r) {
        if (!scripts[r].done()) rows.push_back(r);
      }
      step(scripts, rows);
    }
  }

  /// The sequences received from row r, in the order sent.
  [[nodiscard]] std::vector<sequence_copy> of_row(std::uint32_t r) const {
    std::vector<sequence_copy> out;
    for (const auto& s : received_) {
      if (s.stream == r) out.push_back(s);
    }
    return out;
  }

  [[nodiscard]] const std::vector<sequence_copy>& received() const noexcept { return received_; }
  [[nodiscard]] const std::vector<std::pair<double, double>>& episodes() const noexcept { return episodes_; }
  [[nodiscard]] std::uint64_t env_steps_sent() const noexcept { return env_steps_sent_; }
  [[nodiscard]] std::size_t blocks_sent() const noexcept { return blocks_sent_; }
  [[nodiscard]] std::uint64_t consumed() const noexcept { return consumed_; }
  /// Offers the feeder `block` as a free block to fill.
  void offer(std::unique_ptr<sequence_block> block) { free_.push_back(std::move(block)); }
  [[nodiscard]] const sequence_layout& layout() const noexcept { return layout_; }

 private:
  void receive(std::unique_ptr<sequence_block> b) {
    REQUIRE(b->env_steps > 0);  // a block always accounts for env steps, with or without sequences
    const sequence_layout& l = b->layout;
    CHECK(l.length == layout_.length);
    CHECK(l.state_dim == layout_.state_dim);
    REQUIRE(b->observations.size() == b->size() * l.observation_floats());
    REQUIRE(b->actions.size() == b->size() * l.length * l.discrete_dim);
    REQUIRE(b->rewards.size() == b->size() * l.length);
    REQUIRE(b->flags.size() == b->size() * l.length);
    REQUIRE(b->states.size() == b->size() * l.state_dim);
    for (std::size_t i = 0; i < b->size(); ++i) {
      const auto span_of = [i](const auto& v, std::size_t width) {
        return std::vector(v.begin() + static_cast<std::ptrdiff_t>(i * width),
                           v.begin() + static_cast<std::ptrdiff_t>((i + 1) * width));
      };
      received_.push_back({.stream = b->streams[i],
                           .observations = span_of(b->observations, l.observation_floats()),
                           .actions = span_of(b->actions, l.length * l.discrete_dim),
                           .rewards = span_of(b->rewards, l.length),
                           .flags = span_of(b->flags, l.length),
                           .state = span_of(b->states, l.state_dim)});
    }
    env_steps_sent_ += b->env_steps;
    ++blocks_sent_;
  }

  coral::envs::env_batch batch_;
  std::vector<float> states_;
  sequence_layout layout_;
  std::unique_ptr<sequence_feeder> feeder_;
  std::vector<std::unique_ptr<sequence_block>> free_;
  std::vector<sequence_copy> received_;
  std::vector<std::pair<double, double>> episodes_;
  std::uint64_t env_steps_sent_ = 0;
  std::uint64_t consumed_ = 0;
  std::size_t blocks_sent_ = 0;
};

void check_same(const sequence_copy& got, const sequence_copy& want) {
  CHECK(got.stream == want.stream);
  CHECK(got.flags == want.flags);
  CHECK(got.observations == want.observations);
  CHECK(got.actions == want.actions);
  CHECK(got.rewards == want.rewards);
  CHECK(got.state == want.state);
}

/// Checks that row r sent, episode by episode, exactly the sequences whose
/// per-slot steps are listed.
void check_row(const harness& h, const row_script& script, std::uint32_t r,
               const std::vector<std::vector<std::vector<int>>>& per_episode) {
  const auto got = h.of_row(r);
  std::size_t next = 0;
  for (std::size_t e = 0; e < per_episode.size(); ++e) {
    for (const auto& steps : per_episode[e]) {
      INFO("row " << r << " episode " << e << " sequence " << next);
      REQUIRE(next < got.size());
      check_same(got[next], expected_sequence(h.layout(), r, static_cast<int>(e), script.plan()[e], steps,
                                              h.layout().state_dim > 0));
      ++next;
    }
  }
  CHECK(next == got.size());
}

/// Every received sequence trains on at least one step.
void check_trained_parts(const harness& h) {
  for (const auto& s : h.received()) {
    CHECK(std::any_of(s.flags.begin() + static_cast<std::ptrdiff_t>(h.layout().burn_in), s.flags.end(),
                      [](std::uint8_t f) { return (f & replay::slot_valid) != 0; }));
  }
}

sequence_layout layout_of(std::size_t length, std::size_t burn_in, std::size_t overlap, std::size_t sd = state_dim) {
  return {.length = length, .burn_in = burn_in, .overlap = overlap, .state_dim = sd};
}

}  // namespace

TEST_CASE("a sequence feeder cuts episodes shorter than, as long as and longer than a sequence (overlap = burn-in)",
          "[replay][sequence_feeder]") {
  harness h(1, layout_of(4, 2, 2));  // stride 2
  std::vector<row_script> scripts{
      {0, {{1, end_kind::terminated}, {4, end_kind::truncated}, {7, end_kind::terminated}}}};
  h.run_in_order(scripts);
  check_row(h, scripts[0], 0,
            {
                // One step: only the first sequence trains on it; the second
                // would train on nothing and is not sent.
                {{-1, -1, 0, -1}},
                // As long as a sequence: the first is cut mid-episode at step 1.
                {{-1, -1, 0, 1}, {0, 1, 2, 3}},
                // Longer: every step in the trained part [2, 4) of exactly one.
                {{-1, -1, 0, 1}, {0, 1, 2, 3}, {2, 3, 4, 5}, {4, 5, 6, -1}},
            });
  check_trained_parts(h);
  CHECK(h.received().size() == 7);

  // Spelled out for a few: flags, the bootstrap observation and the state.
  const auto got = h.of_row(0);
  REQUIRE(got.size() == 7);
  const std::uint8_t valid = replay::slot_valid;
  CHECK(got[0].flags == std::vector<std::uint8_t>{0, 0, valid | replay::slot_first | replay::slot_terminated, 0});
  // A terminated end stores no observation after the last step.
  CHECK(got[0].observations == std::vector<float>{0, 0, 0, 0, 10000, 10000.5f, 0, 0, 0, 0});
  CHECK(got[0].rewards == std::vector<float>{0, 0, 1, 0});
  // Cut mid-episode at step 1: observation slot 4 holds o_2 of the episode.
  CHECK(got[1].flags == std::vector<std::uint8_t>{0, 0, valid | replay::slot_first, valid});
  CHECK(got[1].observations[4 * obs_dim] == 10102.0f);
  // The truncated end: its final observation goes right after the last step (slot 4 here).
  CHECK(got[2].flags ==
        std::vector<std::uint8_t>{valid | replay::slot_first, valid, valid, valid | replay::slot_truncated});
  CHECK(got[2].observations[4 * obs_dim] == 10104.0f);
  CHECK(got[2].observations[4 * obs_dim + 1] == 10104.5f);
  // States: zeros for sequences starting at step 0 or before, else the policy's state before the first step.
  CHECK(got[2].state == std::vector<float>{0, 0});
  CHECK(got[5].state == policy_state(0, 2, 2));
  CHECK(got[6].state == policy_state(0, 2, 4));
  // Episodes: (return, length).
  CHECK(h.episodes() == std::vector<std::pair<double, double>>{{1.0, 1.0}, {1.5 + 2.5 + 3.5 + 4.5, 4.0},
                                                               {2 + 3 + 4 + 5 + 6 + 7 + 8, 7.0}});
}

TEST_CASE("a sequence feeder cuts episodes by the stride when the overlap differs from the burn-in",
          "[replay][sequence_feeder]") {
  SECTION("overlap > burn-in: trained parts overlap") {
    harness h(1, layout_of(5, 1, 3));  // stride 2
    std::vector<row_script> scripts{
        {0, {{3, end_kind::terminated}, {5, end_kind::truncated}, {8, end_kind::truncated}}}};
    h.run_in_order(scripts);
    check_row(h, scripts[0], 0,
              {
                  {{-1, 0, 1, 2, -1}, {1, 2, -1, -1, -1}},
                  {{-1, 0, 1, 2, 3}, {1, 2, 3, 4, -1}, {3, 4, -1, -1, -1}},
                  {{-1, 0, 1, 2, 3}, {1, 2, 3, 4, 5}, {3, 4, 5, 6, 7}, {5, 6, 7, -1, -1}},
              });
    check_trained_parts(h);
  }
  SECTION("overlap < burn-in, stride > trained part: some steps are only burn-in") {
    harness h(1, layout_of(6, 3, 1));  // stride 5
    std::vector<row_script> scripts{{0, {{9, end_kind::terminated}, {2, end_kind::truncated}}}};
    h.run_in_order(scripts);
    check_row(h, scripts[0], 0,
              {
                  {{-1, -1, -1, 0, 1, 2}, {2, 3, 4, 5, 6, 7}},
                  {{-1, -1, -1, 0, 1, -1}},
              });
    check_trained_parts(h);
  }
  SECTION("stride < burn-in: several sequences start in the padding") {
    harness h(1, layout_of(6, 4, 4));  // stride 2
    std::vector<row_script> scripts{{0, {{3, end_kind::terminated}, {7, end_kind::truncated}}}};
    h.run_in_order(scripts);
    check_row(h, scripts[0], 0,
              {
                  {{-1, -1, -1, -1, 0, 1}, {-1, -1, 0, 1, 2, -1}},
                  // Steps 4..9 would only burn in (steps 8 and 9 do not exist): not sent.
                  {{-1, -1, -1, -1, 0, 1}, {-1, -1, 0, 1, 2, 3}, {0, 1, 2, 3, 4, 5}, {2, 3, 4, 5, 6, -1}},
              });
    check_trained_parts(h);
  }
}

TEST_CASE("a sequence feeder drops a row's open sequences when its env fails and is reset",
          "[replay][sequence_feeder]") {
  harness h(2, layout_of(4, 2, 2));
  std::vector<row_script> scripts{{0, {{6, end_kind::failed}, {3, end_kind::terminated}}},
                                  {1, {{5, end_kind::truncated}}}};
  h.run_in_order(scripts);
  check_row(h, scripts[0], 0,
            {
                // Steps 0..5 chosen, the outcome of step 5 is the failure:
                // the sequences complete before it are sent, the open ones
                // (steps 2..5 and 4..7) are not.
                {{-1, -1, 0, 1}, {0, 1, 2, 3}},
                // The new episode starts afresh: its first state is zeros.
                {{-1, -1, 0, 1}, {0, 1, 2, -1}},
            });
  check_row(h, scripts[1], 1, {{{-1, -1, 0, 1}, {0, 1, 2, 3}, {2, 3, 4, -1}}});
  // The failed episode is not reported (row 1's episode ends first).
  CHECK(h.episodes() == std::vector<std::pair<double, double>>{{1 + 2 + 3 + 4 + 5, 5.0}, {1.5 + 2.5 + 3.5, 3.0}});
  check_trained_parts(h);
}

TEST_CASE("a sequence feeder gets each row its own steps and state when batches hold rows in any order",
          "[replay][sequence_feeder]") {
  for (const auto& layout : {layout_of(5, 2, 2), layout_of(5, 1, 3), layout_of(8, 4, 4), layout_of(3, 0, 0)}) {
    INFO("length " << layout.length << " burn_in " << layout.burn_in << " overlap " << layout.overlap);
    std::mt19937 rng(12);
    std::vector<row_script> scripts;
    constexpr std::uint32_t rows = 6;
    for (std::uint32_t r = 0; r < rows; ++r) {
      std::vector<episode_plan> plan;
      for (int e = 0; e < 6; ++e) {
        const int length = 1 + static_cast<int>(rng() % 13);
        const auto end = static_cast<end_kind>(rng() % 3);
        plan.push_back({length, end});
      }
      scripts.emplace_back(r, plan);
    }
    harness h(rows, layout);
    while (!std::ranges::all_of(scripts, [](const row_script& s) { return s.done(); })) {
      std::vector<std::uint32_t> pick;
      for (std::uint32_t r = 0; r < rows; ++r) {
        if (!scripts[r].done() && rng() % 2 == 0) pick.push_back(r);
      }
      if (pick.empty()) continue;
      std::ranges::shuffle(pick, rng);  // the feeder must not care in which order rows come
      h.step(scripts, pick);
    }
    for (std::uint32_t r = 0; r < rows; ++r) {
      std::vector<std::vector<std::vector<int>>> per_episode;
      for (const auto& plan : scripts[r].plan()) per_episode.push_back(formula_steps(layout, plan));
      check_row(h, scripts[r], r, per_episode);
    }
    check_trained_parts(h);
    CHECK(h.env_steps_sent() == h.consumed());
  }
}

TEST_CASE("a sequence feeder sends one block per call, with the sequences it completed and its env steps",
          "[replay][sequence_feeder]") {
  harness h(2, layout_of(4, 2, 2));
  // A block handed back dirty by the replay is cleared before it is filled.
  auto dirty = std::make_unique<sequence_block>();
  dirty->streams.assign(3, 9);
  dirty->rewards.assign(5, 9.0f);
  dirty->env_steps = 40;
  h.offer(std::move(dirty));
  std::vector<row_script> scripts{{0, {{9, end_kind::terminated}}}, {1, {{9, end_kind::terminated}}}};
  h.step(scripts, {0, 1});  // step 0 chosen: nothing complete, its env steps go at once
  CHECK(h.blocks_sent() == 1);
  CHECK(h.received().empty());
  CHECK(h.env_steps_sent() == 2);
  h.step(scripts, {1});     // step 1 chosen on row 1
  CHECK(h.blocks_sent() == 2);
  CHECK(h.env_steps_sent() == 3);
  h.step(scripts, {1, 0});  // row 1's step 1 outcome: its first sequence is complete
  CHECK(h.blocks_sent() == 3);
  CHECK(h.received().size() == 1);
  CHECK(h.env_steps_sent() == 5);
  h.step(scripts, {0});
  CHECK(h.blocks_sent() == 4);
  CHECK(h.received().size() == 2);
  CHECK(h.env_steps_sent() == 6);
}

TEST_CASE("a sequence feeder with no recurrent state stores none", "[replay][sequence_feeder]") {
  harness h(1, layout_of(4, 2, 2, 0));
  std::vector<row_script> scripts{{0, {{5, end_kind::truncated}}}};
  h.run_in_order(scripts);
  check_row(h, scripts[0], 0, {{{-1, -1, 0, 1}, {0, 1, 2, 3}, {2, 3, 4, -1}}});
  for (const auto& s : h.received()) CHECK(s.state.empty());
}

TEST_CASE("a sequence feeder refuses a layout that does not fit, saying what is wrong",
          "[replay][sequence_feeder][errors]") {
  coral::envs::env_batch batch(2, obs_dim, 1, 0);
  const sequence_sink sink{.take_block = nullptr, .send = [](std::unique_ptr<sequence_block>) {}};
  const auto layout = [](std::size_t length, std::size_t burn_in, std::size_t overlap) {
    return sequence_layout{.length = length, .burn_in = burn_in, .overlap = overlap, .obs_dim = obs_dim};
  };
  const auto part = [](const char* what, std::size_t value, std::size_t length) {
    return Catch::Message(
        fmt::format(fmt::runtime(coral::replay::errors::sequence_part_too_long), what, value, length));
  };
  CHECK_THROWS_MATCHES(sequence_feeder(batch, layout(0, 0, 0), sink, nullptr), coral::config_error,
                       Catch::Message(std::string(coral::replay::errors::zero_sequence_length)));
  CHECK_THROWS_MATCHES(sequence_feeder(batch, layout(4, 4, 2), sink, nullptr), coral::config_error,
                       part("burn_in", 4, 4));
  CHECK_THROWS_MATCHES(sequence_feeder(batch, layout(4, 2, 5), sink, nullptr), coral::config_error,
                       part("overlap", 5, 4));
  auto wrong = layout(4, 2, 2);
  wrong.obs_dim = 3;
  CHECK_THROWS_MATCHES(
      sequence_feeder(batch, wrong, sink, nullptr), coral::config_error,
      Catch::Message(fmt::format(fmt::runtime(coral::replay::errors::sequence_feeder_shape), "obs_dim", 3, obs_dim)));
  coral::envs::env_batch continuous(2, obs_dim, 1, 1);
  CHECK_THROWS_MATCHES(sequence_feeder(continuous, layout(4, 2, 2), sink, nullptr), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(coral::replay::errors::sequence_feeder_shape),
                                                  "continuous action floats", 0, 1)));
  CHECK_THROWS_MATCHES(sequence_feeder(batch, layout(4, 2, 2), sequence_sink{}, nullptr), coral::config_error,
                       Catch::Message(std::string(coral::replay::errors::sequence_feeder_no_send)));
}

TEST_CASE("a sequence feeder with a recurrent state needs the policy's states, one row each",
          "[replay][sequence_feeder][errors]") {
  coral::envs::env_batch batch(2, obs_dim, 1, 0);
  const sequence_sink sink{.take_block = nullptr, .send = [](std::unique_ptr<sequence_block>) {}};
  sequence_feeder feeder(batch,
                         {.length = 4, .burn_in = 2, .overlap = 2, .obs_dim = obs_dim, .state_dim = state_dim}, sink,
                         nullptr);
  const std::vector<float> states(2 * state_dim + 1);
  CHECK_THROWS_MATCHES(feeder.record_states_from(states), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(coral::replay::errors::sequence_feeder_states_size),
                                                  2 * state_dim + 1, 2 * state_dim)));
  const coral::actors::row_range rows[1] = {{0, 2}};
  CHECK_THROWS_MATCHES(
      feeder.consume({.batch = batch, .ranges = rows}), coral::usage_error,
      Catch::Message(fmt::format(fmt::runtime(coral::replay::errors::sequence_feeder_no_states), state_dim)));
}
