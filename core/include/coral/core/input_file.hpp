#pragma once
/// \file
/// A file named by the user (a config, a MuJoCo model or a file it names, a
/// checkpoint, an env's data file), opened for reading only once it is known
/// to be a regular, readable file of bounded size. Every file coral reads
/// from user input goes through this one check.
///
/// Why: open() on a FIFO blocks until a writer comes, read() on a device
/// such as /dev/zero never ends, and a directory reads as "no such file" to
/// most libraries. The path is stat()ed first, then opened with O_NONBLOCK
/// (so that a FIFO swapped in between cannot block either), then the open
/// descriptor is checked again.

#include <cstddef>
#include <cstdint>
#include <string>

namespace coral {

/// What is wrong with a file named by the user.
enum class input_file_fault {
  none,         ///< a regular, readable file within its size bound
  missing,      ///< nothing there (or a dangling link)
  not_regular,  ///< a directory, FIFO, socket or device
  unreadable,   ///< there, but cannot be opened or read (permissions, I/O)
  too_large,    ///< larger than the bound its caller gave
};

/// A user's input file, open for reading.
///
/// Thread safety: one object is used by one thread at a time.
class input_file {
 public:
  /// Checks and opens `path`, which must be a regular, readable file of at
  /// most `max_bytes` bytes. Never blocks on a FIFO or device and never
  /// throws: on failure fault() says what and problem() says it in words,
  /// for the caller's message (`no such file`, `not a regular file (a
  /// FIFO)`, `larger than 1048576 bytes`, `Permission denied`).
  input_file(const std::string& path, std::uint64_t max_bytes);
  ~input_file();
  input_file(const input_file&) = delete;
  input_file& operator=(const input_file&) = delete;

  /// Whether the file is open.
  [[nodiscard]] explicit operator bool() const noexcept { return fault_ == input_file_fault::none; }
  [[nodiscard]] input_file_fault fault() const noexcept { return fault_; }
  /// Why the file is not open, in words; empty when it is. After a failed
  /// read() or skip(), why that failed.
  [[nodiscard]] const std::string& problem() const noexcept { return problem_; }
  /// Its size in bytes, as found when it was opened.
  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }

  /// Reads exactly `n` bytes at the current position; false (and problem()
  /// set) on an I/O error or when the file ends first.
  [[nodiscard]] bool read(void* to, std::size_t n);
  /// Moves the position `n` bytes on; false when that passes the end.
  [[nodiscard]] bool skip(std::uint64_t n);
  /// Moves the position back to the start of the file.
  [[nodiscard]] bool rewind();
  /// The whole file from the current position (at most size() bytes).
  [[nodiscard]] bool read_rest(std::string& to);

 private:
  input_file_fault open(const std::string& path, std::uint64_t max_bytes);

  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::uint64_t at_ = 0;
  input_file_fault fault_ = input_file_fault::none;
  std::string problem_;
};

/// Checks `path` as input_file does and closes it again: the fault, with
/// its words in `problem`. For files another library opens itself (MuJoCo's
/// model files).
[[nodiscard]] input_file_fault check_input_file(const std::string& path, std::uint64_t max_bytes,
                                                std::string& problem);

}  // namespace coral
