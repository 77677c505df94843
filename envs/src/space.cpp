#include "coral/envs/space.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/core/error.hpp"
#include "coral/envs/errors.hpp"

namespace coral::envs {
namespace {

[[noreturn]] void bad_space(std::string_view kind, std::string_view reason) {
  throw usage_error(fmt::format(fmt::runtime(errors::bad_space), kind, reason));
}

[[noreturn]] void mismatch(const space& s) {
  throw usage_error(fmt::format(fmt::runtime(errors::value_mismatch), s.to_string()));
}

void check_width(std::string_view what, std::size_t expected, std::size_t given) {
  if (expected != given) throw usage_error(fmt::format(fmt::runtime(errors::row_width), what, given, expected));
}

std::size_t element_count(const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string bound_text(const std::vector<float>& v) {
  if (!v.empty() && std::all_of(v.begin(), v.end(), [&](float x) { return x == v.front(); })) {
    return fmt::format("{}", v.front());
  }
  return fmt::format("[{}]", fmt::join(v, ", "));
}

// Observation flattening: every leaf becomes floats.
void flatten_into(const space& s, const space_value& v, float*& out) {
  switch (s.kind()) {
    case space_kind::box:
      if (v.box.size() != s.flat_size()) mismatch(s);
      out = std::copy(v.box.begin(), v.box.end(), out);
      return;
    case space_kind::discrete:
    case space_kind::multi_discrete:
      if (v.discrete.size() != s.nvec().size()) mismatch(s);
      for (auto x : v.discrete) *out++ = static_cast<float>(x);
      return;
    case space_kind::dict:
    case space_kind::tuple:
      if (v.children.size() != s.children().size()) mismatch(s);
      for (std::size_t i = 0; i < v.children.size(); ++i) flatten_into(s.children()[i], v.children[i], out);
      return;
  }
}

space_value unflatten_from(const space& s, const float*& in) {
  space_value v;
  switch (s.kind()) {
    case space_kind::box:
      v.box.assign(in, in + s.flat_size());
      in += s.flat_size();
      break;
    case space_kind::discrete:
    case space_kind::multi_discrete:
      for (std::size_t i = 0; i < s.nvec().size(); ++i) v.discrete.push_back(static_cast<std::int32_t>(*in++));
      break;
    case space_kind::dict:
    case space_kind::tuple:
      for (const auto& c : s.children()) v.children.push_back(unflatten_from(c, in));
      break;
  }
  return v;
}

// Action flattening: discrete leaves to the int32 part, Box leaves to the float part.
void flatten_action_into(const space& s, const space_value& v, std::int32_t*& ints, float*& floats) {
  switch (s.kind()) {
    case space_kind::box:
      if (v.box.size() != s.flat_size()) mismatch(s);
      floats = std::copy(v.box.begin(), v.box.end(), floats);
      return;
    case space_kind::discrete:
    case space_kind::multi_discrete:
      if (v.discrete.size() != s.nvec().size()) mismatch(s);
      ints = std::copy(v.discrete.begin(), v.discrete.end(), ints);
      return;
    case space_kind::dict:
    case space_kind::tuple:
      if (v.children.size() != s.children().size()) mismatch(s);
      for (std::size_t i = 0; i < v.children.size(); ++i) {
        flatten_action_into(s.children()[i], v.children[i], ints, floats);
      }
      return;
  }
}

space_value unflatten_action_from(const space& s, const std::int32_t*& ints, const float*& floats) {
  space_value v;
  switch (s.kind()) {
    case space_kind::box:
      v.box.assign(floats, floats + s.flat_size());
      floats += s.flat_size();
      break;
    case space_kind::discrete:
    case space_kind::multi_discrete:
      v.discrete.assign(ints, ints + s.nvec().size());
      ints += s.nvec().size();
      break;
    case space_kind::dict:
    case space_kind::tuple:
      for (const auto& c : s.children()) v.children.push_back(unflatten_action_from(c, ints, floats));
      break;
  }
  return v;
}

bool contains_action_from(const space& s, const std::int32_t*& ints, const float*& floats) {
  switch (s.kind()) {
    case space_kind::box:
      for (std::size_t i = 0; i < s.flat_size(); ++i) {
        const float x = *floats++;
        if (!(x >= s.low()[i] && x <= s.high()[i])) return false;  // also rejects NaN
      }
      return true;
    case space_kind::discrete:
    case space_kind::multi_discrete:
      for (auto n : s.nvec()) {
        const std::int32_t x = *ints++;
        if (x < 0 || x >= n) return false;
      }
      return true;
    case space_kind::dict:
    case space_kind::tuple:
      for (const auto& c : s.children()) {
        if (!contains_action_from(c, ints, floats)) return false;
      }
      return true;
  }
  return false;
}

void sample_action_into(const space& s, rng& r, std::int32_t*& ints, float*& floats) {
  switch (s.kind()) {
    case space_kind::box:
      for (std::size_t i = 0; i < s.flat_size(); ++i) {
        const double low = std::isfinite(s.low()[i]) ? s.low()[i] : -1.0;
        const double high = std::isfinite(s.high()[i]) ? s.high()[i] : std::max(low, 1.0);
        *floats++ = std::clamp(static_cast<float>(r.uniform(low, high)), s.low()[i], s.high()[i]);
      }
      return;
    case space_kind::discrete:
    case space_kind::multi_discrete:
      for (auto n : s.nvec()) *ints++ = static_cast<std::int32_t>(r.below(static_cast<std::uint64_t>(n)));
      return;
    case space_kind::dict:
    case space_kind::tuple:
      for (const auto& c : s.children()) sample_action_into(c, r, ints, floats);
      return;
  }
}

}  // namespace

space::space() : kind_(space_kind::discrete), nvec_{1} { compute_sizes(); }

space space::box(std::vector<std::size_t> shape, float low, float high) {
  const std::size_t n = element_count(shape);
  return box(std::move(shape), std::vector<float>(n, low), std::vector<float>(n, high));
}

space space::box(std::vector<std::size_t> shape, std::vector<float> low, std::vector<float> high) {
  const std::size_t n = element_count(shape);
  if (low.size() != n || high.size() != n) bad_space("Box", "bounds must have one element per element of the shape");
  for (std::size_t i = 0; i < n; ++i) {
    if (!(low[i] <= high[i])) bad_space("Box", "every low bound must be at most its high bound");
  }
  space s;
  s.kind_ = space_kind::box;
  s.shape_ = std::move(shape);
  s.low_ = std::move(low);
  s.high_ = std::move(high);
  s.nvec_.clear();
  s.compute_sizes();
  return s;
}

space space::discrete(std::int32_t n) {
  if (n < 1) bad_space("Discrete", "n must be at least 1");
  space s;
  s.nvec_ = {n};
  s.compute_sizes();
  return s;
}

space space::multi_discrete(std::vector<std::int32_t> nvec) {
  if (nvec.empty()) bad_space("MultiDiscrete", "needs at least one component");
  if (std::any_of(nvec.begin(), nvec.end(), [](std::int32_t n) { return n < 1; })) {
    bad_space("MultiDiscrete", "every component count must be at least 1");
  }
  space s;
  s.kind_ = space_kind::multi_discrete;
  s.nvec_ = std::move(nvec);
  s.compute_sizes();
  return s;
}

space space::dict(std::vector<std::pair<std::string, space>> entries) {
  space s;
  s.kind_ = space_kind::dict;
  s.nvec_.clear();
  std::set<std::string> seen;
  for (auto& [key, child] : entries) {
    if (!seen.insert(key).second) bad_space("Dict", fmt::format("duplicate key '{}'", key));
    s.keys_.push_back(key);
    s.children_.push_back(std::move(child));
  }
  s.compute_sizes();
  return s;
}

space space::tuple(std::vector<space> items) {
  space s;
  s.kind_ = space_kind::tuple;
  s.nvec_.clear();
  s.children_ = std::move(items);
  s.compute_sizes();
  return s;
}

void space::compute_sizes() {
  switch (kind_) {
    case space_kind::box:
      flat_size_ = continuous_size_ = element_count(shape_);
      discrete_size_ = 0;
      break;
    case space_kind::discrete:
    case space_kind::multi_discrete:
      flat_size_ = discrete_size_ = nvec_.size();
      continuous_size_ = 0;
      break;
    case space_kind::dict:
    case space_kind::tuple:
      flat_size_ = discrete_size_ = continuous_size_ = 0;
      for (const auto& c : children_) {
        flat_size_ += c.flat_size_;
        discrete_size_ += c.discrete_size_;
        continuous_size_ += c.continuous_size_;
      }
      break;
  }
}

std::size_t space::flat_offset(std::string_view key) const {
  if (kind_ == space_kind::dict) {
    std::size_t offset = 0;
    for (std::size_t i = 0; i < keys_.size(); ++i) {
      if (keys_[i] == key) return offset;
      offset += children_[i].flat_size();
    }
  }
  throw usage_error(fmt::format("{} has no key '{}'", to_string(), key));
}

std::string space::to_string() const {
  switch (kind_) {
    case space_kind::box:
      return fmt::format("Box({}, {}, ({}{}))", bound_text(low_), bound_text(high_), fmt::join(shape_, ", "),
                         shape_.size() == 1 ? "," : "");
    case space_kind::discrete:
      return fmt::format("Discrete({})", n());
    case space_kind::multi_discrete:
      return fmt::format("MultiDiscrete([{}])", fmt::join(nvec_, ", "));
    case space_kind::dict: {
      std::vector<std::string> parts;
      for (std::size_t i = 0; i < keys_.size(); ++i) parts.push_back(keys_[i] + ": " + children_[i].to_string());
      return fmt::format("Dict({})", fmt::join(parts, ", "));
    }
    case space_kind::tuple: {
      std::vector<std::string> parts;
      for (const auto& c : children_) parts.push_back(c.to_string());
      return fmt::format("Tuple({})", fmt::join(parts, ", "));
    }
  }
  return {};
}

bool operator==(const space& a, const space& b) {
  return a.kind_ == b.kind_ && a.shape_ == b.shape_ && a.low_ == b.low_ && a.high_ == b.high_ &&
         a.nvec_ == b.nvec_ && a.keys_ == b.keys_ && a.children_ == b.children_;
}

bool contains(const space& s, const space_value& v) {
  switch (s.kind()) {
    case space_kind::box:
      if (v.box.size() != s.flat_size() || !v.discrete.empty() || !v.children.empty()) return false;
      for (std::size_t i = 0; i < v.box.size(); ++i) {
        if (!(v.box[i] >= s.low()[i] && v.box[i] <= s.high()[i])) return false;
      }
      return true;
    case space_kind::discrete:
    case space_kind::multi_discrete:
      if (v.discrete.size() != s.nvec().size() || !v.box.empty() || !v.children.empty()) return false;
      for (std::size_t i = 0; i < v.discrete.size(); ++i) {
        if (v.discrete[i] < 0 || v.discrete[i] >= s.nvec()[i]) return false;
      }
      return true;
    case space_kind::dict:
    case space_kind::tuple:
      if (v.children.size() != s.children().size() || !v.box.empty() || !v.discrete.empty()) return false;
      for (std::size_t i = 0; i < v.children.size(); ++i) {
        if (!contains(s.children()[i], v.children[i])) return false;
      }
      return true;
  }
  return false;
}

void flatten(const space& s, const space_value& v, std::span<float> row) {
  check_width("flatten", s.flat_size(), row.size());
  float* out = row.data();
  flatten_into(s, v, out);
}

space_value unflatten(const space& s, std::span<const float> row) {
  check_width("unflatten", s.flat_size(), row.size());
  const float* in = row.data();
  return unflatten_from(s, in);
}

void flatten_action(const space& s, const space_value& v, std::span<std::int32_t> discrete,
                    std::span<float> continuous) {
  check_width("flatten_action (discrete part)", s.discrete_size(), discrete.size());
  check_width("flatten_action (continuous part)", s.continuous_size(), continuous.size());
  std::int32_t* ints = discrete.data();
  float* floats = continuous.data();
  flatten_action_into(s, v, ints, floats);
}

space_value unflatten_action(const space& s, std::span<const std::int32_t> discrete,
                             std::span<const float> continuous) {
  check_width("unflatten_action (discrete part)", s.discrete_size(), discrete.size());
  check_width("unflatten_action (continuous part)", s.continuous_size(), continuous.size());
  const std::int32_t* ints = discrete.data();
  const float* floats = continuous.data();
  return unflatten_action_from(s, ints, floats);
}

bool contains_action(const space& s, std::span<const std::int32_t> discrete, std::span<const float> continuous) {
  if (discrete.size() != s.discrete_size() || continuous.size() != s.continuous_size()) return false;
  const std::int32_t* ints = discrete.data();
  const float* floats = continuous.data();
  return contains_action_from(s, ints, floats);
}

namespace {
void collect_counts(const space& s, std::vector<std::int32_t>& counts) {
  switch (s.kind()) {
    case space_kind::box:
      return;
    case space_kind::discrete:
    case space_kind::multi_discrete:
      counts.insert(counts.end(), s.nvec().begin(), s.nvec().end());
      return;
    case space_kind::dict:
    case space_kind::tuple:
      for (const auto& c : s.children()) collect_counts(c, counts);
      return;
  }
}
}  // namespace

std::vector<std::int32_t> discrete_counts(const space& s) {
  std::vector<std::int32_t> counts;
  collect_counts(s, counts);
  return counts;
}

std::ptrdiff_t fully_masked_component(std::span<const std::uint8_t> mask,
                                      std::span<const std::int32_t> counts) noexcept {
  std::size_t at = 0;
  for (std::size_t c = 0; c < counts.size(); ++c) {
    const auto n = static_cast<std::size_t>(counts[c]);
    std::uint8_t any = 0;
    for (std::size_t k = at; k < at + n; ++k) any |= mask[k];
    if (any == 0) return static_cast<std::ptrdiff_t>(c);
    at += n;
  }
  return -1;
}

std::size_t action_mask_size(const space& s) {
  std::size_t total = 0;
  for (const auto n : discrete_counts(s)) total += static_cast<std::size_t>(n);
  return total;
}

void sample_action(const space& s, rng& r, std::span<std::int32_t> discrete, std::span<float> continuous) {
  check_width("sample_action (discrete part)", s.discrete_size(), discrete.size());
  check_width("sample_action (continuous part)", s.continuous_size(), continuous.size());
  std::int32_t* ints = discrete.data();
  float* floats = continuous.data();
  sample_action_into(s, r, ints, floats);
}

}  // namespace coral::envs
