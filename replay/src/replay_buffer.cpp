#include "coral/replay/replay_buffer.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/detail/key_kernels.hpp"
#include "coral/replay/detail/pow_kernel.hpp"
#include "coral/replay/detail/saved_state.hpp"
#include "coral/replay/detail/strata_kernel.hpp"
#include "coral/replay/errors.hpp"

namespace coral::replay {

using detail::copy_bytes;
using detail::get_at;
using detail::section_header_size;
using detail::state_reader;
using detail::state_writer;

namespace {


void check_exponent(const char* name, double value) {
  if (!(value >= 0.0 && value <= 1.0)) {
    throw config_error(fmt::format(fmt::runtime(errors::bad_exponent), name, value));
  }
}

void check_size(const char* name, std::size_t actual, std::size_t expected) {
  if (actual != expected) throw config_error(fmt::format(fmt::runtime(errors::size_mismatch), name, actual, expected));
}

const replay_config& checked(const replay_config& c) {
  if (c.num_streams == 0) throw config_error(std::string(errors::zero_streams));
  if (c.capacity == 0 || c.capacity % c.num_streams != 0) {
    throw config_error(fmt::format(fmt::runtime(errors::bad_capacity), c.capacity, c.num_streams));
  }
  if (c.n_step == 0) throw config_error(std::string(errors::zero_n_step));
  if (c.capacity / c.num_streams < c.n_step + 2) {
    throw config_error(fmt::format(fmt::runtime(errors::stream_too_small), c.n_step + 2, c.capacity / c.num_streams));
  }
  check_exponent("alpha", c.alpha);
  if (!(c.epsilon > 0.0)) throw config_error(fmt::format(fmt::runtime(errors::bad_epsilon), c.epsilon));
  return c;
}

// The replay buffer's saved state (detail/saved_state.hpp has the format).
constexpr detail::blob_kind state_kind{
    .magic = {'c', 'o', 'r', 'a', 'l', 'r', 'b', '\0'},
    .version = 1,
    .malformed = errors::malformed_state,
    .unsupported_version = errors::unsupported_state_version,
    .shape_mismatch = errors::state_shape_mismatch,
    .bad_magic = errors::state_bad_magic,
};

// A key as the kernels write it: the slot's word, then the generation's.
static_assert(sizeof(sample_key) == 2 * sizeof(std::uint64_t) && offsetof(sample_key, slot) == 0 &&
              offsetof(sample_key, generation) == sizeof(std::uint64_t) && sizeof(std::size_t) == sizeof(std::uint64_t));
std::uint64_t* key_words(std::vector<sample_key>& keys) noexcept { return reinterpret_cast<std::uint64_t*>(keys.data()); }

// A priority^alpha leaf, as update_priorities computes it.
double leaf_of(double priority, double alpha) {
  return std::max(detail::scalar::pow_one(static_cast<float>(priority), static_cast<float>(alpha)),
                  std::numeric_limits<float>::min());
}

}  // namespace

replay_buffer::replay_buffer(const replay_config& config)
    : config_(checked(config)),
      stream_capacity_(config.capacity / config.num_streams),
      observations_(config.capacity, config.obs_dim),
      discrete_(config.capacity, config.discrete_action_dim),
      continuous_(config.capacity, config.continuous_action_dim),
      masks_(config.capacity, config.mask_dim),
      returns_(config.capacity),
      discounts_(config.capacity),
      steps_(config.capacity),
      states_(config.capacity, state_empty),
      priorities_(config.capacity),
      heads_(config.num_streams),
      ring_heads_(config.num_streams),
      stream_of_(config.capacity / config.num_streams),
      tree_(config.capacity) {}

std::size_t replay_buffer::claim(std::size_t stream) {
  const std::size_t slot = stream * stream_capacity_ + ring_heads_[stream];
  advance(stream, 1);
  if (states_[slot] == state_complete) --complete_;
  tree_.leaf_data()[slot] = 0.0f;
  return slot;
}

void replay_buffer::advance(std::size_t stream, std::size_t count) noexcept {
  heads_[stream] += count;
  inserts_ += count;
  ring_heads_[stream] += count;
  if (ring_heads_[stream] == stream_capacity_) ring_heads_[stream] = 0;
}

void replay_buffer::validate(std::size_t stream, const transition_batch& b) const {
  if (stream >= config_.num_streams) {
    throw config_error(fmt::format(fmt::runtime(errors::bad_stream), stream, config_.num_streams));
  }
  check_size("observations", b.observations.size(), b.count * config_.obs_dim);
  check_size("discrete_actions", b.discrete_actions.size(), b.count * config_.discrete_action_dim);
  check_size("continuous_actions", b.continuous_actions.size(), b.count * config_.continuous_action_dim);
  check_size("n_step_returns", b.n_step_returns.size(), b.count);
  check_size("discounts", b.discounts.size(), b.count);
  check_size("steps", b.steps.size(), b.count);
  check_size("last_of_episode", b.last_of_episode.size(), b.count);
  check_size("next_observations", b.next_observations.size(), b.count * config_.obs_dim);
  check_size("action_masks", b.action_masks.size(), b.count * config_.mask_dim);
  check_size("next_action_masks", b.next_action_masks.size(), b.count * config_.mask_dim);
  // One pass without a branch per item; a second finds the first bad one.
  bool bad = false;
  for (std::size_t i = 0; i < b.count; ++i) {
    const std::size_t limit = b.last_of_episode[i] ? 1 : config_.n_step;
    bad |= b.steps[i] < 1 || b.steps[i] > limit;
  }
  if (!bad) [[likely]] return;
  for (std::size_t i = 0; i < b.count; ++i) {
    const std::size_t limit = b.last_of_episode[i] ? 1 : config_.n_step;
    if (b.steps[i] < 1 || b.steps[i] > limit) {
      throw config_error(fmt::format(fmt::runtime(errors::bad_steps), b.steps[i], limit));
    }
  }
}

void replay_buffer::insert(std::size_t stream, const transition& t) {
  const std::uint8_t last = t.last_of_episode ? 1 : 0;
  transition_batch b;
  b.count = 1;
  b.observations = t.observation;
  b.discrete_actions = t.discrete_action;
  b.continuous_actions = t.continuous_action;
  b.n_step_returns = {&t.n_step_return, 1};
  b.discounts = {&t.discount, 1};
  b.steps = {&t.steps, 1};
  b.last_of_episode = {&last, 1};
  b.next_observations = t.next_observation;
  b.action_masks = t.action_mask;
  b.next_action_masks = t.next_action_mask;
  insert(stream, b);
}

void replay_buffer::insert(std::size_t stream, const transition_batch& b) {
  validate(stream, b);
  const std::uint64_t old_head = heads_[stream];
  const std::size_t obs_dim = config_.obs_dim;
  const std::size_t ddim = config_.discrete_action_dim;
  const std::size_t cdim = config_.continuous_action_dim;
  const std::size_t mdim = config_.mask_dim;
  const std::size_t base = stream * stream_capacity_;
  float* const leaves = tree_.leaf_data();
  // In runs of items that take consecutive slots: up to the ring's end or
  // an episode's last transition (a frame follows it), whichever comes
  // first. Each column of a run is one copy or one fill, and the slots it
  // overwrites are counted out of complete_ in one pass.
  for (std::size_t i = 0; i < b.count;) {
    const std::size_t first = ring_heads_[stream];
    std::size_t run = std::min(b.count - i, stream_capacity_ - first);
    const std::uint8_t* last = b.last_of_episode.data() + i;
    const std::size_t ends_at = static_cast<std::size_t>(std::find_if(last, last + run, [](std::uint8_t x) { return x != 0; }) - last);
    const bool episode_ends = ends_at < run;
    if (episode_ends) run = ends_at + 1;
    const std::size_t slot = base + first;
    std::size_t overwritten = 0;
    for (std::size_t k = 0; k < run; ++k) overwritten += states_[slot + k] == state_complete ? 1 : 0;
    complete_ -= overwritten;
    std::fill_n(leaves + slot, run, 0.0f);
    std::fill_n(states_.data() + slot, run, state_pending);
    std::fill_n(priorities_.data() + slot, run, max_leaf_);
    std::copy_n(b.observations.data() + i * obs_dim, run * obs_dim, observations_.data() + slot * obs_dim);
    std::copy_n(b.discrete_actions.data() + i * ddim, run * ddim, discrete_.data() + slot * ddim);
    std::copy_n(b.continuous_actions.data() + i * cdim, run * cdim, continuous_.data() + slot * cdim);
    std::copy_n(b.action_masks.data() + i * mdim, run * mdim, masks_.data() + slot * mdim);
    std::copy_n(b.n_step_returns.data() + i, run, returns_.data() + slot);
    std::copy_n(b.discounts.data() + i, run, discounts_.data() + slot);
    for (std::size_t k = 0; k < run; ++k) steps_[slot + k] = static_cast<std::uint16_t>(b.steps[i + k]);
    advance(stream, run);
    i += run;
    if (episode_ends) {
      const std::size_t frame = claim(stream);
      std::copy_n(b.next_observations.data() + (i - 1) * obs_dim, obs_dim, observations_.data() + frame * obs_dim);
      std::copy_n(b.next_action_masks.data() + (i - 1) * mdim, mdim, masks_.data() + frame * mdim);
      steps_[frame] = 0;
      priorities_[frame] = 0.0;  // a frame has no priority (and so save/load round-trips exactly)
      states_[frame] = state_frame;
    }
  }
  complete_and_refresh(stream, old_head);
}

void replay_buffer::complete_and_refresh(std::size_t stream, std::uint64_t old_head) {
  const std::uint64_t head = heads_[stream];
  const std::size_t cap = stream_capacity_;
  const std::size_t base = stream * cap;
  // A pending transition at p bootstraps from p + k, k <= n, and p + k >= the
  // head before this insert; so only positions from old_head - n can change.
  std::uint64_t first = old_head >= config_.n_step ? old_head - config_.n_step : 0;
  if (head - first > cap) first = head - cap;  // older positions were overwritten in this call
  float* leaves = tree_.leaf_data();
  std::size_t slot = base + static_cast<std::size_t>(first % cap);
  for (std::uint64_t p = first; p < head; ++p) {
    if (states_[slot] == state_pending && p + steps_[slot] < head) {
      states_[slot] = state_complete;
      ++complete_;
      leaves[slot] = static_cast<float>(priorities_[slot]);  // exact: priorities are float values
    }
    slot = slot + 1 == base + cap ? base : slot + 1;
  }
  // Recompute the ancestors of the touched positions [first, head), split
  // where they wrap around the stream's ring.
  const std::size_t lo = static_cast<std::size_t>(first % cap);
  const std::size_t count = static_cast<std::size_t>(head - first);
  if (lo + count <= cap) {
    tree_.refresh(base + lo, base + lo + count);
  } else {
    tree_.refresh(base + lo, base + cap);
    tree_.refresh(base, base + (lo + count - cap));
  }
}

void replay_buffer::cut(std::size_t stream) {
  if (stream >= config_.num_streams) {
    throw config_error(fmt::format(fmt::runtime(errors::bad_stream), stream, config_.num_streams));
  }
  // Only the last n items of the stream can be pending (an older one's
  // bootstrap item, at most n later, is already written). Their tree leaves
  // are already 0 (absent) and complete_ does not count them, so only the
  // state changes; complete_and_refresh then never completes them, and
  // claim() drops them like any other non-complete item.
  const std::uint64_t head = heads_[stream];
  const std::uint64_t first = head >= config_.n_step ? head - config_.n_step : 0;
  const std::size_t base = stream * stream_capacity_;
  for (std::uint64_t p = first; p < head; ++p) {
    const std::size_t slot = base + static_cast<std::size_t>(p % stream_capacity_);
    if (states_[slot] == state_pending) states_[slot] = state_abandoned;
  }
}

void replay_buffer::save(std::vector<char>& out) const {
  const std::size_t cap = config_.capacity;
  // One value per slot: a complete transition's priority lives in its leaf.
  std::vector<double> priorities(priorities_);
  for (std::size_t slot = 0; slot < cap; ++slot) {
    if (states_[slot] == state_complete) priorities[slot] = tree_.get(slot);
  }
  out.reserve(out.size() + 64 * section_header_size + observations_.size() * sizeof(float) +
              discrete_.size() * sizeof(std::int32_t) + continuous_.size() * sizeof(float) +
              cap * (2 * sizeof(float) + sizeof(std::uint16_t) + 1 + sizeof(double) + sizeof(std::uint64_t)));
  state_writer w(out, state_kind);
  w.scalar<std::uint64_t>("capacity", cap);
  w.scalar<std::uint64_t>("streams", config_.num_streams);
  w.scalar<std::uint64_t>("obs_dim", config_.obs_dim);
  w.scalar<std::uint64_t>("disc_dim", config_.discrete_action_dim);
  w.scalar<std::uint64_t>("cont_dim", config_.continuous_action_dim);
  w.scalar<std::uint64_t>("n_step", config_.n_step);
  // Written only where there are masks: a buffer without them saves the
  // blob it always did.
  if (config_.mask_dim > 0) w.scalar<std::uint64_t>("mask_dim", config_.mask_dim);
  w.scalar("alpha", config_.alpha);
  w.scalar("epsilon", config_.epsilon);
  w.scalar("max_prio", max_priority_);
  w.scalar("max_leaf", max_leaf_);
  w.scalar<std::uint64_t>("inserts", inserts_);
  w.scalar<std::uint64_t>("complete", complete_);
  w.section<std::uint64_t>("heads", heads_);
  w.section<float>("obs", {observations_.data(), observations_.size()});
  w.section<std::int32_t>("disc_act", {discrete_.data(), discrete_.size()});
  w.section<float>("cont_act", {continuous_.data(), continuous_.size()});
  w.section<float>("returns", returns_);
  w.section<float>("discount", discounts_);
  w.section<std::uint16_t>("steps", steps_);
  w.section<std::uint8_t>("states", states_);
  w.section<double>("priority", priorities);
  // Not kept since issue 15 (generation() derives them from the heads);
  // written for the format's sake, and ignored by load().
  std::vector<std::uint64_t> generations(cap);
  for (std::size_t slot = 0; slot < cap; ++slot) generations[slot] = generation(slot);
  w.section<std::uint64_t>("gens", generations);
  if (config_.mask_dim > 0) w.section<std::uint8_t>("masks", {masks_.data(), masks_.size()});
  w.finish();
}

void replay_buffer::load(std::span<const char> in) {
  // Everything is checked before anything is written, so a throw leaves the
  // buffer as it was.
  state_reader r(in, state_kind);
  const std::size_t cap = config_.capacity;
  r.check_shape("capacity", r.scalar<std::uint64_t>("capacity"), cap);
  r.check_shape("num_streams", r.scalar<std::uint64_t>("streams"), config_.num_streams);
  r.check_shape("obs_dim", r.scalar<std::uint64_t>("obs_dim"), config_.obs_dim);
  r.check_shape("discrete_action_dim", r.scalar<std::uint64_t>("disc_dim"), config_.discrete_action_dim);
  r.check_shape("continuous_action_dim", r.scalar<std::uint64_t>("cont_dim"), config_.continuous_action_dim);
  r.check_shape("n_step", r.scalar<std::uint64_t>("n_step"), config_.n_step);
  r.check_shape("mask_dim", r.next_is("mask_dim") ? r.scalar<std::uint64_t>("mask_dim") : 0, config_.mask_dim);
  const auto saved_alpha = r.scalar<double>("alpha");
  (void)r.scalar<double>("epsilon");  // informative only: it is already inside the saved priorities
  const auto max_priority = r.scalar<double>("max_prio");
  const auto max_leaf = r.scalar<double>("max_leaf");
  const auto inserts = r.scalar<std::uint64_t>("inserts");
  const auto complete = r.scalar<std::uint64_t>("complete");
  const char* heads = r.section<std::uint64_t>("heads", config_.num_streams);
  const char* observations = r.section<float>("obs", observations_.size());
  const char* discrete = r.section<std::int32_t>("disc_act", discrete_.size());
  const char* continuous = r.section<float>("cont_act", continuous_.size());
  const char* returns = r.section<float>("returns", cap);
  const char* discounts = r.section<float>("discount", cap);
  const char* steps = r.section<std::uint16_t>("steps", cap);
  const char* states = r.section<std::uint8_t>("states", cap);
  const char* priorities = r.section<double>("priority", cap);
  r.section<std::uint64_t>("gens", cap);  // derived from the heads (see save())
  const char* masks = config_.mask_dim > 0 ? r.section<std::uint8_t>("masks", masks_.size()) : nullptr;
  r.finish();

  // The checksum catches damage; these catch a blob that was consistent
  // when written by something other than save().
  if (!(saved_alpha >= 0.0 && saved_alpha <= 1.0)) {
    r.malformed(fmt::format(fmt::runtime(errors::state_bad_value), "alpha", saved_alpha, "[0, 1]"));
  }
  // Every priority^alpha save() writes is a float leaf in [FLT_MIN, FLT_MAX]
  // (a TD error is a float, and update_priorities keeps leaves at least
  // FLT_MIN): a complete transition's, the one a pending transition takes
  // when it completes, and the max leaf new transitions get. A leaf outside
  // it would make the tree's total infinite or negative, and the draws and
  // weights with it.
  constexpr double leaf_min = std::numeric_limits<float>::min();
  constexpr double leaf_max = std::numeric_limits<float>::max();
  if (!(max_priority > 0.0 && max_priority <= leaf_max)) {
    r.malformed(fmt::format(fmt::runtime(errors::state_bad_value), "max priority", max_priority, "(0, FLT_MAX]"));
  }
  if (!(max_leaf >= leaf_min && max_leaf <= leaf_max)) {
    r.malformed(fmt::format(fmt::runtime(errors::state_bad_value), "max leaf", max_leaf, "[FLT_MIN, FLT_MAX]"));
  }
  std::uint64_t head_sum = 0;
  for (std::size_t s = 0; s < config_.num_streams; ++s) head_sum += get_at<std::uint64_t>(heads + 8 * s);
  if (head_sum != inserts) r.malformed(fmt::format(fmt::runtime(errors::state_bad_counter), "inserts", inserts, head_sum));
  std::uint64_t complete_slots = 0;
  for (std::size_t slot = 0; slot < cap; ++slot) {
    const auto state = static_cast<std::uint8_t>(states[slot]);
    const auto k = get_at<std::uint16_t>(steps + 2 * slot);
    if (state > state_abandoned) r.malformed(fmt::format(fmt::runtime(errors::state_bad_slot), "state", slot, state));
    const bool transition = state == state_pending || state == state_complete || state == state_abandoned;
    if (transition && (k < 1 || k > config_.n_step)) {
      r.malformed(fmt::format(fmt::runtime(errors::state_bad_slot), "steps", slot, k));
    }
    if (state == state_complete) ++complete_slots;
    if (state == state_complete || state == state_pending) {
      const auto p = get_at<double>(priorities + 8 * slot);
      if (!(p >= leaf_min && p <= leaf_max)) {
        r.malformed(fmt::format(fmt::runtime(errors::state_bad_slot), "priority", slot, p));
      }
    }
  }
  if (complete_slots != complete) {
    r.malformed(fmt::format(fmt::runtime(errors::state_bad_counter), "complete", complete, complete_slots));
  }

  // Valid: replace the state.
  copy_bytes(heads_.data(), heads, heads_.size() * 8);
  copy_bytes(observations_.data(), observations, observations_.size() * sizeof(float));
  copy_bytes(discrete_.data(), discrete, discrete_.size() * sizeof(std::int32_t));
  copy_bytes(continuous_.data(), continuous, continuous_.size() * sizeof(float));
  if (masks != nullptr) copy_bytes(masks_.data(), masks, masks_.size());
  copy_bytes(returns_.data(), returns, cap * sizeof(float));
  copy_bytes(discounts_.data(), discounts, cap * sizeof(float));
  copy_bytes(steps_.data(), steps, cap * sizeof(std::uint16_t));
  copy_bytes(states_.data(), states, cap);
  copy_bytes(priorities_.data(), priorities, cap * sizeof(double));
  for (std::size_t s = 0; s < config_.num_streams; ++s) ring_heads_[s] = static_cast<std::size_t>(heads_[s] % stream_capacity_);
  max_priority_ = max_priority;
  inserts_ = inserts;
  complete_ = static_cast<std::size_t>(complete);
  if (saved_alpha == config_.alpha) {
    max_leaf_ = max_leaf;
  } else {
    max_leaf_ = leaf_of(max_priority_, config_.alpha);
    for (std::size_t slot = 0; slot < cap; ++slot) {
      const std::uint8_t state = states_[slot];
      if (state != state_complete && state != state_pending) continue;
      // (p^a)^(a'/a) = p^a'; with a = 0 every leaf is 1 and p is gone.
      // Within [FLT_MIN, FLT_MAX]: a leaf of a priority above FLT_MAX (a
      // small saved alpha raised to a large one) is the largest float.
      priorities_[slot] =
          saved_alpha > 0.0
              ? std::max<double>(
                    static_cast<float>(std::min(std::pow(priorities_[slot], config_.alpha / saved_alpha), leaf_max)),
                    leaf_min)
              : max_leaf_;
    }
  }
  float* leaves = tree_.leaf_data();
  for (std::size_t slot = 0; slot < cap; ++slot) {
    leaves[slot] = states_[slot] == state_complete ? static_cast<float>(priorities_[slot]) : 0.0f;
  }
  tree_.refresh(0, cap);
}

void replay_buffer::sample_uniform(coral::rng& rng, std::size_t batch, sampled_batch& out) const {
  if (complete_ == 0) throw config_error(std::string(errors::empty_buffer));
  out.keys.resize(batch);
  out.probabilities.resize(batch);
  out.weights.resize(batch);
  const double probability = 1.0 / static_cast<double>(complete_);
  for (std::size_t i = 0; i < batch; ++i) {
    // Rejection over all slots: frames, pending and empty slots are redrawn.
    // Every complete transition is equally likely.
    std::size_t slot = 0;
    do {
      slot = static_cast<std::size_t>(rng.below(config_.capacity));
    } while (states_[slot] != state_complete);
    out.keys[i] = {slot, generation(slot)};
    out.probabilities[i] = probability;
    out.weights[i] = 1.0f;
  }
}

void replay_buffer::sample_prioritized(coral::rng& rng, std::size_t batch, double beta, sampled_batch& out) const {
  if (complete_ == 0) throw config_error(std::string(errors::empty_buffer));
  check_exponent("beta", beta);
  out.keys.resize(batch);
  out.probabilities.resize(batch);
  out.weights.resize(batch);
  const double total = tree_.total();
  const double stratum = total / static_cast<double>(batch);
  // w_i = (N P(i))^-beta / (N P_min)^-beta = (p_i / p_min)^-beta.
  const double min_leaf = tree_.min();
  const auto neg_beta = static_cast<float>(-beta);
  // One position in each stratum; the generator gives only the seed of
  // the uniforms (detail/strata_kernel.hpp).
  detail::stratified_masses(detail::best_isa(), rng(), stratum, out.probabilities.data(), batch);
  scratch_slots_.resize(batch);
  tree_.find_prefix_many(out.probabilities, scratch_slots_);
  // Products with the reciprocals: within an ulp of the quotients (the
  // weight's ratio is rounded to float anyway), and no division per draw.
  const double inv_total = 1.0 / total;
  const double inv_min_leaf = 1.0 / min_leaf;
  for (std::size_t i = 0; i < batch; ++i) {
    const double leaf = tree_.get(scratch_slots_[i]);  // cached: the descent just read it
    out.probabilities[i] = leaf * inv_total;
    out.weights[i] = static_cast<float>(leaf * inv_min_leaf);
  }
  // Single precision, four at a time (detail/pow_kernel.hpp): weights are
  // floats anyway.
  detail::pow_many(out.weights.data(), neg_beta, out.weights.data(), batch);
  const std::size_t done =
      detail::make_keys(detail::best_isa(), heads_view(), scratch_slots_.data(), batch, key_words(out.keys));
  for (std::size_t i = done; i < batch; ++i) out.keys[i] = {scratch_slots_[i], generation(scratch_slots_[i])};
}

std::size_t replay_buffer::update_priorities(std::span<const sample_key> keys, std::span<const float> td_errors) {
  check_size("td_errors", td_errors.size(), keys.size());
  const std::size_t n = keys.size();
  scratch_slots_.resize(n);
  scratch_values_.resize(n);
  // No prefetch of the keys' tree lines here: a sample has just read their
  // leaf and group-sum lines, set_many asks for the group minima itself,
  // and asking for them a few keys ahead here makes the update slower,
  // for the three lines and for the minimum's alone.
  std::size_t applied = 0;
  std::size_t top = n;  // the applied key whose priority first passes the largest seen, if any
  double top_priority = max_priority_;
  for (std::size_t i = 0; i < n; ++i) {
    // Checked before anything changes: only scratch is written until the
    // loop ends.
    if (!std::isfinite(td_errors[i])) [[unlikely]] {
      throw config_error(fmt::format(fmt::runtime(errors::bad_td_error), i, td_errors[i]));
    }
    const sample_key key = keys[i];
    // A present leaf is exactly a complete transition (its leaf is at least
    // FLT_MIN, every other slot's is 0), and its line is fetched for the
    // update anyway: cheaper than reading states_.
    if (key.slot >= config_.capacity || generation(key.slot) != key.generation || !(tree_.get(key.slot) > 0.0f)) {
      continue;
    }
    const double priority = std::abs(static_cast<double>(td_errors[i])) + config_.epsilon;
    scratch_slots_[applied] = key.slot;
    scratch_values_[applied] = static_cast<float>(priority);
    if (priority > top_priority) {
      top_priority = priority;
      top = applied;
    }
    ++applied;
  }
  // priority^alpha in single precision, four at a time (detail/pow_kernel.hpp):
  // ample for a sampling weight.
  detail::pow_many(scratch_values_.data(), static_cast<float>(config_.alpha), scratch_values_.data(), applied);
  // Kept at least FLT_MIN: a zero leaf would make a complete transition
  // unsampleable and the importance-weight normaliser zero.
  for (std::size_t k = 0; k < applied; ++k) {
    scratch_values_[k] = std::max(scratch_values_[k], std::numeric_limits<float>::min());
  }
  if (top < n) {
    max_priority_ = top_priority;
    max_leaf_ = scratch_values_[top];
  }
  // priorities_ is read only when a pending transition completes; a complete
  // one's priority lives in its tree leaf, and skipping the write saves a
  // cache miss per update.
  tree_.set_many(std::span(scratch_slots_).first(applied), std::span(scratch_values_).first(applied));
  return applied;
}

}  // namespace coral::replay
