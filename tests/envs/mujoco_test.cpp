#include "coral/envs/mujoco_env.hpp"
#include "coral/envs/ant.hpp"
#include "coral/envs/halfcheetah.hpp"
#include "coral/envs/hopper.hpp"
#include "coral/envs/humanoid.hpp"
#include "coral/envs/inverted_pendulum.hpp"
#include "coral/envs/walker2d.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>

#include <unistd.h>

#include <array>
#include <atomic>
#include <set>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <mujoco/mujoco.h>

#include "coral/core/error.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/errors.hpp"
#include "coral/envs/registry.hpp"

namespace {

using namespace coral::envs;
using coral::env_seed;
using coral::rng;
namespace fs = std::filesystem;

// One env of `name` and the rows it writes into.
struct single {
  single(std::string_view name, const config_args& args = {}, std::uint64_t seed = 1)
      : owned(registry::global().make(name, args, seed, 0)),
        e(dynamic_cast<mujoco_env&>(*owned)),
        batch(1, owned->observation_space(), owned->action_space()),
        rows(batch.view(0, 1)) {
    batch.active()[0] = 1;
  }

  void reset() { e.reset(rows); }
  void step(const std::vector<float>& action) {
    std::copy(action.begin(), action.end(), batch.continuous_actions().row(0).begin());
    e.step(rows);
  }
  [[nodiscard]] std::vector<float> obs() const {
    auto s = batch.observations().row(0);
    return {s.begin(), s.end()};
  }
  [[nodiscard]] float reward() const { return batch.rewards()[0]; }
  [[nodiscard]] bool terminated() const { return batch.terminated()[0] != 0; }
  [[nodiscard]] bool truncated() const { return batch.truncated()[0] != 0; }
  [[nodiscard]] const mjModel& m() const { return e.model(); }
  [[nodiscard]] const mjData& d() const { return e.data(); }

  std::unique_ptr<env> owned;
  mujoco_env& e;
  env_batch batch;
  env_rows rows;
};

std::vector<float> random_action(const space& s, rng& r) {
  std::vector<float> a(s.continuous_size());
  std::vector<std::int32_t> none;
  sample_action(s, r, none, a);
  return a;
}

// `n` doubles as floats, optionally clipped.
void append(std::vector<float>& out, const double* from, int n,
            double low = -std::numeric_limits<double>::infinity(),
            double high = std::numeric_limits<double>::infinity()) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<float>(std::min(std::max(from[i], low), high)));
}

// The v4 observation of each task, computed here from mjData by its definition.
std::vector<float> expected_observation(std::string_view name, const mjModel& m, const mjData& d) {
  std::vector<float> o;
  if (name == "halfcheetah") {
    append(o, d.qpos + 1, 8);
    append(o, d.qvel, 9);
  } else if (name == "hopper") {
    append(o, d.qpos + 1, 5);
    append(o, d.qvel, 6, -10, 10);
  } else if (name == "walker2d") {
    append(o, d.qpos + 1, 8);
    append(o, d.qvel, 9, -10, 10);
  } else if (name == "ant") {
    append(o, d.qpos + 2, 13);
    append(o, d.qvel, 14);
  } else if (name == "humanoid") {
    append(o, d.qpos + 2, 22);
    append(o, d.qvel, 23);
    append(o, d.cinert, 140);
    append(o, d.cvel, 84);
    append(o, d.qfrc_actuator, 23);
    append(o, d.cfrc_ext, 84);
  } else if (name == "inverted_pendulum") {
    append(o, d.qpos, 2);
    append(o, d.qvel, 2);
  }
  (void)m;
  return o;
}

double sum_squares(const std::vector<float>& a) {
  double s = 0;
  for (const float x : a) s += static_cast<double>(x) * x;
  return s;
}

double humanoid_mass_centre_x(const mjModel& m, const mjData& d) {
  double mass = 0, moment = 0;
  for (int b = 0; b < m.nbody; ++b) {
    mass += m.body_mass[b];
    moment += m.body_mass[b] * d.xipos[3 * b];
  }
  return moment / mass;
}

// The forward position each task rewards the change of.
double forward_position(std::string_view name, const mjModel& m, const mjData& d) {
  if (name == "ant") return d.xpos[3 * mj_name2id(&m, mjOBJ_BODY, "torso")];
  if (name == "humanoid") return humanoid_mass_centre_x(m, d);
  return d.qpos[0];
}

// The v4 reward of a step from a healthy state to a healthy one, by hand.
double expected_reward(std::string_view name, double before, const single& s, const std::vector<float>& action) {
  const double velocity = (forward_position(name, s.m(), s.d()) - before) / s.e.dt();
  if (name == "halfcheetah") return 1.0 * velocity - 0.1 * sum_squares(action);
  if (name == "hopper" || name == "walker2d") return 1.0 * velocity + 1.0 - 0.001 * sum_squares(action);
  if (name == "ant") return velocity + 1.0 - 0.5 * sum_squares(action);
  if (name == "humanoid") return 1.25 * velocity + 5.0 - 0.1 * sum_squares(action);
  return 1.0;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh folder under the system's temporary folder, removed at the end of the test.
struct temp_dir {
  temp_dir() {
    path = fs::temp_directory_path() / fmt::format("coral_mujoco_test_{}", ::getpid());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return path / name;
  }
  fs::path path;
};

std::string builtin_text(std::string_view file) { return read_text(find_mujoco_model("test", file)); }

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

const std::vector<std::string> all_tasks = {"halfcheetah", "hopper", "walker2d", "ant", "humanoid", "inverted_pendulum"};

}  // namespace

TEST_CASE("every MuJoCo env is registered with Gymnasium v4's spaces, dimensions and dt", "[envs][mujoco]") {
  struct expect {
    std::string name;
    std::size_t obs, act;
    float low, high;
    int nq, nv, nu, nbody;
    double dt;
    std::optional<double> solved;
  };
  const std::vector<expect> table = {
      {"halfcheetah", 17, 6, -1, 1, 9, 9, 6, 8, 0.05, 4800.0},
      {"hopper", 11, 3, -1, 1, 6, 6, 3, 5, 0.008, 3800.0},
      {"walker2d", 17, 6, -1, 1, 9, 9, 6, 8, 0.008, std::nullopt},
      {"ant", 27, 8, -1, 1, 15, 14, 8, 14, 0.05, 6000.0},
      {"humanoid", 376, 17, -0.4F, 0.4F, 24, 23, 17, 14, 0.015, std::nullopt},
      {"inverted_pendulum", 4, 1, -3, 3, 2, 2, 1, 3, 0.04, 950.0},
  };
  for (const auto& t : table) {
    INFO(t.name);
    REQUIRE(registry::global().contains(t.name));
    const single s(t.name);
    CHECK(s.e.observation_space().flat_size() == t.obs);
    CHECK(s.e.action_space().kind() == space_kind::box);
    REQUIRE(s.e.action_space().continuous_size() == t.act);
    for (std::size_t i = 0; i < t.act; ++i) {
      CHECK(s.e.action_space().low()[i] == t.low);
      CHECK(s.e.action_space().high()[i] == t.high);
    }
    CHECK(s.m().nq == t.nq);
    CHECK(s.m().nv == t.nv);
    CHECK(s.m().nu == t.nu);
    CHECK(s.m().nbody == t.nbody);
    CHECK(s.e.dt() == Approx(t.dt));
    CHECK(s.e.solved_return() == t.solved);
  }
  CHECK(single("ant", {{"use_contact_forces", "true"}}).e.observation_space().flat_size() == 111);
  CHECK(single("ant", {{"exclude_current_positions_from_observation", "false"}}).e.observation_space().flat_size() ==
        29);
  CHECK(single("humanoid", {{"exclude_current_positions_from_observation", "false"}})
            .e.observation_space()
            .flat_size() == 378);
  CHECK(single("hopper", {{"exclude_current_positions_from_observation", "false"}}).e.observation_space().flat_size() ==
        12);
  CHECK(single("inverted_pendulum").e.optimal_return() == 1000.0);
  // v4's +inf upper bound, as the largest double (a real key must be finite).
  CHECK(registry::global().make_config("hopper", {}).get_float("healthy_z_max") == std::numeric_limits<double>::max());
  CHECK(single("hopper", {{"max_steps", "500"}}).e.solved_return() == std::nullopt);
}

TEST_CASE("a MuJoCo env reports the mjData it holds, for the memory check", "[envs][mujoco][memory]") {
  // The memory check once charged 512 bytes per env; a humanoid holds 3.4 MB.
  for (const auto* name : {"humanoid", "ant", "halfcheetah", "hopper", "walker2d", "inverted_pendulum"}) {
    const single s(name);
    INFO(name);
    CHECK(s.e.heap_bytes() == sizeof(mjData) + static_cast<std::size_t>(s.e.data().nbuffer));
    CHECK(s.e.heap_bytes() > 3'000'000);
  }
}

TEST_CASE("the built-in models have the published masses and initial poses", "[envs][mujoco]") {
  const single cheetah("halfcheetah");
  double total = 0;
  for (int b = 0; b < cheetah.m().nbody; ++b) total += cheetah.m().body_mass[b];
  CHECK(total == Approx(14.0));  // settotalmass
  CHECK(single("hopper").m().qpos0[1] == 1.25);
  CHECK(single("walker2d").m().qpos0[1] == 1.25);
  CHECK(single("ant").m().qpos0[2] == 0.75);
  CHECK(single("humanoid").m().qpos0[2] == 1.4);
  CHECK(single("humanoid").m().opt.iterations == 50);
  CHECK(single("humanoid").m().opt.solver == mjSOL_NEWTON);
  for (const auto& name : all_tasks) {
    INFO(name);
    CHECK(single(name).m().opt.integrator == (name == "halfcheetah" ? mjINT_EULER : mjINT_RK4));
  }
}

TEST_CASE("observations and rewards are v4's, computed by hand from mjData over several steps", "[envs][mujoco]") {
  for (const auto& name : all_tasks) {
    INFO(name);
    single s(name, {}, 7);
    rng r(env_seed{7, 99});
    s.reset();
    CHECK(s.obs() == expected_observation(name, s.m(), s.d()));
    for (int t = 0; t < 5; ++t) {
      INFO("step " << t);
      // Small actions keep every task healthy for these few steps.
      auto action = random_action(s.e.action_space(), r);
      for (auto& a : action) a *= 0.1F;
      const double before = forward_position(name, s.m(), s.d());
      s.step(action);
      CHECK(s.obs() == expected_observation(name, s.m(), s.d()));
      CHECK_FALSE(s.terminated());
      CHECK_FALSE(s.truncated());
      CHECK(s.reward() == static_cast<float>(expected_reward(name, before, s, action)));
      for (int i = 0; i < s.m().nu; ++i) CHECK(s.d().ctrl[i] == static_cast<double>(action[static_cast<std::size_t>(i)]));
    }
  }
}

TEST_CASE("the observation keeps the x position when asked to", "[envs][mujoco]") {
  single s("halfcheetah", {{"exclude_current_positions_from_observation", "false"}});
  s.reset();
  s.step(std::vector<float>(6, 0.5F));
  const auto o = s.obs();
  CHECK(o[0] == static_cast<float>(s.d().qpos[0]));
  CHECK(o[9] == static_cast<float>(s.d().qvel[0]));
  single a("ant", {{"exclude_current_positions_from_observation", "false"}});
  a.reset();
  CHECK(a.obs()[1] == static_cast<float>(a.d().qpos[1]));
  CHECK(a.obs()[2] == static_cast<float>(a.d().qpos[2]));
}

TEST_CASE("hopper and walker2d clip the observed velocities to 10 but not the health check", "[envs][mujoco]") {
  single s("hopper");
  s.reset();
  std::vector<double> qpos(s.d().qpos, s.d().qpos + 6);
  std::vector<double> qvel = {50, -50, 3, 0, 0, 0};
  s.e.set_state(qpos, qvel);
  s.step({0, 0, 0});
  const auto o = s.obs();
  for (int i = 0; i < 6; ++i) {
    CHECK(o[5 + static_cast<std::size_t>(i)] == static_cast<float>(std::clamp(s.d().qvel[i], -10.0, 10.0)));
  }
  CHECK(std::abs(s.d().qvel[0]) > 10);
}

TEST_CASE("ant's contact forces are real, clipped, and charged only with use_contact_forces", "[envs][mujoco]") {
  single s("ant", {{"use_contact_forces", "true"}}, 3);
  s.reset();
  auto o = s.obs();
  // After a reset mj_forward has not computed cfrc_ext: zeros, as in v4.
  for (std::size_t i = 27; i < 111; ++i) CHECK(o[i] == 0.0F);
  rng r(env_seed{3, 1});
  double largest = 0;
  auto& a = dynamic_cast<ant&>(s.e);
  for (int t = 0; t < 40; ++t) {
    const auto action = random_action(s.e.action_space(), r);
    const double before = forward_position("ant", s.m(), s.d());
    s.step(action);
    o = s.obs();
    double cost = 0;
    for (int i = 0; i < 84; ++i) {
      const double f = std::clamp(s.d().cfrc_ext[i], -1.0, 1.0);
      CHECK(o[27 + static_cast<std::size_t>(i)] == static_cast<float>(f));
      cost += f * f;
      largest = std::max(largest, std::abs(s.d().cfrc_ext[i]));
    }
    CHECK(a.contact_cost() == Approx(5e-4 * cost));
    if (!s.terminated()) {
      const double velocity = (forward_position("ant", s.m(), s.d()) - before) / 0.05;
      CHECK(s.reward() == static_cast<float>(velocity + 1.0 - 0.5 * sum_squares(action) - 5e-4 * cost));
    }
    if (s.terminated()) break;
  }
  CHECK(largest > 1.0);  // the legs touch the floor: forces beyond the clip range
}

TEST_CASE("hopper's health is checked at the exact edges of its ranges", "[envs][mujoco][termination]") {
  single s("hopper");
  auto& h = dynamic_cast<hopper&>(s.e);
  s.reset();
  const std::vector<double> qvel(6, 0.0);
  auto at = [&](double z, double angle, double joint) {
    s.e.set_state(std::vector<double>{0, z, angle, joint, 0, 0}, qvel);
    return h.is_healthy();
  };
  CHECK(at(1.25, 0, 0));
  CHECK_FALSE(at(0.7, 0, 0));
  CHECK(at(std::nextafter(0.7, 1.0), 0, 0));
  CHECK_FALSE(at(1.25, 0.2, 0));
  CHECK(at(1.25, std::nextafter(0.2, 0.0), 0));
  CHECK_FALSE(at(1.25, -0.2, 0));
  CHECK(at(1.25, std::nextafter(-0.2, 0.0), 0));
  CHECK_FALSE(at(1.25, 0, 100));
  CHECK(at(1.25, 0, std::nextafter(100.0, 0.0)));
  CHECK(at(1e6, 0, 0));  // no upper bound on z by default
  s.e.set_state(std::vector<double>{0, 1.25, 0, 0, 0, 0}, std::vector<double>{0, 0, 0, 0, 0, -100});
  CHECK_FALSE(h.is_healthy());  // velocities count, unclipped
}

TEST_CASE("walker2d, ant and humanoid check their healthy ranges at the exact edges", "[envs][mujoco][termination]") {
  {
    single s("walker2d");
    auto& w = dynamic_cast<walker2d&>(s.e);
    const std::vector<double> qvel(9, 0.0);
    auto at = [&](double z, double angle) {
      s.e.set_state(std::vector<double>{0, z, angle, 0, 0, 0, 0, 0, 0}, qvel);
      return w.is_healthy();
    };
    CHECK(at(1.25, 0));
    CHECK_FALSE(at(0.8, 0));
    CHECK(at(std::nextafter(0.8, 1.0), 0));
    CHECK_FALSE(at(2.0, 0));
    CHECK(at(std::nextafter(2.0, 0.0), 0));
    CHECK_FALSE(at(1.25, 1.0));
    CHECK(at(1.25, std::nextafter(1.0, 0.0)));
    CHECK_FALSE(at(1.25, -1.0));
  }
  {
    single s("ant");
    auto& a = dynamic_cast<ant&>(s.e);
    s.reset();
    std::vector<double> qpos(s.m().qpos0, s.m().qpos0 + 15);
    const std::vector<double> qvel(14, 0.0);
    auto at = [&](double z) {
      qpos[2] = z;
      s.e.set_state(qpos, qvel);
      return a.is_healthy();
    };
    CHECK(at(0.2));  // inclusive, as v4
    CHECK_FALSE(at(std::nextafter(0.2, 0.0)));
    CHECK(at(1.0));
    CHECK_FALSE(at(std::nextafter(1.0, 2.0)));
  }
  {
    single s("humanoid");
    auto& h = dynamic_cast<humanoid&>(s.e);
    std::vector<double> qpos(s.m().qpos0, s.m().qpos0 + 24);
    const std::vector<double> qvel(23, 0.0);
    auto at = [&](double z) {
      qpos[2] = z;
      s.e.set_state(qpos, qvel);
      return h.is_healthy();
    };
    CHECK_FALSE(at(1.0));
    CHECK(at(std::nextafter(1.0, 2.0)));
    CHECK_FALSE(at(2.0));
    CHECK(at(std::nextafter(2.0, 1.0)));
  }
}

TEST_CASE("an unhealthy step terminates and still earns the healthy reward, unless termination is off",
          "[envs][mujoco][termination]") {
  for (const bool terminate : {true, false}) {
    INFO("terminate_when_unhealthy " << terminate);
    single s("hopper", {{"terminate_when_unhealthy", terminate ? "true" : "false"}});
    s.reset();
    // Tilted far past the angle range: unhealthy after one more step.
    s.e.set_state(std::vector<double>{0, 1.25, 1.0, 0, 0, 0}, std::vector<double>(6, 0.0));
    const std::vector<float> action = {0.5F, -0.5F, 0.25F};
    const double before = s.d().qpos[0];
    s.step(action);
    const double velocity = (s.d().qpos[0] - before) / 0.008;
    CHECK(s.terminated() == terminate);
    CHECK(s.reward() == static_cast<float>(velocity + (terminate ? 1.0 : 0.0) - 0.001 * sum_squares(action)));
  }
  single p("inverted_pendulum");
  p.reset();
  p.e.set_state(std::vector<double>{0, 0.3}, std::vector<double>{0, 0});
  p.step({0});
  CHECK(p.terminated());
  CHECK(p.reward() == 1.0F);
  p.e.set_state(std::vector<double>{0, 0}, std::vector<double>{0, 0});
  p.step({0});
  CHECK_FALSE(p.terminated());
}

TEST_CASE("an episode is truncated when it reaches max_steps, and only then", "[envs][mujoco]") {
  single s("halfcheetah", {{"max_steps", "3"}});
  s.reset();
  for (int t = 1; t <= 3; ++t) {
    s.step(std::vector<float>(6, 0.0F));
    CHECK(s.truncated() == (t == 3));
    CHECK_FALSE(s.terminated());
  }
  s.reset();
  s.step(std::vector<float>(6, 0.0F));
  CHECK_FALSE(s.truncated());
}

TEST_CASE("a seed gives the same trajectory bit for bit; another seed another one", "[envs][mujoco][determinism]") {
  for (const auto& name : all_tasks) {
    INFO(name);
    auto run = [&](std::uint64_t seed) {
      single s(name, {}, seed);
      rng r(env_seed{11, 0});
      std::vector<float> trace;
      s.reset();
      for (int t = 0; t < 30; ++t) {
        const auto o = s.obs();
        trace.insert(trace.end(), o.begin(), o.end());
        s.step(random_action(s.e.action_space(), r));
        trace.push_back(s.reward());
        if (s.terminated()) s.reset();
      }
      return trace;
    };
    const auto a = run(5);
    CHECK(a == run(5));
    CHECK(a != run(6));
  }
}

TEST_CASE("reset noise stays within its bounds and has the v4 distribution", "[envs][mujoco][reset]") {
  struct noise {
    std::string name;
    double scale;
    bool normal_velocity;
  };
  for (const auto& n : std::vector<noise>{{"halfcheetah", 0.1, true},
                                           {"hopper", 0.005, false},
                                           {"walker2d", 0.005, false},
                                           {"ant", 0.1, true},
                                           {"humanoid", 0.01, false},
                                           {"inverted_pendulum", 0.01, false}}) {
    INFO(n.name);
    single s(n.name, {}, 21);
    double sum = 0, sum_sq = 0, largest = 0;
    int count = 0;
    for (int k = 0; k < 200; ++k) {
      s.reset();
      // A free joint's quaternion (qpos[3:7]) gets the noise too, and
      // mj_forward then normalises it in place, as under Gymnasium.
      const bool free_root = s.m().njnt > 0 && s.m().jnt_type[0] == mjJNT_FREE;
      for (int i = 0; i < s.m().nq; ++i) {
        if (free_root && i >= 3 && i < 7) continue;
        const double dq = s.d().qpos[i] - s.m().qpos0[i];
        CHECK(std::abs(dq) <= n.scale);
      }
      if (free_root) {
        const double* q = s.d().qpos + 3;
        CHECK(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] == Approx(1.0));
        for (int i = 1; i < 4; ++i) CHECK(std::abs(q[i]) <= 1.5 * n.scale);
      }
      for (int i = 0; i < s.m().nv; ++i) {
        const double v = s.d().qvel[i];
        if (!n.normal_velocity) CHECK(std::abs(v) <= n.scale);
        sum += v;
        sum_sq += v * v;
        largest = std::max(largest, std::abs(v));
        ++count;
      }
      CHECK(s.e.steps() == 0);
    }
    const double stddev = std::sqrt(sum_sq / count - (sum / count) * (sum / count));
    // Uniform on [-s, s]: std s/sqrt(3); normal: std s, and values beyond s.
    const double expected = n.normal_velocity ? n.scale : n.scale / std::sqrt(3.0);
    CHECK(stddev == Approx(expected).epsilon(0.1));
    if (n.normal_velocity) CHECK(largest > n.scale);
  }
  single zero("ant", {{"reset_noise_scale", "0"}});
  zero.reset();
  for (int i = 0; i < zero.m().nq; ++i) CHECK(zero.d().qpos[i] == zero.m().qpos0[i]);
  for (int i = 0; i < zero.m().nv; ++i) CHECK(zero.d().qvel[i] == 0.0);
}

TEST_CASE("envs of one model file share one mjModel and own their mjData", "[envs][mujoco]") {
  auto envs = registry::global().make_many("hopper", {}, 1, 0, 3);
  const auto& a = dynamic_cast<const mujoco_env&>(*envs[0]);
  const auto& b = dynamic_cast<const mujoco_env&>(*envs[2]);
  CHECK(&a.model() == &b.model());
  CHECK(&a.data() != &b.data());
  CHECK(&a.model() != &single("walker2d").m());
}

TEST_CASE("the model key loads a copy of a model, with the same trajectory as the built-in one", "[envs][mujoco][model]") {
  temp_dir dir;
  const auto copy = dir.write("my_hopper.xml", builtin_text("hopper.xml"));
  single own("hopper", {{"model", copy.string()}}, 4);
  single builtin("hopper", {}, 4);
  CHECK(own.e.model_path() == copy.string());
  CHECK(&own.m() != &builtin.m());
  own.reset();
  builtin.reset();
  for (int t = 0; t < 10; ++t) {
    own.step({0.3F, -0.2F, 0.1F});
    builtin.step({0.3F, -0.2F, 0.1F});
    CHECK(own.obs() == builtin.obs());
    CHECK(own.reward() == builtin.reward());
  }
}

TEST_CASE("a missing, malformed or ill-fitting model file is an error naming it", "[envs][mujoco][model][errors]") {
  temp_dir dir;
  const auto missing = (dir.path / "nope.xml").string();
  CHECK_THROWS_MATCHES(registry::global().make("hopper", {{"model", missing}}, 1, 0), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(errors::mujoco_model_unreadable), "hopper", missing,
                                                  coral::errors::input_missing)));
  // A directory or a device is said to be one, not "no such file"; an
  // include that is a directory is named with the line that names it.
  const auto not_regular = [](const char* what) {
    return fmt::format(fmt::runtime(coral::errors::input_not_regular), what);
  };
  CHECK_THROWS_MATCHES(registry::global().make("hopper", {{"model", dir.path.string()}}, 1, 0), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(errors::mujoco_model_unreadable), "hopper",
                                                  dir.path.string(), not_regular("a directory"))));
  std::filesystem::create_directory(dir.path / "part.xml");
  const auto includer = dir.write("includer.xml", "<mujoco>\n<!-- <include file=\"gone.xml\"/> -->\n"
                                                  "  <include file = 'part.xml'/>\n</mujoco>\n");
  CHECK_THROWS_MATCHES(registry::global().make("hopper", {{"model", includer.string()}}, 1, 0), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(errors::mujoco_model_names_unreadable), "hopper",
                                                  includer.string(), 3, (dir.path / "part.xml").string(),
                                                  not_regular("a directory"))));

  const auto bad = dir.write("bad.xml", "<mujoco><worldbody><body></mujoco>\n").string();
  const auto prefix = fmt::format(fmt::runtime(errors::mujoco_model_malformed), "hopper", bad, "");
  CHECK_THROWS_MATCHES(registry::global().make("hopper", {{"model", bad}}, 1, 0), coral::config_error,
                       Catch::Predicate<coral::config_error>([&](const auto& e) {
                         const std::string what = e.what();
                         // MuJoCo's own message follows, on one line.
                         return what.rfind(prefix, 0) == 0 && what.find("XML") != std::string::npos &&
                                what.find('\n') == std::string::npos && what.size() > prefix.size();
                       }));

  const auto ant_file = find_mujoco_model("ant", "ant.xml");
  CHECK_THROWS_MATCHES(
      registry::global().make("hopper", {{"model", ant_file}}, 1, 0), coral::config_error,
      Catch::Message(fmt::format(fmt::runtime(errors::mujoco_model_mismatch), "hopper", ant_file,
                                 "it has nq=15, nv=14, nu=8, nbody=14; the task needs nq=6, nv=6, nu=3")));

  const auto no_torso = dir.write("no_torso.xml", replaced(builtin_text("ant.xml"), "name=\"torso\"", "name=\"body\""));
  CHECK_THROWS_MATCHES(registry::global().make("ant", {{"model", no_torso.string()}}, 1, 0), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(errors::mujoco_model_mismatch), "ant",
                                                  no_torso.string(), "it has no body named 'torso'")));
}

TEST_CASE("built-in models are found through CORAL_MODEL_DIR first, and a missing one names every folder tried",
          "[envs][mujoco][model][errors]") {
  temp_dir dir;
  dir.write("inverted_pendulum.xml", builtin_text("inverted_pendulum.xml"));
  ::setenv("CORAL_MODEL_DIR", dir.path.c_str(), 1);
  const auto dirs = mujoco_model_dirs();
  const single s("inverted_pendulum");
  const auto found = s.e.model_path();
  CHECK_THROWS_MATCHES(find_mujoco_model("ant", "nowhere.xml"), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(errors::mujoco_model_not_found), "ant", "nowhere.xml",
                                                  fmt::format("{}, {}, {}", dirs[0], dirs[1], dirs[2]))));
  ::unsetenv("CORAL_MODEL_DIR");
  REQUIRE(dirs.size() == 3);
  CHECK(dirs[0] == dir.path.string());
  CHECK(found == (dir.path / "inverted_pendulum.xml").string());
  CHECK(mujoco_model_dirs().size() == 2);
}

TEST_CASE("a simulation that blows up is an env fault that a reset recovers from", "[envs][mujoco][faults]") {
  temp_dir dir;
  const auto wild = dir.write("wild.xml", replaced(builtin_text("inverted_pendulum.xml"), "gear=\"100\"", "gear=\"1e15\""));
  single s("inverted_pendulum", {{"model", wild.string()}});
  s.reset();
  std::string what;
  try {
    s.step({3});
  } catch (const coral::error& e) {
    what = e.what();
  }
  // The text names the bad-value warning MuJoCo raised (it has reset the state since).
  std::string seen;
  for (const auto& [warning, name] : {std::pair{mjWARN_BADQPOS, "bad qpos"}, std::pair{mjWARN_BADQVEL, "bad qvel"},
                                      std::pair{mjWARN_BADQACC, "bad qacc"}}) {
    const auto& stat = s.d().warning[warning];
    if (stat.number > 0 && seen.empty()) seen = fmt::format("{} at degree of freedom {}", name, stat.lastinfo);
  }
  REQUIRE_FALSE(seen.empty());
  CHECK(what == fmt::format(fmt::runtime(errors::mujoco_unstable), seen, s.d().time));
  s.reset();
  s.step({0});
  CHECK_FALSE(s.terminated());

  // Through a slice, as an env group runs it: env_failed, which --on-env-error handles.
  auto envs = registry::global().make_many("inverted_pendulum", {{"model", wild.string()}}, 1, 0, 2);
  env_batch batch(2, envs[0]->observation_space(), envs[0]->action_space());
  env_slice slice(batch, 0, std::move(envs));
  slice.reset_all();
  batch.continuous_actions()(0, 0) = 0.0F;
  batch.continuous_actions()(1, 0) = 3.0F;
  try {
    slice.step_all();
    FAIL("the blow-up was not reported");
  } catch (const env_failed& e) {
    CHECK(e.index() == 1);
    CHECK_THAT(e.what(), Catch::StartsWith("MuJoCo simulation became unstable: bad"));
  }
  slice.reset_one(1);
  batch.continuous_actions()(1, 0) = 0.0F;
  slice.step_all();
  CHECK(batch.failed()[1] == 0);
}

TEST_CASE("a MuJoCo error is an exception, never an exit of the process", "[envs][mujoco][faults]") {
  const single s("inverted_pendulum");  // installs the handlers
  CHECK_THROWS_MATCHES(mju_error("boom"), coral::error,
                       Catch::Message(fmt::format(fmt::runtime(errors::mujoco_error), "boom")));
  CHECK_THROWS_MATCHES(mju_error_i("bad index %d", 7), coral::error, Catch::Message("MuJoCo error: bad index 7"));
  mju_warning("only logged");  // neither prints nor writes MUJOCO_LOG.TXT
  CHECK_FALSE(fs::exists("MUJOCO_LOG.TXT"));
}

namespace {
std::atomic<bool> counting_mujoco{false};
std::atomic<long> mujoco_allocations{0};
void* counting_malloc(std::size_t n) {
  if (counting_mujoco.load()) mujoco_allocations.fetch_add(1);
  return std::aligned_alloc(64, (n + 63) / 64 * 64);  // MuJoCo lays out its buffers on 64-byte lines
}
void counting_free(void* p) { std::free(p); }
}  // namespace

TEST_CASE("stepping and resetting a MuJoCo env takes nothing from MuJoCo's allocator", "[envs][mujoco][alloc]") {
  mju_user_malloc = counting_malloc;
  mju_user_free = counting_free;
  for (const auto& name : all_tasks) {
    INFO(name);
    single s(name, {}, 2);
    rng r(env_seed{2, 2});
    std::vector<std::vector<float>> plan;
    for (int t = 0; t < 200; ++t) plan.push_back(random_action(s.e.action_space(), r));
    mujoco_allocations = 0;
    counting_mujoco = true;
    s.reset();
    for (const auto& a : plan) {
      s.step(a);
      if (s.terminated() || s.truncated()) s.reset();
    }
    counting_mujoco = false;
    CHECK(mujoco_allocations == 0);
  }
  mju_user_malloc = nullptr;
  mju_user_free = nullptr;
}

#ifdef CORAL_MUJOCO_RENDER
TEST_CASE("a MuJoCo env draws its scene offscreen without changing its state", "[envs][mujoco][render]") {
  single drawn("halfcheetah", {}, 7);
  single plain("halfcheetah", {}, 7);
  drawn.reset();
  plain.reset();
  rgb_frame frame;
  for (int t = 0; t < 3; ++t) {
    REQUIRE(drawn.e.render(frame));
    drawn.step({0.5F, -0.5F, 0.2F, 0.1F, -0.3F, 0.4F});
    plain.step({0.5F, -0.5F, 0.2F, 0.1F, -0.3F, 0.4F});
    CHECK(drawn.obs() == plain.obs());
  }
  CHECK(frame.height() == 480);
  CHECK(frame.width() == 640);
  // Not one colour: the cheetah and the floor are in it.
  const auto px = frame.pixels();
  std::set<std::array<std::uint8_t, 3>> colours;
  for (std::size_t i = 0; i < px.size(); i += 3 * 97) colours.insert({px[i], px[i + 1], px[i + 2]});
  CHECK(colours.size() > 10);
}

TEST_CASE("a MuJoCo model whose offscreen buffer is too small for a frame cannot render, and says why",
          "[envs][mujoco][render][errors]") {
  temp_dir dir;
  std::string text = builtin_text("halfcheetah.xml");
  const auto open = text.find("<mujoco");
  text.insert(text.find('>', open) + 1, "<visual><global offwidth=\"320\" offheight=\"240\"/></visual>");
  const auto small = dir.write("small_buffer.xml", text);
  single e("halfcheetah", {{"model", small.string()}}, 1);
  e.reset();
  rgb_frame frame;
  CHECK_THROWS_MATCHES(
      (void)e.e.render(frame), coral::error,
      Catch::Message(fmt::format(fmt::runtime(errors::mujoco_render_unavailable),
                                 "the model's offscreen buffer is 320x240, smaller than 640x480 (<visual><global "
                                 "offwidth offheight>)")));
}
#endif
