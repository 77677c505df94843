#pragma once
/// \file
/// The live view (`--dashboard`): a read-only page of a running pipeline,
/// its state as JSON and its metrics for Prometheus, served over HTTP from
/// a thread of its own while the run goes on.
///
///     GET /            the page (its plotting library embedded: no network needed)
///     GET /state.json  live_view::state_json()
///     GET /metrics     live_view::prometheus()
///
/// Nothing served changes the run: the server only reads counters,
/// channel sizes and the runtime's actor list.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "coral/training/http_server.hpp"
#include "coral/training/live_view.hpp"
#include "coral/training/train_options.hpp"

namespace coral::training {

/// A live view's server.
///
/// Protocol: construct (binds and listens: a port in use or a bad address
/// throws config_error naming it, before the run starts), start() once the
/// run's actors are spawned and its graph is complete, stop() when the run
/// ended (also the destructor; before the runtime and the graph go away).
///
/// Thread safety: every member from the owner's thread. The view's probes
/// run on the server's thread (see live_source, actor_graph).
class dashboard {
 public:
  /// How often the busy probes are sampled, and how long a window is.
  static constexpr std::chrono::milliseconds sample_period{5};
  static constexpr std::chrono::milliseconds window_period{1000};

  explicit dashboard(const dashboard_options& options);
  dashboard(const dashboard&) = delete;
  dashboard& operator=(const dashboard&) = delete;
  ~dashboard();

  /// Refuses, before anything starts, what the constructor would refuse
  /// (an address that is not one; a port given that is in use) without
  /// keeping the port.
  static void check(const dashboard_options& options);

  /// The port it listens on.
  [[nodiscard]] std::uint16_t port() const noexcept { return server_->port(); }
  /// The page's address, for the run's progress output.
  [[nodiscard]] std::string url() const;

  /// Serves `source` until stop().
  void start(live_source source);
  /// Stops serving (clients connected see their connection end).
  void stop();

 private:
  http_response answer(std::string_view path) const;

  std::unique_ptr<live_view> view_;  // from start(); read on the server's thread
  std::unique_ptr<http_server> server_;
};

}  // namespace coral::training
