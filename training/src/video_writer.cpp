#include "coral/training/video_writer.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/training/errors.hpp"

extern char** environ;

namespace coral::training {
namespace fs = std::filesystem;

namespace {

template <class... Args>
std::string text(std::string_view format, Args&&... args) {
  return fmt::format(fmt::runtime(format), std::forward<Args>(args)...);
}

// How much of ffmpeg's stderr an error quotes (its end: the reason is last).
constexpr std::size_t stderr_tail_bytes = 2000;

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string exit_text(int status) {
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  return fmt::format("wait status {}", status);
}

}  // namespace

std::string find_on_path(const std::string& program) {
  if (program.empty()) return "";
  if (program.find('/') != std::string::npos) return is_executable_file(program) ? program : "";
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const std::size_t colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + program;
    if (is_executable_file(candidate)) return fs::absolute(candidate).string();
    if (colon == std::string_view::npos) return "";
    dirs.remove_prefix(colon + 1);
  }
}

video_writer::video_writer(fs::path path, video_options options) : path_(std::move(path)), options_(options) {
  const std::string shown = path_.string();
  const std::string ext = path_.extension().string();
  if (ext == ".mp4") {
    format_ = video_format::mp4;
  } else if (ext == ".gif") {
    format_ = video_format::gif;
  } else {
    throw config_error(text(errors::video_bad_extension, shown));
  }
  if (options_.fps < 1 || options_.fps > 1000) {
    throw usage_error(fmt::format("video '{}': fps {} is outside [1, 1000]", shown, options_.fps));
  }
  std::error_code ec;
  const fs::path dir = path_.has_parent_path() ? path_.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) throw config_error(text(errors::video_no_directory, shown, dir.string()));
  if (fs::is_directory(path_, ec)) throw config_error(text(errors::video_is_directory, shown));
  ffmpeg_ = find_on_path("ffmpeg");
  if (ffmpeg_.empty()) throw config_error(text(errors::video_ffmpeg_not_found, shown));
  part_ = path_;
  part_ += fmt::format(".part-{}", ::getpid());
}

video_writer::~video_writer() {
  if (!finished_) abandon();
}

void video_writer::abandon() noexcept {
  finished_ = true;
  if (socket_ >= 0) ::close(socket_);
  socket_ = -1;
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (stderr_ >= 0) ::close(stderr_);
  stderr_ = -1;
  std::error_code ec;
  fs::remove(part_, ec);
}

void video_writer::start(std::size_t height, std::size_t width) {
  const std::string shown = path_.string();
  std::FILE* log = std::tmpfile();
  if (log == nullptr) throw error(text(errors::video_ffmpeg_spawn, shown, std::strerror(errno)));
  stderr_ = ::fcntl(::fileno(log), F_DUPFD_CLOEXEC, 3);
  std::fclose(log);  // the duplicate keeps the (already unlinked) file open
  if (stderr_ < 0) throw error(text(errors::video_ffmpeg_spawn, shown, std::strerror(errno)));
  int ends[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    throw error(text(errors::video_ffmpeg_spawn, shown, std::strerror(errno)));
  }
  socket_ = ends[0];
  ::shutdown(ends[1], SHUT_WR);  // ffmpeg only reads; and it sees EOF when we close ours

  const std::string size = fmt::format("{}x{}", width, height);
  const std::string fps = fmt::format("{}", options_.fps);
  std::vector<std::string> args{ffmpeg_, "-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt",
                                "rgb24",  "-s",           size,       "-r",    fps,  "-i", "pipe:0",   "-an"};
  if (format_ == video_format::mp4) {
    for (const char* a : {"-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-c:v", "libx264", "-pix_fmt", "yuv420p",
                          "-movflags", "+faststart", "-f", "mp4"}) {
      args.emplace_back(a);
    }
  } else {
    for (const char* a : {"-vf", "split[a][b];[a]palettegen[p];[b][p]paletteuse", "-f", "gif"}) args.emplace_back(a);
  }
  args.push_back(part_.string());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0) {
    ::close(ends[1]);
    throw error(text(errors::video_ffmpeg_spawn, shown, "posix_spawn_file_actions_init failed"));
  }
  const bool prepared = posix_spawn_file_actions_adddup2(&actions, ends[1], 0) == 0 &&
                        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0) == 0 &&
                        posix_spawn_file_actions_adddup2(&actions, stderr_, 2) == 0;
  // ffmpeg gets the default SIGPIPE disposition and an empty signal mask, whatever ours are.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults, empty;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigemptyset(&empty);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setsigmask(&attributes, &empty);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int spawned =
      prepared ? posix_spawn(&pid, ffmpeg_.c_str(), &actions, &attributes, argv.data(), environ) : EINVAL;
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(ends[1]);
  if (spawned != 0) throw error(text(errors::video_ffmpeg_spawn, shown, std::strerror(spawned)));
  pid_ = pid;
  height_ = height;
  width_ = width;
}

void video_writer::write(const envs::rgb_frame& frame) {
  if (finished_) throw usage_error(fmt::format("video '{}': write() after finish()", path_.string()));
  if (frames_ == 0) {
    start(frame.height(), frame.width());
  } else if (frame.height() != height_ || frame.width() != width_) {
    throw usage_error(text(errors::video_frame_size, path_.string(), frames_, frame.height(), frame.width(), height_,
                           width_));
  }
  const auto bytes = frame.pixels();
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(socket_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      // EPIPE or ECONNRESET: ffmpeg is gone (or closed its input); it says why on stderr.
      ::close(socket_);
      socket_ = -1;
      const std::string how = wait_for_ffmpeg();
      fail(how.empty() ? std::string("it stopped reading frames") : how);
    }
    sent += static_cast<std::size_t>(n);
  }
  ++frames_;
}

std::string video_writer::wait_for_ffmpeg() {
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) {
      pid_ = -1;
      return std::strerror(errno);
    }
  }
  pid_ = -1;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? std::string() : exit_text(status);
}

void video_writer::fail(const std::string& how) {
  std::string tail;
  if (stderr_ >= 0) {
    const off_t size = ::lseek(stderr_, 0, SEEK_END);
    const off_t from = size > static_cast<off_t>(stderr_tail_bytes) ? size - static_cast<off_t>(stderr_tail_bytes) : 0;
    tail.resize(static_cast<std::size_t>(size - from));
    const ssize_t n = size > from ? ::pread(stderr_, tail.data(), tail.size(), from) : 0;
    tail.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  }
  if (tail.empty()) tail = "(nothing on stderr)";
  abandon();
  throw error(text(errors::video_ffmpeg_failed, path_.string(), how, tail));
}

void video_writer::finish() {
  if (finished_) throw usage_error(fmt::format("video '{}': finish() called twice", path_.string()));
  if (frames_ == 0) {
    abandon();
    throw error(text(errors::video_no_frames, path_.string()));
  }
  ::close(socket_);
  socket_ = -1;
  const std::string how = wait_for_ffmpeg();
  if (!how.empty()) fail(how);
  std::error_code ec;
  fs::rename(part_, path_, ec);
  if (ec) fail(fmt::format("cannot move '{}' into place: {}", part_.string(), ec.message()));
  ::close(stderr_);
  stderr_ = -1;
  finished_ = true;
}

}  // namespace coral::training
