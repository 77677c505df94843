#pragma once
/// \file
/// `clip_recorder`: short videos of a training run's policy while it trains
/// (`coral train --video-every N`; training_run makes one).
///
/// ```
/// clip_recorder clips({.dir = "runs/x/videos", .env = "cartpole", .seed = 1}, make_policy, say, warn);
/// clips.request(updates, run.weights().read().value);  // the learner, every N updates: returns at once
/// clips.finish();                                       // a normal end: the clip asked for is written
/// ```
///
/// ## What a clip is
///
/// One episode of an env of its own (built in the constructor from the
/// registry: env index clip_env_index of the run's seed, so none of the
/// run's envs), played by a policy of its own (made once by `make_policy`
/// for one row, the algorithm's acting policy) loaded with the weights
/// handed to request(). Before each action it renders the env's state (the
/// state the action is chosen in), so a clip has as many frames as the
/// episode has steps, at most options::max_steps (the episode is cut
/// there). Each clip starts with a fresh reset of the env and the policy's
/// state (frame stacks, recurrent state) cleared, and is written to
/// `<dir>/update-<updates>.mp4` (updates zero-padded to six digits) by
/// video_writer, which replaces a file of that name. A clip written is
/// reported through `say`: errors::clip_written.
///
/// ## Never in the training's way
///
/// Clips are recorded on a thread of the recorder's own, at the lowest CPU
/// priority (nice 19, which the ffmpeg it spawns inherits). request() takes
/// a short lock and returns: it hands over the weights snapshot (shared,
/// not copied) when the recorder is idle, and skips the request (counted in
/// counts::skipped) when a clip is being recorded or one is waiting to be.
///
/// ## Failures
///
/// A clip that cannot be recorded (the env fails, the renderer cannot
/// start, ffmpeg fails, a disk is full) is a warning through `warn`
/// (errors::clip_not_written), counted in counts::failed; its partial file
/// is removed and the recorder takes the next request. Nothing it does
/// ends the run.
///
/// ## Stopping
///
/// finish() stops taking requests, lets the clip asked for (being recorded
/// or waiting) be written, at most max_steps frames, and joins the thread:
/// a run that ended normally keeps its last clip. cancel() tells the thread
/// to stop at the next frame and returns at once: the clip in progress and
/// one waiting are dropped (no partial file left); a frame is never more
/// than one render, one act and one write to ffmpeg away. abandon() is
/// cancel() and then the join. The destructor abandons. After any of them,
/// request() does nothing and returns false.
///
/// A request's outcome is reported (say or warn) after the recorder is idle
/// again: one who hears it may request the next clip and have it taken.
///
/// Thread safety: request() from one thread at a time (the learner's);
/// finish(), cancel(), abandon() and counted() from any thread, but not
/// from `say` or `warn`, which are called on the recorder's thread.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "coral/actors/policy.hpp"
#include "coral/envs/config.hpp"
#include "coral/envs/space.hpp"
#include "coral/training/train_options.hpp"

namespace coral::envs {
class env_batch;
class env_slice;
}  // namespace coral::envs

namespace coral::training {

/// The env index, in the run's seed stream, of the env a clip_recorder plays.
inline constexpr std::uint64_t clip_env_index = std::uint64_t{1} << 40;

/// Records clips of a run's policy; see the file comment.
class clip_recorder {
 public:
  struct options {
    std::filesystem::path dir;       ///< where clips go (created if missing)
    std::string env;                 ///< the run's env
    envs::config_args env_args;      ///< and its args
    std::uint64_t seed = 0;          ///< the run's seed
    std::size_t max_steps = max_clip_steps;  ///< the most frames in a clip
    int fps = 30;                    ///< frames per second of the clips
  };
  /// Makes the policy clips are played with, for one row of these spaces,
  /// loading no weights (request() hands them over). Called once, in the
  /// constructor.
  using policy_factory =
      std::function<std::unique_ptr<actors::policy>(const envs::space& observation, const envs::space& action)>;
  /// Takes one line of text, without its newline.
  using line_sink = std::function<void(const std::string&)>;

  /// How many requests came to what.
  struct counts {
    std::uint64_t written = 0;  ///< clips written
    std::uint64_t skipped = 0;  ///< requests dropped: a clip was being recorded or waited
    std::uint64_t failed = 0;   ///< clips that could not be written (each a warning)
  };

  /// Creates `o.dir`, builds the env and the policy, and starts the thread.
  /// Throws what the registry, `make_policy` or the filesystem throw
  /// (config_error for an env it refuses; coral::error when the directory
  /// cannot be made).
  clip_recorder(options o, const policy_factory& make_policy, line_sink say, line_sink warn);
  /// abandon() if neither finish() nor abandon() ran.
  ~clip_recorder();
  clip_recorder(const clip_recorder&) = delete;
  clip_recorder& operator=(const clip_recorder&) = delete;

  /// Asks for a clip named by `updates` played with `weights` (what the
  /// learner published, as policy::load_weights() takes it). Never waits
  /// for a clip. True when taken; false when skipped (busy) or stopped.
  bool request(std::uint64_t updates, std::shared_ptr<const std::vector<float>> weights);
  /// Writes the clip asked for, if any, then stops and joins; see the file comment.
  void finish();
  /// Tells the thread to stop at the next frame, dropping what is not
  /// written, and returns without waiting; see the file comment.
  void cancel() noexcept;
  /// cancel(), then waits for the thread to end.
  void abandon() noexcept;
  /// What the requests so far came to.
  [[nodiscard]] counts counted() const;

  /// The file of the clip named by `updates` in `dir`.
  [[nodiscard]] static std::filesystem::path clip_path(const std::filesystem::path& dir, std::uint64_t updates);

 private:
  struct order {
    std::uint64_t updates = 0;
    std::shared_ptr<const std::vector<float>> weights;
  };
  void loop();
  /// Records one clip: the line that says it was written, or nothing when
  /// cancelled. Throws on failure.
  std::optional<std::string> record(const order& o);
  /// Stops taking requests; `drop`: cancels what is not written.
  void stop_taking(bool drop) noexcept;
  void join() noexcept;

  options options_;
  line_sink say_;
  line_sink warn_;
  std::unique_ptr<envs::env_batch> batch_;  ///< one row (the recorder's thread only, once started)
  std::unique_ptr<envs::env_slice> slice_;
  std::unique_ptr<actors::policy> policy_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<order> waiting_;  ///< under mutex_
  bool busy_ = false;             ///< a clip is being recorded (under mutex_)
  bool finishing_ = false;        ///< finish(): no more requests (under mutex_)
  bool dropping_ = false;         ///< cancel(): drop everything (under mutex_; also in drop_)
  std::atomic<bool> drop_{false}; ///< read by the recorder between frames
  counts counts_;                 ///< under mutex_
  std::thread thread_;
};

/// Whether env `env` with `args` renders: built with `seed`, reset, asked
/// for a frame, on a thread of its own at the recorder's priority (a
/// renderer's threads started by a process's first frame, such as Mesa's
/// llvmpipe rasterizer threads, keep the priority of the thread that
/// started them and serve every later frame). What `--video-every` checks
/// before a run. Throws what the registry and the env throw (an env it
/// refuses, a renderer that cannot start).
[[nodiscard]] bool env_renders(const std::string& env, const envs::config_args& args, std::uint64_t seed);

}  // namespace coral::training
