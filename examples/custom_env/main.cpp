// Registers a custom env, `countdown`, from outside coral, builds two of them
// through the registry, steps them with auto-reset through an env_slice and
// prints what happened. Expected output (deterministic):
//
//   registered: countdown (start=3)
//   step 1: obs 2 2 reward 0 0 done 0 0
//   step 2: obs 1 1 reward 0 0 done 0 0
//   step 3: obs 3 3 reward 1 1 done 1 1 final 0 0 return 1 1 length 3 3
//   step 4: obs 2 2 reward 0 0 done 0 0
//   countdown ok

#include <cstdio>
#include <memory>

#include "coral/envs/env_batch.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"

namespace {

using namespace coral::envs;

// Counts down from `start` to 0; reaching 0 pays 1 and terminates.
class countdown final : public env {
 public:
  countdown(const env_config& config, env_seed) : start_(config.get_int("start")) {}

  void reset(const env_rows& rows) override {
    left_ = start_;
    rows.observation()[0] = static_cast<float>(left_);
  }
  void step(const env_rows& rows) override {
    --left_;
    rows.observation()[0] = static_cast<float>(left_);
    rows.reward() = left_ == 0 ? 1.0F : 0.0F;
    rows.terminated() = left_ == 0 ? 1 : 0;
    rows.truncated() = 0;
  }
  [[nodiscard]] const space& observation_space() const noexcept override { return obs_; }
  [[nodiscard]] const space& action_space() const noexcept override { return act_; }
  [[nodiscard]] std::optional<double> optimal_return() const noexcept override { return 1.0; }

 private:
  space obs_ = space::box({1}, 0.0F, 1000.0F);
  space act_ = space::discrete(1);
  std::int64_t start_;
  std::int64_t left_ = 0;
};

}  // namespace

int main() {
  registry::global().add({.name = "countdown",
                          .description = "count down to zero",
                          .keys = {{.name = "start",
                                    .type = config_type::integer,
                                    .default_value = "5",
                                    .description = "first value",
                                    .min = 1}},
                          .factory = [](const env_config& c, env_seed s) -> std::unique_ptr<env> {
                            return std::make_unique<countdown>(c, s);
                          }});

  const config_args args = {{"start", "3"}};
  std::printf("registered: countdown (start=%s)\n",
              to_string(registry::global().make_config("countdown", args).values()[0].second).c_str());

  auto envs = registry::global().make_many("countdown", args, /*seed=*/1, /*first_env_index=*/0, 2);
  env_batch batch(2, envs[0]->observation_space(), envs[0]->action_space());
  env_slice slice(batch, 0, std::move(envs));
  slice.reset_all();
  bool ok = true;
  for (int t = 1; t <= 4; ++t) {
    slice.step_all();
    std::printf("step %d: obs %g %g reward %g %g done %d %d", t, batch.observations()(0, 0), batch.observations()(1, 0),
                batch.rewards()[0], batch.rewards()[1], batch.terminated()[0], batch.terminated()[1]);
    if (batch.terminated()[0] != 0) {
      std::printf(" final %g %g return %g %g length %d %d", batch.final_observations()(0, 0),
                  batch.final_observations()(1, 0), batch.episode_returns()[0], batch.episode_returns()[1],
                  batch.episode_lengths()[0], batch.episode_lengths()[1]);
      ok = ok && t == 3 && batch.episode_returns()[0] == 1.0F && batch.episode_lengths()[1] == 3;
    }
    std::printf("\n");
  }
  std::printf(ok ? "countdown ok\n" : "countdown FAILED\n");
  return ok ? 0 : 1;
}
