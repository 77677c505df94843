#include "coral/action_text.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/envs/errors.hpp"
#include "coral/errors.hpp"

namespace coral::cli {
namespace {

// One scalar of a flat action row, in leaf order.
struct scalar_slot {
  bool discrete;
  std::size_t index;  // into the discrete or the continuous part
};

void collect_slots(const envs::space& s, std::vector<scalar_slot>& slots, std::size_t& ints, std::size_t& floats) {
  switch (s.kind()) {
    case envs::space_kind::box:
      for (std::size_t i = 0; i < s.flat_size(); ++i) slots.push_back({false, floats++});
      return;
    case envs::space_kind::discrete:
    case envs::space_kind::multi_discrete:
      for (std::size_t i = 0; i < s.nvec().size(); ++i) slots.push_back({true, ints++});
      return;
    case envs::space_kind::dict:
    case envs::space_kind::tuple:
      for (const auto& c : s.children()) collect_slots(c, slots, ints, floats);
      return;
  }
}

std::vector<scalar_slot> slots_of(const envs::space& s) {
  std::vector<scalar_slot> slots;
  std::size_t ints = 0, floats = 0;
  collect_slots(s, slots, ints, floats);
  return slots;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const auto at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

template <class T>
bool parse_number(std::string_view text, T& value) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (!text.empty() && *first == '+') ++first;
  auto [ptr, ec] = std::from_chars(first, last, value);
  return !text.empty() && ec == std::errc{} && ptr == last;
}

// Parses one row's action into the given parts; false if it does not parse.
bool parse_row(std::string_view text, const std::vector<scalar_slot>& slots, std::span<std::int32_t> ints,
               std::span<float> floats) {
  const auto scalars = split(text, ':');
  if (scalars.size() != slots.size()) return false;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const bool ok = slots[i].discrete ? parse_number(scalars[i], ints[slots[i].index])
                                      : parse_number(scalars[i], floats[slots[i].index]);
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::vector<step_actions> parse_actions(std::string_view text, const envs::space& action_space, std::size_t rows) {
  const auto slots = slots_of(action_space);
  const std::size_t nd = action_space.discrete_size();
  const std::size_t nc = action_space.continuous_size();
  std::vector<step_actions> steps;
  std::size_t number = 0;
  for (std::string_view entry : split(text, ',')) {
    ++number;
    step_actions step{std::vector<std::int32_t>(rows * nd), std::vector<float>(rows * nc)};
    const auto row_texts = split(entry, '/');
    if (row_texts.size() != 1 && row_texts.size() != rows) {
      throw config_error(
          fmt::format(fmt::runtime(errors::wrong_action_count), entry, number, row_texts.size(), rows));
    }
    for (const auto row_text : row_texts) {
      const std::size_t scalars = split(row_text, ':').size();
      if (scalars != slots.size()) {
        throw config_error(fmt::format(fmt::runtime(errors::wrong_scalar_count), entry, number, scalars,
                                       slots.size(), action_space.to_string()));
      }
    }
    bool ok = true;
    for (std::size_t r = 0; ok && r < rows; ++r) {
      const std::span<std::int32_t> ints(step.discrete.data() + r * nd, nd);
      const std::span<float> floats(step.continuous.data() + r * nc, nc);
      ok = parse_row(row_texts.size() == 1 ? row_texts[0] : row_texts[r], slots, ints, floats) &&
           envs::contains_action(action_space, ints, floats);
    }
    if (!ok) {
      throw config_error(
          fmt::format(fmt::runtime(envs::errors::bad_action), entry, number, action_space.to_string()));
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

std::string format_action(const envs::space& action_space, std::span<const std::int32_t> discrete,
                          std::span<const float> continuous) {
  std::string out;
  for (const auto& slot : slots_of(action_space)) {
    if (!out.empty()) out += ':';
    out += slot.discrete ? fmt::format("{}", discrete[slot.index]) : fmt::format("{}", continuous[slot.index]);
  }
  return out;
}

}  // namespace coral::cli
