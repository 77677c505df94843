#pragma once
/// \file
/// Test support: checks text in Prometheus's exposition format (0.0.4) line
/// by line: every line is blank, a comment (`# HELP name text`, `# TYPE
/// name counter|gauge|...`, or any other `#` line), or one sample,
/// `name{label="value",...} value`, whose name was declared by a `# TYPE`
/// line before it.

#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace coral::test {

/// One sample of the text.
struct prometheus_sample {
  std::string name;
  std::string labels;  ///< inside the braces, as written
  double value = 0;
};

/// The text's samples; each line that breaks the format goes to `problems`.
inline std::vector<prometheus_sample> parse_prometheus(const std::string& text, std::vector<std::string>& problems) {
  static const std::regex type_line(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped))");
  static const std::regex help_line(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .*)");
  static const std::regex label(R"([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")");
  static const std::regex sample_line(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")*)?\})? ([^ ]+))");
  std::map<std::string, std::string> types;
  std::vector<prometheus_sample> samples;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.starts_with("# TYPE")) {
      if (std::regex_match(line, m, type_line)) {
        types[m[1]] = m[2];
      } else {
        problems.push_back("bad TYPE line: " + line);
      }
      continue;
    }
    if (line.starts_with("# HELP")) {
      if (!std::regex_match(line, m, help_line)) problems.push_back("bad HELP line: " + line);
      continue;
    }
    if (line.starts_with("#")) continue;
    if (!std::regex_match(line, m, sample_line)) {
      problems.push_back("not a sample: " + line);
      continue;
    }
    const std::string value = m[3];
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    const bool special = value == "NaN" || value == "+Inf" || value == "-Inf";
    if (!special && (end == value.c_str() || *end != '\0')) problems.push_back("not a number: " + line);
    if (!types.contains(m[1])) problems.push_back("no # TYPE before: " + line);
    samples.push_back({m[1], m[2], v});
  }
  return samples;
}

}  // namespace coral::test
