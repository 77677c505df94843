#include "coral/training/algorithm_descriptor.hpp"

#include <any>
#include <string>
#include <variant>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/count_steps.hpp"
#include "coral/actors/errors.hpp"
#include "coral/core/error.hpp"
#include "coral/training/errors.hpp"
#include "coral/training/training_run.hpp"

using namespace coral;
using namespace coral::training;

namespace {

/// Options of two made-up algorithms that share a setting name.
struct alpha_options {
  double rate = 0.5;
  bool loud = true;
  std::vector<std::size_t> sizes{4, 4};
};
struct beta_options {
  double rate = 0.25;
  std::uint64_t depth = 3;
};

algorithm_descriptor alpha() {
  algorithm_descriptor d;
  d.name = "test-alpha";
  d.title = "ALPHA";
  d.defaults = [] { return std::any(alpha_options{}); };
  d.fields = {within(field<alpha_options>("rate", "a rate", [](alpha_options& o) -> double& { return o.rate; }), 0, 1),
              switch_off<alpha_options>("quiet", "not loud", [](alpha_options& o) -> bool& { return o.loud; }),
              field<alpha_options>("sizes", "sizes", [](alpha_options& o) -> std::vector<std::size_t>& { return o.sizes; })};
  d.make = test::count_steps_descriptor().make;
  return d;
}

algorithm_descriptor beta() {
  algorithm_descriptor d;
  d.name = "test-beta";
  d.title = "BETA";
  d.defaults = [] { return std::any(beta_options{}); };
  d.fields = {over(field<beta_options>("rate", "a rate", [](beta_options& o) -> double& { return o.rate; }), 0, 1),
              field<beta_options>("depth", "a depth", [](beta_options& o) -> std::uint64_t& { return o.depth; })};
  d.make = test::count_steps_descriptor().make;
  return d;
}

}  // namespace

TEST_CASE("a descriptor's defaults fill a run's options, and its settings read back as text",
          "[training][descriptor]") {
  register_algorithm(alpha());
  train_options o;
  o.algo = "test-alpha";
  const auto filled = with_algorithm_defaults(o);
  REQUIRE(std::any_cast<alpha_options>(&filled.algo_options) != nullptr);
  CHECK(algorithm_settings(o) ==
        std::vector<std::pair<std::string, std::string>>{{"rate", "0.5"}, {"quiet", "false"}, {"sizes", "4 4"}});
  options_of<alpha_options>(o).rate = 2;
  options_of<alpha_options>(o).loud = false;
  CHECK(algorithm_settings(o) ==
        std::vector<std::pair<std::string, std::string>>{{"rate", "2"}, {"quiet", "true"}, {"sizes", "4 4"}});
  // A field sets through the descriptor as the command line does.
  const auto d = find_algorithm("test-alpha");
  d->fields[0].set(o.algo_options, 0.125);
  d->fields[1].set(o.algo_options, false);
  CHECK(options_of<alpha_options>(o).rate == 0.125);
  CHECK(options_of<alpha_options>(o).loud);
}

TEST_CASE("options of another algorithm's type are refused before a run", "[training][descriptor][errors]") {
  register_algorithm(alpha());
  register_algorithm(beta());
  train_options o;
  o.algo = "test-alpha";
  o.algo_options = beta_options{};
  CHECK_THROWS_AS(with_algorithm_defaults(o), usage_error);
  CHECK_THROWS_AS(options_of<alpha_options>(o), usage_error);
}

TEST_CASE("a setting given to an algorithm that does not declare it names the ones that do",
          "[training][descriptor][errors]") {
  register_algorithm(alpha());
  register_algorithm(beta());
  CHECK_NOTHROW(check_setting_declared("rate", "test-alpha"));
  CHECK_NOTHROW(check_setting_declared("rate", "test-beta"));
  CHECK_NOTHROW(check_setting_declared("no-such-setting", "test-beta"));  // the command refuses unknown flags itself
  CHECK_THROWS_MATCHES(check_setting_declared("depth", "test-alpha"), config_error,
                       Catch::Message(fmt::format(fmt::runtime(training::errors::setting_of_other_algo), "--depth", "BETA",
                                                  "test-alpha")));
  CHECK_THROWS_WITH(check_setting_declared("no-such-setting", "test-nobody"),
                    Catch::Contains("--algo: invalid value 'test-nobody'"));
}

TEST_CASE("a descriptor that repeats a setting, or gives a shared name another kind, is refused",
          "[training][descriptor][errors]") {
  register_algorithm(alpha());
  auto twice = beta();
  twice.name = "test-twice";
  twice.fields.push_back(twice.fields.front());
  CHECK_THROWS_AS(register_algorithm(twice), usage_error);
  auto other_kind = beta();
  other_kind.name = "test-other-kind";
  other_kind.fields[1].name = "quiet";  // a whole number where test-alpha's is a switch
  CHECK_THROWS_AS(register_algorithm(other_kind), usage_error);
  auto nameless = beta();
  nameless.name.clear();
  CHECK_THROWS_AS(register_algorithm(nameless), usage_error);
  // A number without a range: nothing would stop 1e300 reaching the arithmetic.
  auto unbounded = beta();
  unbounded.name = "test-unbounded";
  unbounded.fields.front().range.reset();
  CHECK_THROWS_WITH(register_algorithm(unbounded),
                    "register_algorithm: 'test-unbounded' declares --rate without a range (training::within or over)");
}

TEST_CASE("every number setting is held to its range, whoever sets it", "[training][descriptor][errors]") {
  register_algorithm(beta());
  train_options o;
  o.algo = "test-beta";
  o = with_algorithm_defaults(o);
  check_setting_ranges(o);  // the defaults are in range
  options_of<beta_options>(o).rate = 0;  // (0, 1]
  CHECK_THROWS_WITH(check_setting_ranges(o),
                    fmt::format(fmt::runtime(actors::errors::flag_out_of_range), "--rate", "0", "must be in (0, 1]"));
  options_of<beta_options>(o).rate = 1e300;
  CHECK_THROWS_WITH(check_setting_ranges(o),
                    fmt::format(fmt::runtime(actors::errors::flag_out_of_range), "--rate", "1e+300", "must be in (0, 1]"));
  options_of<beta_options>(o).rate = 1;
  check_setting_ranges(o);
}

TEST_CASE("an algorithm unregistered is no longer found", "[training][descriptor]") {
  register_algorithm(beta());
  auto gamma = beta();
  gamma.name = "test-gamma";
  register_algorithm(gamma);
  CHECK(algorithm_names().find("test-gamma") != std::string::npos);
  unregister_algorithm("test-gamma");
  unregister_algorithm("test-never-registered");
  CHECK(algorithm_names().find("test-gamma") == std::string::npos);
  CHECK(find_algorithm("test-beta")->name == "test-beta");
  CHECK_THROWS_AS(find_algorithm("test-gamma"), config_error);
}

TEST_CASE("a test algorithm's memory estimate sizes the run and names its own setting when too big",
          "[training][descriptor][memory]") {
  register_algorithm(test::count_steps_descriptor());
  train_options o;
  o.algo = "count";
  o.sampler.env = "cartpole";
  o.sampler.num_envs = 4;
  options_of<test::count_options>(o).horizon = std::uint64_t{1} << 60;  // 8 bytes a step: 8 EiB
  CHECK_THROWS_WITH(training_run::validate(o), Catch::Contains("--horizon"));
  options_of<test::count_options>(o).horizon = 64;
  CHECK_NOTHROW(training_run::validate(o));
  options_of<test::count_options>(o).horizon = 0;  // its own check
  CHECK_THROWS_MATCHES(training_run::validate(o), config_error,
                       Catch::Message(fmt::format(fmt::runtime(actors::errors::flag_out_of_range), "--horizon", 0,
                                                  "must be at least 1")));
}

TEST_CASE("a multi-agent env is refused by an algorithm that trains single-agent envs, naming the env, its slots "
          "and the algorithm",
          "[training][descriptor][errors][multi-agent]") {
  auto single = alpha();  // multi_agent off, as a descriptor has it unless it says otherwise
  register_algorithm(single);
  train_options o;
  o.algo = "test-alpha";
  o.sampler.env = "race";
  o.sampler.env_args = {{"agents", "3"}};
  CHECK_THROWS_MATCHES(training_run::validate(o), config_error,
                       Catch::Message(fmt::format(fmt::runtime(training::errors::multi_agent_unsupported), "race", 3,
                                                  "test-alpha")));
  single.multi_agent = true;
  register_algorithm(single);
  CHECK_NOTHROW(training_run::validate(o));
  o.sampler.env_args.clear();
  register_algorithm(alpha());
  o.sampler.env = "cartpole";
  CHECK_NOTHROW(training_run::validate(o));
}
