#include "coral/core/runtime.hpp"

#include <asio/bind_cancellation_slot.hpp>
#include <asio/co_spawn.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <asio/system_error.hpp>

#include "coral/core/error.hpp"
#include "coral/core/handler_allocator.hpp"
#include "coral/core/interrupts.hpp"
#include "coral/core/logging.hpp"

namespace coral {
namespace {

bool is_operation_aborted(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const asio::system_error& se) {
    return se.code() == asio::error::operation_aborted;
  } catch (...) {
    return false;
  }
}

/// The executor actors get: the pool's, allocating handler blocks from the
/// shared handler_block_pool rather than the heap.
actor_io_executor with_handler_allocator(asio::io_context::executor_type ex) {
  return asio::require(ex, asio::execution::allocator(handler_allocator<void>{}));
}

std::string describe(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

runtime::runtime(runtime_options options) : options_(options) {}

runtime::~runtime() {
  for (auto& [name, pool] : pools_) {
    pool->stop();
    pool->join();
  }
}

asio::any_io_executor runtime::pool(const std::string& name, std::size_t threads, bool pin,
                                    std::size_t first_core) {
  return pool(pool_options{.name = name, .threads = threads, .pin = pin, .first_core = first_core});
}

asio::any_io_executor runtime::pool(pool_options options) {
  if (options.threads == 0) throw config_error(fmt::format(fmt::runtime(errors::zero_threads), options.name));
  if (options_.mode == executor_mode::single) return with_handler_allocator(control_.get_executor());
  std::lock_guard lock(mutex_);
  auto it = pools_.find(options.name);
  if (it == pools_.end()) {
    auto name = options.name;
    auto p = std::make_unique<thread_pool>(std::move(options));
    if (ran_) p->start();
    it = pools_.emplace(std::move(name), std::move(p)).first;
  }
  return with_handler_allocator(it->second->get_executor());
}

runtime::actor_record* runtime::add_actor(std::string name, asio::any_io_executor executor, bool daemon,
                                          actor_waits waits) {
  std::lock_guard lock(mutex_);
  // A set, not a scan of actors_: a run may spawn a hundred thousand env groups.
  if (!names_.insert(name).second) throw usage_error(fmt::format(fmt::runtime(errors::duplicate_actor), name));
  // A pool of several threads could run two handlers of one coroutine at
  // once (the coroutine and a cancellation emit, or two operations of an
  // awaitable operator): give the actor a strand, unless it waits on
  // channels only (then it has one handler queued at most, and is sent no
  // emit).
  for (const auto& [pool_name, pool] : pools_) {
    if (waits == actor_waits::anything && &asio::query(executor, asio::execution::context) == &pool->context() &&
        pool->options().threads > 1) {
      // Over the concrete executor, not the type-erased one: actor_strand is
      // what channels resume without allocating (channels/detail/waiter.hpp).
      executor = asio::make_strand(with_handler_allocator(pool->get_executor()));
      break;
    }
  }
  actors_.push_back(std::make_unique<actor_record>());
  auto* actor = actors_.back().get();
  actor->name = std::move(name);
  actor->executor = std::move(executor);
  actor->daemon = daemon;
  actor->channels_only = waits == actor_waits::channels_only;
  ++(daemon ? daemons_running_ : running_);
  return actor;
}

void runtime::spawn_daemon(std::string name, asio::any_io_executor executor, asio::awaitable<void> body) {
  auto* actor = add_actor(std::move(name), std::move(executor), true);
  asio::co_spawn(actor->executor, std::move(body), completion(actor));
  after_spawn(actor);
}

void runtime::spawn(std::string name, asio::any_io_executor executor, asio::awaitable<void> body,
                    actor_waits waits) {
  auto* actor = add_actor(std::move(name), std::move(executor), false, waits);
  start(actor, std::move(body));
  after_spawn(actor);
}

void runtime::after_spawn(actor_record* actor) {
  if (stop_requested()) post_cancel(actor);
}

void runtime::post_cancel(actor_record* actor) {
  if (actor->channels_only) return;
  asio::post(actor->executor, [actor] {
    if (!actor->done.load()) actor->cancel.emit(asio::cancellation_type::terminal);
  });
}

void runtime::on_stop(std::function<void()> fn) {
  {
    std::lock_guard lock(mutex_);
    if (!stop_began_) {
      stop_callbacks_.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

void runtime::request_stop() noexcept {
  if (stop_requested_.exchange(true, std::memory_order_acq_rel)) return;
  asio::post(control_, [this] { begin_stop(); });
}

void runtime::on_actor_done(actor_record& actor, std::exception_ptr error) {
  // Runs on the actor's own executor.
  actor.done.store(true);
  bool failed = false;
  bool dismissed = false;
  if (actor.daemon) {
    std::lock_guard lock(mutex_);
    dismissed = daemons_cancelled_;
  }
  if (error && !((stop_requested() || dismissed) && is_operation_aborted(error))) {
    auto what = describe(error);
    std::lock_guard lock(mutex_);
    if (failed_actor_.empty()) {
      failed_actor_ = actor.name;
      failure_what_ = what;
      failed = true;
    }
  }
  if (failed) {
    log::get("runtime")->error(fmt::runtime(errors::actor_failed), actor.name, describe(error));
    request_stop();
  }
  const bool daemon = actor.daemon;
  asio::post(control_, [this, daemon] {
    {
      std::lock_guard lock(mutex_);
      --(daemon ? daemons_running_ : running_);
    }
    finish_if_done();
  });
}

void runtime::begin_stop() {
  // Runs on the control context.
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(mutex_);
    stop_began_ = true;
    callbacks.swap(stop_callbacks_);
  }
  for (auto& fn : callbacks) fn();
  std::lock_guard lock(mutex_);
  for (auto& actor : actors_) post_cancel(actor.get());
}

void runtime::finish_if_done() {
  // Runs on the control context.
  std::lock_guard lock(mutex_);
  if (running_ != 0) return;
  if (daemons_running_ == 0) {
    control_.stop();
    return;
  }
  if (daemons_cancelled_) return;
  daemons_cancelled_ = true;  // every other actor is done: dismiss the daemons
  for (auto& actor : actors_) {
    if (actor->daemon) post_cancel(actor.get());
  }
}

void runtime::run() {
  {
    std::lock_guard lock(mutex_);
    if (ran_) throw usage_error(std::string(errors::runtime_already_ran));
  }
  auto work = asio::make_work_guard(control_);

  // Signals are caught from before the first actor can run.
  std::optional<interrupt_scope> signals;
  if (options_.handle_signals) {
    auto stop = [this] {
      log::get("runtime")->info("interrupted: stopping (a second signal ends the process at once)");
      request_stop();
    };
    signals.emplace(stop);
    if (interrupted()) stop();  // came under an enclosing scope, before this run
  }
  {
    std::lock_guard lock(mutex_);
    ran_ = true;
    for (auto& [name, pool] : pools_) pool->start();
  }

  // The watchdog: once a stop began, actors get stop_deadline to finish.
  asio::steady_timer deadline(control_);
  bool timed_out = false;
  std::function<void(const asio::error_code&)> on_deadline = [&](const asio::error_code& ec) {
    if (ec) return;
    if (options_.keep_waiting && options_.keep_waiting()) {
      deadline.expires_after(options_.stop_deadline);
      deadline.async_wait(on_deadline);
      return;
    }
    timed_out = true;
    if (options_.on_stop_timeout) options_.on_stop_timeout(stop_timeout_text());
    control_.stop();
  };
  on_stop([&] {
    deadline.expires_after(options_.stop_deadline);
    deadline.async_wait(on_deadline);
  });

  finish_if_done();
  control_.run();

  signals.reset();
  const auto stuck = stuck_actors();
  for (auto& [name, pool] : pools_) {
    pool->stop();
    pool->join();
  }
  // Handlers still queued (an abandoned actor's frame, say) are destroyed
  // with their io_context, after every thread has been joined.
  deadline.cancel();

  std::lock_guard lock(mutex_);
  if (!failed_actor_.empty()) throw actor_failed(failed_actor_, failure_what_);
  if (timed_out && !stuck.empty()) throw stop_timeout(stop_timeout_text(stuck));
}

bool runtime::finished(std::string_view name) const {
  std::lock_guard lock(mutex_);
  for (const auto& a : actors_) {
    if (a->name == name) return a->done.load();
  }
  return false;
}

std::vector<std::string> runtime::actor_names() const {
  std::vector<std::string> names;
  std::lock_guard lock(mutex_);
  for (const auto& a : actors_) names.push_back(a->name);
  return names;
}

std::string runtime::stuck_actors() const {
  std::string names;
  std::lock_guard lock(mutex_);
  for (const auto& a : actors_) {
    if (!a->done.load()) names += (names.empty() ? "" : ", ") + a->name;
  }
  return names;
}

std::string runtime::stop_timeout_text(std::string names) const {
  if (names.empty()) names = stuck_actors();
  return fmt::format(fmt::runtime(errors::stop_timeout), options_.stop_deadline.count(), names);
}

}  // namespace coral
