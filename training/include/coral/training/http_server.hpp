#pragma once
/// \file
/// A small read-only HTTP/1.1 server on Asio for the live view
/// (dashboard.hpp): GET only, one request per connection, on a thread of
/// its own, so that serving never runs on a run's executors.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

namespace coral::training {

/// What a handler answers to a GET.
struct http_response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  /// Served instead of `body` when set: static text (an embedded page) that
  /// outlives the server, sent without a copy.
  std::string_view static_body;
};

/// Answers a GET of `path` (the request target without its query). Called
/// on the server's thread, one call at a time.
using http_handler = std::function<http_response(std::string_view path)>;

/// Where and how a server listens.
struct http_server_options {
  /// An IPv4 or IPv6 address (not a host name): 127.0.0.1 keeps the page on
  /// this machine; anything else exposes it on purpose.
  std::string bind = "127.0.0.1";
  /// 0: any free port (port() says which).
  std::uint16_t port = 0;
  /// A request (line and headers) longer than this is answered 431 and closed.
  std::size_t max_request_bytes = 8192;
  /// Time a connection has for its request and our whole response; a
  /// client slower than this (sending or reading) is closed.
  std::chrono::milliseconds client_deadline{10'000};
  /// Connections served at once; more are closed at once.
  std::size_t max_connections = 32;
};

/// A GET-only HTTP/1.1 server. Every answer carries `Connection: close`.
/// Anything but GET is answered 405, a malformed request 400, a request
/// larger than max_request_bytes 431; none of them reaches the handler.
///
/// Protocol: construct (binds and listens: a port in use or an address that
/// is not one throws config_error naming it, before anything runs),
/// every_period() for periodic work, start(), then stop() (also the
/// destructor). Connections that arrive before start() wait in the
/// listen backlog.
///
/// Thread safety: construct, every_period(), start(), stop() and port() from
/// one thread (the owner). The handler and the periodic functions run on
/// the server's own thread, one at a time. stop() closes the listener and
/// every open connection (a client in the middle of a response sees the
/// connection end), waits for the server's thread to finish and returns; it
/// never waits on a client. Later calls of stop() do nothing.
class http_server {
 public:
  http_server(http_server_options options, http_handler handler);
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;
  ~http_server();

  /// Refuses what the constructor would refuse, without keeping the port:
  /// an unparseable address, or a port given (not 0) that is in use.
  /// Throws config_error (errors::dashboard_*).
  static void check(const http_server_options& options);

  /// The port it listens on (the one chosen when options.port was 0).
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  /// The address it listens on, as given.
  [[nodiscard]] const std::string& bind() const noexcept { return options_.bind; }

  /// Calls `fn` every `period` on the server's thread, from start() to stop().
  /// Before start() only.
  void every_period(std::chrono::nanoseconds period, std::function<void()> fn);

  /// Starts serving on the server's thread.
  void start();
  /// Stops serving (see the class comment).
  void stop();

  /// Connections open now (for tests; the server's thread keeps it).
  [[nodiscard]] std::size_t open_connections() const noexcept;

 private:
  asio::awaitable<void> accept_loop();
  asio::awaitable<void> serve(asio::ip::tcp::socket socket);
  asio::awaitable<void> tick(asio::steady_timer& timer, std::chrono::nanoseconds period, std::function<void()> fn);
  void close_all();

  http_server_options options_;
  http_handler handler_;
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  struct periodic {
    std::chrono::nanoseconds period;
    std::function<void()> fn;
    std::unique_ptr<asio::steady_timer> timer;
  };
  std::vector<periodic> periodic_;
  // The server's thread only: the connections open now, by number.
  std::map<std::uint64_t, asio::ip::tcp::socket*> open_;
  std::uint64_t next_connection_ = 0;
  std::atomic<std::size_t> open_count_{0};
  bool stopping_ = false;  // the server's thread only
  std::thread thread_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace coral::training
