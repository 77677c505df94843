// Private header under test: the learners' non-finite checks (torch-free, inline).
#include "coral/training/finite_checks.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

namespace lm = coral::training::errors;

using coral::training::detail::check_loss_terms;
using coral::training::detail::check_weights;
using coral::training::detail::divergence_error;

TEST_CASE("the first loss term that is not finite stops the run, naming the learner, term and update",
          "[training][finite][errors]") {
  constexpr double inf = std::numeric_limits<double>::infinity();
  CHECK_NOTHROW(check_loss_terms("ppo", 1, {{"policy loss", 0.5}, {"value loss", 2.0}}));
  CHECK_THROWS_MATCHES(
      check_loss_terms("ppo", 7, {{"policy loss", 0.5}, {"value loss", inf}, {"entropy", std::nan("")}}),
      divergence_error, Catch::Message(fmt::format(fmt::runtime(lm::non_finite_loss), "ppo", "value loss", inf, 7)));
  CHECK_THROWS_MATCHES(check_loss_terms("dqn", 3, {{"td loss", std::nan("")}}), divergence_error,
                       Catch::Message("dqn learner: the td loss is not finite (nan) at update 3: training diverged "
                                      "(lower --learning-rate, or --allow-non-finite to go on)"));
}

TEST_CASE("the first weight that is not finite stops the run, naming its index and the update",
          "[training][finite][errors]") {
  constexpr float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> finite = {1.0F, -2.0F, 0.0F, std::numeric_limits<float>::max()};
  CHECK_NOTHROW(check_weights("ppo", 1, finite));
  const std::vector<float> diverged = {1.0F, 2.0F, -inf, std::nanf("")};
  CHECK_THROWS_MATCHES(check_weights("dqn", 12, diverged), divergence_error,
                       Catch::Message(fmt::format(fmt::runtime(lm::non_finite_weight), "dqn", 2, -inf, 12)));
  CHECK_THROWS_MATCHES(check_weights("ppo", 4, std::vector<float>{std::nanf("")}), divergence_error,
                       Catch::Message("ppo learner: weight 0 is not finite (nan) after update 4: training diverged "
                                      "(lower --learning-rate, or --allow-non-finite to go on)"));
}
