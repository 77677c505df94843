#include "coral/replay/sequence_buffer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/detail/saved_state.hpp"
#include "coral/replay/detail/strata_kernel.hpp"
#include "coral/replay/errors.hpp"

namespace coral::replay {

using detail::copy_bytes;
using detail::get_at;

namespace {

constexpr float leaf_min = std::numeric_limits<float>::min();
constexpr float leaf_max = std::numeric_limits<float>::max();

// The sequence buffer's saved state (detail/saved_state.hpp has the format).
constexpr detail::blob_kind sequence_state_kind{
    .magic = {'c', 'o', 'r', 'a', 'l', 's', 'q', '\0'},
    .version = 1,
    .malformed = errors::seq_malformed_state,
    .unsupported_version = errors::seq_unsupported_state_version,
    .shape_mismatch = errors::seq_state_shape_mismatch,
    .bad_magic = errors::seq_state_bad_magic,
};

void check_sequence_exponent(const char* name, double value) {
  if (!(value >= 0.0 && value <= 1.0)) {
    throw config_error(fmt::format(fmt::runtime(errors::seq_bad_exponent), name, value));
  }
}

void check_sequence_size(const char* name, std::size_t actual, std::size_t expected) {
  if (actual != expected) {
    throw config_error(fmt::format(fmt::runtime(errors::seq_size_mismatch), name, actual, expected));
  }
}

const sequence_buffer_config& checked(const sequence_buffer_config& c) {
  if (c.capacity == 0) throw config_error(std::string(errors::seq_zero_capacity));
  if (c.num_streams == 0) throw config_error(std::string(errors::seq_zero_streams));
  const sequence_layout& l = c.layout;
  if (l.length == 0 || l.burn_in >= l.length || l.overlap >= l.length) {
    throw config_error(fmt::format(fmt::runtime(errors::seq_bad_layout), l.length, l.burn_in, l.overlap));
  }
  check_sequence_exponent("alpha", c.alpha);
  if (!(c.epsilon > 0.0)) throw config_error(fmt::format(fmt::runtime(errors::seq_bad_epsilon), c.epsilon));
  return c;
}

// The fields of a layout: the name errors give them, the section of a
// saved state that holds them (at most 8 characters).
struct layout_field {
  const char* name;
  const char* section;
  std::size_t sequence_layout::*member;
};
constexpr layout_field layout_fields[] = {
    {"length", "length", &sequence_layout::length},
    {"burn_in", "burn_in", &sequence_layout::burn_in},
    {"overlap", "overlap", &sequence_layout::overlap},
    {"obs_dim", "obs_dim", &sequence_layout::obs_dim},
    {"discrete_dim", "disc_dim", &sequence_layout::discrete_dim},
    {"state_dim", "st_dim", &sequence_layout::state_dim},
};

// A priority as stored: a float, at most FLT_MAX.
float stored_priority(double value) noexcept {
  return static_cast<float>(std::min(value, static_cast<double>(leaf_max)));
}

// A priority's leaf: priority^alpha in single precision (weights are floats
// anyway), within [FLT_MIN, FLT_MAX] so that a held sequence is never absent
// from the tree and the total never infinite.
float leaf_of(float priority, double alpha) noexcept {
  return std::clamp(std::pow(priority, static_cast<float>(alpha)), leaf_min, leaf_max);
}

}  // namespace

sequence_buffer::sequence_buffer(const sequence_buffer_config& config)
    : config_(checked(config)),
      observations_(config.capacity, config.layout.observation_floats()),
      actions_(config.capacity, config.layout.length * config.layout.discrete_dim),
      rewards_(config.capacity, config.layout.length),
      flags_(config.capacity, config.layout.length),
      states_(config.capacity, config.layout.state_dim),
      masks_(config.capacity, config.layout.mask_bytes()),
      priorities_(config.capacity, 0.0f),
      tree_(config.capacity),
      max_leaf_(leaf_of(1.0f, config.alpha)) {}

double sequence_buffer::memory_bytes(const sequence_buffer_config& c) noexcept {
  const auto length = static_cast<double>(c.layout.length);
  const double per_slot = 4.0 * (length + 1) * static_cast<double>(c.layout.obs_dim) +
                          4.0 * length * static_cast<double>(c.layout.discrete_dim) + 4.0 * length + length +
                          4.0 * static_cast<double>(c.layout.state_dim) +
                          static_cast<double>(c.layout.mask_bytes()) + 4.0 /* priority */ +
                          5.0 /* tree: a float leaf, and its share of the sums and minimums above */;
  return per_slot * static_cast<double>(c.capacity);
}

std::uint64_t sequence_buffer::generation(std::size_t slot) const noexcept {
  const std::uint64_t cap = config_.capacity;
  const std::uint64_t laps = inserts_ / cap;
  const std::uint64_t head = inserts_ % cap;
  if (slot < head) return laps * cap + slot + 1;
  return laps > 0 ? (laps - 1) * cap + slot + 1 : 0;
}

void sequence_buffer::insert(const sequence_block& block) {
  const sequence_layout& mine = config_.layout;
  for (const layout_field& f : layout_fields) {
    if (block.layout.*f.member != mine.*f.member) {
      throw config_error(
          fmt::format(fmt::runtime(errors::seq_layout_mismatch), f.name, block.layout.*f.member, mine.*f.member));
    }
  }
  if (block.layout.mask_dim != mine.mask_dim) {
    throw config_error(
        fmt::format(fmt::runtime(errors::seq_layout_mismatch), "mask_dim", block.layout.mask_dim, mine.mask_dim));
  }
  const std::size_t n = block.size();
  check_sequence_size("observations", block.observations.size(), n * observations_.cols());
  check_sequence_size("actions", block.actions.size(), n * actions_.cols());
  check_sequence_size("rewards", block.rewards.size(), n * rewards_.cols());
  check_sequence_size("flags", block.flags.size(), n * flags_.cols());
  check_sequence_size("states", block.states.size(), n * states_.cols());
  check_sequence_size("masks", block.masks.size(), n * masks_.cols());
  for (const std::uint32_t stream : block.streams) {
    if (stream >= config_.num_streams) {
      throw config_error(fmt::format(fmt::runtime(errors::seq_bad_stream), stream, config_.num_streams));
    }
  }

  const std::size_t cap = config_.capacity;
  const std::size_t first = head();
  float* leaves = tree_.leaf_data();
  const auto copy_row = [](auto& to, std::size_t slot, const auto& from, std::size_t i) {
    const std::size_t cols = to.cols();
    if (cols > 0) std::memcpy(to.row(slot).data(), from.data() + i * cols, cols * sizeof(from[0]));
  };
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t slot = head();
    copy_row(observations_, slot, block.observations, i);
    copy_row(actions_, slot, block.actions, i);
    copy_row(rewards_, slot, block.rewards, i);
    copy_row(flags_, slot, block.flags, i);
    copy_row(states_, slot, block.states, i);
    copy_row(masks_, slot, block.masks, i);
    priority_sum_ += static_cast<double>(max_priority_) - static_cast<double>(priorities_[slot]);
    priorities_[slot] = static_cast<float>(max_priority_);
    leaves[slot] = max_leaf_;
    ++inserts_;
  }
  size_ = static_cast<std::size_t>(std::min<std::uint64_t>(inserts_, cap));
  // The written slots are [first, first + n) around the ring: one or two runs.
  if (n >= cap) {
    tree_.refresh(0, cap);
  } else if (first + n <= cap) {
    tree_.refresh(first, first + n);
  } else {
    tree_.refresh(first, cap);
    tree_.refresh(0, first + n - cap);
  }
  changed_priorities(n);
}

void sequence_buffer::sample(std::size_t count, double beta, coral::rng& rng, sequence_batch& out) const {
  if (size_ == 0) throw config_error(std::string(errors::seq_empty));
  check_sequence_exponent("beta", beta);
  const double total = tree_.total();
  const double stratum = total / static_cast<double>(count);
  scratch_masses_.resize(count);
  scratch_slots_.resize(count);
  // One position in each stratum; the generator gives only the seed of
  // the uniforms (detail/strata_kernel.hpp).
  detail::stratified_masses(detail::best_isa(), rng(), stratum, scratch_masses_.data(), count);
  tree_.find_prefix_many(scratch_masses_, scratch_slots_);
  // w_i = (N P(i))^-beta / (N P_min)^-beta = (leaf_i / leaf_min)^-beta.
  const double inv_min_leaf = 1.0 / static_cast<double>(tree_.min());
  const auto neg_beta = static_cast<float>(-beta);
  out.weights.resize(count);
  out.keys.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t slot = scratch_slots_[i];
    out.weights[i] = std::pow(static_cast<float>(static_cast<double>(tree_.get(slot)) * inv_min_leaf), neg_beta);
    out.keys[i] = {static_cast<std::uint32_t>(slot), generation(slot)};
  }
  gather(count, out);
}

void sequence_buffer::sample_uniform(std::size_t count, coral::rng& rng, sequence_batch& out) const {
  if (size_ == 0) throw config_error(std::string(errors::seq_empty));
  scratch_slots_.resize(count);
  out.weights.assign(count, 1.0f);
  out.keys.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    // Every held slot is sampleable, and the held slots are [0, size).
    const auto slot = static_cast<std::size_t>(rng.below(size_));
    scratch_slots_[i] = slot;
    out.keys[i] = {static_cast<std::uint32_t>(slot), generation(slot)};
  }
  gather(count, out);
}

void sequence_buffer::gather(std::size_t count, sequence_batch& out) const {
  out.layout = config_.layout;
  out.size = count;
  out.priorities.clear();
  const auto gather_rows = [&](const auto& from, auto& to) {
    const std::size_t cols = from.cols();
    to.resize(count * cols);
    if (cols == 0) return;
    for (std::size_t i = 0; i < count; ++i) {
      std::memcpy(to.data() + i * cols, from.row(scratch_slots_[i]).data(), cols * sizeof(to[0]));
    }
  };
  gather_rows(observations_, out.observations);
  gather_rows(actions_, out.actions);
  gather_rows(rewards_, out.rewards);
  gather_rows(flags_, out.flags);
  gather_rows(states_, out.states);
  gather_rows(masks_, out.masks);
}

std::size_t sequence_buffer::update_priorities(std::span<const sequence_key> keys, std::span<const float> priorities) {
  check_sequence_size("priorities", priorities.size(), keys.size());
  for (std::size_t i = 0; i < priorities.size(); ++i) {
    if (!(std::isfinite(priorities[i]) && priorities[i] >= 0.0f)) {
      throw config_error(fmt::format(fmt::runtime(errors::seq_bad_priority), i, priorities[i]));
    }
  }
  scratch_slots_.resize(keys.size());
  scratch_leaves_.resize(keys.size());
  std::size_t applied = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const sequence_key key = keys[i];
    if (key.slot >= config_.capacity || key.generation == 0 || generation(key.slot) != key.generation) continue;
    const float priority = stored_priority(static_cast<double>(priorities[i]) + config_.epsilon);
    const float leaf = leaf_of(priority, config_.alpha);
    if (priority > max_priority_) {
      max_priority_ = priority;
      max_leaf_ = leaf;
    }
    priority_sum_ += static_cast<double>(priority) - static_cast<double>(priorities_[key.slot]);
    priorities_[key.slot] = priority;
    scratch_slots_[applied] = key.slot;
    scratch_leaves_[applied] = leaf;
    ++applied;
  }
  tree_.set_many(std::span(scratch_slots_).first(applied), std::span(scratch_leaves_).first(applied));
  changed_priorities(applied);
  return applied;
}

void sequence_buffer::changed_priorities(std::size_t changes) noexcept {
  changes_since_recount_ += changes;
  if (changes_since_recount_ < config_.capacity) return;
  // Once per `capacity` changes: O(1) per change, and the running sum's
  // rounding errors never add up over a long run.
  double sum = 0.0;
  for (const float p : priorities_) sum += static_cast<double>(p);
  priority_sum_ = sum;
  changes_since_recount_ = 0;
}

double sequence_buffer::min_priority() const noexcept {
  if (size_ == 0 || config_.alpha == 0.0) return std::numeric_limits<double>::quiet_NaN();
  return std::pow(static_cast<double>(tree_.min()), 1.0 / config_.alpha);
}

void sequence_buffer::save(std::vector<char>& out) const {
  const std::size_t cap = config_.capacity;
  out.reserve(out.size() + 32 * detail::section_header_size + observations_.size() * sizeof(float) +
              actions_.size() * sizeof(std::int32_t) + rewards_.size() * sizeof(float) + flags_.size() +
              states_.size() * sizeof(float) + masks_.size() + cap * sizeof(float));
  detail::state_writer w(out, sequence_state_kind);
  w.scalar<std::uint64_t>("capacity", cap);
  w.scalar<std::uint64_t>("streams", config_.num_streams);
  for (const layout_field& f : layout_fields) w.scalar<std::uint64_t>(f.section, config_.layout.*f.member);
  // Written only where there are masks: a buffer without them saves the
  // blob it always did.
  if (config_.layout.mask_dim > 0) w.scalar<std::uint64_t>("mask_dim", config_.layout.mask_dim);
  w.scalar("alpha", config_.alpha);
  w.scalar("epsilon", config_.epsilon);
  w.scalar("max_prio", max_priority_);
  w.scalar<std::uint64_t>("inserts", inserts_);
  w.section<float>("obs", {observations_.data(), observations_.size()});
  w.section<std::int32_t>("actions", {actions_.data(), actions_.size()});
  w.section<float>("rewards", {rewards_.data(), rewards_.size()});
  w.section<std::uint8_t>("flags", {flags_.data(), flags_.size()});
  w.section<float>("states", {states_.data(), states_.size()});
  w.section<float>("priority", priorities_);
  if (config_.layout.mask_dim > 0) w.section<std::uint8_t>("masks", {masks_.data(), masks_.size()});
  w.finish();
}

void sequence_buffer::load(std::span<const char> in) {
  // Everything is checked before anything is written, so a throw leaves the
  // buffer as it was.
  detail::state_reader r(in, sequence_state_kind);
  const std::size_t cap = config_.capacity;
  r.check_shape("capacity", r.scalar<std::uint64_t>("capacity"), cap);
  r.check_shape("num_streams", r.scalar<std::uint64_t>("streams"), config_.num_streams);
  for (const layout_field& f : layout_fields) {
    r.check_shape(f.name, r.scalar<std::uint64_t>(f.section), config_.layout.*f.member);
  }
  r.check_shape("mask_dim", r.next_is("mask_dim") ? r.scalar<std::uint64_t>("mask_dim") : 0, config_.layout.mask_dim);
  const auto saved_alpha = r.scalar<double>("alpha");
  (void)r.scalar<double>("epsilon");  // informative only: it is already inside the saved priorities
  const auto max_priority = r.scalar<double>("max_prio");
  const auto inserts = r.scalar<std::uint64_t>("inserts");
  const char* observations = r.section<float>("obs", observations_.size());
  const char* actions = r.section<std::int32_t>("actions", actions_.size());
  const char* rewards = r.section<float>("rewards", rewards_.size());
  const char* flags = r.section<std::uint8_t>("flags", flags_.size());
  const char* states = r.section<float>("states", states_.size());
  const char* priorities = r.section<float>("priority", cap);
  const char* masks = config_.layout.mask_dim > 0 ? r.section<std::uint8_t>("masks", masks_.size()) : nullptr;
  r.finish();

  // The checksum catches damage; these catch a blob that was consistent
  // when written by something other than save().
  if (!(saved_alpha >= 0.0 && saved_alpha <= 1.0)) {
    r.malformed(fmt::format(fmt::runtime(errors::state_bad_value), "alpha", saved_alpha, "[0, 1]"));
  }
  if (!(max_priority > 0.0 && max_priority <= static_cast<double>(leaf_max))) {
    r.malformed(fmt::format(fmt::runtime(errors::state_bad_value), "max priority", max_priority, "(0, FLT_MAX]"));
  }
  // The held slots are [0, min(inserts, capacity)); save() writes priority 0 for the others.
  const auto held = static_cast<std::size_t>(std::min<std::uint64_t>(inserts, cap));
  for (std::size_t slot = 0; slot < cap; ++slot) {
    const auto p = get_at<float>(priorities + sizeof(float) * slot);
    const bool ok = slot < held ? (p >= 0.0f && p <= leaf_max) : p == 0.0f;
    if (!ok) r.malformed(fmt::format(fmt::runtime(errors::state_bad_slot), "priority", slot, p));
  }

  // Valid: replace the state.
  copy_bytes(observations_.data(), observations, observations_.size() * sizeof(float));
  copy_bytes(actions_.data(), actions, actions_.size() * sizeof(std::int32_t));
  copy_bytes(rewards_.data(), rewards, rewards_.size() * sizeof(float));
  copy_bytes(flags_.data(), flags, flags_.size());
  copy_bytes(states_.data(), states, states_.size() * sizeof(float));
  if (masks != nullptr) copy_bytes(masks_.data(), masks, masks_.size());
  copy_bytes(priorities_.data(), priorities, cap * sizeof(float));
  max_priority_ = max_priority;
  max_leaf_ = leaf_of(stored_priority(max_priority_), config_.alpha);
  inserts_ = inserts;
  size_ = held;
  float* leaves = tree_.leaf_data();
  for (std::size_t slot = 0; slot < cap; ++slot) {
    leaves[slot] = slot < held ? leaf_of(priorities_[slot], config_.alpha) : 0.0f;
  }
  tree_.refresh(0, cap);
  changes_since_recount_ = cap;
  changed_priorities(0);  // recounts the sum
}

}  // namespace coral::replay
