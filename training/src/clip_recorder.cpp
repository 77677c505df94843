#include "coral/training/clip_recorder.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <exception>
#include <system_error>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/core/json.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"
#include "coral/envs/rgb_frame.hpp"
#include "coral/training/errors.hpp"
#include "coral/training/video_writer.hpp"

namespace coral::training {
namespace fs = std::filesystem;

namespace {

// The recorder's thread runs at the lowest CPU priority; ffmpeg, spawned
// from it, inherits it, as do threads a renderer starts from it. A failure
// leaves the priority as it was: clips are then only less polite, not wrong.
void lower_this_thread(const char* name) noexcept {
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
  (void)::pthread_setname_np(::pthread_self(), name);
}

bool renders_now(const std::string& env, const envs::config_args& args, std::uint64_t seed) {
  std::vector<std::unique_ptr<envs::env>> one;
  one.push_back(envs::registry::global().make(env, args, seed, clip_env_index));
  envs::env_batch batch(1, one.front()->observation_space(), one.front()->action_space());
  envs::env_slice slice(batch, 0, std::move(one));
  slice.reset_all();
  envs::rgb_frame frame;
  return slice.at(0).render(frame);
}

}  // namespace

fs::path clip_recorder::clip_path(const fs::path& dir, std::uint64_t updates) {
  return dir / fmt::format("update-{:06}.mp4", updates);
}

clip_recorder::clip_recorder(options o, const policy_factory& make_policy, line_sink say, line_sink warn)
    : options_(std::move(o)), say_(std::move(say)), warn_(std::move(warn)) {
  std::error_code ec;
  fs::create_directories(options_.dir, ec);
  if (ec) throw error(fmt::format("clips: cannot make '{}': {}", options_.dir.string(), ec.message()));
  std::vector<std::unique_ptr<envs::env>> one;
  one.push_back(envs::registry::global().make(options_.env, options_.env_args, options_.seed, clip_env_index));
  batch_ = std::make_unique<envs::env_batch>(1, one.front()->observation_space(), one.front()->action_space());
  policy_ = make_policy(one.front()->observation_space(), one.front()->action_space());
  slice_ = std::make_unique<envs::env_slice>(*batch_, 0, std::move(one));
  thread_ = std::thread([this] { loop(); });
}

clip_recorder::~clip_recorder() { abandon(); }

bool clip_recorder::request(std::uint64_t updates, std::shared_ptr<const std::vector<float>> weights) {
  std::lock_guard lock(mutex_);
  if (finishing_ || dropping_) return false;
  if (busy_ || waiting_) {
    ++counts_.skipped;
    return false;
  }
  waiting_ = order{updates, std::move(weights)};
  wake_.notify_one();
  return true;
}

void clip_recorder::finish() {
  stop_taking(false);
  join();
}

void clip_recorder::cancel() noexcept { stop_taking(true); }

void clip_recorder::abandon() noexcept {
  stop_taking(true);
  join();
}

void clip_recorder::stop_taking(bool drop) noexcept {
  {
    std::lock_guard lock(mutex_);
    finishing_ = true;
    if (drop) {
      dropping_ = true;
      drop_.store(true, std::memory_order_relaxed);
    }
  }
  wake_.notify_all();
}

void clip_recorder::join() noexcept {
  if (thread_.joinable()) thread_.join();
}

clip_recorder::counts clip_recorder::counted() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

void clip_recorder::loop() {
  lower_this_thread("clip-recorder");
  for (;;) {
    order next;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return waiting_.has_value() || finishing_; });
      if (dropping_ || !waiting_) return;  // cancelled, or finishing with nothing asked for
      next = std::move(*waiting_);
      waiting_.reset();
      busy_ = true;
    }
    std::optional<std::string> said;
    std::optional<std::string> warning;
    try {
      said = record(next);
    } catch (const std::exception& e) {
      warning = fmt::format(fmt::runtime(errors::clip_not_written), clip_path(options_.dir, next.updates).string(),
                            e.what());
    }
    {
      std::lock_guard lock(mutex_);
      busy_ = false;
      if (said) ++counts_.written;
      if (warning) ++counts_.failed;
    }
    if (said) say_(*said);
    if (warning) warn_(*warning);
  }
}

std::optional<std::string> clip_recorder::record(const order& o) {
  const auto file = clip_path(options_.dir, o.updates);
  video_writer video(file, {.fps = options_.fps});
  auto& b = *batch_;
  policy_->load_weights(*o.weights);
  slice_->reset_all();
  b.terminated()[0] = 1;  // this observation starts an episode: the policy clears the row's state
  const actors::row_range row{0, 1};
  envs::rgb_frame frame;
  const envs::env& e = slice_->at(0);
  std::size_t steps = 0;
  double episode_return = 0;
  while (steps < options_.max_steps) {
    if (drop_.load(std::memory_order_relaxed)) return std::nullopt;  // the writer removes its partial file
    if (!e.render(frame)) throw error(fmt::format(fmt::runtime(errors::video_every_no_render), options_.env));
    video.write(frame);
    policy_->act(actors::policy_rows{.batch = b, .ranges = std::span(&row, 1), .log_probs = {}, .values = {}});
    slice_->step_all();
    ++steps;
    episode_return += b.rewards()[0];
    if (b.terminated()[0] != 0 || b.truncated()[0] != 0) break;
  }
  if (drop_.load(std::memory_order_relaxed)) return std::nullopt;
  video.finish();
  return fmt::format(fmt::runtime(errors::clip_written), file.string(), steps, json::number(episode_return));
}

bool env_renders(const std::string& env, const envs::config_args& args, std::uint64_t seed) {
  // On a thread at the recorder's priority: the first frame a process draws
  // may start the renderer's own threads, which then serve every later
  // frame (Mesa's llvmpipe rasterizer threads belong to the EGL display, one
  // per process), and they take the priority of the thread that starts them.
  bool renders = false;
  std::exception_ptr failure;
  std::thread([&] {
    lower_this_thread("clip-check");
    try {
      renders = renders_now(env, args, seed);
    } catch (...) {
      failure = std::current_exception();
    }
  }).join();
  if (failure) std::rethrow_exception(failure);
  return renders;
}

}  // namespace coral::training
