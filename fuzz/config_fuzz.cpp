// libFuzzer target: the TOML config (`coral --config FILE`), through the
// loader `coral` runs (apps/coral/config_file.cpp, command_line.cpp).
//
// Input: the file's text. The app is coral's own: the top-level flags as
// cli.cpp's run() declares them, then add_envs_command, add_bench_command,
// add_train_command and add_value_checks; parsing stops before any command
// runs. Its description (describe_commands)
// is what parse_config checks the text against, as in run().
//
// A text must either be refused with a config_error that names the file and
// a line of it, or be TOML (the loader is strict: whatever toml++ refuses,
// it refuses) and yield only flags of the app, in their commands' sections,
// as command-line tokens of the flag's value kind. Those tokens, merged
// into the command line of each command, must then be taken by CLI11: it
// may refuse a value (a check or conversion of the flag, a required flag
// missing) but never a token (an unknown flag, a flag given too many
// values). Any other exception, or a sanitizer report, is a crash.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "coral/cli.hpp"
#include "coral/command_line.hpp"
#include "coral/config_file.hpp"
#include "coral/core/error.hpp"
#include "coral/flag_checks.hpp"
#include "fuzz_support.hpp"

namespace {

namespace cli = coral::cli;
using coral::fuzz::check;
using coral::fuzz::fail;

constexpr std::string_view file_name = "fuzz.toml";

/// Thrown by the app once CLI11 has taken and checked every token, before
/// any command runs: the app's own parse-complete callback runs before its
/// commands' callbacks (which own the flags' storage, so they stay).
struct tokens_taken {};

/// coral's app, built once: libFuzzer runs one input at a time, and CLI11
/// clears an app's results before each parse.
struct coral_app {
  std::ostringstream out;  // where the commands would write; none runs
  CLI::App app{"coral", "coral"};
  cli::command_info commands;

  coral_app() {
    // cli.cpp's --log-level, minus setting the process's log level.
    app.add_option_function<std::string>("--log-level", [](const std::string&) {}, "log level")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
    app.require_subcommand(1);
    cli::add_envs_command(app, out);
    cli::add_bench_command(app, out);
    cli::add_train_command(app, out, out);
    cli::add_value_checks(app);
    app.parse_complete_callback([] { throw tokens_taken{}; });
    commands = cli::describe_commands(app);
  }
};

coral_app& the_app() {
  static coral_app a;
  return a;
}

/// The command whose config section is `section` ("" for the top level), or null.
const cli::command_info* command_of(const cli::command_info& c, std::string_view section) {
  if (c.section == section) return &c;
  for (const auto& sub : c.commands) {
    if (const auto* found = command_of(sub, section)) return found;
  }
  return nullptr;
}

template <class T>
bool parses_as(std::string_view s) {
  T v{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size();
}

/// Whether `value` is a command-line value of `kind`.
bool of_kind(std::string_view value, cli::value_kind kind) {
  switch (kind) {
    case cli::value_kind::whole:
      return parses_as<std::int64_t>(value);
    case cli::value_kind::unsigned_whole:
      return parses_as<std::uint64_t>(value);
    case cli::value_kind::number: {
      const std::string s(value);
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      return !s.empty() && end == s.c_str() + s.size() && std::isfinite(v);
    }
    case cli::value_kind::text:
      return value.find('\0') == std::string_view::npos;
    case cli::value_kind::count_or_auto:
      return value == "auto" || parses_as<std::uint64_t>(value);
    case cli::value_kind::on_off:
      return false;  // a switch has no value
  }
  return false;
}

/// An accepted file sets only flags of the app, each as tokens of its kind
/// on a line of the file.
void check_values(const cli::config_values& values, const cli::command_info& root, std::size_t lines) {
  for (const auto& [section, flags] : values) {
    const cli::command_info* c = command_of(root, section);
    if (c == nullptr) fail(fmt::format("the loader accepted section [{}], which no command has", section));
    for (const auto& f : flags) {
      const cli::flag_info* info = c->find_flag(f.name);
      if (info == nullptr) fail(fmt::format("the loader accepted key '{}' in [{}], which is no flag there", f.name, section));
      check(f.line >= 1 && f.line <= lines, "the loader gave a flag a line outside the file");
      if (info->kind == cli::value_kind::on_off) {
        check(f.tokens.empty() || (f.tokens.size() == 1 && f.tokens[0] == "--" + f.name),
              "the loader gave a switch a value");
        continue;
      }
      // Each value is `--name=value`, or `--name` and an empty text.
      const std::string flag = "--" + f.name;
      std::size_t count = 0;
      for (std::size_t i = 0; i < f.tokens.size(); ++i, ++count) {
        const std::string_view t = f.tokens[i];
        if (t == flag && info->kind == cli::value_kind::text && i + 1 < f.tokens.size() && f.tokens[i + 1].empty()) {
          ++i;
          continue;
        }
        if (!t.starts_with(flag + "=") || t.size() == flag.size() + 1 ||
            !of_kind(t.substr(flag.size() + 1), info->kind)) {
          fail(fmt::format("the loader gave [{}] {} the token '{}', not a value of its kind", section, f.name, t));
        }
      }
      check(info->repeatable || count == 1, "the loader gave a flag of one value several, or none");
    }
  }
}

/// A refused file's error names the file and one of its lines.
void check_refusal(const coral::config_error& e, std::size_t lines) {
  const std::string_view what = e.what();
  const std::string head = fmt::format("config file '{}', line ", file_name);
  if (!what.starts_with(head)) fail(fmt::format("a refusal that does not name the file and line: {}", what));
  std::size_t line = 0;
  const auto rest = what.substr(head.size());
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), line);
  if (ec != std::errc() || line < 1 || line > lines) {
    fail(fmt::format("a refusal naming no line of the file's {}: {}", lines, what));
  }
}

/// The file's flags, merged into the command line of `path` (command words
/// after `coral`), are taken by CLI11 token for token.
void check_parse(coral_app& a, const std::vector<const char*>& path, const cli::config_values& values) {
  std::vector<const char*> argv{"coral"};
  argv.insert(argv.end(), path.begin(), path.end());
  const auto line = cli::scan_command_line(static_cast<int>(argv.size()), argv.data(), a.commands);
  std::vector<std::string> tokens = cli::merge_command_line(line, values);
  std::reverse(tokens.begin(), tokens.end());
  try {
    a.app.parse(tokens);
    fail("the app parsed without stopping before its commands");
  } catch (const tokens_taken&) {
    return;
  } catch (const CLI::ParseError& e) {
    // A value refused by the flag's own checks is the command line's
    // business (it names the flag); a token CLI11 cannot place is the loader's.
    const std::string name = e.get_name();
    if (name == "ValidationError" || name == "ConversionError" || name == "RequiredError") return;
    fail(fmt::format("CLI11 refused the file's flags for `coral {}`: {}: {}", fmt::join(path, " "), name, e.what()));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  coral_app& a = the_app();
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::size_t lines = 1 + static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  cli::config_values values;
  try {
    values = cli::parse_config(text, file_name, a.commands);
  } catch (const coral::config_error& e) {
    check_refusal(e, lines);
    return 0;
  }
  // toml++ only on what the loader took: nested deep enough (a 40,000-part
  // key, the make_seeds seeds), the text overflows toml++'s stack, which
  // is why the loader bounds the depth first.
  bool valid_toml = true;
  try {
    const toml::table table = toml::parse(std::string_view(text), file_name);
  } catch (const toml::parse_error&) {
    valid_toml = false;
  }
  check(valid_toml, "the config loader accepted a text that is not TOML");
  check_values(values, a.commands, lines);
  check_parse(a, {"envs"}, values);
  check_parse(a, {"envs", "rollout"}, values);
  check_parse(a, {"bench"}, values);
  check_parse(a, {"train"}, values);
  return 0;
}
