#include "coral/config_file.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "coral/core/error.hpp"
#include "coral/core/input_file.hpp"
#include "coral/core/json.hpp"
#include "coral/errors.hpp"

namespace coral::cli {
namespace {

// A config_error from one of the formats in messages.hpp.
template <class... Args>
[[noreturn]] void fail(std::string_view format, Args&&... args) {
  throw config_error(fmt::format(fmt::runtime(format), std::forward<Args>(args)...));
}

// The offset of the first byte that is not part of well-formed UTF-8 text
// (a NUL counts as not text), or npos.
std::size_t first_non_text_byte(std::string_view s) {
  const std::size_t utf8 = json::well_formed_utf8_length(s);
  const std::size_t nul = s.substr(0, utf8).find('\0');
  if (nul != std::string_view::npos) return nul;
  return utf8 == s.size() ? std::string_view::npos : utf8;
}

std::size_t line_of(std::string_view s, std::size_t offset) {
  return 1 + static_cast<std::size_t>(std::count(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Where a key is, for an error: `in [train]`, `at the top level`.
std::string place_of(const command_info& c) { return c.section.empty() ? "at the top level" : "in [" + c.section + "]"; }

std::string key_label(const command_info& c, std::string_view key) {
  return c.section.empty() ? std::string(key) : fmt::format("[{}] {}", c.section, key);
}

// "; did you mean 'total-steps'?" for a near miss, else where to look.
std::string unknown_key_hint(const command_info& c, std::string_view key) {
  const flag_info* best = nullptr;
  std::size_t best_distance = 3;  // at most two edits away
  for (const auto& f : c.flags) {
    const auto d = edit_distance(key, f.name);
    if (d < best_distance) {
      best_distance = d;
      best = &f;
    }
  }
  if (best != nullptr) return fmt::format("; did you mean '{}'?", best->name);
  return fmt::format("; see `coral {}--help`", c.path.empty() ? "" : c.path + " ");
}

std::string expected_text(const flag_info& flag) {
  switch (flag.kind) {
    case value_kind::on_off:
      return "true or false";
    case value_kind::whole:
      return "a whole number";
    case value_kind::unsigned_whole:
      return "a whole number >= 0";
    case value_kind::number:
      return "a finite number";
    case value_kind::text:
      return "a string";
    case value_kind::count_or_auto:
      return fmt::format("a whole number >= {} or \"auto\"", flag.least);
  }
  return "?";
}

// At most 40 characters of `s`, control characters escaped, so that an
// error stays one line.
std::string shown(std::string_view s) {
  std::string out;
  for (const char c : s.substr(0, 40)) {
    const auto u = static_cast<unsigned char>(c);
    out += u < 0x20 || u == 0x7F ? fmt::format("\\x{:02x}", u) : std::string(1, c);
  }
  return s.size() > 40 ? out + "..." : out;
}

// What a value is, for an error: the number or boolean itself, else its kind.
std::string found_text(const toml::node& n) {
  if (const auto* s = n.as_string()) return fmt::format("a string (\"{}\")", shown(s->get()));
  if (const auto* i = n.as_integer()) return fmt::format("{}", i->get());
  if (const auto* f = n.as_floating_point()) return fmt::format("{}", f->get());
  if (const auto* b = n.as_boolean()) return b->get() ? "true" : "false";
  if (const auto* a = n.as_array()) return a->empty() ? "an empty array" : "an array";
  if (n.is_table()) return "a table";
  return "a date or time";
}

std::size_t line_of(const toml::node& n) { return n.source().begin.line; }

// Refuses keys, tables and arrays nested deeper than max_config_depth, before
// toml++ (which recurses once per level) sees them: a 40,000-part dotted
// key or `a = [[[[...]]]]` would overflow its stack. A light scan of the
// TOML text: strings and comments skipped, key parts counted where a key
// is expected, brackets counted where a value is. Depth is cumulative: a
// header's parts, then a key's, then each inline table or array inside its
// value. Anything else malformed is left to toml++.
void check_depth(std::string_view text, std::string_view file) {
  struct open_bracket {
    char kind;          // '[' an array, '{' an inline table
    std::size_t depth;  // of the values inside it
  };
  std::vector<open_bracket> open;
  std::size_t line = 1;
  std::size_t header_depth = 0;  // parts of the last [table] header
  bool in_key = true;            // where a key is expected
  std::size_t parts = 1;         // parts of the key being read
  std::size_t value_depth = 0;   // depth of a value starting here
  auto deeper = [&](std::size_t depth) {
    if (depth > max_config_depth) fail(errors::config_too_deep, file, line, max_config_depth);
  };
  auto base = [&] { return open.empty() ? header_depth : open.back().depth; };
  const std::size_t n = text.size();
  auto skip_string = [&](std::size_t i) {  // i at the opening quote; returns the index of the closing one
    const char q = text[i];
    const bool multi = text.compare(i, 3, std::string(3, q)) == 0;
    std::size_t j = i + (multi ? 3 : 1);
    for (; j < n; ++j) {
      if (text[j] == '\n') {
        if (!multi) return j - 1;  // an unclosed string: toml++ reports it
        ++line;
      }
      if (q == '"' && text[j] == '\\') {
        if (j + 1 < n && text[j + 1] == '\n') ++line;
        ++j;
        continue;
      }
      if (text[j] == q && (!multi || text.compare(j, 3, std::string(3, q)) == 0)) return multi ? j + 2 : j;
    }
    return n;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      if (open.empty()) {
        in_key = true;
        parts = 1;
      }
    } else if (c == '#') {
      while (i + 1 < n && text[i + 1] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      i = skip_string(i);
    } else if (in_key && open.empty() && c == '[') {
      // A [table] or [[array of tables]] header, to its closing bracket.
      header_depth = 1;
      for (++i; i < n && text[i] != ']' && text[i] != '\n'; ++i) {
        if (text[i] == '"' || text[i] == '\'') i = skip_string(i);
        if (i < n && text[i] == '.') deeper(++header_depth);
      }
      if (i < n && text[i] == '\n') --i;  // counted by the loop
      in_key = false;
    } else if (in_key) {
      if (c == '.') deeper(base() + ++parts);
      if (c == '=') {
        in_key = false;
        value_depth = base() + parts;
        deeper(value_depth);
      }
      if (c == '}' && !open.empty()) open.pop_back();  // an empty inline table
    } else if (c == '[' || c == '{') {
      open.push_back({c, value_depth + 1});
      deeper(open.back().depth);
      value_depth = open.back().depth;
      if (c == '{') {
        in_key = true;
        parts = 1;
      }
    } else if ((c == ']' || c == '}') && !open.empty()) {
      open.pop_back();
      value_depth = base();
    } else if (c == ',' && !open.empty() && open.back().kind == '{') {
      in_key = true;
      parts = 1;
    } else if (c == ',' && !open.empty()) {
      value_depth = open.back().depth;
    }
  }
}

struct reader {
  std::string_view file;
  config_values values;

  [[noreturn]] void wrong_type(const toml::node& n, const std::string& label, const std::string& expected) const {
    fail(errors::config_wrong_type, file, line_of(n), label, expected, found_text(n));
  }

  // One scalar value of `flag` as the text of a command-line token.
  std::string scalar(const toml::node& n, const flag_info& flag, const std::string& label) const {
    const auto expected = expected_text(flag);
    switch (flag.kind) {
      case value_kind::on_off:
        break;  // handled by the caller
      case value_kind::whole:
      case value_kind::unsigned_whole:
      case value_kind::count_or_auto: {
        if (const auto* s = n.as_string(); s != nullptr && flag.kind == value_kind::count_or_auto && s->get() == "auto") {
          return "auto";
        }
        const bool want_unsigned = flag.kind != value_kind::whole;
        // A count's smallest value (envs-per-group = 0 names the file's line).
        const auto least = static_cast<double>(flag.kind == value_kind::count_or_auto ? flag.least : 0);
        if (const auto* i = n.as_integer()) {
          if (want_unsigned && static_cast<double>(i->get()) < least) wrong_type(n, label, expected);
          return fmt::format("{}", i->get());
        }
        if (const auto* f = n.as_floating_point()) {
          const double v = f->get();
          const double limit = want_unsigned ? 18446744073709551616.0 : 9223372036854775808.0;
          if (std::isfinite(v) && v == std::floor(v) && v < limit && v >= (want_unsigned ? least : -limit)) {
            return fmt::format("{:.0f}", v + 0.0);  // + 0.0: -0.0 (-0e0 in a file) is written 0, not -0
          }
        }
        wrong_type(n, label, expected);
      }
      case value_kind::number: {
        if (const auto* i = n.as_integer()) return fmt::format("{}", i->get());
        if (const auto* f = n.as_floating_point(); f != nullptr && std::isfinite(f->get())) {
          return fmt::format("{}", f->get());
        }
        wrong_type(n, label, expected);
      }
      case value_kind::text: {
        if (const auto* s = n.as_string()) {
          if (s->get().find('\0') != std::string::npos) wrong_type(n, label, "a string without NUL characters");
          return s->get();
        }
        wrong_type(n, label, expected);
      }
    }
    wrong_type(n, label, expected);
  }

  // `--name=value`, which CLI11 takes whatever the value looks like; an
  // empty value as `--name` and `""`, since CLI11 reads `--name=` as the
  // flag without its value and would take the next token (a command word)
  // for it.
  static void add_value(config_flag& out, std::string value) {
    if (value.empty()) {
      out.tokens.push_back("--" + out.name);
      out.tokens.emplace_back();
    } else {
      out.tokens.push_back(fmt::format("--{}={}", out.name, value));
    }
  }

  config_flag flag_value(const toml::node& n, const flag_info& flag, const std::string& label) const {
    config_flag out{flag.name, {}, line_of(n)};
    if (flag.kind == value_kind::on_off) {
      const auto* b = n.as_boolean();
      if (b == nullptr) wrong_type(n, label, expected_text(flag));
      if (b->get()) out.tokens.push_back("--" + flag.name);
      return out;
    }
    if (const auto* a = n.as_array()) {
      if (!flag.repeatable) wrong_type(n, label, expected_text(flag));
      // No value at all would leave the flag at its default, silently (the
      // command line has no way to say it either).
      if (a->empty()) wrong_type(n, label, expected_text(flag) + " or a non-empty array of them");
      for (std::size_t i = 0; i < a->size(); ++i) {
        add_value(out, scalar(*a->get(i), flag, fmt::format("{}[{}]", label, i)));
      }
      return out;
    }
    if (n.is_table()) {
      wrong_type(n, label, expected_text(flag) + (flag.repeatable ? " or an array of them" : ""));
    }
    add_value(out, scalar(n, flag, label));
    return out;
  }

  // Flags of `c` and its sections, from `table`, in file order.
  void read_table(const toml::table& table, const command_info& c, const command_info& root) {
    std::vector<std::pair<const toml::key*, const toml::node*>> entries;
    for (auto&& [k, v] : table) entries.emplace_back(&k, &v);
    auto line = [](const auto& e) { return std::max<std::size_t>(e.first->source().begin.line, line_of(*e.second)); };
    std::stable_sort(entries.begin(), entries.end(), [&](const auto& a, const auto& b) { return line(a) < line(b); });
    for (const auto& e : entries) {
      const std::string key(e.first->str());
      const toml::node& v = *e.second;
      const std::size_t at = e.first->source().begin.line != 0 ? e.first->source().begin.line : line_of(v);
      if (const auto* f = c.find_flag(key)) {
        values[c.section].push_back(flag_value(v, *f, key_label(c, key)));
        continue;
      }
      if (const auto* sub = c.find_command(key)) {
        const auto* t = v.as_table();
        if (t == nullptr) wrong_type(v, sub->section, "a section ([" + sub->section + "])");
        read_table(*t, *sub, root);
        continue;
      }
      if (v.is_table()) {
        std::vector<std::string> sections;
        collect_sections(root, sections);
        fail(errors::config_unknown_section, file, at, shown(c.section.empty() ? key : c.section + "." + key),
             fmt::format("{}", fmt::join(sections, ", ")));
      }
      if (c.section.empty()) {
        if (const auto* owner = command_with_flag(root, key)) {
          std::vector<std::string> globals;
          for (const auto& f : root.flags) globals.push_back(f.name);
          fail(errors::config_top_level_key, file, at, key, fmt::format("{}", fmt::join(globals, ", ")),
               owner->section);
        }
      }
      fail(errors::config_unknown_key, file, at, shown(key), place_of(c), unknown_key_hint(c, key));
    }
  }

  static void collect_sections(const command_info& c, std::vector<std::string>& out) {
    for (const auto& sub : c.commands) {
      out.push_back(sub.section);
      collect_sections(sub, out);
    }
  }

  static const command_info* command_with_flag(const command_info& c, std::string_view name) {
    for (const auto& sub : c.commands) {
      if (sub.find_flag(name) != nullptr) return &sub;
      if (const auto* deeper = command_with_flag(sub, name)) return deeper;
    }
    return nullptr;
  }
};

}  // namespace

const flag_info* command_info::find_flag(std::string_view n) const noexcept {
  for (const auto& f : flags) {
    if (f.name == n) return &f;
  }
  return nullptr;
}

const command_info* command_info::find_command(std::string_view n) const noexcept {
  for (const auto& c : commands) {
    if (c.name == n) return &c;
  }
  return nullptr;
}

std::uint64_t least_count(std::string_view name) noexcept {
  return name == "envs-per-group" || name == "shards" ? 1 : 0;
}

value_kind kind_of(const CLI::Option& o) {
  if (o.get_expected_max() == 0) return value_kind::on_off;  // a switch (add_flag)
  const std::string type = o.get_type_name();
  const std::string base = type.substr(0, type.find(':'));
  if (type == auto_or_count_type) return value_kind::count_or_auto;
  if (base == "UINT") return value_kind::unsigned_whole;
  if (base == "INT") return value_kind::whole;
  if (base == "FLOAT") return value_kind::number;
  return value_kind::text;
}

namespace {

void describe_into(const CLI::App& app, command_info& c) {
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_lnames().empty()) continue;
    const std::string& name = o->get_lnames().front();
    if (name == "help" || name == "config") continue;
    c.flags.push_back({.name = name,
                       .kind = kind_of(*o),
                       .least = least_count(name),
                       .repeatable = o->get_items_expected_max() > 1,
                       .extra_values = o->get_items_expected_max() > 1 && o->get_allow_extra_args()});
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    command_info s;
    s.name = sub->get_name();
    s.path = c.path.empty() ? s.name : c.path + " " + s.name;
    s.section = c.section.empty() ? s.name : c.section + "." + s.name;
    describe_into(*sub, s);
    c.commands.push_back(std::move(s));
  }
}

}  // namespace

command_info describe_commands(const CLI::App& app) {
  command_info root;
  describe_into(app, root);
  return root;
}

config_values parse_config(std::string_view text, std::string_view file, const command_info& root) {
  if (const auto bad = first_non_text_byte(text); bad != std::string_view::npos) {
    fail(errors::config_not_text, file, line_of(text, bad), static_cast<unsigned char>(text[bad]));
  }
  check_depth(text, file);
  toml::table table;
  try {
    table = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    fail(errors::config_syntax, file, e.source().begin.line, e.source().begin.column, e.description());
  }
  reader r{file, {}};
  r.read_table(table, root, root);
  return std::move(r.values);
}

config_values read_config(const std::string& path, const command_info& root) {
  input_file file(path, max_config_bytes);
  std::string text;
  if (file.fault() == input_file_fault::too_large) fail(errors::config_too_large, path, max_config_bytes);
  if (!file || !file.read_rest(text)) fail(errors::config_unreadable, path, file.problem());
  return parse_config(text, path, root);
}

}  // namespace coral::cli
