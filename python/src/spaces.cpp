#include "spaces.hpp"

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "coral/core/error.hpp"

namespace py = pybind11;

namespace coral::python {

py::object space_to_desc(const envs::space& s) {
  switch (s.kind()) {
    case envs::space_kind::box:
      return py::make_tuple("box", py::tuple(py::cast(s.shape())), py::cast(s.low()), py::cast(s.high()));
    case envs::space_kind::discrete:
      return py::make_tuple("discrete", s.n());
    case envs::space_kind::multi_discrete:
      return py::make_tuple("multi_discrete", py::cast(s.nvec()));
    case envs::space_kind::dict: {
      py::list entries;
      for (std::size_t i = 0; i < s.children().size(); ++i) {
        entries.append(py::make_tuple(s.keys()[i], space_to_desc(s.children()[i])));
      }
      return py::make_tuple("dict", entries);
    }
    case envs::space_kind::tuple: {
      py::list items;
      for (const auto& c : s.children()) items.append(space_to_desc(c));
      return py::make_tuple("tuple", items);
    }
  }
  return py::none();
}

envs::space space_from_desc(py::handle desc) {
  try {
    auto t = desc.cast<py::tuple>();
    const auto kind = t[0].cast<std::string>();
    if (kind == "box") {
      return envs::space::box(t[1].cast<std::vector<std::size_t>>(), t[2].cast<std::vector<float>>(),
                              t[3].cast<std::vector<float>>());
    }
    if (kind == "discrete") return envs::space::discrete(t[1].cast<std::int32_t>());
    if (kind == "multi_discrete") return envs::space::multi_discrete(t[1].cast<std::vector<std::int32_t>>());
    if (kind == "dict") {
      std::vector<std::pair<std::string, envs::space>> entries;
      for (auto e : t[1]) {
        auto pair = e.cast<py::tuple>();
        entries.emplace_back(pair[0].cast<std::string>(), space_from_desc(pair[1]));
      }
      return envs::space::dict(std::move(entries));
    }
    if (kind == "tuple") {
      std::vector<envs::space> items;
      for (auto e : t[1]) items.push_back(space_from_desc(e));
      return envs::space::tuple(std::move(items));
    }
    throw config_error(fmt::format("space: unknown kind '{}'", kind));
  } catch (const py::cast_error& e) {
    throw config_error(fmt::format("space: malformed description {}: {}", py::repr(desc).cast<std::string>(),
                                   e.what()));
  } catch (const usage_error& e) {
    throw config_error(fmt::format("space: {}", e.what()));
  }
}

}  // namespace coral::python
