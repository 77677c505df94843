// Distributed runs over an in-process transport: every rank is a thread
// running its own training_run, as `mpirun -np N coral train --distributed`
// runs one per process (tests/distributed has those, on the real binary).
// Torch-free, so ThreadSanitizer and AddressSanitizer run the bridge.

#include "coral/distributed/bridge.hpp"

#include <atomic>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/distributed/segment_wire.hpp"
#include "../support/watchdog.hpp"
#include "coral/core/error.hpp"
#include "coral/training/errors.hpp"
#include "coral/training/training_run.hpp"
#include "coral/distributed/errors.hpp"
#include "coral/distributed/local_transport.hpp"
#include "coral/distributed/wire.hpp"
#include "../support/count_steps.hpp"

using namespace coral;
using namespace coral::training;
using coral::distributed::local_transport;
using coral::distributed::wire_tag;
using namespace std::chrono_literals;

namespace {

/// A rank's run of "count": test::count_run, smaller (4 envs, batch 2, one sampling thread, rows of 16).
train_options rank_run(std::uint64_t total_steps) {
  auto o = test::count_run(total_steps, executor_mode::threads);
  o.sampler.num_envs = 4;
  o.sampler.batch_size = 2;
  o.sampler.threads = 1;
  options_of<test::count_options>(o).horizon = 16;
  return o;
}

/// How one rank's run ended.
struct rank_end {
  train_result result;
  std::string error;  // what() of what it threw; empty if it returned
  bool config = false;  // it threw config_error
  std::uint64_t weights_version = 0;
  std::string progress;
};

/// Runs `options[r]` as rank r of a local transport, each on its own thread.
std::vector<rank_end> run_ranks(std::vector<train_options> options) {
  auto ranks = local_transport::make(options.size());
  std::vector<rank_end> ends(options.size());
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < options.size(); ++r) {
    options[r].remote = distributed::over(ranks[r]);
    threads.emplace_back([&, r] {
      std::ostringstream progress;
      training_run run(options[r], progress);
      try {
        ends[r].result = run.run();
      } catch (const config_error& e) {
        ends[r].error = e.what();
        ends[r].config = true;
      } catch (const std::exception& e) {
        ends[r].error = e.what();
      }
      ends[r].weights_version = run.weights().version();
      ends[r].progress = progress.str();
    });
  }
  for (auto& t : threads) t.join();
  return ends;
}

}  // namespace

TEST_CASE("a distributed run: the learner counts every sampler's steps and each sampler acts with its weights",
          "[training][distributed]") {
  test::watchdog dog("distributed count run", 120s);
  const auto ends = run_ranks({rank_run(6000), rank_run(6000), rank_run(6000)});
  for (const auto& e : ends) REQUIRE(e.error.empty());
  const auto& learner = ends[0];
  // Each sampler's gate stops it at its share, 3000 steps; the learner
  // counts what they reported, the last report included.
  CHECK(learner.result.env_steps == 6000);
  CHECK(ends[1].result.env_steps == 3000);
  CHECK(ends[2].result.env_steps == 3000);
  CHECK_FALSE(learner.result.interrupted);
  CHECK_FALSE(ends[1].result.interrupted);
  // 6000 steps take milliseconds: the stop at the step limit may cut the
  // learner short of any update (as in one process), never add one.
  CHECK(learner.result.updates <= 6000 / 64);
  CHECK(learner.result.episodes > 0);
  // The samplers publish the learner's version numbers, never past them.
  CHECK(learner.weights_version == learner.result.updates + 1);
  for (std::size_t r = 1; r < 3; ++r) {
    CHECK(ends[r].weights_version >= 1);
    CHECK(ends[r].weights_version <= learner.weights_version);
    CHECK(ends[r].progress.empty());  // the learner reports for the run
  }
  CHECK(learner.progress.find("distributed: this rank learns, 2 sampler ranks") != std::string::npos);
  CHECK(learner.progress.find("| ranks 1 ") != std::string::npos);  // the final line has every rank's part
}

TEST_CASE("a sampler rank started with other flags is refused by name on every rank before anything runs",
          "[training][distributed]") {
  test::watchdog dog("distributed refusal", 60s);
  auto other = rank_run(6000);
  other.sampler.num_envs = 2;
  other.sampler.batch_size = 1;
  const auto ends = run_ranks({rank_run(6000), rank_run(6000), other});
  const auto text = fmt::format(fmt::runtime(training::errors::distributed_mismatch), "rank 2", "--num-envs", 2, 4);
  for (const auto& e : ends) {
    CHECK(e.config);
    CHECK(e.error == text);
  }
}

TEST_CASE("a sampler rank that fails stops every rank, and the learner names it", "[training][distributed]") {
  test::watchdog dog("distributed failure", 60s);
  auto o = rank_run(1'000'000);
  o.sampler.env = "faulty";
  o.sampler.env_args = {{"env", "-1"}, {"throw_step", "200"}};
  const auto ends = run_ranks({o, o, o});
  // Both samplers fail at their 200th step; the learner names the first it heard of.
  for (std::size_t r = 1; r < 3; ++r) CHECK(ends[r].error.find("injected fault: step 200") != std::string::npos);
  const auto by_1 = fmt::format(fmt::runtime(distributed::errors::rank_failed), "rank 1", ends[1].error);
  const auto by_2 = fmt::format(fmt::runtime(distributed::errors::rank_failed), "rank 2", ends[2].error);
  CHECK((ends[0].error == by_1 || ends[0].error == by_2));
  CHECK(ends[0].progress.find("; stopping every rank") != std::string::npos);
}

TEST_CASE("a learner stopped by its caller stops the samplers, which end interrupted", "[training][distributed]") {
  test::watchdog dog("distributed stop", 60s);
  auto learner = rank_run(10'000'000);
  learner.on_metrics_row = [](std::string_view, std::string_view) { return false; };  // stop at the first row
  const auto ends = run_ranks({learner, rank_run(10'000'000), rank_run(10'000'000)});
  for (const auto& e : ends) REQUIRE(e.error.empty());
  for (const auto& e : ends) CHECK(e.result.interrupted);
  CHECK(ends[0].result.env_steps < 10'000'000);
}

TEST_CASE("--distributed refuses a job of one rank and an algorithm without a distributed form",
          "[training][distributed]") {
  auto o = rank_run(1000);
  o.remote = distributed::over(local_transport::make(1)[0]);
  std::ostringstream progress;
  CHECK_THROWS_MATCHES(training_run(o, progress).run(), config_error,
                       Catch::Message(fmt::format(fmt::runtime(training::errors::distributed_needs_ranks), 1)));
  register_algorithm(test::count_steps_descriptor("count-local", false));
  auto local = rank_run(1000);
  local.algo = "count-local";
  const auto ends = run_ranks({local, local});
  for (const auto& e : ends) {
    CHECK(e.config);
    CHECK(e.error == fmt::format(fmt::runtime(training::errors::distributed_algo), "count-local"));
  }
}

TEST_CASE("a malformed hello is refused, naming its sender and the field", "[training][distributed]") {
  test::watchdog dog("distributed malformed", 60s);
  auto ranks = local_transport::make(2);
  ranks[1]->send(0, wire_tag::hello, std::vector<std::byte>(3));  // too short for its field count
  std::vector<std::byte> stop;  // and, as a rank that fails does, its stop (reason "failed", no text)
  distributed::wire::writer w(stop);
  w.put<std::uint8_t>(2);
  w.put_text("");
  ranks[1]->send(0, wire_tag::stop, stop);
  auto o = rank_run(1000);
  o.remote = distributed::over(ranks[0]);
  std::ostringstream progress;
  CHECK_THROWS_MATCHES(training_run(o, progress).run(), error,
                       Catch::Message(fmt::format(fmt::runtime(distributed::errors::wire_malformed), "rank 1", "hello size")));
  // What the learner sent the fake sampler: its stop, with the reason.
  bool stopped = false;
  while (auto m = ranks[1]->poll()) stopped = stopped || m->tag == wire_tag::stop;
  CHECK(stopped);
}

TEST_CASE("a sampler rank whose learner never answers gives up after 10 s, naming it", "[training][distributed]") {
  test::watchdog dog("distributed silent learner", 60s);
  auto ranks = local_transport::make(2);  // rank 0 never runs
  auto o = rank_run(1000);
  o.stall_seconds = 0;  // the floor of 10 s holds
  o.remote = distributed::over(ranks[1]);
  std::ostringstream progress;
  const auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_MATCHES(training_run(o, progress).run(), error,
                       Catch::Message(fmt::format(fmt::runtime(training::errors::distributed_no_answer), "rank 1", "rank 0",
                                                  "the run's setup", 10)));
  const auto waited = std::chrono::steady_clock::now() - started;
  CHECK(waited >= 10s);
  // Nor does it wait out the limit again for the learner's stop: a rank that
  // did would then name rank 0 as silent once more, for its stop.
  const auto waited_again = fmt::format(fmt::runtime(training::errors::distributed_no_answer), "rank 1", "rank 0",
                                        "its stop", 10);
  CHECK(progress.str().find(waited_again) == std::string::npos);
}

TEST_CASE("PPO segments survive the wire and join row-wise with their truncated steps renumbered",
          "[training][distributed][wire]") {
  auto make = [](std::size_t rows, float base) {
    rollout_segment s(7, rows, 3, 2, 1, 0);
    for (std::size_t i = 0; i < s.observations.size(); ++i) s.observations[i] = base + static_cast<float>(i);
    for (std::size_t i = 0; i < s.rewards.size(); ++i) {
      s.rewards[i] = base + 0.5f * static_cast<float>(i);
      s.discrete_actions[i] = static_cast<std::int32_t>(i % 2);
      s.policy_versions[i] = 3 + i;
    }
    s.truncated[1] = 1;
    s.truncated_steps = {1};
    s.truncated_observations = {base, base + 1};
    s.state_dim = 2;  // a recurrent policy's state at each row's step 0
    for (std::size_t r = 0; r < rows; ++r) s.initial_states.insert(s.initial_states.end(), {base + r, -base - r});
    s.acted[0] = 0;  // a waiting slot's step
    s.use_masks(2);
    s.action_masks[1] = 0;  // the first step's second action was illegal
    return s;
  };
  const auto a = make(2, 0.0f);
  std::vector<std::byte> bytes;
  distributed::wire::writer w(bytes);
  distributed::encode_segment(a, w);
  distributed::wire::reader r(bytes, "rank 1");
  auto back = distributed::decode_segment(r);
  r.finish("segment");
  CHECK(back.index == 7);
  CHECK(back.observations == a.observations);
  CHECK(back.rewards == a.rewards);
  CHECK(back.policy_versions == a.policy_versions);
  CHECK(back.truncated_steps == a.truncated_steps);
  CHECK(back.state_dim == 2);
  CHECK(back.initial_states == a.initial_states);
  CHECK(back.acted == a.acted);
  CHECK(back.mask_dim == 2);
  CHECK(back.action_masks == a.action_masks);

  std::vector<rollout_segment> parts;
  parts.push_back(std::move(back));
  parts.push_back(make(3, 100.0f));
  const auto joined = distributed::join_segments(parts);
  CHECK(joined.rows == 5);
  CHECK(joined.env_steps() == 15);
  CHECK(joined.truncated_steps == std::vector<std::uint32_t>{1, 2 * 3 + 1});  // the second part's rows come after 2 rows of 3
  CHECK(joined.truncated_observations == std::vector<float>{0, 1, 100, 101});
  CHECK(joined.rewards[6] == 100.0f);  // first step of the second part
  CHECK(joined.observations.size() == 5 * 4 * 2);
  CHECK(joined.initial_states == std::vector<float>{0, 0, 1, -1, 100, -100, 101, -101, 102, -102});
  CHECK(joined.acted == std::vector<std::uint8_t>{0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1});
  CHECK(joined.action_masks.size() == 15 * 2);
  CHECK(joined.action_masks[6 * 2 + 1] == 0);  // the second part's first step

  // Cut short anywhere, it is refused with the field it ran out in.
  std::vector<std::byte> cut(bytes.begin(), bytes.begin() + 60);
  distributed::wire::reader short_reader(cut, "rank 2");
  CHECK_THROWS_MATCHES(distributed::decode_segment(short_reader), error,
                       Catch::Message(fmt::format(fmt::runtime(distributed::errors::wire_malformed), "rank 2", "segment observations")));
}
