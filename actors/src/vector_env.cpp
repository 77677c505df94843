#include "coral/actors/vector_env.hpp"

#include <algorithm>

#include <asio/error.hpp>
#include <asio/system_error.hpp>
#include <fmt/format.h>

#include "coral/actors/errors.hpp"
#include "coral/actors/policy.hpp"
#include "coral/actors/sampler.hpp"
#include "coral/core/error.hpp"
#include "coral/core/errors.hpp"
#include "coral/core/runtime.hpp"
#include "coral/envs/registry.hpp"

namespace coral::actors {
namespace {
using clock = std::chrono::steady_clock;

/// The hand-off's states.
namespace phase {
constexpr std::uint32_t idle = 0;      ///< the actors are stepping or forming a batch
constexpr std::uint32_t offered = 1;   ///< the batcher offers a batch and waits
constexpr std::uint32_t held = 2;      ///< the caller has it
constexpr std::uint32_t returned = 3;  ///< the caller sent it back; the batcher goes on
}  // namespace phase

}  // namespace

autoreset_mode parse_autoreset_mode(std::string_view text, std::string_view what) {
  if (text == "next_step") return autoreset_mode::next_step;
  if (text == "same_step") return autoreset_mode::same_step;
  if (text == "disabled") return autoreset_mode::disabled;
  throw config_error(
      fmt::format(fmt::runtime(coral::errors::bad_value), what, text, "next_step, same_step, disabled"));
}

/// How long one side of the hand-off polls before it parks: at least the
/// configured spin, and up to twice the wait it typically sees (capped at
/// adaptive_cap), so that a caller whose policy takes 300 us between steps
/// does not pay a thread wake-up (about 35 us here) on every step. Past the
/// configured spin the poller yields between polls, so a busy core is given
/// to whatever else is runnable. One per side; used by its thread only.
class adaptive_spin {
 public:
  static constexpr std::chrono::nanoseconds adaptive_cap = std::chrono::milliseconds(2);

  explicit adaptive_spin(std::chrono::nanoseconds base) : base_(base) {}
  /// The polling budget for the next wait.
  [[nodiscard]] std::chrono::nanoseconds budget() const noexcept {
    if (base_.count() == 0) return base_;  // no spinning asked for: none
    return std::clamp(2 * typical_, base_, std::max(base_, adaptive_cap));
  }
  [[nodiscard]] std::chrono::nanoseconds base() const noexcept { return base_; }
  /// A wait that took `waited`.
  void record(std::chrono::nanoseconds waited) noexcept { typical_ = (7 * typical_ + waited) / 8; }

 private:
  std::chrono::nanoseconds base_;
  std::chrono::nanoseconds typical_{0};
};

/// The policy the batcher calls: it offers each batch to the caller and
/// waits for it to come back. State changes are seq_cst stores followed by
/// a look at the number of parked waiters (and waits register, then look at
/// the state), so neither side can miss the other's change.
class vector_env::handoff final : public policy {
 public:
  handoff(std::size_t rows, std::chrono::microseconds spin) : batcher_spin_(spin), caller_spin_(spin) {
    ids_.reserve(rows);
  }

  void act(const policy_rows& rows) override {
    // Once a stop was requested (an env failed, say), no batch is offered:
    // the stop reaches this batcher through the runtime's control thread,
    // which may not get a core for a while, and meanwhile the envs that did
    // not fail would go on filling batches for the caller. On one thread
    // the control handler even waits behind this batcher. The caller's
    // take() then waits for the run's end and receive() reports it.
    if (run_ != nullptr && run_->stop_requested()) throw asio::system_error(asio::error::operation_aborted);
    ids_.clear();
    for (const auto& r : rows.ranges) {
      for (std::size_t i = 0; i < r.count; ++i) ids_.push_back(static_cast<std::uint32_t>(r.first + i));
    }
    set(phase::offered);
    wait_for([this] { return state_.load() == phase::returned || stopping_.load(); }, clock::time_point::max(),
             batcher_spin_);
    if (state_.load() != phase::returned) {
      // Stopping (close(), or another actor failed) with the batch still
      // out: the groups must not step rows the caller may be writing. The
      // runtime counts this as a clean end of the batcher after a stop.
      throw asio::system_error(asio::error::operation_aborted);
    }
    state_.store(phase::idle);
  }
  void load_weights(std::span<const float>) override {}

  /// Caller: waits until `deadline` for an offer; true if one came (it is
  /// then held). Two callers never both take one offer.
  bool take(clock::time_point deadline) {
    for (;;) {
      const bool got =
          wait_for([this] { return state_.load() == phase::offered || ended_.load(); }, deadline, caller_spin_);
      if (!got) return false;
      auto expected = phase::offered;
      if (state_.compare_exchange_strong(expected, phase::held)) return true;
      if (ended_.load()) return false;
    }
  }
  void give_back() { set(phase::returned); }

  /// Runner: the run is over (by `failure`, or null for a clean end).
  void end(std::exception_ptr failure) {
    {
      std::lock_guard lock(mutex_);
      failure_ = std::move(failure);
    }
    ended_.store(true);
    wake();
  }
  /// The runtime's stop deadline passed with actors still running: close()
  /// stops waiting for the run.
  void abandon() {
    abandoned_.store(true);
    wake();
  }
  /// close(): waits until the run ended (true) or was abandoned or
  /// `deadline` passed (false).
  bool wait_end(clock::time_point deadline) {
    adaptive_spin no_spin{std::chrono::nanoseconds(0)};
    wait_for([this] { return ended_.load() || abandoned_.load(); }, deadline, no_spin);
    return ended_.load();
  }
  /// close(): the batcher must not wait for the caller any more.
  void stop() {
    stopping_.store(true);
    wake();
  }
  /// start(): the run this batcher serves (act() runs only inside it).
  void serve(const runtime* run) noexcept { run_ = run; }
  void reset() {
    state_.store(phase::idle);
    stopping_.store(false);
    ended_.store(false);
    std::lock_guard lock(mutex_);
    failure_ = nullptr;
  }

  [[nodiscard]] bool ended() const noexcept { return ended_.load(); }
  [[nodiscard]] std::exception_ptr failure() {
    std::lock_guard lock(mutex_);
    return failure_;
  }
  [[nodiscard]] std::span<const std::uint32_t> ids() const noexcept { return ids_; }

 private:
  void set(std::uint32_t s) {
    state_.store(s);
    wake();
  }
  void wake() {
    if (parked_.load() == 0) return;
    std::lock_guard lock(mutex_);
    cv_.notify_all();
  }
  /// Polls `ready` for `spin`'s budget, then parks until it holds or `deadline`.
  template <class Ready>
  bool wait_for(Ready ready, clock::time_point deadline, adaptive_spin& spin) {
    if (ready()) return true;
    const auto started = clock::now();
    const auto yield_from = started + spin.base();
    const auto spin_until = std::min(deadline, started + spin.budget());
    for (auto now = started; now < spin_until; now = clock::now()) {
      for (int i = 0; i < 64; ++i) {
        if (ready()) {
          spin.record(clock::now() - started);
          return true;
        }
      }
      if (now >= yield_from) std::this_thread::yield();
    }
    std::unique_lock lock(mutex_);
    parked_.fetch_add(1);
    bool ok = true;
    if (deadline == clock::time_point::max()) {
      cv_.wait(lock, ready);
    } else {
      ok = cv_.wait_until(lock, deadline, ready);
    }
    parked_.fetch_sub(1);
    if (ok) spin.record(clock::now() - started);
    return ok;
  }

  const runtime* run_ = nullptr;  ///< set by start() before the run, read by act() inside it
  adaptive_spin batcher_spin_;  ///< the batcher's wait for the caller (its thread only)
  adaptive_spin caller_spin_;   ///< the caller's wait for a batch (its thread only)
  std::vector<std::uint32_t> ids_;  ///< written by the batcher before `offered`, read by the caller while held
  std::atomic<std::uint32_t> state_{phase::idle};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> ended_{false};
  std::atomic<bool> abandoned_{false};
  std::atomic<int> parked_{0};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::exception_ptr failure_;  ///< under mutex_
};

vector_env::vector_env(sampler_options options, autoreset_mode mode)
    : options_(std::move(options)), mode_(mode) {
  options_.next_step_autoreset = mode_ == autoreset_mode::next_step;
  options_.autoreset = mode_ != autoreset_mode::disabled;
  // The caller holds the batcher inside act(): a thread of its own would only add a hop.
  options_.inference_thread = false;
  // Auto settings once, here: every later build (a reset with another seed)
  // keeps the same wiring and spin, and the env is not probed again.
  options_ = resolve_auto(std::move(options_));
  build(options_.seed);
  agents_ = sampler_->first_env().max_agents();
  handoff_ = std::make_shared<handoff>(sampler_->rows(), options_.spin);
}

vector_env::~vector_env() {
  close();
  // Each owns what it still uses (see start()).
  for (auto& t : abandoned_) t.detach();
}

void vector_env::build(std::uint64_t seed) {
  options_.seed = seed;
  sampler_.reset();  // its envs go before the new ones are made
  sampler_ = std::make_shared<sampler>(options_, batch_);
  if (batch_ == nullptr) batch_ = sampler_->shared_batch();
}

void vector_env::start(std::optional<std::uint64_t> seed) {
  stop_run(true);
  std::lock_guard lock(control_);
  // An abandoned run's env writes into these rows when its step ends.
  for (auto& t : abandoned_) t.join();
  abandoned_.clear();
  // A sampler runs once: after a run, or for another seed, the envs are built anew.
  if (spawned_ || (seed && *seed != options_.seed)) build(seed.value_or(options_.seed));
  spawned_ = true;
  handoff_->reset();
  auto h = handoff_.get();
  runtime_ = std::make_shared<runtime>(
      runtime_options{.mode = options_.executor, .on_stop_timeout = [h](const std::string&) { h->abandon(); }});
  handoff_->serve(runtime_.get());
  // Any stop (a failed env included) releases a batcher waiting for the caller.
  runtime_->on_stop([h] { h->stop(); });
  sampler_->spawn(*runtime_, *handoff_, 0);
  // The runner holds the run, its envs and the hand-off, so that close() can
  // leave it to finish a long env step: the run goes first (its actors use
  // the envs and the hand-off), then the envs.
  runner_ = std::thread([run = runtime_, envs = sampler_, handoff = handoff_]() mutable {
    std::exception_ptr failure;
    try {
      run->run();
    } catch (...) {
      failure = std::current_exception();
    }
    handoff->end(failure);
    run.reset();
    envs.reset();
  });
  running_.store(true);
  closed_.store(false);
}

std::optional<std::span<const std::uint32_t>> vector_env::receive(std::chrono::nanoseconds timeout) {
  if (!running()) throw usage_error(std::string(closed() ? errors::vector_env_closed : errors::vector_env_not_running));
  if (holding_.load()) throw usage_error(std::string(errors::vector_env_holding));
  const auto deadline = clock::now() + std::chrono::duration_cast<clock::duration>(timeout);
  if (handoff_->take(deadline)) {
    holding_.store(true);
    return handoff_->ids();
  }
  if (handoff_->ended()) {
    if (auto failure = handoff_->failure()) std::rethrow_exception(failure);
    // Stopped without a failure: by close(), from another thread.
    throw usage_error(std::string(closed() ? errors::vector_env_closed : errors::vector_env_not_running));
  }
  return std::nullopt;
}

void vector_env::send() {
  if (!holding_.load()) {
    throw usage_error(std::string(closed() ? errors::vector_env_closed : errors::vector_env_not_holding));
  }
  // The caller owns these rows until give_back(): reading them here races with nothing.
  if (mode_ == autoreset_mode::disabled) check_no_step_after_end();
  if (!holding_.exchange(false)) {
    throw usage_error(std::string(closed() ? errors::vector_env_closed : errors::vector_env_not_holding));
  }
  handoff_->give_back();
}

void vector_env::check_no_step_after_end() const {
  const auto& b = *batch_;
  const auto commands = b.commands();
  const auto terminated = b.terminated();
  const auto truncated = b.truncated();
  const auto active = b.active();
  // A batch holds every row of its envs: each env's rows start at a multiple of agents_.
  for (const auto first : handoff_->ids()) {
    if (first % agents_ != 0) continue;
    // An env's episode is over when no row is both in play and not ended (env.hpp).
    bool playing = false;
    for (std::size_t r = first; r < first + agents_ && !playing; ++r) {
      playing = active[r] != 0 && (terminated[r] | truncated[r]) == 0;
    }
    if (!playing && (commands[first] & (envs::row_command::reset | envs::row_command::hold)) == 0) {
      throw usage_error(fmt::format(fmt::runtime(errors::vector_env_step_after_end), first / agents_));
    }
  }
}

std::span<const std::uint32_t> vector_env::held() const noexcept {
  return holding_.load() ? handoff_->ids() : std::span<const std::uint32_t>{};
}

bool vector_env::render(std::uint32_t env_id, envs::rgb_frame& frame) const {
  const auto ids = held();
  const auto row = static_cast<std::uint64_t>(env_id) * agents_;
  if (!std::binary_search(ids.begin(), ids.end(), row)) {
    throw usage_error(fmt::format(fmt::runtime(errors::vector_env_render_not_held), env_id));
  }
  for (const auto& group : sampler_->groups()) {
    const row_range rows = group->rows();
    if (row >= rows.first && row - rows.first < rows.count) {
      return group->slice().at((row - rows.first) / agents_).render(frame);
    }
  }
  throw usage_error(fmt::format(fmt::runtime(errors::vector_env_render_not_held), env_id));
}

void vector_env::close() noexcept {
  // Before the batch in hand is dropped, so that a send() on another thread
  // that finds none sees why.
  closed_.store(true);
  stop_run(false);
}

void vector_env::stop_run(bool wait_for_envs) noexcept {
  std::lock_guard lock(control_);
  holding_.store(false);
  if (runtime_ == nullptr) return;
  running_.store(false);
  // Stop first, then release a batcher waiting for the caller: released
  // before the stop began, its abort would count as a failure. The stop
  // callback (start()) would release it too, but with executor_mode::single
  // that callback runs on the very thread the batcher blocks.
  runtime_->request_stop();
  handoff_->stop();
  // The runtime calls abandon() at its stop deadline; the grace covers an
  // executor whose watchdog shares the stuck thread (executor_mode::single).
  const auto grace = runtime_options{}.stop_deadline + std::chrono::seconds(1);
  if (wait_for_envs || handoff_->wait_end(clock::now() + grace)) {
    if (runner_.joinable()) runner_.join();
  } else {
    abandoned_.push_back(std::move(runner_));
    // The abandoned run keeps these; a later start() needs its own.
    handoff_ = std::make_shared<handoff>(sampler_->rows(), options_.spin);
    spawned_ = true;
  }
  // A run that failed keeps its failure for the next receive() only while
  // running; after close() there is nothing to receive.
  runtime_.reset();
}

std::size_t vector_env::batch_size() const noexcept { return sampler_->wires().batch_size; }
const envs::space& vector_env::observation_space() const noexcept { return sampler_->observation_space(); }
const envs::space& vector_env::action_space() const noexcept { return sampler_->action_space(); }
envs::env_batch& vector_env::batch() noexcept { return *batch_; }
std::uint64_t vector_env::env_steps() const noexcept {
  return running() ? sampler_->stats().env_steps : 0;
}

}  // namespace coral::actors
