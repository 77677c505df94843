#include "coral/training/clip_recorder.hpp"

// The recorder of `--video-every` alone (its thread, its skips, its
// cancel, its failures) and in a training run. In the TSan tree: the
// recorder is concurrent code.

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/count_steps.hpp"
#include "../support/scoped_env.hpp"
#include "../support/scratch_dir.hpp"
#include "../support/video_probe.hpp"
#include "../support/watchdog.hpp"
#include "coral/actors/builtin_policy.hpp"
#include "coral/actors/errors.hpp"
#include "coral/core/error.hpp"
#include "coral/core/json.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"
#include "coral/training/errors.hpp"
#include "coral/training/training_run.hpp"
#include "coral/training/video_writer.hpp"

namespace fs = std::filesystem;
namespace te = coral::training::errors;
using coral::training::clip_recorder;
using namespace std::chrono_literals;

namespace {

std::string clip_text(std::string_view format, const auto&... args) {
  return fmt::format(fmt::runtime(format), args...);
}

/// Cartpole's action 0 on every step; remembers the weights it was given
/// and whether its first act saw the row's "episode starts" flag. With a
/// gate, its first act says so (acting()) and waits until release().
class pushing_left final : public coral::actors::policy {
 public:
  explicit pushing_left(bool gated) : gated_(gated) {}
  void act(const coral::actors::policy_rows& rows) override {
    auto& b = rows.batch;
    b.discrete_actions()(0, 0) = 0;
    std::unique_lock lock(mutex_);
    ++acts_;
    if (acts_ == 1) {
      first_saw_start_ = b.terminated()[0] != 0;
      if (gated_) {
        acting_.set_value();
        opened_.wait(lock, [this] { return released_; });
      }
    }
  }
  void load_weights(std::span<const float> w) override {
    std::lock_guard lock(mutex_);
    weights_.assign(w.begin(), w.end());
  }
  /// Waits until the first act began (a gated policy).
  void wait_acting() { acting_.get_future().wait(); }
  void release() {
    {
      std::lock_guard lock(mutex_);
      released_ = true;
    }
    opened_.notify_all();
  }
  std::vector<float> weights() const {
    std::lock_guard lock(mutex_);
    return weights_;
  }
  bool first_saw_start() const {
    std::lock_guard lock(mutex_);
    return first_saw_start_;
  }

 private:
  bool gated_;
  mutable std::mutex mutex_;
  std::condition_variable opened_;
  std::promise<void> acting_;
  bool released_ = false;
  int acts_ = 0;
  bool first_saw_start_ = false;
  std::vector<float> weights_;
};

/// Lines a recorder says or warns, kept under a lock; the first warning
/// also fulfils a promise.
struct heard_lines {
  std::mutex mutex;
  std::vector<std::string> said;
  std::vector<std::string> warned;
  std::promise<void> first_warning;
  clip_recorder::line_sink say() {
    return [this](const std::string& line) {
      std::lock_guard lock(mutex);
      said.push_back(line);
    };
  }
  clip_recorder::line_sink warn() {
    return [this](const std::string& line) {
      std::lock_guard lock(mutex);
      warned.push_back(line);
      if (warned.size() == 1) first_warning.set_value();
    };
  }
};

/// A recorder of cartpole clips (seed 5) into `dir`, played by `policy`
/// (which it owns from then on; the test keeps a pointer).
std::unique_ptr<clip_recorder> cartpole_clips(const fs::path& dir, std::unique_ptr<pushing_left> policy,
                                              heard_lines& heard, std::size_t max_steps = coral::training::max_clip_steps) {
  auto handed = std::make_shared<std::unique_ptr<pushing_left>>(std::move(policy));
  return std::make_unique<clip_recorder>(
      clip_recorder::options{.dir = dir, .env = "cartpole", .env_args = {}, .seed = 5, .max_steps = max_steps},
      [handed](const coral::envs::space&, const coral::envs::space&) -> std::unique_ptr<coral::actors::policy> {
        return std::move(*handed);
      },
      heard.say(), heard.warn());
}

/// The steps of cartpole's first episode (seed 5, the recorder's env index) under action 0.
std::size_t pushing_left_episode() {
  std::vector<std::unique_ptr<coral::envs::env>> one;
  one.push_back(coral::envs::registry::global().make("cartpole", {}, 5, coral::training::clip_env_index));
  coral::envs::env_batch b(1, one.front()->observation_space(), one.front()->action_space());
  coral::envs::env_slice slice(b, 0, std::move(one));
  slice.reset_all();
  std::size_t steps = 0;
  do {
    b.discrete_actions()(0, 0) = 0;
    slice.step_all();
    ++steps;
  } while (b.terminated()[0] == 0 && b.truncated()[0] == 0);
  return steps;
}

std::size_t files_in(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

TEST_CASE("a clip is one episode of the weights handed over, one frame per step, at most max_steps",
          "[training][clips][video]") {
  const coral::test::watchdog dog("clips", 120s);
  const auto dir = coral::test::fresh_dir("clips-episode") / "videos";  // made by the recorder
  const auto steps = pushing_left_episode();
  REQUIRE(steps > 4);
  heard_lines heard;
  auto policy = std::make_unique<pushing_left>(false);
  auto* seen = policy.get();
  auto clips = cartpole_clips(dir, std::move(policy), heard);
  const auto weights = std::make_shared<const std::vector<float>>(std::vector<float>{1.5f, -2.0f});
  CHECK(clips->request(7, weights));
  clips->finish();
  const auto file = dir / "update-000007.mp4";
  CHECK(file == clip_recorder::clip_path(dir, 7));
  CHECK(clips->counted().written == 1);
  CHECK(seen->weights() == *weights);
  CHECK(seen->first_saw_start());
  REQUIRE(heard.said.size() == 1);
  CHECK(heard.said[0] == clip_text(te::clip_written, file.string(), steps, coral::json::number(double(steps))));
  CHECK(heard.warned.empty());
  const auto facts = coral::test::probe_video(file);
  REQUIRE(facts.read);
  CHECK(facts.codec == "h264");
  CHECK(facts.frames == static_cast<int>(steps));
  CHECK(facts.width == 600);
  CHECK(facts.height == 400);
  CHECK(files_in(dir) == 1);
  CHECK_FALSE(clips->request(8, weights));  // finished: nothing more is taken

  heard_lines capped;
  auto short_clips = cartpole_clips(dir, std::make_unique<pushing_left>(false), capped, 4);
  CHECK(short_clips->request(8, weights));
  short_clips->finish();
  REQUIRE(capped.said.size() == 1);
  CHECK(capped.said[0] ==
        clip_text(te::clip_written, clip_recorder::clip_path(dir, 8).string(), 4, coral::json::number(4.0)));
  CHECK(coral::test::probe_video(clip_recorder::clip_path(dir, 8)).frames == 4);
}

TEST_CASE("a request while a clip is recorded is skipped without waiting, and cancel drops the clip in progress",
          "[training][clips][video]") {
  const coral::test::watchdog dog("clips", 120s);  // a request that waited for the clip would hang here
  const auto dir = coral::test::fresh_dir("clips-busy");
  heard_lines heard;
  auto policy = std::make_unique<pushing_left>(true);
  auto* gate = policy.get();
  auto clips = cartpole_clips(dir, std::move(policy), heard);
  const auto weights = std::make_shared<const std::vector<float>>();
  REQUIRE(clips->request(1, weights));
  gate->wait_acting();  // the clip's first frame is on its way to ffmpeg; its first act holds
  CHECK_FALSE(clips->request(2, weights));
  CHECK_FALSE(clips->request(3, weights));
  CHECK(clips->counted().skipped == 2);
  clips->cancel();   // returns at once, though the recorder is held
  gate->release();
  clips->abandon();  // the thread ends before its next frame
  const auto counts = clips->counted();
  CHECK(counts.written == 0);
  CHECK(counts.failed == 0);
  CHECK(counts.skipped == 2);
  CHECK_FALSE(clips->request(4, weights));
  CHECK(clips->counted().skipped == 2);  // stopped: not a skip
  CHECK(heard.said.empty());
  CHECK(heard.warned.empty());
  CHECK(files_in(dir) == 0);  // neither the clip nor its partial file
}

TEST_CASE("a clip that cannot be written is a warning, and the recorder takes the next request",
          "[training][clips][video][errors]") {
  const coral::test::watchdog dog("clips", 120s);
  const auto real = coral::training::find_on_path("ffmpeg");
  REQUIRE_FALSE(real.empty());
  const auto bin = coral::test::fresh_dir("clips-failing-ffmpeg");
  // Fails the first time it runs, then is the real ffmpeg.
  std::ofstream(bin / "ffmpeg") << "#!/bin/sh\nif [ -e '" << (bin / "failed-once").string() << "' ]; then exec '"
                                << real << "' \"$@\"; fi\n: > '" << (bin / "failed-once").string()
                                << "'\necho 'fake ffmpeg: refusing' >&2\nexit 1\n";
  fs::permissions(bin / "ffmpeg", fs::perms::owner_all);
  const auto dir = coral::test::fresh_dir("clips-failing");
  auto path = std::make_optional<coral::test::scoped_env>("PATH", bin.string());  // before the recorder's thread starts
  heard_lines heard;
  auto clips = cartpole_clips(dir, std::make_unique<pushing_left>(false), heard);
  const auto weights = std::make_shared<const std::vector<float>>();
  REQUIRE(clips->request(1, weights));
  heard.first_warning.get_future().wait();
  const auto first = clip_recorder::clip_path(dir, 1).string();
  {
    std::lock_guard lock(heard.mutex);
    REQUIRE(heard.warned.size() == 1);
    CHECK(heard.warned[0] ==
          clip_text(te::clip_not_written, first,
                    clip_text(te::video_ffmpeg_failed, first, "exit status 1", "fake ffmpeg: refusing")));
  }
  CHECK(clips->request(2, weights));  // the recorder was idle again before it warned
  clips->finish();
  path.reset();  // the recorder's thread has ended; ffprobe is on PATH again
  const auto counts = clips->counted();
  CHECK(counts.failed == 1);
  CHECK(counts.written == 1);
  CHECK(counts.skipped == 0);
  CHECK_FALSE(fs::exists(first));
  CHECK(coral::test::probe_video(clip_recorder::clip_path(dir, 2)).read);
  CHECK(files_in(dir) == 1);
}

namespace {

/// "count" that can act outside a run (at random), under another name: a
/// run of it may record clips.
coral::training::train_options clip_count_run(std::uint64_t total_steps) {
  auto o = coral::test::count_run(total_steps, coral::executor_mode::threads);
  auto d = coral::test::count_steps_descriptor("count-acting");
  d.acting = [](const coral::training::train_options&, const coral::envs::space&, const coral::envs::space& action,
                const coral::training::checkpoint*, const coral::training::acting_options& a) {
    return coral::actors::make_builtin_policy("random", action, a.rows, a.seed);
  };
  coral::training::register_algorithm(std::move(d));
  o.algo = "count-acting";
  return o;
}

/// What training_run::validate(o) refuses with, or "" when it takes `o`.
std::string refusal_of(const coral::training::train_options& o) {
  try {
    coral::training::training_run::validate(o);
  } catch (const coral::config_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a run with video_every records clips of its policy into <run dir>/videos and says so",
          "[training][clips][video]") {
  const coral::test::watchdog dog("clips run", 240s);
  const auto dir = coral::test::fresh_dir("clips-run");
  auto o = clip_count_run(2048);  // 8 rows, an update per 512 steps: 4 updates
  o.run_dir = dir.string();
  o.video_every = 1;
  std::ostringstream progress, warnings;
  const auto result = coral::training::training_run(o, progress, warnings).run();
  INFO(progress.str() << warnings.str());
  CHECK_FALSE(result.interrupted);
  CHECK(result.updates >= 1);
  // The first request finds the recorder idle; the run ends normally, so the
  // clips asked for are written (later requests may have been skipped).
  std::vector<std::pair<fs::path, std::size_t>> clips;
  std::istringstream lines(progress.str());
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("clip: ", 0) != 0) continue;
    const auto open = line.rfind(" (");
    clips.emplace_back(line.substr(6, open - 6), std::stoul(line.substr(open + 2)));
    // Cartpole's return is its length.
    CHECK(line == clip_text(te::clip_written, clips.back().first.string(), clips.back().second,
                            coral::json::number(double(clips.back().second))));
  }
  REQUIRE_FALSE(clips.empty());
  CHECK(clips.front().first == clip_recorder::clip_path(dir / "videos", 1));
  for (const auto& [file, frames] : clips) {
    const auto facts = coral::test::probe_video(file);
    REQUIRE(facts.read);
    CHECK(facts.frames == static_cast<int>(frames));
  }
  CHECK(files_in(dir / "videos") == clips.size());
  CHECK(warnings.str().empty());
}

TEST_CASE("video_every is refused before a run without a run dir, ffmpeg, a rendering env or an acting policy",
          "[training][clips][errors]") {
  auto o = clip_count_run(2048);
  o.run_dir = coral::test::fresh_dir("clips-refused").string();
  o.video_every = 1;
  CHECK(refusal_of(o).empty());
  auto far = o;
  far.video_every = coral::training::max_video_every + 1;
  CHECK(refusal_of(far) == clip_text(coral::actors::errors::flag_out_of_range, "--video-every",
                                     coral::training::max_video_every + 1,
                                     fmt::format("must be in [0, {}] (0: no clips)", coral::training::max_video_every)));
  auto nowhere = o;
  nowhere.run_dir.clear();
  CHECK(refusal_of(nowhere) == te::video_every_needs_run_dir);
  auto blind = o;
  blind.sampler.env = "bandit";
  CHECK(refusal_of(blind) == clip_text(te::video_every_no_render, "bandit"));
  auto counting = o;
  counting.algo = "count";  // declares no acting policy
  CHECK(refusal_of(counting) == clip_text(te::video_every_cannot_act, "count"));
  {
    const coral::test::scoped_env path("PATH", coral::test::fresh_dir("clips-no-ffmpeg").string());
    CHECK(refusal_of(o) == te::video_every_no_ffmpeg);
  }
  auto off = nowhere;
  off.video_every = 0;
  CHECK(refusal_of(off).empty());
}
