#pragma once
/// \file
/// coral spaces to and from the plain tuples the Python package builds its
/// space objects from:
/// ("box", shape, low, high) · ("discrete", n) · ("multi_discrete", nvec) ·
/// ("dict", [(key, desc), ...]) · ("tuple", [desc, ...]).

#include <pybind11/pybind11.h>

#include "coral/envs/space.hpp"

namespace coral::python {

/// The description of `s`.
[[nodiscard]] pybind11::object space_to_desc(const envs::space& s);

/// The space a description describes; throws config_error naming what is wrong.
[[nodiscard]] envs::space space_from_desc(pybind11::handle desc);

}  // namespace coral::python
