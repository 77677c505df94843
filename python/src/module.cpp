// coral._coral: the extension behind `import coral` (python/coral/).
//
// It holds no Python objects per env: a vector env's arrays are numpy views
// of its env_batch, made once (views()), and each step only moves actions in
// and hands the batch over. The GIL is released whenever coral works or
// waits; a wait wakes every 50 ms to let Python handle signals, so Ctrl-C
// raises KeyboardInterrupt inside step()/recv()/train().

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <tuple>
#include <cstdint>
#include <optional>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "coral/actors/memory_budget.hpp"
#include "coral/actors/vector_env.hpp"
#include "coral/cli.hpp"
#include "coral/core/error.hpp"
#include "coral/core/interrupts.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"
#ifdef CORAL_HAVE_TRAIN
#include "coral/learners/trained_policy.hpp"
#include "coral/training/checkpoint.hpp"
#endif
#include "python_env.hpp"
#include "spaces.hpp"

namespace py = pybind11;
using namespace std::chrono_literals;

namespace coral::python {
namespace {

constexpr auto signal_check_period = 50ms;

/// Every Discrete/MultiDiscrete component's count, in the flat action row's order.
void discrete_bounds(const envs::space& s, std::vector<std::int32_t>& out) {
  switch (s.kind()) {
    case envs::space_kind::discrete:
    case envs::space_kind::multi_discrete:
      out.insert(out.end(), s.nvec().begin(), s.nvec().end());
      break;
    case envs::space_kind::dict:
    case envs::space_kind::tuple:
      for (const auto& c : s.children()) discrete_bounds(c, out);
      break;
    case envs::space_kind::box:
      break;
  }
}

std::string shape_text(const py::array& a) {
  std::string out = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) out += fmt::format("{}{}", i == 0 ? "" : ", ", a.shape(i));
  return out + (a.ndim() == 1 ? ",)" : ")");
}

/// What numpy views point into: the batch rows and the per-batch buffers.
/// Views hold it through a capsule, not through the vec: no reference cycle,
/// and a view stays valid memory after its vector env is gone.
struct buffers {
  std::shared_ptr<envs::env_batch> batch;
  std::vector<std::int32_t> ids;    ///< env ids of the batch in hand, in batch order
  std::vector<std::uint8_t> ended;  ///< per batch position: the episode ended on this step
};

/// A Python vector env's engine: a vector_env plus the numpy side of it.
class vec {
 public:
  vec(const std::string& env, std::size_t num_envs, std::size_t batch_size, std::size_t threads,
      const std::string& topology, std::uint64_t seed, const std::string& autoreset, std::size_t envs_per_group,
      const std::string& executor, std::int64_t spin_us, const envs::config_args& env_args)
      : v_(make_options(env, num_envs, batch_size, threads, topology, seed, envs_per_group, executor, spin_us,
                        env_args),
           actors::parse_autoreset_mode(autoreset)),
        buffers_(std::make_shared<buffers>()) {
    discrete_bounds(v_.action_space(), bounds_);
    starts_.assign(bounds_.size(), 0);
    agents_ = v_.agents_per_env();
    masked_ = v_.batch().has_action_masks();
    std::size_t offset = 0;
    for (const auto n : bounds_) {
      mask_offsets_.push_back(offset);
      offset += static_cast<std::size_t>(n);
    }
    buffers_->batch = v_.shared_batch();
    // Per row: an env has agents_per_env() rows, one per agent slot.
    const std::size_t rows = v_.num_envs() * v_.agents_per_env();
    buffers_->ids.assign(rows, 0);
    buffers_->ended.assign(rows, 0);
    marks_.assign(rows, 0);
    single_discrete_ = v_.action_space().kind() == envs::space_kind::discrete;
  }

  ~vec() { close(); }

  /// Numpy views of the whole batch (every array the vector env returns is one of these or a slice of one).
  py::dict views() {
    auto& b = *buffers_->batch;
    py::capsule owner(new std::shared_ptr<buffers>(buffers_),
                      [](void* p) { delete static_cast<std::shared_ptr<buffers>*>(p); });
    const auto n = static_cast<py::ssize_t>(b.rows());
    auto matrix = [&](auto* data, std::size_t cols, py::dtype dt) {
      const auto item = static_cast<py::ssize_t>(dt.itemsize());
      return py::array(dt, {n, static_cast<py::ssize_t>(cols)}, {static_cast<py::ssize_t>(cols) * item, item}, data,
                       owner);
    };
    auto column = [&](auto* data, py::dtype dt) { return py::array(dt, {n}, {dt.itemsize()}, data, owner); };
    py::dict d;
    d["observations"] = matrix(b.observations().data(), b.obs_dim(), py::dtype::of<float>());
    d["final_observations"] = matrix(b.final_observations().data(), b.obs_dim(), py::dtype::of<float>());
    d["discrete_actions"] = matrix(b.discrete_actions().data(), b.discrete_action_dim(), py::dtype::of<std::int32_t>());
    d["continuous_actions"] = matrix(b.continuous_actions().data(), b.continuous_action_dim(), py::dtype::of<float>());
    d["rewards"] = column(b.rewards().data(), py::dtype::of<float>());
    d["terminated"] = column(b.terminated().data(), py::dtype::of<bool>());
    d["truncated"] = column(b.truncated().data(), py::dtype::of<bool>());
    d["failed"] = column(b.failed().data(), py::dtype::of<bool>());
    d["episode_returns"] = column(b.episode_returns().data(), py::dtype::of<float>());
    d["episode_lengths"] = column(b.episode_lengths().data(), py::dtype::of<std::int32_t>());
    d["commands"] = column(b.commands().data(), py::dtype::of<std::uint8_t>());
    d["ids"] = column(buffers_->ids.data(), py::dtype::of<std::int32_t>());
    d["ended"] = column(buffers_->ended.data(), py::dtype::of<bool>());
    // Written by the envs as 0 or 1: read as bool, and the masks as int8 (Gymnasium's mask dtype).
    d["active"] = column(b.active().data(), py::dtype::of<bool>());
    d["action_masks"] = matrix(b.action_masks().data(), b.action_mask_dim(), py::dtype::of<std::int8_t>());
    d["teams"] = column(b.teams().data(), py::dtype::of<std::int32_t>());
    return d;
  }

  /// What fast_step() returns for a whole-batch step: these objects, and a
  /// shallow copy of `infos` (all views, made once by the package).
  void set_outputs(py::object obs, py::object rewards, py::object terminated, py::object truncated,
                   py::dict infos) {
    outputs_ = py::make_tuple(std::move(obs), std::move(rewards), std::move(terminated), std::move(truncated));
    infos_ = std::move(infos);
  }

  /// One Gymnasium step of every env, all in C++: actions in, the batch
  /// handed over and back, the cached outputs returned.
  py::tuple fast_step(const py::handle& actions) {
    if (outputs_.size() != 4) throw std::runtime_error("fast_step: set_outputs() was not called");
    if (!v_.holding()) {
      if (v_.closed()) throw std::runtime_error("the vector env is closed");
      throw std::runtime_error(
          "step: no batch in hand: reset() the env first (also after a KeyboardInterrupt or an error inside step)");
    }
    if (!put_discrete_fast(actions)) put_actions(actions, py::none());
    (void)exchange(true);
    return py::make_tuple(outputs_[0], outputs_[1], outputs_[2], outputs_[3],
                          py::reinterpret_steal<py::dict>(PyDict_Copy(infos_.ptr())));
  }

  void start(std::optional<std::uint64_t> seed) {
    py::gil_scoped_release release;
    v_.start(seed);
  }

  /// Waits for the next batch; its env ids go to buffers_->ids[0, count)
  /// and whether each one's episode ended on this step to buffers_->ended.
  /// Returns count.
  std::size_t recv() { return exchange(false); }

  /// recv(), after handing the batch in hand back if `send_first` (one GIL
  /// release for both).
  std::size_t exchange(bool send_first) {
    std::optional<std::span<const std::uint32_t>> got;
    for (;;) {
      {
        py::gil_scoped_release release;
        if (send_first) v_.send();
        send_first = false;
        got = v_.receive(signal_check_period);
      }
      if (got) break;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
    const auto& b = v_.batch();
    const auto* term = b.terminated().data();
    const auto* trunc = b.truncated().data();
    auto& ids = buffers_->ids;
    auto& ended = buffers_->ended;
    std::size_t i = 0;
    for (auto id : *got) {
      ids[i] = static_cast<std::int32_t>(id);
      ended[i] = static_cast<std::uint8_t>(term[id] | trunc[id]);
      ++i;
    }
    return i;
  }

  void send() {
    py::gil_scoped_release release;
    v_.send();
  }

  /// Writes `actions` (one per env of the batch in hand, in `env_ids`'
  /// order, or the batch's own order if None) into the action rows: the
  /// discrete part for Discrete/MultiDiscrete spaces, the float part for Box.
  void put_actions(const py::handle& actions, const py::handle& env_ids) {
    const auto kind = v_.action_space().kind();
    if (kind == envs::space_kind::box) {
      put_flat(py::none(), actions, env_ids);
    } else if (kind == envs::space_kind::discrete || kind == envs::space_kind::multi_discrete) {
      put_flat(actions, py::none(), env_ids);
    } else {
      throw std::invalid_argument("actions: a Dict or Tuple action space takes put_flat()");
    }
  }

  /// Where each discrete action component starts (a Python space's
  /// `start`; 0 for coral's envs): actions are checked against
  /// start .. start + n - 1 and rows hold them less their start.
  /// `space_text` names the space in errors.
  void set_action_starts(const std::vector<std::int64_t>& starts, const std::string& space_text) {
    if (starts.size() != bounds_.size()) {
      throw std::invalid_argument(
          fmt::format("set_action_starts: {} starts for {} discrete components", starts.size(), bounds_.size()));
    }
    starts_ = starts;
    space_text_ = space_text;
  }

  /// The same with both parts given as arrays of (batch, width) (None for an empty part).
  void put_flat(const py::handle& discrete, const py::handle& continuous, const py::handle& env_ids) {
    const auto held = v_.held();
    if (held.empty()) {
      if (v_.closed()) throw std::runtime_error("the vector env is closed");
      throw std::runtime_error("actions: no batch in hand; call recv() (or reset()) first");
    }
    const std::size_t n = held.size();
    const std::int32_t* ids = buffers_->ids.data();
    if (!env_ids.is_none()) {
      const auto given = integers(env_ids, "env_id", "env ids");
      if (given.ndim() != 1 || static_cast<std::size_t>(given.size()) != n) {
        throw std::invalid_argument(fmt::format("env_id: expected {} env ids, those of the batch received", n));
      }
      check_same_envs(given.data(), n);
      given_ids_.assign(given.data(), given.data() + n);  // each checked to be a row index
      ids = given_ids_.data();
    }
    write_discrete(discrete, ids, n);
    write_continuous(continuous, ids, n);
  }

  /// put_actions() on the whole batch, send(), recv(): one Gymnasium step.
  std::size_t step(const py::handle& actions) {
    put_actions(actions, py::none());
    return exchange(true);
  }

  void close() {
    py::gil_scoped_release release;
    v_.close();
  }

  /// Frames of envs `ids` (each in the batch in hand): a list with, per env,
  /// a new (height, width, 3) uint8 array, or None for an env that does not
  /// render. Each env draws into a frame of its own kept here, so drawing
  /// allocates only on the first call; the arrays are copies (a recorder
  /// keeps them).
  py::list render(const std::vector<std::uint32_t>& ids) {
    if (frames_.size() < v_.num_envs()) frames_.resize(v_.num_envs());
    py::list out;
    for (const auto id : ids) {
      if (id >= frames_.size()) throw std::invalid_argument(fmt::format("env_id: {} is not an env", id));
      bool drawn = false;
      {
        py::gil_scoped_release release;  // a MuJoCo frame takes milliseconds
        drawn = v_.render(id, frames_[id]);
      }
      if (!drawn) {
        out.append(py::none());
        continue;
      }
      const envs::rgb_frame& f = frames_[id];
      py::array_t<std::uint8_t> a({static_cast<py::ssize_t>(f.height()), static_cast<py::ssize_t>(f.width()),
                                   py::ssize_t{3}});
      std::copy(f.pixels().begin(), f.pixels().end(), a.mutable_data());
      out.append(std::move(a));
    }
    return out;
  }

  actors::vector_env& engine() noexcept { return v_; }

  /// Whether actions a row's action mask rules out are refused (the default) or passed on to the env.
  void set_enforce_masks(bool on) noexcept { enforce_masks_ = on; }

 private:
  static actors::sampler_options make_options(const std::string& env, std::size_t num_envs, std::size_t batch_size,
                                              std::size_t threads, const std::string& topology, std::uint64_t seed,
                                              std::size_t envs_per_group, const std::string& executor,
                                              std::int64_t spin_us, const envs::config_args& env_args) {
    actors::sampler_options o;
    o.env = env;
    o.env_args = env_args;
    o.num_envs = num_envs;
    o.batch_size = batch_size;
    o.threads = threads;
    o.topo = actors::parse_topology(topology);
    o.seed = seed;
    o.envs_per_group = envs_per_group;
    o.executor = parse_executor_mode(executor);
    if (spin_us < 0 || spin_us > 1'000'000) {
      throw config_error(fmt::format("spin_us: {} is invalid: must be in 0..1000000", spin_us));
    }
    o.spin = std::chrono::microseconds(spin_us);
    (void)actors::resolve_wiring(o);  // the flag at fault, before any env is built
    // A run that cannot fit is refused before anything is allocated.
    const auto shape = actors::probe_env_shape(o);
    actors::memory_estimate estimate;
    actors::add_sampler_memory(estimate, o, shape);
    actors::check_memory(estimate, {{"num_envs", fmt::format("{}", num_envs), 0.0}}, actors::available_memory());
    return o;
  }

  void check_same_envs(const std::int64_t* ids, std::size_t n) {
    const auto held = v_.held();
    for (auto id : held) marks_[id] = 1;
    std::string bad;
    for (std::size_t i = 0; i < n && bad.empty(); ++i) {
      const auto id = ids[i];
      if (id < 0 || static_cast<std::uint64_t>(id) >= marks_.size() || marks_[static_cast<std::size_t>(id)] != 1) {
        bad = fmt::format("env_id: {} is not an env of the batch in hand (or is given twice)", id);
      } else {
        marks_[static_cast<std::size_t>(id)] = 2;
      }
    }
    for (auto id : held) marks_[id] = 0;
    // A close() from another thread drops the batch in hand: say that, not that the ids are wrong.
    if (!bad.empty() && v_.closed()) throw std::runtime_error("the vector env is closed");
    if (!bad.empty()) throw std::invalid_argument(bad);
  }

  /// `value` as a C-contiguous int64 array, converted from any integer or
  /// bool array without wrapping around; throws naming `argument` for floats
  /// (a caller's bug, not values to truncate) and for uint64 values past int64.
  static py::array_t<std::int64_t, py::array::c_style | py::array::forcecast> integers(const py::handle& value,
                                                                                      std::string_view argument,
                                                                                      std::string_view what) {
    const auto given = py::array::ensure(value);
    if (!given) throw std::invalid_argument(fmt::format("{}: not convertible to a numeric array", argument));
    const char kind = given.dtype().kind();
    if (kind != 'i' && kind != 'u' && kind != 'b') {
      throw std::invalid_argument(fmt::format("{}: {} must be integers, got {}", argument, what,
                                              py::str(given.dtype()).cast<std::string>()));
    }
    if (kind == 'u' && given.dtype().itemsize() == sizeof(std::uint64_t)) {
      const auto wide = py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast>::ensure(given);
      for (py::ssize_t i = 0; i < wide.size(); ++i) {
        if (wide.data()[i] > static_cast<std::uint64_t>(INT64_MAX)) {
          throw std::invalid_argument(fmt::format("{}: {} is out of range", argument, wide.data()[i]));
        }
      }
    }
    return py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(given);
  }

  /// `part` as a C-contiguous array of T with n rows of `width`; throws
  /// naming what is wrong (missing, or the wrong shape).
  template <class T>
  py::array_t<T, py::array::c_style | py::array::forcecast> rows_of(const py::handle& part, std::size_t width,
                                                                     std::size_t n, std::string_view what) const {
    if (part.is_none()) throw std::invalid_argument(fmt::format("actions: the {} part is missing", what));
    auto a = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(part);
    check_shape(a, width, n);
    return a;
  }

  /// The discrete part of n actions into rows ids[0..n), each component checked against its count.
  void write_discrete(const py::handle& part, const std::int32_t* ids, std::size_t n) {
    auto& slab = buffers_->batch->discrete_actions();
    const std::size_t width = slab.cols();
    if (width == 0) return;
    if (part.is_none()) throw std::invalid_argument("actions: the discrete part is missing");
    const auto a = integers(part, "actions", fmt::format("{} actions", space_text()));
    check_shape(a, width, n);
    const auto active = buffers_->batch->active();
    for (std::size_t i = 0; i < n; ++i) {
      const auto row = static_cast<std::size_t>(ids[i]);
      if (active[row] == 0) continue;  // no agent in this slot now: its action is ignored
      const std::int64_t* src = a.data() + i * width;
      for (std::size_t k = 0; k < width; ++k) {
        // Both within ±2^63 of each other only when src is near start: compare before subtracting.
        if (src[k] < starts_[k] || src[k] - starts_[k] >= bounds_[k]) {
          throw std::invalid_argument(fmt::format("actions: {}: action {} is outside {} (component {}, allowed {}..{})",
                                                  row_text(row), src[k], space_text(), k, starts_[k],
                                                  starts_[k] + bounds_[k] - 1));
        }
        const auto value = static_cast<std::int32_t>(src[k] - starts_[k]);
        if (!legal(row, k, value)) throw std::invalid_argument(masked_out(row, k, src[k]));
        slab(row, k) = value;
      }
    }
  }

  /// Whether `value` (less its start) of discrete component k is legal in `row` now.
  [[nodiscard]] bool legal(std::size_t row, std::size_t k, std::int32_t value) const {
    if (!masked_ || !enforce_masks_) return true;
    return buffers_->batch->action_masks()(row, mask_offsets_[k] + static_cast<std::size_t>(value)) != 0;
  }

  /// "env 3" for a single-agent env; "env 1, row 3 (agent slot 1)" for a multi-agent one.
  [[nodiscard]] std::string row_text(std::size_t row) const {
    if (agents_ == 1) return fmt::format("env {}", row);
    return fmt::format("env {}, row {} (agent slot {})", row / agents_, row, row % agents_);
  }

  /// The refusal of `given` for component k of `row`, which the row's action mask rules out.
  [[nodiscard]] std::string masked_out(std::size_t row, std::size_t k, std::int64_t given) const {
    std::string allowed;
    for (std::int32_t v = 0; v < bounds_[k]; ++v) {
      if (legal(row, k, v)) allowed += fmt::format("{}{}", allowed.empty() ? "" : ", ", starts_[k] + v);
    }
    return fmt::format("actions: {}: action {}{} is not allowed by its action mask (legal now: {}); "
                       "make_vec(..., enforce_masks=False) passes such actions on to the env",
                       row_text(row), given, bounds_.size() > 1 ? fmt::format(" (component {})", k) : "", allowed);
  }

  /// The continuous part of n actions into rows ids[0..n).
  void write_continuous(const py::handle& part, const std::int32_t* ids, std::size_t n) {
    auto& slab = buffers_->batch->continuous_actions();
    const std::size_t width = slab.cols();
    if (width == 0) return;
    const auto a = rows_of<float>(part, width, n, "continuous");
    const auto active = buffers_->batch->active();
    for (std::size_t i = 0; i < n; ++i) {
      if (active[static_cast<std::size_t>(ids[i])] == 0) continue;  // ignored, as in write_discrete()
      std::memcpy(slab.row(static_cast<std::size_t>(ids[i])).data(), a.data() + i * width, width * sizeof(float));
    }
  }

  void check_shape(const py::array& a, std::size_t width, std::size_t n) const {
    if (!a) throw std::invalid_argument("actions: not convertible to a numeric array");
    // One value where a batch belongs is the wrong kind of argument, as numpy and Gymnasium see it.
    if (a.ndim() == 0 && n > 0) {
      throw py::type_error(fmt::format("actions: expected {} actions of {}, one per env; got a single value {}", n,
                                       space_text(), py::repr(py::handle(a)).cast<std::string>()));
    }
    if (a.ndim() == 0 || static_cast<std::size_t>(a.shape(0)) != n ||
        static_cast<std::size_t>(a.size()) != n * width) {
      throw std::invalid_argument(fmt::format("actions: expected {} actions of {} ({} numbers each), got shape {}", n,
                                              space_text(), width, shape_text(a)));
    }
  }

  /// The common case of a Discrete action space and one action per env in
  /// a contiguous int64 (numpy's default), int32 or bool array: read in
  /// place, no conversion. False if `actions` is anything else, or holds an
  /// action out of range (the general path then says which).
  bool put_discrete_fast(const py::handle& actions) {
    if (!single_discrete_) return false;
    if (py::isinstance<py::array_t<std::int64_t>>(actions)) return put_discrete_as<std::int64_t>(actions);
    if (py::isinstance<py::array_t<std::int32_t>>(actions)) return put_discrete_as<std::int32_t>(actions);
    if (py::isinstance<py::array_t<bool>>(actions)) return put_discrete_as<bool>(actions);
    return false;
  }

  template <class T>
  bool put_discrete_as(const py::handle& actions) {
    auto a = py::reinterpret_borrow<py::array_t<T>>(actions);
    const auto held = v_.held();
    if (a.ndim() != 1 || static_cast<std::size_t>(a.shape(0)) != held.size() || a.strides(0) != sizeof(T)) {
      return false;
    }
    const T* src = a.data();
    const auto n = static_cast<std::int64_t>(bounds_.front());
    auto& actions_slab = buffers_->batch->discrete_actions();
    const auto active = buffers_->batch->active();
    for (std::size_t i = 0; i < held.size(); ++i) {
      if (active[held[i]] == 0) continue;  // ignored (see write_discrete())
      if (static_cast<std::int64_t>(src[i]) < starts_.front()) return false;
      const auto value = static_cast<std::int64_t>(src[i]) - starts_.front();
      if (value < 0 || value >= n || !legal(held[i], 0, static_cast<std::int32_t>(value))) return false;
      actions_slab(held[i], 0) = static_cast<std::int32_t>(value);
    }
    return true;
  }

  actors::vector_env v_;
  std::shared_ptr<buffers> buffers_;
  /// The action space's name in errors: the Python space's text once set_action_starts() gave it.
  [[nodiscard]] std::string space_text() const {
    return space_text_.empty() ? v_.action_space().to_string() : space_text_;
  }

  std::vector<std::int32_t> bounds_;
  std::vector<std::int64_t> starts_;  ///< per discrete component, see set_action_starts()
  std::vector<std::size_t> mask_offsets_;  ///< per discrete component: where its bytes start in a mask row
  std::size_t agents_ = 1;  ///< rows per env
  bool masked_ = false;  ///< the env writes action masks
  bool enforce_masks_ = true;
  std::string space_text_;
  std::vector<std::uint8_t> marks_;
  std::vector<envs::rgb_frame> frames_;  ///< render(): one per env, drawn into again and again
  std::vector<std::int32_t> given_ids_;  ///< put_flat(): the env ids given, once checked
  bool single_discrete_ = false;
  py::tuple outputs_;
  py::dict infos_;
};

/// A streambuf that hands each complete line to a Python callable (under the
/// GIL) and keeps the last one.
class line_sink final : public std::streambuf {
 public:
  explicit line_sink(py::object on_line) : on_line_(std::move(on_line)) {}
  ~line_sink() override = default;
  [[nodiscard]] const std::string& last_line() const noexcept { return last_; }

 protected:
  int_type overflow(int_type c) override {
    if (c == traits_type::eof()) return 0;
    if (c == '\n') {
      flush_line();
    } else {
      line_.push_back(static_cast<char>(c));
    }
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) overflow(static_cast<unsigned char>(s[i]));
    return n;
  }

 private:
  void flush_line() {
    last_ = line_;
    line_.clear();
    if (on_line_.is_none()) return;
    py::gil_scoped_acquire gil;
    try {
      on_line_(last_);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("coral.train progress callback");
    }
  }

  py::object on_line_;
  std::string line_;
  std::string last_;
};

/// Runs `coral train <args>` in this process. Returns (exit code, the last
/// line written, what was written to the error stream).
py::tuple train(const std::vector<std::string>& args, py::object on_line, py::object on_row) {
  std::vector<std::string> argv_text{"coral", "train"};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<const char*> argv;
  argv.reserve(argv_text.size());
  for (const auto& a : argv_text) argv.push_back(a.c_str());

  line_sink sink(std::move(on_line));
  std::ostream out(&sink);
  std::ostringstream err;
  cli::run_hooks hooks;
  if (!on_row.is_none()) {
    hooks.on_metrics_row = [&on_row](std::string_view header, std::string_view row) {
      py::gil_scoped_acquire gil;
      try {
        return on_row(std::string(header), std::string(row)).cast<bool>();
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("coral.train row callback");
        return false;
      }
    };
  }
  // A Ctrl-C that Python's handler caught just before coral's took over
  // would otherwise wait, unseen, for the whole run: check for one after
  // coral's scope is in place (a later one stops the run as it starts).
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  const interrupt_scope interrupts([] {});
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  int code = 0;
  {
    py::gil_scoped_release release;
    code = cli::run(static_cast<int>(argv.size()), argv.data(), out, err, hooks);
  }
  out.flush();
  return py::make_tuple(code, sink.last_line(), err.str());
}

#ifdef CORAL_HAVE_TRAIN
/// coral.load_policy's engine: a trained_policy for a fixed number of rows
/// (python/coral/_policy.py makes another when the batch size changes).
class policy {
 public:
  policy(const std::string& path, std::size_t rows, bool deterministic, std::optional<std::uint64_t> seed,
         const envs::config_args& env_args)
      : p_(learners::load_policy(path, learners::policy_options{
                                           .rows = rows, .deterministic = deterministic, .seed = seed, .env_args = env_args})) {}
  /// The actions for rows × observation_size float32 observations, as
  /// (int32 rows × discrete_size, float32 rows × continuous_size).
  /// `masks`: None, or rows × action_mask_size() values, nonzero = legal
  /// (the env's infos["action_mask"] rows).
  py::tuple act(const py::array_t<float, py::array::c_style | py::array::forcecast>& observations,
                const std::optional<py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>>& masks) {
    learners::policy_actions a;
    {
      const std::span<const float> obs(observations.data(), static_cast<std::size_t>(observations.size()));
      std::span<const std::uint8_t> legal;
      if (masks) legal = std::span<const std::uint8_t>(masks->data(), static_cast<std::size_t>(masks->size()));
      py::gil_scoped_release release;
      a = p_.act(obs, legal);
    }
    const auto rows = static_cast<py::ssize_t>(p_.rows());
    py::array_t<std::int32_t> discrete({rows, static_cast<py::ssize_t>(p_.discrete_size())});
    py::array_t<float> continuous({rows, static_cast<py::ssize_t>(p_.continuous_size())});
    std::copy(a.discrete.begin(), a.discrete.end(), discrete.mutable_data());
    std::copy(a.continuous.begin(), a.continuous.end(), continuous.mutable_data());
    return py::make_tuple(discrete, continuous);
  }
  learners::trained_policy& get() noexcept { return p_; }

 private:
  learners::trained_policy p_;
};
#endif

}  // namespace
}  // namespace coral::python

PYBIND11_MODULE(_coral, m) {
  using namespace coral;
  using coral::python::vec;
  m.doc() = "coral's extension module; use the `coral` package.";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const config_error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const actor_failed& e) {
      // coral/__init__.py turns this into coral.EnvError when an env failed.
      py::object error = py::module_::import("coral._errors").attr("from_actor_failure")(e.actor(), e.what());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
    } catch (const usage_error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
#ifdef CORAL_HAVE_TRAIN
    } catch (const training::checkpoint_error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
#endif
    }
  });

  py::class_<vec>(m, "_VecEnv")
      .def(py::init<const std::string&, std::size_t, std::size_t, std::size_t, const std::string&, std::uint64_t,
                    const std::string&, std::size_t, const std::string&, std::int64_t, const envs::config_args&>(),
           py::arg("env"), py::arg("num_envs"), py::arg("batch_size"), py::arg("threads"), py::arg("topology"),
           py::arg("seed"), py::arg("autoreset"), py::arg("envs_per_group"), py::arg("executor"), py::arg("spin_us"),
           py::arg("env_args"))
      .def("views", &vec::views)
      .def("set_outputs", &vec::set_outputs)
      .def("fast_step", &vec::fast_step)
      .def("start", &vec::start, py::arg("seed") = py::none())
      .def("recv", &vec::recv)
      .def("send", &vec::send)
      .def("put_actions", &vec::put_actions, py::arg("actions"), py::arg("env_ids") = py::none())
      .def("set_action_starts", &vec::set_action_starts, py::arg("starts"), py::arg("space_text"))
      .def("put_flat", &vec::put_flat, py::arg("discrete"), py::arg("continuous"), py::arg("env_ids") = py::none())
      .def("step", &vec::step)
      .def("close", &vec::close)
      .def("render", &vec::render, py::arg("env_ids"))
      .def("set_enforce_masks", &vec::set_enforce_masks, py::arg("on"))
      .def_property_readonly("num_envs", [](vec& v) { return v.engine().num_envs(); })
      .def_property_readonly("agents_per_env", [](vec& v) { return v.engine().agents_per_env(); })
      .def_property_readonly("has_action_masks", [](vec& v) { return v.engine().batch().has_action_masks(); })
      .def_property_readonly("batch_size", [](vec& v) { return v.engine().batch_size(); })
      .def_property_readonly("holding", [](vec& v) { return v.engine().holding(); })
      .def_property_readonly("closed", [](vec& v) { return v.engine().closed(); })
      .def_property_readonly("running", [](vec& v) { return v.engine().running(); })
      .def_property_readonly("env_steps", [](vec& v) { return v.engine().env_steps(); })
      .def_property_readonly("observation_space",
                             [](vec& v) { return python::space_to_desc(v.engine().observation_space()); })
      .def_property_readonly("action_space", [](vec& v) { return python::space_to_desc(v.engine().action_space()); });

  // keys: (name, type, default, description) with type int, float or bool.
  m.def(
      "register_env",
      [](const std::string& name, const std::string& description,
         const std::vector<std::tuple<std::string, std::string, std::string, std::string>>& keys,
         py::object make_adapter) {
        std::vector<envs::config_key> config_keys;
        for (const auto& [key, type, value, help] : keys) {
          envs::config_key k{.name = key, .default_value = value, .description = help};
          if (type == "int") {
            k.type = envs::config_type::integer;
          } else if (type == "float") {
            k.type = envs::config_type::real;
          } else if (type == "bool") {
            k.type = envs::config_type::boolean;
          } else {
            throw std::invalid_argument(fmt::format("register: key '{}' has type {} (allowed: int, float, bool)", key, type));
          }
          config_keys.push_back(std::move(k));
        }
        python::register_python_env(name, description, std::move(config_keys), std::move(make_adapter));
      },
      py::arg("name"), py::arg("description"), py::arg("keys"), py::arg("make_adapter"));
  m.def("env_names", [] { return envs::registry::global().names(); });
  // Whether env `name` (a C++ env) draws frames: one env built with `env_args`, reset, asked to render.
  m.def(
      "env_renders",
      [](const std::string& name, const envs::config_args& env_args) {
        py::gil_scoped_release release;
        std::vector<std::unique_ptr<envs::env>> made;
        made.push_back(envs::registry::global().make(name, env_args, 0, 0));
        envs::env_batch batch(made.front()->max_agents(), made.front()->observation_space(),
                              made.front()->action_space());
        envs::env_slice slice(batch, 0, std::move(made));
        slice.reset_all();
        envs::rgb_frame frame;
        return slice.at(0).render(frame);
      },
      py::arg("name"), py::arg("env_args"));
#ifdef CORAL_HAVE_TRAIN
  using python::policy;
  py::class_<policy>(m, "_Policy")
      .def(py::init<const std::string&, std::size_t, bool, std::optional<std::uint64_t>, const envs::config_args&>(),
           py::arg("path"), py::arg("rows"), py::arg("deterministic"), py::arg("seed"), py::arg("env_args"))
      .def("act", &policy::act, py::arg("observations"), py::arg("masks") = py::none())
      .def_property_readonly("action_mask_size", [](policy& p) { return p.get().action_mask_size(); })
      .def("reset", [](policy& p, std::size_t row) { p.get().reset(row); }, py::arg("row"))
      .def("reset_all", [](policy& p) { p.get().reset(); })
      .def_property_readonly("rows", [](policy& p) { return p.get().rows(); })
      .def_property_readonly("observation_size", [](policy& p) { return p.get().observation_size(); })
      .def_property_readonly("discrete_size", [](policy& p) { return p.get().discrete_size(); })
      .def_property_readonly("continuous_size", [](policy& p) { return p.get().continuous_size(); })
      .def_property_readonly("file", [](policy& p) { return p.get().file().string(); })
      .def_property_readonly("env", [](policy& p) { return p.get().run_options().sampler.env; })
      .def_property_readonly("algo", [](policy& p) { return p.get().run_options().algo; })
      .def_property_readonly("env_args", [](policy& p) { return p.get().run_options().sampler.env_args; })
      .def_property_readonly("seed", [](policy& p) { return p.get().seed(); })
      .def_property_readonly("action_space", [](policy& p) { return python::space_to_desc(p.get().action_space()); })
      .def_property_readonly("observation_space",
                             [](policy& p) { return python::space_to_desc(p.get().observation_space()); });
#endif
  m.attr("exit_ok") = cli::exit_code::ok;
  m.attr("exit_rejected") = cli::exit_code::rejected;
  m.attr("exit_failed") = cli::exit_code::failed;
  m.def("train", &python::train, py::arg("args"), py::arg("on_line") = py::none(), py::arg("on_row") = py::none());
}
