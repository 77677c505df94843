// The run_settings record of a checkpoint (checkpoint_settings.hpp).

#include "coral/training/checkpoint_settings.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/errors.hpp"

namespace coral::training {
namespace {

void put(std::vector<char>& out, std::string_view s) {
  const auto n = static_cast<std::uint32_t>(s.size());
  const auto* p = reinterpret_cast<const char*>(&n);
  out.insert(out.end(), p, p + sizeof n);
  out.insert(out.end(), s.begin(), s.end());
}

/// Reads the pairs back; false when the bytes are not a whole sequence of them.
bool decode(const std::vector<char>& bytes, std::vector<std::pair<std::string, std::string>>& out) {
  std::size_t at = 0;
  auto take = [&](std::string& s) {
    std::uint32_t n = 0;
    if (bytes.size() - at < sizeof n) return false;
    std::memcpy(&n, bytes.data() + at, sizeof n);
    at += sizeof n;
    if (bytes.size() - at < n) return false;
    s.assign(bytes.data() + at, n);
    at += n;
    return true;
  };
  while (at < bytes.size()) {
    auto& [key, value] = out.emplace_back();
    if (!take(key) || !take(value)) return false;
  }
  return true;
}

template <class T>
bool read_number(std::string_view s, T& v) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size();
}

bool read_list(std::string_view s, std::vector<std::size_t>& v) {
  v.clear();
  while (!s.empty()) {
    const auto space = s.find(' ');
    std::size_t x = 0;
    if (!read_number(s.substr(0, space), x)) return false;
    v.push_back(x);
    if (space == std::string_view::npos) break;
    s.remove_prefix(space + 1);
  }
  return true;
}

/// `text` as a value of `kind`, if it reads as one.
std::optional<option_value> read_value(option_kind kind, std::string_view text) {
  switch (kind) {
    case option_kind::on_off:
      if (text == "true" || text == "false") return option_value(text == "true");
      return std::nullopt;
    case option_kind::whole: {
      std::uint64_t v = 0;
      if (read_number(text, v)) return option_value(v);
      return std::nullopt;
    }
    case option_kind::number: {
      double v = 0;
      if (read_number(text, v) && std::isfinite(v)) return option_value(v);
      return std::nullopt;
    }
    case option_kind::whole_list: {
      std::vector<std::size_t> v;
      if (read_list(text, v)) return option_value(std::move(v));
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<char> encode_run_settings(const train_options& o) {
  std::vector<char> out;
  for (const auto& [key, value] : o.sampler.env_args) {
    put(out, "env-arg");
    put(out, key + "=" + value);
  }
  put(out, "hidden");
  put(out, to_text(option_value(o.hidden)));
  put(out, "conv");
  put(out, fmt::format("{}", fmt::join(o.conv, " ")));
  for (const auto& [name, value] : algorithm_settings(o)) {
    put(out, name);
    put(out, value);
  }
  return out;
}

train_options run_options_of(const checkpoint& c, std::string_view file) {
  const auto* record = c.record(run_settings_record);
  if (record == nullptr) throw checkpoint_error(fmt::format(fmt::runtime(errors::checkpoint_no_settings), file));
  auto bad = [&] {
    return checkpoint_error(fmt::format(fmt::runtime(errors::checkpoint_bad_record), file, run_settings_record));
  };
  std::vector<std::pair<std::string, std::string>> pairs;
  if (!decode(*record, pairs)) throw bad();
  train_options o;
  o.sampler.env = c.env;
  o.sampler.seed = c.seed;
  o.algo = c.algo;
  const auto d = find_algorithm(c.algo);
  o.algo_options = d->defaults();
  // A checkpoint written before --conv existed holds a network without convolutions.
  o.conv = {"none"};
  for (const auto& [key, value] : pairs) {
    if (key == "env-arg") {
      const auto eq = value.find('=');
      if (eq == std::string::npos) throw bad();
      o.sampler.env_args.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    } else if (key == "hidden") {
      if (!read_list(value, o.hidden)) throw bad();
    } else if (key == "conv") {
      o.conv.clear();
      for (std::string_view rest = value; !rest.empty();) {
        const auto space = rest.find(' ');
        o.conv.emplace_back(rest.substr(0, space));
        rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
      }
    } else {
      for (const auto& f : d->fields) {
        if (f.name != key) continue;
        auto v = read_value(f.kind, value);
        if (!v) throw bad();
        f.set(o.algo_options, *v);
      }
    }
  }
  return o;
}

void check_acting_network(const checkpoint& c, std::string_view signature, std::string_view file) {
  if (c.network != signature) {
    throw checkpoint_error(fmt::format(fmt::runtime(errors::checkpoint_mismatch), file, "network", c.network, signature));
  }
}

}  // namespace coral::training
