#include "coral/training/http_server.hpp"

#include <array>
#include <exception>

#include <asio/buffer.hpp>
#include <asio/co_spawn.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/ip/address.hpp>
#include <asio/post.hpp>
#include <asio/read_until.hpp>
#include <asio/redirect_error.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <fmt/format.h>
#include <pthread.h>

#include "coral/core/error.hpp"
#include "coral/training/errors.hpp"

namespace coral::training {
namespace {

using asio::ip::tcp;

std::string_view reason_of(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    default: return "Unknown";
  }
}

http_response plain(int status, std::string body) {
  http_response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

/// The endpoint `o` names; config_error when its address is not one.
tcp::endpoint endpoint_of(const http_server_options& o) {
  std::error_code ec;
  const auto address = asio::ip::make_address(o.bind, ec);
  if (ec) throw config_error(fmt::format(fmt::runtime(errors::dashboard_bad_bind), o.bind));
  return {address, o.port};
}

/// Opens, binds and listens on `o`'s endpoint; config_error naming the port.
void listen_on(tcp::acceptor& acceptor, const http_server_options& o) {
  const auto endpoint = endpoint_of(o);
  std::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  // Lets a fixed port be taken again at once after a run that served on it
  // (its connections in TIME_WAIT); on Linux a port another socket listens
  // on still refuses the bind.
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) return;
  std::error_code ignored;
  acceptor.close(ignored);
  if (ec == asio::error::address_in_use) {
    throw config_error(fmt::format(fmt::runtime(errors::dashboard_port_in_use), o.port, o.bind));
  }
  throw config_error(fmt::format(fmt::runtime(errors::dashboard_cannot_listen), o.port, o.bind, ec.message()));
}

/// The response to request `head` (its request line and headers), or
/// nothing when the handler should answer for that path.
struct parsed_request {
  std::optional<http_response> refusal;
  std::string path;
};

parsed_request parse(std::string_view head) {
  const auto line_end = head.find("\r\n");
  const auto line = head.substr(0, line_end);
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || !line.substr(sp2 + 1).starts_with("HTTP/")) {
    return {plain(400, "malformed request line\n"), {}};
  }
  const auto method = line.substr(0, sp1);
  auto target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (method != "GET") {
    auto r = plain(405, "read-only: GET only\n");
    return {std::move(r), {}};
  }
  if (target.empty() || target.front() != '/') return {plain(400, "the target must be a path\n"), {}};
  target = target.substr(0, target.find_first_of("?#"));
  return {std::nullopt, std::string(target)};
}

}  // namespace

void http_server::check(const http_server_options& options) {
  if (options.port == 0) {
    (void)endpoint_of(options);
    return;
  }
  asio::io_context io;
  tcp::acceptor probe(io);
  listen_on(probe, options);
}

http_server::http_server(http_server_options options, http_handler handler)
    : options_(std::move(options)), handler_(std::move(handler)), acceptor_(io_) {
  listen_on(acceptor_, options_);
  port_ = acceptor_.local_endpoint().port();
}

http_server::~http_server() { stop(); }

void http_server::every_period(std::chrono::nanoseconds period, std::function<void()> fn) {
  if (started_) throw usage_error("http_server::every_period() after start()");
  periodic_.push_back({period, std::move(fn), std::make_unique<asio::steady_timer>(io_)});
}

void http_server::start() {
  if (started_) throw usage_error("http_server::start() called twice");
  started_ = true;
  auto swallow = [](std::exception_ptr) {};  // each loop ends by itself at a stop
  asio::co_spawn(io_, accept_loop(), swallow);
  for (auto& p : periodic_) asio::co_spawn(io_, tick(*p.timer, p.period, p.fn), swallow);
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "coral-dashboard");  // in top -H, gdb and /proc: what the live view costs
    io_.run();
  });
}

void http_server::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (!started_) {
    std::error_code ignored;
    acceptor_.close(ignored);
    return;
  }
  asio::post(io_, [this] { close_all(); });
  thread_.join();
}

std::size_t http_server::open_connections() const noexcept { return open_count_.load(std::memory_order_relaxed); }

void http_server::close_all() {
  stopping_ = true;
  std::error_code ignored;
  acceptor_.close(ignored);
  for (auto& [id, socket] : open_) socket->close(ignored);
  for (auto& p : periodic_) p.timer->cancel();
}

asio::awaitable<void> http_server::tick(asio::steady_timer& timer, std::chrono::nanoseconds period,
                                        std::function<void()> fn) {
  auto next = std::chrono::steady_clock::now();
  while (!stopping_) {
    next += period;
    timer.expires_at(next);
    std::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec || stopping_) co_return;
    fn();
  }
}

asio::awaitable<void> http_server::accept_loop() {
  for (;;) {
    std::error_code ec;
    tcp::socket socket = co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (stopping_ || !acceptor_.is_open()) co_return;
    if (ec) continue;  // a connection reset before we took it, out of descriptors: keep listening
    if (open_.size() >= options_.max_connections) {
      socket.close(ec);
      continue;
    }
    asio::co_spawn(io_, serve(std::move(socket)), [](std::exception_ptr) {});
  }
}

asio::awaitable<void> http_server::serve(tcp::socket socket) {
  using namespace asio::experimental::awaitable_operators;
  const auto id = next_connection_++;
  open_.emplace(id, &socket);
  open_count_.store(open_.size(), std::memory_order_relaxed);
  struct forget {
    http_server* server;
    std::uint64_t id;
    ~forget() {
      server->open_.erase(id);
      server->open_count_.store(server->open_.size(), std::memory_order_relaxed);
    }
  } on_exit{this, id};

  asio::steady_timer deadline(io_);
  deadline.expires_after(options_.client_deadline);
  std::string head;
  std::error_code ec;
  auto read = asio::async_read_until(socket, asio::dynamic_buffer(head, options_.max_request_bytes), "\r\n\r\n",
                                     asio::redirect_error(asio::use_awaitable, ec));
  const auto got = co_await (std::move(read) || deadline.async_wait(asio::use_awaitable));
  if (got.index() == 1 || stopping_) co_return;  // too slow, or the server stops
  http_response response;
  if (ec == asio::error::not_found) {
    response = plain(431, "request too large\n");
  } else if (ec) {
    co_return;  // the client went away
  } else {
    auto request = parse(std::string_view(head).substr(0, std::get<0>(got)));
    if (request.refusal) {
      response = std::move(*request.refusal);
    } else {
      try {
        response = handler_(request.path);
      } catch (const std::exception& e) {
        response = plain(500, std::string(e.what()) + "\n");
      }
    }
  }
  const std::string_view body = response.static_body.data() != nullptr ? response.static_body
                                                                        : std::string_view(response.body);
  const std::string header = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n{}Connection: close\r\n\r\n",
      response.status, reason_of(response.status), response.content_type, body.size(),
      response.status == 405 ? "Allow: GET\r\n" : "");
  const std::array buffers{asio::buffer(header), asio::buffer(body.data(), body.size())};
  auto write = asio::async_write(socket, buffers, asio::redirect_error(asio::use_awaitable, ec));
  const auto wrote = co_await (std::move(write) || deadline.async_wait(asio::use_awaitable));
  if (wrote.index() == 1 || ec || stopping_) co_return;
  socket.shutdown(tcp::socket::shutdown_send, ec);
}

}  // namespace coral::training
