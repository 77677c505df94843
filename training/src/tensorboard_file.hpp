#pragma once
// Private: the TensorBoard event file of a run, beside its metrics.csv.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace coral::training::detail {

/// The TensorBoard tag of the metrics column `column`, grouped by what it
/// measures: `charts/` (returns, lengths, rates, counts, the learning
/// rate), `losses/` (losses, entropy, KL, clip fraction, Q values, TD
/// errors, gradient norm), `replay/` (the replay actor: size, rates, ratio,
/// priorities, its queues), `actor/` (the acting side: policy lag, groups
/// the gate holds), `learner/` (the learner's own timings). A column already
/// holding a `/` is its own tag; any other column goes under `metrics/`.
/// docs/training.md lists the table.
[[nodiscard]] std::string tensorboard_tag(std::string_view column);

/// The prefix of every event file's name, TensorBoard's:
/// `events.out.tfevents.<unix seconds>.<host>.<pid>`.
inline constexpr std::string_view event_file_prefix = "events.out.tfevents.";

/// run_dir's TensorBoard event file: every metrics row as one Event whose
/// scalars are the row's columns (tensorboard_tag()), at the row's env
/// steps, and text summaries (the run's settings). Every record is flushed
/// with one write(2), as metrics.csv's rows are; a failed write is
/// remembered, reported once by close() and never claimed as written.
///
/// A run dir holds one event file, so that TensorBoard draws one curve per
/// tag. A fresh run removes the event files there and starts one. A
/// resumed run keeps the records up to the env steps it resumes from and
/// appends to the same file: the kept records are written to a temporary
/// file (named without "tfevents", which TensorBoard would read), synced and
/// renamed over the newest event file, so that a kill at any moment leaves
/// either the old file or the new one, whole; the older files, if any, are
/// merged into it and removed. TensorBoard cannot drop a record it has
/// read, so records of a killed run past the checkpoint (steps this run
/// trains again) must be gone from the file, and a record cut short by a
/// kill goes too: TensorBoard stops reading a file at one.
///
/// Steps only grow down the file: a row at no more env steps than the one
/// before it (the final row, when the last update's row ended at the same
/// step) is not written again.
///
/// Thread safety: none; the caller serialises calls (one writer at a time).
class tensorboard_file {
 public:
  /// No file when `run_dir` is empty. `header` is metrics.csv's: the
  /// columns, one of them `env_steps`. With `append`, keeps the records of
  /// the files there up to `resumed_steps` env steps (a text summary only
  /// below them: the run that resumes writes its own) and appends to them.
  /// Throws config_error (errors::dir_unusable) when the files cannot be
  /// read or written, usage_error when `header` has no env_steps.
  tensorboard_file(const std::string& run_dir, std::string_view header, bool append, std::uint64_t resumed_steps = 0);
  tensorboard_file(const tensorboard_file&) = delete;
  tensorboard_file& operator=(const tensorboard_file&) = delete;
  ~tensorboard_file();

  /// Whether records are being written.
  [[nodiscard]] bool is_open() const noexcept { return fd_ >= 0; }
  /// The event file (empty when none).
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return file_; }

  /// Appends a metrics row (metrics.csv's text, without the newline) as one
  /// Event of scalars. A value that is not a number is left out; a row
  /// whose env steps are not a whole number, or not past the last row's,
  /// is not written.
  void write_row(std::string_view row);

  /// Appends `markdown` as a text summary under `tag` at `step`.
  void write_text(std::string_view tag, std::string_view markdown, std::uint64_t step);

  /// Closes the file: true when every write succeeded; otherwise prints
  /// errors::metrics_write_failed on `warnings` and returns false. False
  /// when there was no file.
  bool close(std::ostream& warnings);

 private:
  void write_event(const std::string& event);

  std::filesystem::path file_;
  int fd_ = -1;
  std::vector<std::string> tags_;  ///< per column
  std::size_t step_column_ = 0;
  std::optional<std::uint64_t> last_step_;  ///< of the last row written
  std::string error_;                       ///< the first failure; empty while all is well
};

}  // namespace coral::training::detail
