#pragma once
/// \file
/// What the libFuzzer targets share: a failed invariant that libFuzzer counts
/// as a crash, and a scratch file for parsers that read from a path.

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include <unistd.h>

namespace coral::fuzz {

/// Ends the run with `what` on stderr. abort() makes libFuzzer save the
/// input as a crash, like a sanitizer report would.
[[noreturn]] inline void fail(std::string_view what) {
  std::fprintf(stderr, "fuzz invariant failed: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

/// fail(what) when `ok` is false.
inline void check(bool ok, std::string_view what) {
  if (!ok) fail(what);
}

/// A file of this process (in /dev/shm when there is one: the parsers under
/// test read paths, and a memory file keeps each run cheap). Removed by the
/// destructor; one per target is enough, since libFuzzer runs one input at a
/// time per process.
class scratch_file {
 public:
  /// A file named `<stem>-<pid>` in the scratch directory; nothing is created yet.
  explicit scratch_file(std::string_view stem) {
    std::error_code ec;
    const std::filesystem::path shm = "/dev/shm";
    const auto dir = std::filesystem::is_directory(shm, ec) ? shm : std::filesystem::temp_directory_path();
    path_ = dir / (std::string(stem) + "-" + std::to_string(::getpid()));
  }
  scratch_file(const scratch_file&) = delete;
  scratch_file& operator=(const scratch_file&) = delete;
  ~scratch_file() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }

  /// Replaces the file's content with `size` bytes at `data`.
  void write(const void* data, std::size_t size) const {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    check(f != nullptr, "cannot create the scratch file");
    const bool ok = size == 0 || std::fwrite(data, 1, size, f) == size;
    check(std::fclose(f) == 0 && ok, "cannot write the scratch file");
  }

  /// Where it is.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace coral::fuzz
