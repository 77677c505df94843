#pragma once
// Test helper: one MinAtar game through a slice, with sticky actions off
// unless the test sets them, and access to its rules and state.

#include <string>
#include <utility>

#include "coral/envs/minatar.hpp"
#include "harness.hpp"

namespace coral::envs::testing {

template <class Env>
struct minatar_fixture {
  explicit minatar_fixture(config_args extra = {}) : h(std::string(Env::name), without_sticky(std::move(extra)), 1) {
    h.slice.reset_all();
  }
  static config_args without_sticky(config_args a) {
    a.emplace_back("sticky_action_prob", "0");
    return a;
  }
  auto& rules() { return dynamic_cast<Env&>(h.slice.at(0)).game(); }
  const auto& now() { return rules().current(); }
  void step(minatar::action a) {
    h.act(static_cast<std::int32_t>(a));
    h.slice.step_all();
  }
  // Cell (y, x) of channel c in the observation.
  float cell(int y, int x, std::size_t c) const {
    constexpr std::size_t n = std::remove_cvref_t<decltype(std::declval<Env&>().game())>::channels;
    return h.obs()[(static_cast<std::size_t>(y) * 10 + static_cast<std::size_t>(x)) * n + c];
  }
  float reward() const { return h.batch.rewards()[0]; }
  harness h;
};

}  // namespace coral::envs::testing
