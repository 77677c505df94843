// Python envs inside coral: `coral.register(name, EnvClass, **defaults)`.
//
// A registered Python env is an envs::env whose reset() and step() take the
// GIL and call an adapter (coral/_pyenv.py) around the user's instance; the
// adapter converts between the user's Gymnasium-style values and coral's
// flat rows. Envs of one process share the one GIL: they step one at a time
// on whichever sampling thread runs them, and the thread that drives coral
// (a vector env's step(), coral.train) releases the GIL while it waits.

#include "python_env.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <pybind11/numpy.h>

#include "coral/envs/registry.hpp"
#include "coral/core/error.hpp"
#include "spaces.hpp"

namespace py = pybind11;

namespace coral::python {
namespace {

/// The text of the Python exception being handled, taken under the GIL (the
/// error_already_set must not outlive it).
std::string describe(const py::error_already_set& e) { return e.what(); }

/// Copies a float32 vector of `width` elements into `row`; throws naming `what` otherwise.
void copy_row(const py::handle& value, std::span<float> row, std::string_view what) {
  auto a = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(value);
  if (!a || static_cast<std::size_t>(a.size()) != row.size()) {
    throw std::runtime_error(fmt::format("{}: expected {} floats from the adapter", what, row.size()));
  }
  std::memcpy(row.data(), a.data(), row.size() * sizeof(float));
}

/// The adapter an env holds: given back under the GIL when the env goes, or
/// left alone when the interpreter is already gone (nothing to give back).
class adapter_ref {
 public:
  explicit adapter_ref(py::object adapter) : adapter_(std::move(adapter)) {}
  adapter_ref(const adapter_ref&) = delete;
  adapter_ref& operator=(const adapter_ref&) = delete;
  ~adapter_ref() {
    if (!Py_IsInitialized()) {
      adapter_.release();
      return;
    }
    py::gil_scoped_acquire gil;
    adapter_ = py::object();
  }
  /// Attribute `name` of the adapter (call under the GIL).
  [[nodiscard]] py::object attr(const char* name) const { return adapter_.attr(name); }

 private:
  py::object adapter_;
};

class python_env final : public envs::env {
 public:
  python_env(py::object adapter, envs::space observation, envs::space action)
      : adapter_(std::move(adapter)), observation_(std::move(observation)), action_(std::move(action)) {}

  void reset(const envs::env_rows& rows) override {
    py::gil_scoped_acquire gil;
    try {
      copy_row(adapter_.attr("reset")(), rows.observation(), "reset");
    } catch (py::error_already_set& e) {
      throw std::runtime_error(describe(e));
    }
  }

  void step(const envs::env_rows& rows) override {
    py::gil_scoped_acquire gil;
    try {
      const auto d = rows.discrete_action();
      const auto c = rows.continuous_action();
      py::array_t<std::int32_t> discrete(static_cast<py::ssize_t>(d.size()), d.data());
      py::array_t<float> continuous(static_cast<py::ssize_t>(c.size()), c.data());
      py::tuple out = adapter_.attr("step")(discrete, continuous);
      copy_row(out[0], rows.observation(), "step");
      rows.reward() = out[1].cast<float>();
      rows.terminated() = static_cast<std::uint8_t>(out[2].cast<bool>());
      rows.truncated() = static_cast<std::uint8_t>(out[3].cast<bool>());
    } catch (py::error_already_set& e) {
      throw std::runtime_error(describe(e));
    }
  }

  [[nodiscard]] const envs::space& observation_space() const noexcept override { return observation_; }
  [[nodiscard]] const envs::space& action_space() const noexcept override { return action_; }

 private:
  adapter_ref adapter_;
  envs::space observation_;
  envs::space action_;
};

/// Copies `value`, an array of exactly `count` T's (as the adapter makes them), to `out`; throws naming `what` otherwise.
template <class T>
void copy_block(const py::handle& value, T* out, std::size_t count, std::string_view what) {
  auto a = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(value);
  if (!a || static_cast<std::size_t>(a.size()) != count) {
    throw std::runtime_error(fmt::format("{}: expected {} values from the adapter", what, count));
  }
  std::memcpy(out, a.data(), count * sizeof(T));
}

/// A Python env with several agent slots (PettingZoo's parallel API), or
/// one that masks actions: its adapter (coral/_pyenv.py, _AgentsAdapter)
/// takes and gives whole blocks of its rows (rows are consecutive in the
/// batch: slot i is row i).
class python_agents_env final : public envs::env {
 public:
  python_agents_env(py::object adapter, envs::space observation, envs::space action, std::size_t agents,
                    std::size_t mask_size)
      : adapter_(std::move(adapter)),
        observation_(std::move(observation)),
        action_(std::move(action)),
        agents_(agents),
        mask_size_(mask_size) {}

  void reset(const envs::env_rows& rows) override {
    py::gil_scoped_acquire gil;
    try {
      py::tuple out = adapter_.attr("reset")();
      write(rows, out[0], out[1], out[2]);
    } catch (py::error_already_set& e) {
      throw std::runtime_error(describe(e));
    }
  }

  void step(const envs::env_rows& rows) override {
    py::gil_scoped_acquire gil;
    try {
      const auto m = static_cast<py::ssize_t>(agents_);
      const auto dd = static_cast<py::ssize_t>(rows.discrete_action().size());
      const auto cd = static_cast<py::ssize_t>(rows.continuous_action().size());
      py::array_t<std::int32_t> discrete({m, dd});
      py::array_t<float> continuous({m, cd});
      py::array_t<std::uint8_t> active(m);
      for (std::size_t i = 0; i < agents_; ++i) {
        std::copy_n(rows.discrete_action(i).data(), dd, discrete.mutable_data() + static_cast<py::ssize_t>(i) * dd);
        std::copy_n(rows.continuous_action(i).data(), cd, continuous.mutable_data() + static_cast<py::ssize_t>(i) * cd);
        active.mutable_data()[i] = rows.active(i);
      }
      py::tuple out = adapter_.attr("step")(discrete, continuous, active);
      write(rows, out[0], out[4], out[5]);
      copy_block<float>(out[1], &rows.reward(0), agents_, "step: rewards");
      copy_block<std::uint8_t>(out[2], &rows.terminated(0), agents_, "step: terminations");
      copy_block<std::uint8_t>(out[3], &rows.truncated(0), agents_, "step: truncations");
    } catch (py::error_already_set& e) {
      throw std::runtime_error(describe(e));
    }
  }

  [[nodiscard]] const envs::space& observation_space() const noexcept override { return observation_; }
  [[nodiscard]] const envs::space& action_space() const noexcept override { return action_; }
  [[nodiscard]] std::size_t max_agents() const noexcept override { return agents_; }
  [[nodiscard]] std::size_t action_mask_size() const noexcept override { return mask_size_; }

 private:
  /// Observations, active flags and (for an env that masks) mask rows of every slot.
  void write(const envs::env_rows& rows, const py::handle& obs, const py::handle& active,
             const py::handle& masks) const {
    copy_block<float>(obs, rows.observation(0).data(), agents_ * rows.observation().size(), "observations");
    copy_block<std::uint8_t>(active, &rows.active(0), agents_, "active");
    if (mask_size_ != 0) copy_block<std::uint8_t>(masks, rows.action_mask(0).data(), agents_ * mask_size_, "masks");
  }

  adapter_ref adapter_;
  envs::space observation_;
  envs::space action_;
  std::size_t agents_;
  std::size_t mask_size_;
};

/// The Python value of config key `k` in `c`.
py::object config_value(const envs::env_config& c, const envs::config_key& k) {
  switch (k.type) {
    case envs::config_type::integer:
      return py::int_(c.get_int(k.name));
    case envs::config_type::real:
      return py::float_(c.get_float(k.name));
    case envs::config_type::boolean:
      return py::bool_(c.get_bool(k.name));
    case envs::config_type::text:
      return py::str(c.get_string(k.name));
  }
  return py::none();
}

}  // namespace

void register_python_env(const std::string& name, const std::string& description,
                         std::vector<envs::config_key> keys, py::object make_adapter) {
  // The registry lives until the process ends, after the interpreter: the
  // factory keeps its reference for good rather than drop it then.
  PyObject* factory = make_adapter.release().ptr();
  auto key_list = keys;
  envs::env_spec spec{
      .name = name,
      .description = description,
      .keys = std::move(keys),
      .factory = [factory, key_list](const envs::env_config& c, coral::env_seed s) -> std::unique_ptr<envs::env> {
        py::gil_scoped_acquire gil;
        try {
          py::dict kwargs;
          for (const auto& k : key_list) kwargs[py::str(k.name)] = config_value(c, k);
          py::tuple made = py::reinterpret_borrow<py::object>(factory)(s.seed, s.env_index, kwargs);
          auto observation = space_from_desc(made[1]);
          auto action = space_from_desc(made[2]);
          if (made.size() == 5) {  // (adapter, spaces, agent slots, mask size): a multi-agent or masked env
            return std::make_unique<python_agents_env>(py::reinterpret_borrow<py::object>(made[0]),
                                                       std::move(observation), std::move(action),
                                                       made[3].cast<std::size_t>(), made[4].cast<std::size_t>());
          }
          return std::make_unique<python_env>(py::reinterpret_borrow<py::object>(made[0]), std::move(observation),
                                              std::move(action));
        } catch (py::error_already_set& e) {
          throw config_error(describe(e));
        }
      }};
  envs::registry::global().add(std::move(spec));
}

}  // namespace coral::python
