#include "coral/training/algorithm_descriptor.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <set>
#include <variant>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/core/error.hpp"
#include "coral/core/errors.hpp"
#include "coral/training/errors.hpp"
#include "coral/training/option_checks.hpp"

namespace coral::training {
namespace {

std::mutex registry_mutex;

std::vector<std::shared_ptr<const algorithm_descriptor>>& registry() {
  static std::vector<std::shared_ptr<const algorithm_descriptor>> algorithms;
  return algorithms;
}

std::string names_locked() {
  std::string names;
  for (const auto& d : registry()) names += (names.empty() ? "" : ", ") + d->name;
  return names;
}

const option_field* field_named(const algorithm_descriptor& d, std::string_view name) {
  const auto f = std::find_if(d.fields.begin(), d.fields.end(), [name](const option_field& x) { return x.name == name; });
  return f == d.fields.end() ? nullptr : &*f;
}

}  // namespace

std::string to_text(const option_value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::vector<std::size_t>>) {
          return fmt::format("{}", fmt::join(x, " "));
        } else {
          return fmt::format("{}", x);
        }
      },
      v);
}

void register_algorithm(algorithm_descriptor d) {
  if (d.name.empty() || !d.defaults || !d.make) {
    throw usage_error("register_algorithm: a descriptor needs a name, defaults and a factory ('" + d.name + "')");
  }
  if (d.title.empty()) d.title = d.name;
  std::set<std::string_view> seen;
  for (const auto& f : d.fields) {
    if (!seen.insert(f.name).second) {
      throw usage_error("register_algorithm: '" + d.name + "' declares --" + f.name + " twice");
    }
    // Every number has its range (option_range): no flag that a float
    // overflows at the first update, or a ratio that never lets a run end.
    if (f.kind == option_kind::number && !f.range) {
      throw usage_error("register_algorithm: '" + d.name + "' declares --" + f.name +
                        " without a range (training::within or over)");
    }
  }
  auto shared = std::make_shared<const algorithm_descriptor>(std::move(d));
  std::lock_guard lock(registry_mutex);
  for (const auto& other : registry()) {
    if (other->name == shared->name) continue;
    for (const auto& f : shared->fields) {
      const auto* g = field_named(*other, f.name);
      if (g != nullptr && g->kind != f.kind) {
        throw usage_error(fmt::format("register_algorithm: --{} of '{}' is of another kind than '{}''s", f.name,
                                      shared->name, other->name));
      }
    }
  }
  for (auto& r : registry()) {
    if (r->name == shared->name) {
      r = std::move(shared);
      return;
    }
  }
  registry().push_back(std::move(shared));
}

void register_algorithm(std::string name, algorithm_factory make, std::function<void(const train_options&)> check) {
  algorithm_descriptor d;
  d.name = std::move(name);
  d.defaults = [] { return std::any(std::monostate{}); };
  d.make = std::move(make);
  d.check = std::move(check);
  register_algorithm(std::move(d));
}

void unregister_algorithm(std::string_view name) {
  std::lock_guard lock(registry_mutex);
  std::erase_if(registry(), [name](const auto& d) { return d->name == name; });
}

std::shared_ptr<const algorithm_descriptor> find_algorithm(std::string_view name) {
  std::lock_guard lock(registry_mutex);
  for (const auto& d : registry()) {
    if (d->name == name) return d;
  }
  throw config_error(fmt::format(fmt::runtime(coral::errors::bad_value), "--algo", name, names_locked()));
}

std::vector<std::shared_ptr<const algorithm_descriptor>> registered_algorithms() {
  std::lock_guard lock(registry_mutex);
  return registry();
}

std::string algorithm_names() {
  std::lock_guard lock(registry_mutex);
  return names_locked();
}

train_options with_algorithm_defaults(train_options o) {
  const auto d = find_algorithm(o.algo);
  auto defaults = d->defaults();
  if (!o.algo_options.has_value()) {
    o.algo_options = std::move(defaults);
  } else if (o.algo_options.type() != defaults.type()) {
    throw usage_error(fmt::format("train_options::algo_options holds {}, not --algo {}'s options ({})",
                                  o.algo_options.type().name(), o.algo, defaults.type().name()));
  }
  return o;
}

std::vector<std::pair<std::string, std::string>> algorithm_settings(const train_options& o) {
  const auto filled = with_algorithm_defaults(o);
  const auto d = find_algorithm(o.algo);
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(d->fields.size());
  for (const auto& f : d->fields) out.emplace_back(f.name, to_text(f.get(filled.algo_options)));
  return out;
}

std::string option_range::text() const {
  // Whole numbers as written in the docs (1000000, not 1e+06).
  auto number = [](double v) {
    return v == std::floor(v) && std::fabs(v) < 1e15 ? fmt::format("{:.0f}", v) : fmt::format("{}", v);
  };
  return fmt::format("{}{}, {}]", low_open ? "(" : "[", number(low), number(high));
}

void check_setting_ranges(const train_options& o) {
  const auto filled = with_algorithm_defaults(o);
  const auto d = find_algorithm(o.algo);
  for (const auto& f : d->fields) {
    if (!f.range) continue;
    const auto v = f.get(filled.algo_options);
    double x = 0;
    if (const auto* n = std::get_if<double>(&v)) {
      x = *n;
    } else if (const auto* w = std::get_if<std::uint64_t>(&v)) {
      x = static_cast<double>(*w);
    } else {
      continue;
    }
    if (!f.range->holds(x)) detail::out_of_range("--" + f.name, to_text(v), "must be in " + f.range->text());
  }
}

void check_setting_declared(std::string_view name, std::string_view algo) {
  const auto self = find_algorithm(algo);
  if (field_named(*self, name) != nullptr) return;
  std::vector<std::string> readers;
  for (const auto& d : registered_algorithms()) {
    if (field_named(*d, name) != nullptr) readers.push_back(d->title);
  }
  if (readers.empty()) return;
  std::string who;
  for (std::size_t i = 0; i < readers.size(); ++i) {
    who += (i == 0 ? "" : i + 1 == readers.size() ? " and " : ", ") + readers[i];
  }
  throw config_error(fmt::format(fmt::runtime(errors::setting_of_other_algo), "--" + std::string(name), who, algo));
}

}  // namespace coral::training
