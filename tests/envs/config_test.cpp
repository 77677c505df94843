#include "coral/envs/config.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/envs/errors.hpp"

using coral::envs::config_key;
using coral::envs::config_type;
using coral::envs::env_config;

namespace {

std::vector<config_key> keys() {
  return {{.name = "episode_length", .type = config_type::integer, .default_value = "1000",
           .description = "", .min = 1},
          {.name = "p", .type = config_type::real, .default_value = "0.5", .description = "", .min = 0, .max = 1},
          {.name = "verbose", .type = config_type::boolean, .default_value = "false", .description = ""}};
}

}  // namespace

TEST_CASE("missing config keys take their defaults", "[envs][config]") {
  const env_config c("demo", keys(), {});
  CHECK(c.get_int("episode_length") == 1000);
  CHECK(c.get_float("p") == 0.5);
  CHECK_FALSE(c.get_bool("verbose"));
  CHECK(c.env_name() == "demo");
  CHECK(c.values().size() == 3);
}

TEST_CASE("given config values are parsed by type", "[envs][config]") {
  const env_config c("demo", keys(), {{"episode_length", "5"}, {"verbose", "true"}, {"p", "1"}});
  CHECK(c.get_int("episode_length") == 5);
  CHECK(c.get_float("p") == 1.0);
  CHECK(c.get_bool("verbose"));
  CHECK(coral::envs::to_string(c.values()[1].second) == "1");
}

TEST_CASE("an int key takes a whole number written as a float, as the command's whole-number flags do",
          "[envs][config]") {
  CHECK(env_config("demo", keys(), {{"episode_length", "1e3"}}).get_int("episode_length") == 1000);
  CHECK(env_config("demo", keys(), {{"episode_length", "2.5e3"}}).get_int("episode_length") == 2500);
  CHECK(env_config("demo", keys(), {{"episode_length", "+7.0"}}).get_int("episode_length") == 7);
  CHECK(env_config("demo", keys(), {{"episode_length", "010"}}).get_int("episode_length") == 10);
  CHECK(env_config("demo", keys(), {{"episode_length", "9e18"}}).get_int("episode_length") == 9'000'000'000'000'000'000);
  for (const char* bad : {"1.5", "1e19", "9.3e18", "1e-1", "inf", "nan", "0x10", "0x1p3", "1e", "e3", " 5", "5 ", "+-1e3", "++1e3"}) {
    CAPTURE(bad);
    CHECK_THROWS_MATCHES(env_config("demo", keys(), {{"episode_length", bad}}), coral::config_error,
                         Catch::Message(std::string("env 'demo': config key 'episode_length': invalid value '") + bad +
                                        "' (expected int >= 1)"));
  }
  // One sign only, for float keys too: `+-0` would otherwise read as -0, in [0, 1].
  for (const char* bad : {"+-0", "++0", "+"}) {
    CAPTURE(bad);
    CHECK_THROWS_MATCHES(env_config("demo", keys(), {{"p", bad}}), coral::config_error,
                         Catch::Message(std::string("env 'demo': config key 'p': invalid value '") + bad +
                                        "' (expected float in [0, 1])"));
  }
  CHECK(env_config("demo", keys(), {{"p", "+0.5"}}).get_float("p") == 0.5);
  // The bounds apply to the value: 1e-0 is 1, 0e5 is 0.
  CHECK(env_config("demo", keys(), {{"episode_length", "1e-0"}}).get_int("episode_length") == 1);
  CHECK_THROWS_AS(env_config("demo", keys(), {{"episode_length", "0e5"}}), coral::config_error);
}

TEST_CASE("an unknown config key is rejected naming the key and the known ones", "[envs][config][errors]") {
  CHECK_THROWS_MATCHES(env_config("demo", keys(), {{"episode_lenght", "5"}}), coral::config_error,
                       Catch::Message("env 'demo': unknown config key 'episode_lenght' (known: episode_length, p, "
                                      "verbose)"));
}

TEST_CASE("a config key given twice is refused naming both values, even when they agree", "[envs][config][errors]") {
  CHECK_THROWS_MATCHES(env_config("demo", keys(), {{"p", "0.5"}, {"episode_length", "4"}, {"p", "0.25"}}),
                       coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(coral::envs::errors::repeated_key), "demo", "p", "0.5",
                                                  "0.25")));
  CHECK_THROWS_AS(env_config("demo", keys(), {{"p", "0.5"}, {"p", "0.5"}}), coral::config_error);
  CHECK(env_config("demo", keys(), {{"p", "0.5"}, {"episode_length", "4"}}).get_float("p") == 0.5);
}

TEST_CASE("a negative length is rejected naming the key and the allowed range", "[envs][config][errors]") {
  CHECK_THROWS_MATCHES(env_config("demo", keys(), {{"episode_length", "-3"}}), coral::config_error,
                       Catch::Message("env 'demo': config key 'episode_length': invalid value '-3' (expected int >= 1)"));
}

TEST_CASE("values that do not parse as their type are rejected naming the key", "[envs][config][errors]") {
  CHECK_THROWS_MATCHES(env_config("demo", keys(), {{"episode_length", "1.5"}}), coral::config_error,
                       Catch::Message("env 'demo': config key 'episode_length': invalid value '1.5' (expected int >= 1)"));
  CHECK_THROWS_MATCHES(env_config("demo", keys(), {{"episode_length", ""}}), coral::config_error,
                       Catch::Message("env 'demo': config key 'episode_length': invalid value '' (expected int >= 1)"));
  CHECK_THROWS_MATCHES(env_config("demo", keys(), {{"p", "1.5"}}), coral::config_error,
                       Catch::Message("env 'demo': config key 'p': invalid value '1.5' (expected float in [0, 1])"));
  CHECK_THROWS_MATCHES(env_config("demo", keys(), {{"p", "nan"}}), coral::config_error,
                       Catch::Message("env 'demo': config key 'p': invalid value 'nan' (expected float in [0, 1])"));
  CHECK_THROWS_MATCHES(env_config("demo", keys(), {{"verbose", "yes"}}), coral::config_error,
                       Catch::Message("env 'demo': config key 'verbose': invalid value 'yes' (expected bool (true or "
                                      "false))"));
}

TEST_CASE("--env-arg must be key=value", "[envs][config][errors]") {
  CHECK(coral::envs::parse_env_arg("a=b=c") == std::pair<std::string, std::string>{"a", "b=c"});
  CHECK(coral::envs::parse_env_arg("a=") == std::pair<std::string, std::string>{"a", ""});
  CHECK_THROWS_MATCHES(coral::envs::parse_env_arg("length"), coral::config_error,
                       Catch::Message("--env-arg: expected key=value, got 'length'"));
  CHECK_THROWS_MATCHES(coral::envs::parse_env_arg("=3"), coral::config_error,
                       Catch::Message("--env-arg: expected key=value, got '=3'"));
}

TEST_CASE("reading an undeclared key or with the wrong type is a usage error", "[envs][config][errors]") {
  const env_config c("demo", keys(), {});
  CHECK_THROWS_MATCHES(c.get_int("p"), coral::usage_error,
                       Catch::Message("env config: key 'p' is not a declared int key"));
  CHECK_THROWS_MATCHES(c.get_bool("nope"), coral::usage_error,
                       Catch::Message("env config: key 'nope' is not a declared bool key"));
}

TEST_CASE("a string key takes any text as given, the empty text included", "[envs][config]") {
  const std::vector<config_key> k = {
      {.name = "model", .type = config_type::text, .default_value = "", .description = ""}};
  CHECK(env_config("demo", k, {}).get_string("model").empty());
  const env_config c("demo", k, {{"model", "dir with spaces/a=b.xml"}});
  CHECK(c.get_string("model") == "dir with spaces/a=b.xml");
  CHECK(coral::envs::to_string(c.values()[0].second) == "dir with spaces/a=b.xml");
  CHECK(coral::envs::to_string(config_type::text) == "string");
  CHECK_THROWS_MATCHES(c.get_int("model"), coral::usage_error,
                       Catch::Message("env config: key 'model' is not a declared int key"));
  CHECK_THROWS_MATCHES(env_config("demo", keys(), {}).get_string("p"), coral::usage_error,
                       Catch::Message("env config: key 'p' is not a declared string key"));
}
