#include "coral/command_line.hpp"

#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/core/error.hpp"
#include "coral/errors.hpp"

namespace coral::cli {
namespace {

// A flag, not a value: `--seed`, `-h`; `-1` and `-.5` are values, as CLI11 takes them.
bool is_flag(std::string_view token) {
  if (token.size() < 2 || token[0] != '-') return false;
  return !(std::isdigit(static_cast<unsigned char>(token[1])) != 0 || token[1] == '.');
}

std::string commands_of(const command_info& c) {
  std::vector<std::string> paths;
  for (const auto& sub : c.commands) paths.push_back(sub.path);
  return fmt::format("{}", fmt::join(paths, ", "));
}

// A typed flag replaces the file's value of the flag itself and of its
// negation: `--run-dir D` typed wins over `no-run-dir = true` in the file.
bool typed(const std::set<std::string>& given, const std::string& name) {
  const std::string opposite = name.starts_with("no-") ? name.substr(3) : "no-" + name;
  return given.contains(name) || given.contains(opposite);
}

}  // namespace

scanned_command_line scan_command_line(int argc, const char* const* argv, const command_info& root) {
  scanned_command_line s;
  s.path.push_back(&root);
  s.tokens.emplace_back();
  s.given.emplace_back();
  bool values_only = false;  // after `--`
  for (int i = 1; i < argc; ++i) {
    const std::string token = argv[i];
    const command_info& command = *s.path.back();
    auto& tokens = s.tokens.back();
    if (values_only) {
      tokens.push_back(token);
      continue;
    }
    if (token == "--") {
      values_only = true;
      tokens.push_back(token);
      continue;
    }
    if (token == "--config" || token.starts_with("--config=")) {
      std::string file;
      if (token == "--config" && i + 1 < argc) file = argv[++i];
      if (token != "--config") file = token.substr(std::string_view("--config=").size());
      if (file.empty()) throw config_error(std::string(errors::config_needs_file));
      if (s.config) throw config_error(fmt::format(fmt::runtime(errors::config_twice), *s.config, file));
      s.config = file;
      continue;
    }
    if (is_flag(token)) {
      tokens.push_back(token);
      if (token == "-h" || token == "--help") {
        s.help = true;
        continue;
      }
      if (!token.starts_with("--")) continue;  // coral's only short flag is -h
      const auto eq = token.find('=');
      const std::string name = token.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      s.given.back().insert(name);
      const flag_info* flag = command.find_flag(name);
      if (flag != nullptr && flag->kind != value_kind::on_off && eq + 1 == token.size()) {
        // `--name=`: an empty value. CLI11 reads it as the flag without its
        // value and takes the next token for it (`--run-dir= --total-steps=100`
        // made a directory of that name and ran to the default length), so it
        // goes on as `--name ""`, as an empty value from a config file does.
        tokens.back() = "--" + name;
        tokens.emplace_back();
        continue;
      }
      if (flag == nullptr || flag->kind == value_kind::on_off || eq != std::string::npos) continue;
      // CLI11 takes the next token as the value whatever it looks like, then
      // more values for a flag such as --hidden up to the next flag or command.
      if (i + 1 < argc) tokens.push_back(argv[++i]);
      while (flag->extra_values && i + 1 < argc && !is_flag(argv[i + 1]) && command.find_command(argv[i + 1]) == nullptr) {
        tokens.push_back(argv[++i]);
      }
      continue;
    }
    if (const command_info* sub = command.find_command(token)) {
      s.path.push_back(sub);
      s.tokens.emplace_back();
      s.given.emplace_back();
      continue;
    }
    if (!command.commands.empty()) {
      throw config_error(fmt::format(fmt::runtime(errors::unknown_command),
                                     command.path.empty() ? token : command.path + " " + token, commands_of(command)));
    }
    tokens.push_back(token);  // CLI11 names it as not expected
  }
  if (s.path.size() == 1 && !s.help) {
    throw config_error(fmt::format(fmt::runtime(errors::missing_command), commands_of(root)));
  }
  return s;
}

std::vector<std::string> merge_command_line(const scanned_command_line& line, const config_values& file) {
  std::vector<std::string> out;
  for (std::size_t level = 0; level < line.path.size(); ++level) {
    const command_info& command = *line.path[level];
    if (level > 0) out.push_back(command.name);
    if (const auto it = file.find(command.section); it != file.end()) {
      for (const auto& flag : it->second) {
        if (!typed(line.given[level], flag.name)) out.insert(out.end(), flag.tokens.begin(), flag.tokens.end());
      }
    }
    out.insert(out.end(), line.tokens[level].begin(), line.tokens[level].end());
  }
  return out;
}

}  // namespace coral::cli
