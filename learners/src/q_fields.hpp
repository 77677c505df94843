#pragma once
// Private: the settings DQN and R2D2 share (dqn_config), declared once for
// both descriptors, each over its own options type.

#include <vector>

#include "coral/learners/dqn_learner.hpp"
#include "coral/training/option_field.hpp"

namespace coral::learners::detail {

/// The dqn_config settings of `Options`, reached through `q(options) -> dqn_config&`.
/// `unit`: what the replay holds ("transitions", "sequences"); `double_q_choice`:
/// whether --huber-delta and --no-double-dqn are declared (R2D2's loss is the
/// squared TD error and its target always double-Q).
template <class Options, class Q>
std::vector<training::option_field> q_fields(Q q, const char* unit, bool double_q_choice) {
  using training::field;
  using training::over;
  using training::within;
  using training::sizing;
  using training::switch_off;
  using std::string;
  std::vector<training::option_field> f{
      over(field<Options>("learning-rate", "Adam step size", [q](Options& o) -> double& { return q(o).learning_rate; }), 0, 1e6),
      over(field<Options>("adam-epsilon", "Adam's epsilon", [q](Options& o) -> double& { return q(o).adam_epsilon; }), 0, 1),
      over(field<Options>("gamma", "discount", [q](Options& o) -> double& { return q(o).gamma; }), 0, 1),
      sizing(field<Options>("n-step", "env steps summed into each return",
                            [q](Options& o) -> std::size_t& { return q(o).n_step; })),
      sizing(field<Options>("replay-batch", string(unit) + " per update",
                            [q](Options& o) -> std::size_t& { return q(o).batch_size; })),
      over(field<Options>("replay-ratio", "trained " + string(unit) + " sampled per env step inserted (the rate limiter holds it)",
                          [q](Options& o) -> double& { return q(o).replay_ratio; }), 0, 10000),
      sizing(field<Options>("replay-capacity", string(unit) + " the replay holds",
                            [q](Options& o) -> std::size_t& { return q(o).replay_capacity; })),
      field<Options>("learning-starts", "env steps in the replay before the first update",
                     [q](Options& o) -> std::uint64_t& { return q(o).learning_starts; }),
      sizing(field<Options>("prefetch", "sampled batches the learner keeps in flight",
                            [q](Options& o) -> std::size_t& { return q(o).prefetch; })),
      switch_off<Options>("uniform-replay", "sample uniformly instead of by priority",
                          [q](Options& o) -> bool& { return q(o).prioritized; }),
      within(field<Options>("priority-alpha", "priority exponent", [q](Options& o) -> double& { return q(o).priority_alpha; }), 0, 1),
      within(field<Options>("priority-beta", "importance exponent at the start (annealed to 1)",
                            [q](Options& o) -> double& { return q(o).priority_beta; }), 0, 1),
      over(field<Options>("priority-epsilon", "added to every priority, so that none is 0",
                          [q](Options& o) -> double& { return q(o).priority_epsilon; }), 0, 1),
      field<Options>("target-update", "updates between target network copies",
                     [q](Options& o) -> std::size_t& { return q(o).target_update; }),
      within(field<Options>("max-grad-norm", "gradient norm clip, 0: off", [q](Options& o) -> double& { return q(o).max_grad_norm; }), 0, 1e9),
      within(field<Options>("epsilon-base", "Ape-X ladder, env i of N explores with base^(1+alpha*i/(N-1))",
                            [q](Options& o) -> double& { return q(o).epsilon_base; }), 0, 1),
      within(field<Options>("epsilon-alpha", "Ape-X ladder exponent", [q](Options& o) -> double& { return q(o).epsilon_alpha; }), 0, 1000),
      field<Options>("exploration-steps", "env steps over which each epsilon falls from 1 to its rung",
                     [q](Options& o) -> std::uint64_t& { return q(o).exploration_steps; }),
      field<Options>("publish-every", "updates between weight publications to the policy",
                     [q](Options& o) -> std::size_t& { return q(o).publish_every; }),
  };
  if (double_q_choice) {
    f.push_back(over(field<Options>("huber-delta", "where the Huber loss turns from squared to linear",
                                    [q](Options& o) -> double& { return q(o).huber_delta; }), 0, 1e9));
    f.push_back(switch_off<Options>("no-double-dqn", "bootstrap with max of the target network",
                                    [q](Options& o) -> bool& { return q(o).double_dqn; }));
  }
  return f;
}

}  // namespace coral::learners::detail
