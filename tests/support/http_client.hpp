#pragma once
/// \file
/// Test support: a blocking HTTP/1.1 client on plain POSIX sockets, for the
/// live view's tests. Every receive has a watchdog (SO_RCVTIMEO, a minute):
/// a server that never answers fails the test instead of hanging it.

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace coral::test {

/// Seconds a receive may wait before the test fails.
inline constexpr int http_watchdog_seconds = 60;

/// A connected TCP socket, closed by its destructor.
class tcp_client {
 public:
  explicit tcp_client(std::uint16_t port, const char* address = "127.0.0.1") : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    timeval watchdog{http_watchdog_seconds, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &watchdog, sizeof(watchdog));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &watchdog, sizeof(watchdog));
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    ::inet_pton(AF_INET, address, &to.sin_addr);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) != 0) {
      const int e = errno;
      ::close(fd_);
      throw std::runtime_error(std::string("connect: ") + std::strerror(e));
    }
  }
  tcp_client(const tcp_client&) = delete;
  tcp_client& operator=(const tcp_client&) = delete;
  ~tcp_client() { close(); }

  void send(std::string_view bytes) {
    while (!bytes.empty()) {
      const auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0) throw std::runtime_error(std::string("send: ") + std::strerror(errno));
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  /// Up to `max` bytes; empty at the end of the stream (or a reset).
  /// Throws when the watchdog fires.
  std::string receive_some(std::size_t max = 65536) {
    std::string buffer(max, '\0');
    const auto n = ::recv(fd_, buffer.data(), buffer.size(), 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      throw std::runtime_error("the server sent nothing for a minute (watchdog)");
    }
    buffer.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
    return buffer;
  }
  /// Everything until the server closes the connection.
  std::string receive_all() {
    std::string all;
    for (;;) {
      auto part = receive_some();
      if (part.empty()) return all;
      all += part;
    }
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

/// A server's answer.
struct http_reply {
  int status = 0;
  std::string head;  ///< status line and headers
  std::string body;
};

/// Splits a whole response.
inline http_reply parse_reply(const std::string& raw) {
  http_reply r;
  const auto end = raw.find("\r\n\r\n");
  r.head = raw.substr(0, end);
  if (end != std::string::npos) r.body = raw.substr(end + 4);
  if (r.head.starts_with("HTTP/1.1 ") && r.head.size() >= 12) r.status = std::stoi(r.head.substr(9, 3));
  return r;
}

/// GET `path` (one request, the server closes the connection after it).
inline http_reply http_get(std::uint16_t port, const std::string& path) {
  tcp_client c(port);
  c.send("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  return parse_reply(c.receive_all());
}

}  // namespace coral::test
