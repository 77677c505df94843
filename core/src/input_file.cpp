#include "coral/core/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include <fmt/format.h>

#include "coral/core/errors.hpp"

namespace coral {
namespace {

std::string reason(int code) { return std::error_code(code, std::generic_category()).message(); }

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a file";
}

// The fault of a file whose stat is `st`, with its words in `problem`.
input_file_fault judge(const struct stat& st, std::uint64_t max_bytes, std::string& problem) {
  if (!S_ISREG(st.st_mode)) {
    problem = fmt::format(fmt::runtime(errors::input_not_regular), kind_of(st.st_mode));
    return input_file_fault::not_regular;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes) {
    problem = fmt::format(fmt::runtime(errors::input_too_large), size, max_bytes);
    return input_file_fault::too_large;
  }
  return input_file_fault::none;
}

}  // namespace

input_file::input_file(const std::string& path, std::uint64_t max_bytes) {
  fault_ = open(path, max_bytes);
  if (fault_ != input_file_fault::none && fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

input_file_fault input_file::open(const std::string& path, std::uint64_t max_bytes) {
  auto os_fault = [this](int code) {
    if (code == ENOENT || code == ENOTDIR) {
      problem_ = std::string(errors::input_missing);
      return input_file_fault::missing;
    }
    problem_ = reason(code);
    return input_file_fault::unreadable;
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return os_fault(errno);
  if (const auto f = judge(st, max_bytes, problem_); f != input_file_fault::none) return f;
  // O_NONBLOCK: a FIFO put there since the stat() must not block the open.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd_ < 0) return os_fault(errno);
  if (::fstat(fd_, &st) != 0) return os_fault(errno);
  if (const auto f = judge(st, max_bytes, problem_); f != input_file_fault::none) return f;
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  size_ = static_cast<std::uint64_t>(st.st_size);
  return input_file_fault::none;
}

input_file::~input_file() {
  if (fd_ >= 0) ::close(fd_);
}

bool input_file::read(void* to, std::size_t n) {
  if (fault_ != input_file_fault::none) return false;
  auto* p = static_cast<char*>(to);
  const std::uint64_t start = at_;
  std::size_t left = n;
  while (left > 0) {
    const ssize_t got = ::read(fd_, p, left);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      problem_ = reason(errno);
      return false;
    }
    if (got == 0) {
      problem_ = fmt::format(fmt::runtime(errors::input_short), n, start, size_);
      return false;
    }
    p += got;
    left -= static_cast<std::size_t>(got);
    at_ += static_cast<std::uint64_t>(got);
  }
  return true;
}

bool input_file::skip(std::uint64_t n) {
  if (fault_ != input_file_fault::none) return false;
  if (n > size_ - std::min(at_, size_)) {
    problem_ = fmt::format(fmt::runtime(errors::input_short), n, at_, size_);
    return false;
  }
  if (::lseek(fd_, static_cast<off_t>(at_ + n), SEEK_SET) < 0) {
    problem_ = reason(errno);
    return false;
  }
  at_ += n;
  return true;
}

bool input_file::rewind() {
  if (fault_ != input_file_fault::none) return false;
  if (::lseek(fd_, 0, SEEK_SET) < 0) {
    problem_ = reason(errno);
    return false;
  }
  at_ = 0;
  return true;
}

bool input_file::read_rest(std::string& to) {
  to.resize(static_cast<std::size_t>(size_ - std::min(at_, size_)));
  return read(to.data(), to.size());
}

input_file_fault check_input_file(const std::string& path, std::uint64_t max_bytes, std::string& problem) {
  input_file f(path, max_bytes);
  problem = f.problem();
  return f.fault();
}

}  // namespace coral
