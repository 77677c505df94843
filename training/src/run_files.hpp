#pragma once
// Private: the files a training run reads and writes besides its actors'
// state: the run and checkpoint directories (checked before anything starts),
// the checkpoint a resumed run continues from, metrics.csv and its plot.

#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coral/training/checkpoint.hpp"
#include "coral/training/train_options.hpp"

namespace coral::training::detail {

/// A run's hold on its run or checkpoint directory: an exclusive flock of
/// `<dir>/.coral.lock`, which holds the holder's PID. The kernel drops it
/// when the process ends, however it ends (SIGKILL included).
class dir_lock {
 public:
  /// Takes the lock of `dir` (given as `flag`), or throws config_error:
  /// errors::dir_locked naming the holder's PID when another run holds it.
  dir_lock(std::string_view flag, const std::string& dir);
  dir_lock(dir_lock&& other) noexcept;
  dir_lock(const dir_lock&) = delete;
  dir_lock& operator=(const dir_lock&) = delete;
  dir_lock& operator=(dir_lock&&) = delete;
  ~dir_lock();

 private:
  int fd_ = -1;
};

/// Makes --run-dir and --checkpoint-dir ready before anything starts: creates
/// each (with its parents), writes and removes a test file named as long as
/// the longest file the run writes there, and locks it (dir_lock: two runs
/// never share a directory); removes the `.tmp` files that killed checkpoint
/// writes left; and refuses a fresh run (no --resume) into a checkpoint
/// directory that already holds checkpoints. Returns the locks, held for the
/// run. Throws config_error (errors::dir_unusable, dir_locked,
/// checkpoint_dir_in_use).
[[nodiscard]] std::vector<dir_lock> prepare_run_dirs(const train_options& o);

/// The settings of a run of `o` as `config.toml` keys and TOML values, in
/// file order: the env, its args, algo, seed, sampler size, topology, steps,
/// hidden layers and every setting of the algorithm, its defaults included.
/// What write_run_config() writes, and what every rank of a distributed run
/// must agree on.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> run_settings(const train_options& o);

/// Writes `<run dir>/config.toml`: the run's settings as a `[train]` section
/// that `coral train --config` reads back (the env, algo, seed, sampler
/// size, steps, hidden layers and every setting of the algorithm, its
/// defaults included). Does nothing without a run dir. Throws config_error
/// (errors::dir_unusable) when it cannot write it.
void write_run_config(const train_options& o);

/// A checkpoint a run resumes from, and its file.
struct resumed_checkpoint {
  checkpoint c;
  std::filesystem::path file;
};

/// Reads the checkpoint in --checkpoint-dir with the most env steps recorded
/// inside it for a resumed run of `algo` with a network of `signature`.
/// Directories and unreadable files named like checkpoints are passed over
/// with a warning on `warnings` (errors::checkpoint_skipped); when nothing
/// readable is left, the newest such file's error is thrown, or config_error
/// (errors::no_checkpoint) when there was none. A checkpoint of another run
/// (algo, env, network or seed) is refused with checkpoint_error.
resumed_checkpoint read_for_resume(const train_options& o, std::string_view algo, std::string_view signature,
                                   std::ostream& warnings);

/// run_dir/metrics.csv, one row per line. A resumed run appends to the rows
/// already there; a fresh one starts the file anew. Every row is flushed, and
/// a failed write is remembered, reported once by close() and never claimed
/// as written.
///
/// Thread safety: none; the caller serialises rows (one writer at a time).
class metrics_file {
 public:
  /// No file when `run_dir` is empty. Otherwise opens run_dir/metrics.csv:
  /// when `append` and it already holds rows under `header`, for appending,
  /// after dropping the rows past `resumed_steps` env steps (a killed run's,
  /// past the checkpoint this run resumes from) and a row cut short; when it
  /// holds another header, throws config_error
  /// (errors::metrics_header_differs); else anew, with `header`.
  metrics_file(const std::string& run_dir, std::string_view header, bool append, std::uint64_t resumed_steps = 0);

  /// Whether rows are being written.
  [[nodiscard]] bool is_open() const noexcept { return csv_.is_open(); }

  /// Appends `row` and a newline (nothing when not open or after a failure).
  void write_row(std::string_view row);

  /// Closes the file; when every write succeeded, plots it
  /// (plot_learning_curve) and returns true; otherwise prints
  /// errors::metrics_write_failed on `warnings` and returns false. False
  /// when there was no file.
  bool close(std::ostream& warnings);

 private:
  void failed(int error_number);

  std::filesystem::path dir_;
  std::ofstream csv_;
  std::string error_;  ///< the first failure; empty while all is well
};

/// Writes dir/learning_curve.gp and runs gnuplot on it to draw
/// dir/learning_curve.png from dir/metrics.csv. gnuplot is spawned with an
/// argument vector (no shell) in `dir` as its working directory, and the
/// script names its files relative to it, so no path is ever parsed by a
/// shell or by gnuplot. A missing or failing gnuplot is a warning on
/// `warnings` (errors::gnuplot_not_found, gnuplot_failed), never an error.
void plot_learning_curve(const std::filesystem::path& dir, std::ostream& warnings);

}  // namespace coral::training::detail
