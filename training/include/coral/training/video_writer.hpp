#pragma once
/// \file
/// `video_writer`: frames (envs::rgb_frame) into an MP4 (H.264) or GIF file,
/// encoded by Debian's ffmpeg in a child process. What `coral envs rollout
/// --video` and `coral eval --video` write with.
///
/// ```
/// coral::training::video_writer video("episode.mp4");   // config_error now if it cannot be written
/// coral::envs::rgb_frame frame;
/// while (env.render(frame) && ...) video.write(frame);     // the first frame starts ffmpeg
/// video.finish();                                          // the file is there, whole
/// ```
///
/// ## What is checked, and when
///
/// The constructor refuses (config_error), before any frame exists: a name
/// not ending in `.mp4` or `.gif` (errors::video_bad_extension), a path in a
/// directory that does not exist (errors::video_no_directory) or naming a
/// directory (errors::video_is_directory), and ffmpeg missing from PATH
/// (errors::video_ffmpeg_not_found). So a caller that makes its
/// video_writer first refuses a bad `--video` before anything runs.
///
/// ## The child process
///
/// The first write() starts ffmpeg, without a shell (posix_spawn, argv
/// given word by word: no path is ever parsed by a shell), reading raw rgb24
/// frames of the first frame's size from its standard input at `fps`
/// frames per second. MP4: libx264, yuv420p (odd sizes padded by one pixel
/// to even), `+faststart`. GIF: a palette made from the whole clip
/// (palettegen, paletteuse). ffmpeg's stdout goes to /dev/null and its
/// stderr (`-loglevel error`) to an unnamed temporary file, never a pipe
/// that could fill up and block it. It writes to `<path>.part-<pid>`;
/// finish() renames that to `path` once ffmpeg exits 0, replacing a file
/// that was there: a failed or abandoned video leaves no half-written file.
///
/// Frames go over a socket pair rather than a pipe, written with
/// MSG_NOSIGNAL: if ffmpeg dies, the next write() gets EPIPE (never
/// SIGPIPE, whatever the process's SIGPIPE disposition), reaps ffmpeg and
/// throws errors::video_ffmpeg_failed with the end of its stderr. Nothing
/// waits on a dead ffmpeg.
///
/// Frame count: every frame written is one frame of the video (ffprobe's
/// nb_read_frames equals frames()).
///
/// Thread safety: none; one thread at a time.

#include <cstddef>
#include <filesystem>
#include <string>

#include "coral/envs/rgb_frame.hpp"

namespace coral::training {

/// The file format, from the path's extension.
enum class video_format { mp4, gif };

/// Settings of a video_writer.
struct video_options {
  int fps = 30;  ///< frames per second of the video, in [1, 1000]
};

/// Writes one video file; see the file comment.
class video_writer {
 public:
  /// Checks `path` and finds ffmpeg (config_error, see the file comment);
  /// starts nothing yet.
  explicit video_writer(std::filesystem::path path, video_options options = {});
  /// If finish() did not run: kills ffmpeg, reaps it and removes the
  /// partial file. Never throws.
  ~video_writer();
  video_writer(const video_writer&) = delete;
  video_writer& operator=(const video_writer&) = delete;

  /// Appends `frame`. The first frame sets the video's size and starts
  /// ffmpeg (error errors::video_ffmpeg_spawn if it cannot); a later frame
  /// of another size is a usage_error (errors::video_frame_size). Throws
  /// error (errors::video_ffmpeg_failed) if ffmpeg has died; the writer is
  /// then finished and the partial file removed.
  void write(const envs::rgb_frame& frame);

  /// Ends the input, waits for ffmpeg and moves the file into place.
  /// Throws error: errors::video_no_frames if nothing was written,
  /// errors::video_ffmpeg_failed if ffmpeg did not exit 0 (the partial file
  /// removed). Call once.
  void finish();

  /// Frames written so far.
  [[nodiscard]] std::size_t frames() const noexcept { return frames_; }
  /// The video's path.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// The format its extension names.
  [[nodiscard]] video_format format() const noexcept { return format_; }

 private:
  void start(std::size_t height, std::size_t width);
  /// Reaps ffmpeg; returns "" if it exited 0, else how it ended.
  std::string wait_for_ffmpeg();
  /// Throws errors::video_ffmpeg_failed after removing the partial file.
  [[noreturn]] void fail(const std::string& how);
  void abandon() noexcept;

  std::filesystem::path path_;
  std::filesystem::path part_;
  std::string ffmpeg_;  ///< absolute path of the program
  video_options options_;
  video_format format_;
  std::size_t height_ = 0;
  std::size_t width_ = 0;
  std::size_t frames_ = 0;
  int socket_ = -1;   ///< our end of the frames' socket pair
  int stderr_ = -1;   ///< the temporary file ffmpeg's stderr goes to
  int pid_ = -1;      ///< ffmpeg, while it runs
  bool finished_ = false;
};

/// The absolute path of `program` found on $PATH (as a shell would find
/// it: the first executable regular file), or "" if there is none. A name
/// holding a '/' is taken as it is, if executable.
[[nodiscard]] std::string find_on_path(const std::string& program);

}  // namespace coral::training
