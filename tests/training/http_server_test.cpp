#include "coral/training/http_server.hpp"

#include <atomic>
#include <cerrno>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/training/errors.hpp"
#include "../support/http_client.hpp"
#include "../support/refusal.hpp"
#include "../support/watchdog.hpp"

namespace coral::training {
namespace {

using test::http_get;
using test::tcp_client;

/// A body larger than any socket buffer: a client that stops reading
/// leaves the server in the middle of writing it.
const std::string& big_body() {
  static const std::string body(32 << 20, 'x');
  return body;
}

http_response answer_for_tests(std::string_view path) {
  http_response r;
  if (path == "/hello") {
    r.body = "hello\n";
  } else if (path == "/big") {
    r.static_body = big_body();
  } else if (path == "/throws") {
    throw std::runtime_error("the handler failed");
  } else {
    r.status = 404;
    r.body = "no\n";
  }
  return r;
}

http_server_options on_any_port() {
  http_server_options o;
  o.port = 0;
  return o;
}

}  // namespace

TEST_CASE("the http server answers GET with the handler's response and refuses what is not a GET",
          "[training][http_server]") {
  http_server server(on_any_port(), answer_for_tests);
  server.start();
  REQUIRE(server.port() != 0);

  auto ok = http_get(server.port(), "/hello?ignored=1");
  CHECK(ok.status == 200);
  CHECK(ok.body == "hello\n");
  CHECK(ok.head.find("Content-Length: 6\r\n") != std::string::npos);
  CHECK(ok.head.find("Connection: close") != std::string::npos);
  CHECK(http_get(server.port(), "/nothing").status == 404);
  CHECK(http_get(server.port(), "/throws").status == 500);

  tcp_client post(server.port());
  post.send("POST /hello HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  const auto refused = test::parse_reply(post.receive_all());
  CHECK(refused.status == 405);
  CHECK(refused.head.find("Allow: GET") != std::string::npos);

  tcp_client garbage(server.port());
  garbage.send("hello there\r\n\r\n");
  CHECK(test::parse_reply(garbage.receive_all()).status == 400);
  server.stop();
}

TEST_CASE("the http server answers a request larger than its limit with 431 and closes it",
          "[training][http_server]") {
  auto o = on_any_port();
  o.max_request_bytes = 1024;
  http_server server(o, answer_for_tests);
  server.start();
  tcp_client c(server.port());
  c.send("GET /hello HTTP/1.1\r\nX-Padding: " + std::string(4096, 'p') + "\r\n\r\n");
  CHECK(test::parse_reply(c.receive_all()).status == 431);
  CHECK(http_get(server.port(), "/hello").status == 200);  // and goes on serving
}

TEST_CASE("the http server closes a client too slow to send its request, and serves the others meanwhile",
          "[training][http_server]") {
  auto o = on_any_port();
  o.client_deadline = std::chrono::milliseconds(200);
  http_server server(o, answer_for_tests);
  server.start();
  tcp_client slow(server.port());
  slow.send("GET /hello HTTP/1.1\r\n");  // and never the rest
  CHECK(http_get(server.port(), "/hello").body == "hello\n");
  CHECK(slow.receive_all().empty());  // closed without an answer
}

TEST_CASE("a client that disconnects in the middle of a response leaves the server serving",
          "[training][http_server]") {
  http_server server(on_any_port(), answer_for_tests);
  server.start();
  {
    tcp_client c(server.port());
    c.send("GET /big HTTP/1.1\r\n\r\n");
    CHECK(!c.receive_some().empty());  // the response began
  }  // and the client is gone
  CHECK(http_get(server.port(), "/hello").body == "hello\n");
}

TEST_CASE("stop() ends the server with clients connected: one silent, one in the middle of a response",
          "[training][http_server]") {
  test::watchdog limit("stop() with clients connected", std::chrono::minutes(2));
  http_server server(on_any_port(), answer_for_tests);
  server.start();
  tcp_client silent(server.port());
  tcp_client reading(server.port());
  reading.send("GET /big HTTP/1.1\r\n\r\n");
  const auto first = reading.receive_some();  // the server is writing and the client stops reading
  CHECK(!first.empty());
  silent.send("GET /hel");
  server.stop();  // returns: it waits on no client
  CHECK(silent.receive_all().empty());
  const auto rest = reading.receive_all();  // the connection ends
  CHECK(first.size() + rest.size() < big_body().size());
  server.stop();  // again: nothing
}

TEST_CASE("the http server serves concurrent clients, each its own answer", "[training][http_server][stress]") {
  http_server server(on_any_port(), answer_for_tests);
  server.start();
  constexpr int clients = 8;
  constexpr int requests = 50;
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < requests; ++i) {
        try {
          const auto r = http_get(server.port(), "/hello");
          if (r.status == 200 && r.body == "hello\n") good.fetch_add(1);
        } catch (const std::exception&) {
          // counted as bad
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(good.load() == clients * requests);
}

TEST_CASE("the http server refuses a port in use and an address that is not one, naming them",
          "[training][http_server]") {
  http_server first(on_any_port(), answer_for_tests);
  auto same = on_any_port();
  same.port = first.port();
  const auto in_use = fmt::format(fmt::runtime(errors::dashboard_port_in_use), first.port(), "127.0.0.1");
  CHECK(test::refusal_of([&] { http_server second(same, answer_for_tests); }) == in_use);
  CHECK(test::refusal_of([&] { http_server::check(same); }) == in_use);

  auto name = on_any_port();
  name.bind = "localhost";
  const auto bad = fmt::format(fmt::runtime(errors::dashboard_bad_bind), "localhost");
  CHECK(test::refusal_of([&] { http_server::check(name); }) == bad);
  CHECK(test::refusal_of([&] { http_server server(name, answer_for_tests); }) == bad);

  // An address of no interface here (TEST-NET-1, RFC 5737).
  auto elsewhere = on_any_port();
  elsewhere.bind = "192.0.2.1";
  elsewhere.port = 8080;
  CHECK(test::refusal_of([&] { http_server::check(elsewhere); }) ==
        fmt::format(fmt::runtime(errors::dashboard_cannot_listen), 8080, "192.0.2.1",
                    std::error_code(EADDRNOTAVAIL, std::system_category()).message()));
  CHECK(test::refusal_of([&] { http_server::check(on_any_port()); }) == "(accepted)");
}

}  // namespace coral::training
