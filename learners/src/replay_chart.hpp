#pragma once
// Private: the live view's part of a replay-based algorithm (DQN, R2D2),
// algorithm::chart(): the replay actor's channels, how busy it and the
// learner are, and the replay ratio.

#include <string>
#include <vector>

#include "coral/actors/sampler.hpp"
#include "coral/core/actor_graph.hpp"
#include "coral/training/training_run.hpp"

namespace coral::learners::detail {

/// Adds `replay` (the actor "replay") and the learner to `graph`. The
/// feeder is the batcher's step consumer: inserts come from the batchers'
/// actors (on a distributed learner, from the bridge); the learner asks for
/// batches and sends priorities on the same inbox. The ratio is sampled
/// units per env step inserted, times `trained_per_sampled` (1 for
/// transitions; a sequence's trained steps for R2D2).
template <class Replay>
void chart_replay(actor_graph& graph, training::training_run& run, Replay& replay, double trained_per_sampled,
                  std::string ratio_help) {
  auto senders = training::learner_rank(run.options()) ? std::vector<std::string>{"bridge"}
                                                        : run.sampler().batcher_names();
  senders.emplace_back("learner");
  graph.add_channel("replay inbox", senders, {"replay"}, replay.inbox());
  graph.add_channel("replay samples", {"replay"}, {"learner"}, replay.samples());
  auto* inbox = &replay.inbox();
  graph.add_activity("replay", [inbox] { return inbox->waiting_receivers() == 0; });
  auto* activity = &run.activity();
  graph.add_activity("learner", [activity] { return activity->busy(); });
  const auto* rs = &replay.stats();
  graph.add_figure("replay_ratio", std::move(ratio_help), [rs, trained_per_sampled] {
    const auto inserted = rs->env_steps.load();
    return inserted > 0 ? static_cast<double>(rs->sampled.load()) * trained_per_sampled / static_cast<double>(inserted)
                        : 0.0;
  });
}

}  // namespace coral::learners::detail
