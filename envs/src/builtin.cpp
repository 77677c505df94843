#include <memory>

#include "coral/envs/bandit.hpp"
#include "coral/envs/cartpole.hpp"
#include "coral/envs/connect4.hpp"
#include "coral/envs/cover.hpp"
#include "coral/envs/delay.hpp"
#include "coral/envs/faulty.hpp"
#include "coral/envs/memory.hpp"
#include "coral/envs/minatar_asterix.hpp"
#include "coral/envs/minatar_breakout.hpp"
#include "coral/envs/minatar_freeway.hpp"
#include "coral/envs/minatar_seaquest.hpp"
#include "coral/envs/minatar_space_invaders.hpp"
#ifdef CORAL_WITH_MUJOCO
#include "coral/envs/ant.hpp"
#include "coral/envs/halfcheetah.hpp"
#include "coral/envs/hopper.hpp"
#include "coral/envs/humanoid.hpp"
#include "coral/envs/inverted_pendulum.hpp"
#include "coral/envs/walker2d.hpp"
#endif
#include "coral/envs/noop.hpp"
#include "coral/envs/password.hpp"
#include "coral/envs/population.hpp"
#include "coral/envs/race.hpp"
#include "coral/envs/registry.hpp"
#include "coral/envs/repeat_first.hpp"
#include "coral/envs/repeat_previous.hpp"
#include "coral/envs/squared.hpp"
#include "coral/envs/stochastic.hpp"
#include "coral/envs/tictactoe.hpp"

namespace coral::envs {
namespace {

template <class Env>
env_spec spec_of() {
  return env_spec{.name = std::string(Env::name),
                  .description = std::string(Env::description),
                  .keys = Env::config_keys(),
                  .factory = [](const env_config& config, env_seed seed) -> std::unique_ptr<env> {
                    return std::make_unique<Env>(config, seed);
                  }};
}

}  // namespace

void register_builtin_envs(registry& r) {
  r.add(spec_of<cartpole>());
  r.add(spec_of<bandit>());
  r.add(spec_of<memory>());
  r.add(spec_of<repeat_first>());
  r.add(spec_of<repeat_previous>());
  r.add(spec_of<stochastic>());
  r.add(spec_of<password>());
  r.add(spec_of<squared>());
  r.add(spec_of<race>());
  r.add(spec_of<population>());
  r.add(spec_of<cover>());
  r.add(spec_of<tictactoe>());
  r.add(spec_of<connect4>());
  r.add(spec_of<noop>());
  r.add(spec_of<delay>());
  r.add(spec_of<faulty>());
  r.add(spec_of<minatar_asterix>());
  r.add(spec_of<minatar_breakout>());
  r.add(spec_of<minatar_freeway>());
  r.add(spec_of<minatar_seaquest>());
  r.add(spec_of<minatar_space_invaders>());
#ifdef CORAL_WITH_MUJOCO
  r.add(spec_of<halfcheetah>());
  r.add(spec_of<hopper>());
  r.add(spec_of<walker2d>());
  r.add(spec_of<ant>());
  r.add(spec_of<humanoid>());
  r.add(spec_of<inverted_pendulum>());
#endif
}

}  // namespace coral::envs
