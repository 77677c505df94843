#pragma once
// Private: the files a training run reads and writes besides its actors'
// state: the run and checkpoint directories (checked before anything starts),
// the checkpoint a resumed run continues from, metrics.csv and its plot.

#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <string_view>

#include "coral/training/checkpoint.hpp"
#include "coral/training/train_options.hpp"

namespace coral::training::detail {

/// Makes --run-dir and --checkpoint-dir ready before anything starts: creates
/// each (with its parents) and writes and removes a test file in it; removes
/// the `.tmp` files that killed checkpoint writes left; and refuses a fresh
/// run (no --resume) into a checkpoint directory that already holds
/// checkpoints. Throws config_error (errors::dir_unusable,
/// checkpoint_dir_in_use).
void prepare_run_dirs(const train_options& o);

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
/// with a warning on `progress` (errors::checkpoint_skipped); when nothing
/// readable is left, the newest such file's error is thrown, or config_error
/// (errors::no_checkpoint) when there was none. A checkpoint of another run
/// (algo, env, network or seed) is refused with checkpoint_error.
resumed_checkpoint read_for_resume(const train_options& o, std::string_view algo, std::string_view signature,
                                   std::ostream& progress);

/// run_dir/metrics.csv, one row per line. A resumed run appends to the rows
/// already there; a fresh one starts the file anew. Every row is flushed, and
/// a failed write is remembered, reported once by close() and never claimed
/// as written.
///
/// Thread safety: none; the caller serialises rows (one writer at a time).
class metrics_file {
 public:
  /// No file when `run_dir` is empty. Otherwise opens run_dir/metrics.csv:
  /// when `append` and it already holds rows under `header`, for appending;
  /// when it holds another header, throws config_error
  /// (errors::metrics_header_differs); else anew, with `header`.
  metrics_file(const std::string& run_dir, std::string_view header, bool append);

  /// Whether rows are being written.
  [[nodiscard]] bool is_open() const noexcept { return csv_.is_open(); }

  /// Appends `row` and a newline (nothing when not open or after a failure).
  void write_row(std::string_view row);

  /// Closes the file; when every write succeeded, plots it
  /// (plot_learning_curve) and returns true; otherwise prints
  /// errors::metrics_write_failed on `progress` and returns false. False
  /// when there was no file.
  bool close(std::ostream& progress);

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
/// `progress` (errors::gnuplot_not_found, gnuplot_failed), never an error.
void plot_learning_curve(const std::filesystem::path& dir, std::ostream& progress);

}  // namespace coral::training::detail
