#pragma once
/// \file
/// Spaces (Box, Discrete, MultiDiscrete, Dict, Tuple) and their flat rows.
///
/// Structured observations and actions travel through the batch as flat rows
/// and are rebuilt for whoever needs the structure (the emulation layer of
/// PufferLib does the same). The flat layouts are:
///
/// - Observation row (float): every leaf in depth-first declaration order
///   (Dict entries in the order they were declared, not sorted); a Box leaf
///   contributes its elements in row-major order, a Discrete leaf one element
///   (the index, as a float, not one-hot), a MultiDiscrete leaf one element per
///   component. Width: flat_size().
/// - Action row: two parts. The discrete part (int32) holds every Discrete and
///   MultiDiscrete component in leaf order, width discrete_size(); the
///   continuous part (float) holds every Box element in leaf order, width
///   continuous_size(). A Discrete(2) action is one int32 and no float; a
///   Box((3,)) action is three floats and no int32.
///
/// flatten() followed by unflatten() is the identity on values the space
/// contains (for Discrete indices as floats this holds below 2^24).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coral/core/rng.hpp"

namespace coral::envs {

/// What a space is.
enum class space_kind {
  box,             ///< floats with per-element bounds and a shape
  discrete,        ///< one integer in [0, n)
  multi_discrete,  ///< one integer in [0, nvec[i]) per component
  dict,            ///< named sub-spaces, in declaration order
  tuple,           ///< unnamed sub-spaces, in order
};

/// An immutable description of the values an env observes or acts with.
/// Build one with the static functions; invalid arguments throw usage_error.
class space {
 public:
  /// A Box of `shape` whose every element lies in [low, high].
  [[nodiscard]] static space box(std::vector<std::size_t> shape, float low, float high);
  /// A Box of `shape` with per-element bounds (row-major, one per element).
  [[nodiscard]] static space box(std::vector<std::size_t> shape, std::vector<float> low, std::vector<float> high);
  /// Discrete(n): integers 0 .. n-1; n ≥ 1.
  [[nodiscard]] static space discrete(std::int32_t n);
  /// MultiDiscrete(nvec): component i in 0 .. nvec[i]-1; every nvec[i] ≥ 1, at least one component.
  [[nodiscard]] static space multi_discrete(std::vector<std::int32_t> nvec);
  /// Dict of named sub-spaces, kept in the order given; keys must be distinct.
  [[nodiscard]] static space dict(std::vector<std::pair<std::string, space>> entries);
  /// Tuple of sub-spaces, in the order given.
  [[nodiscard]] static space tuple(std::vector<space> items);

  /// Discrete(1), so that a space can be default-constructed and assigned later.
  space();

  /// What this space is.
  [[nodiscard]] space_kind kind() const noexcept { return kind_; }
  /// Box: its shape (empty for a scalar Box).
  [[nodiscard]] const std::vector<std::size_t>& shape() const noexcept { return shape_; }
  /// Box: lower bound per element, row-major.
  [[nodiscard]] const std::vector<float>& low() const noexcept { return low_; }
  /// Box: upper bound per element, row-major.
  [[nodiscard]] const std::vector<float>& high() const noexcept { return high_; }
  /// Discrete: the number of values; MultiDiscrete: its components' counts.
  [[nodiscard]] const std::vector<std::int32_t>& nvec() const noexcept { return nvec_; }
  /// Discrete: the number of values n.
  [[nodiscard]] std::int32_t n() const noexcept { return nvec_.empty() ? 0 : nvec_.front(); }
  /// Dict and Tuple: the sub-spaces, in order.
  [[nodiscard]] const std::vector<space>& children() const noexcept { return children_; }
  /// Dict: the keys, in the order of children().
  [[nodiscard]] const std::vector<std::string>& keys() const noexcept { return keys_; }

  /// Width of a flat observation row.
  [[nodiscard]] std::size_t flat_size() const noexcept { return flat_size_; }
  /// Width of the int32 part of a flat action row.
  [[nodiscard]] std::size_t discrete_size() const noexcept { return discrete_size_; }
  /// Width of the float part of a flat action row.
  [[nodiscard]] std::size_t continuous_size() const noexcept { return continuous_size_; }

  /// Where the sub-space `key` of a Dict starts in the flat observation row.
  /// Throws usage_error if this is not a Dict or has no such key.
  [[nodiscard]] std::size_t flat_offset(std::string_view key) const;

  /// Gymnasium-like text, e.g. `Box(-1, 1, (4,))`, `Discrete(2)`,
  /// `Dict(pos: Box(-1, 1, (2,)), goal: Discrete(4))`.
  [[nodiscard]] std::string to_string() const;

  /// Same kind, shape, bounds, counts, keys and children.
  friend bool operator==(const space& a, const space& b);

 private:
  void compute_sizes();

  space_kind kind_;
  std::vector<std::size_t> shape_;
  std::vector<float> low_;
  std::vector<float> high_;
  std::vector<std::int32_t> nvec_;
  std::vector<std::string> keys_;
  std::vector<space> children_;
  std::size_t flat_size_ = 0;
  std::size_t discrete_size_ = 0;
  std::size_t continuous_size_ = 0;
};

/// A structured value of a space: what flatten() takes and unflatten() rebuilds.
/// Exactly one field is used, depending on the space's kind.
struct space_value {
  std::vector<float> box = {};              ///< Box: its elements, row-major
  std::vector<std::int32_t> discrete = {};  ///< Discrete: one index; MultiDiscrete: one per component
  std::vector<space_value> children = {};   ///< Dict (declaration order) and Tuple: one per sub-space

  /// Element-wise equality.
  friend bool operator==(const space_value&, const space_value&) = default;
};

/// True if `v` has the structure of `s` and every element is within bounds.
[[nodiscard]] bool contains(const space& s, const space_value& v);

/// Writes `v` into a flat observation row of width s.flat_size().
/// Throws usage_error if `v` does not have the structure of `s` or the row's width is wrong.
void flatten(const space& s, const space_value& v, std::span<float> row);

/// Rebuilds the structured value from a flat observation row.
/// Throws usage_error if the row's width is not s.flat_size().
[[nodiscard]] space_value unflatten(const space& s, std::span<const float> row);

/// Writes action `v` into the two parts of a flat action row.
/// Throws usage_error on a structure or width mismatch.
void flatten_action(const space& s, const space_value& v, std::span<std::int32_t> discrete,
                    std::span<float> continuous);

/// Rebuilds a structured action from the two parts of a flat action row.
/// Throws usage_error on a width mismatch.
[[nodiscard]] space_value unflatten_action(const space& s, std::span<const std::int32_t> discrete,
                                           std::span<const float> continuous);

/// True if the flat action row (both parts, exact widths) lies in `s`.
[[nodiscard]] bool contains_action(const space& s, std::span<const std::int32_t> discrete,
                                   std::span<const float> continuous);

/// The number of values of each int32 component of a flat action row, in
/// leaf order (a Discrete(n) leaf gives n, a MultiDiscrete leaf its nvec).
/// One entry per element of the discrete part: size discrete_size().
[[nodiscard]] std::vector<std::int32_t> discrete_counts(const space& s);

/// Width in bytes of an action-mask row for action space `s`: one byte per
/// value of every int32 component (the sum of discrete_counts(s)); 0 for a
/// space without Discrete or MultiDiscrete leaves. See env.hpp, "Action masks".
[[nodiscard]] std::size_t action_mask_size(const space& s);

/// The first component of action-mask row `mask` (laid out by `counts`,
/// discrete_counts() of the action space) whose values are all masked (0),
/// or -1 if every component has a legal value.
[[nodiscard]] std::ptrdiff_t fully_masked_component(std::span<const std::uint8_t> mask,
                                                    std::span<const std::int32_t> counts) noexcept;

/// Draws a uniform random action into a flat action row: discrete components
/// uniform over their values, Box elements uniform over [low, high] with
/// infinite bounds replaced by ±1 (so an unbounded Box samples in [-1, 1]).
void sample_action(const space& s, rng& r, std::span<std::int32_t> discrete, std::span<float> continuous);

}  // namespace coral::envs
