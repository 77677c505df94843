#pragma once
/// \file
/// One setting an algorithm declares: a field of its options type, with the
/// name that `coral train --NAME`, a config file's `NAME = ...` key and
/// `coral.train(NAME=...)` (underscores for dashes) all set it by.
///
/// The algorithm's options are held type-erased (std::any holding its own
/// options struct), so that the composition, the command line and Python
/// handle every algorithm's settings alike without knowing their types.

#include <any>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace coral::training {

/// How a setting is written.
enum class option_kind {
  on_off,      ///< a switch (bool)
  whole,       ///< a whole number >= 0 (std::uint64_t, std::size_t)
  number,      ///< a finite number (double)
  whole_list,  ///< whole numbers (`--hidden 64 64`)
};

/// A setting's value, of the alternative its kind names.
using option_value = std::variant<bool, std::uint64_t, double, std::vector<std::size_t>>;

/// The value as a flag or config file writes it: `true`, `64`, `0.001`, `64 64`.
[[nodiscard]] std::string to_text(const option_value& v);

/// The values a number setting may take: [low, high], or (low, high]
/// with `low_open`. Every number setting has one (register_algorithm()
/// refuses a descriptor otherwise), shown in the help and checked before a
/// run starts, so that no coefficient can overflow the arithmetic at the
/// first update and no ratio can make a run that never ends.
struct option_range {
  double low = 0;
  double high = 0;
  bool low_open = false;
  [[nodiscard]] bool holds(double v) const noexcept { return (low_open ? v > low : v >= low) && v <= high; }
  /// "(0, 1000000]", "[0, 1]".
  [[nodiscard]] std::string text() const;
};

/// One setting of an algorithm's options type.
struct option_field {
  std::string name;          ///< without dashes: `learning-rate`
  std::string help;          ///< one line, without the default (the command adds it)
  option_kind kind = option_kind::number;
  /// Shown as the default instead of the value (a default computed from
  /// another setting: "seq-len / 2"); empty: the default options' value.
  std::string default_text;
  /// Sizes what the run allocates: when a run does not fit the machine's
  /// memory, the check names the sizing setting whose default saves the most.
  bool sizing = false;
  /// The values it may take (required for a number setting; optional for a
  /// whole number). The command line checks the upper bound as it reads the
  /// flag; training_run::validate() checks both for every caller.
  std::optional<option_range> range;
  /// The value in `options` (which holds the algorithm's options type).
  std::function<option_value(const std::any& options)> get;
  /// Sets the value in `options`; `value` holds the kind's alternative.
  std::function<void(std::any& options, const option_value& value)> set;
};

namespace detail {
template <class T>
constexpr option_kind kind_of() {
  if constexpr (std::is_same_v<T, bool>) {
    return option_kind::on_off;
  } else if constexpr (std::is_same_v<T, double>) {
    return option_kind::number;
  } else if constexpr (std::is_same_v<T, std::vector<std::size_t>>) {
    return option_kind::whole_list;
  } else {
    static_assert(std::is_same_v<T, std::uint64_t> || std::is_same_v<T, std::size_t>,
                  "a setting is a bool, a double, a whole number or a list of whole numbers");
    return option_kind::whole;
  }
}
template <class T>
using stored_t = std::conditional_t<kind_of<T>() == option_kind::whole, std::uint64_t, T>;
}  // namespace detail

/// A setting read and written through `access(options) -> T&` on an
/// `Options` (e.g. `[](ppo_options& o) -> double& { return o.ppo.gamma; }`).
template <class Options, class Access>
[[nodiscard]] option_field field(std::string name, std::string help, Access access) {
  using T = std::remove_cvref_t<decltype(access(std::declval<Options&>()))>;
  option_field f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.kind = detail::kind_of<T>();
  f.get = [access](const std::any& a) -> option_value {
    // access() takes a mutable reference; reading through it changes nothing.
    auto& o = const_cast<Options&>(std::any_cast<const Options&>(a));
    return option_value(static_cast<detail::stored_t<T>>(access(o)));
  };
  f.set = [access](std::any& a, const option_value& v) {
    access(std::any_cast<Options&>(a)) = static_cast<T>(std::get<detail::stored_t<T>>(v));
  };
  return f;
}

/// A switch that turns a bool setting off (`--no-anneal-lr` sets anneal_lr = false).
template <class Options, class Access>
[[nodiscard]] option_field switch_off(std::string name, std::string help, Access access) {
  option_field f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.kind = option_kind::on_off;
  f.get = [access](const std::any& a) -> option_value {
    auto& o = const_cast<Options&>(std::any_cast<const Options&>(a));
    return option_value(!static_cast<bool>(access(o)));
  };
  f.set = [access](std::any& a, const option_value& v) { access(std::any_cast<Options&>(a)) = !std::get<bool>(v); };
  return f;
}

/// `f`, marked as sizing what the run allocates (option_field::sizing).
[[nodiscard]] inline option_field sizing(option_field f) {
  f.sizing = true;
  return f;
}

/// `f` taking values in [low, high] (option_field::range).
[[nodiscard]] inline option_field within(option_field f, double low, double high) {
  f.range = option_range{low, high, false};
  return f;
}

/// `f` taking values in (low, high] (option_field::range).
[[nodiscard]] inline option_field over(option_field f, double low, double high) {
  f.range = option_range{low, high, true};
  return f;
}

/// `f` with `text` shown as its default (option_field::default_text).
[[nodiscard]] inline option_field shown_default(option_field f, std::string text) {
  f.default_text = std::move(text);
  return f;
}

}  // namespace coral::training
