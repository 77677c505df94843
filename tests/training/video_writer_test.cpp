#include "coral/training/video_writer.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/scoped_env.hpp"
#include "../support/scratch_dir.hpp"
#include "../support/video_probe.hpp"
#include "coral/core/error.hpp"
#include "coral/training/errors.hpp"

namespace fs = std::filesystem;
namespace te = coral::training::errors;
using coral::envs::rgb_frame;
using coral::training::video_writer;

namespace {

std::string text(std::string_view format, const auto&... args) { return fmt::format(fmt::runtime(format), args...); }

// A frame whose colour changes with `t` (so that no encoder could merge frames).
rgb_frame frame_at(std::size_t height, std::size_t width, int t) {
  rgb_frame f;
  f.resize(height, width);
  for (std::size_t y = 0; y < height; ++y) {
    for (std::size_t x = 0; x < width; ++x) {
      std::uint8_t* p = f.at(y, x);
      p[0] = static_cast<std::uint8_t>(t * 7 + x);
      p[1] = static_cast<std::uint8_t>(t * 13 + y);
      p[2] = static_cast<std::uint8_t>(t * 29);
    }
  }
  return f;
}

/// A directory holding an executable `ffmpeg` that runs `body` (sh).
fs::path fake_ffmpeg(const std::string& name, const std::string& body) {
  const auto dir = coral::test::fresh_dir("video-writer-" + name);
  std::ofstream(dir / "ffmpeg") << "#!/bin/sh\n" << body << "\n";
  fs::permissions(dir / "ffmpeg", fs::perms::owner_all);
  return dir;
}

}  // namespace

TEST_CASE("a video writer refuses a path it could not write before any frame", "[training][video][errors]") {
  const auto dir = coral::test::fresh_dir("video-writer-refusals");
  const auto bad = dir / "clip.avi";
  CHECK_THROWS_MATCHES(video_writer(bad), coral::config_error,
                       Catch::Message(text(te::video_bad_extension, bad.string())));
  const auto lost = dir / "missing" / "clip.mp4";
  CHECK_THROWS_MATCHES(video_writer(lost), coral::config_error,
                       Catch::Message(text(te::video_no_directory, lost.string(), (dir / "missing").string())));
  fs::create_directories(dir / "taken.gif");
  CHECK_THROWS_MATCHES(video_writer(dir / "taken.gif"), coral::config_error,
                       Catch::Message(text(te::video_is_directory, (dir / "taken.gif").string())));
}

TEST_CASE("a video writer without ffmpeg on PATH says to install it, before any frame", "[training][video][errors]") {
  const auto empty = coral::test::fresh_dir("video-writer-no-ffmpeg");
  const coral::test::scoped_env path("PATH", empty.string());
  const auto file = empty / "clip.mp4";
  CHECK_THROWS_MATCHES(video_writer(file), coral::config_error,
                       Catch::Message(text(te::video_ffmpeg_not_found, file.string())));
}

TEST_CASE("a video writer writes an MP4 with one frame per frame written, at the frames' size",
          "[training][video]") {
  const auto dir = coral::test::fresh_dir("video-writer-mp4");
  const auto file = dir / "clip.mp4";
  {
    video_writer video(file, {.fps = 25});
    for (int t = 0; t < 17; ++t) video.write(frame_at(48, 64, t));
    CHECK(video.frames() == 17);
    video.finish();
  }
  const auto facts = coral::test::probe_video(file);
  REQUIRE(facts.read);
  CHECK(facts.codec == "h264");
  CHECK(facts.frames == 17);
  CHECK(facts.width == 64);
  CHECK(facts.height == 48);
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);  // no partial file left
}

TEST_CASE("a video writer writes a GIF, and pads an odd-sized MP4 to even", "[training][video]") {
  const auto dir = coral::test::fresh_dir("video-writer-gif");
  {
    video_writer gif(dir / "clip.gif");
    for (int t = 0; t < 9; ++t) gif.write(frame_at(31, 45, t));
    gif.finish();
  }
  auto facts = coral::test::probe_video(dir / "clip.gif");
  REQUIRE(facts.read);
  CHECK(facts.codec == "gif");
  CHECK(facts.frames == 9);
  CHECK(facts.width == 45);
  CHECK(facts.height == 31);
  {
    video_writer mp4(dir / "odd.mp4");
    for (int t = 0; t < 3; ++t) mp4.write(frame_at(31, 45, t));
    mp4.finish();
  }
  facts = coral::test::probe_video(dir / "odd.mp4");
  REQUIRE(facts.read);
  CHECK(facts.frames == 3);
  CHECK(facts.width == 46);
  CHECK(facts.height == 32);
}

TEST_CASE("a frame of another size than the first is refused", "[training][video][errors]") {
  const auto dir = coral::test::fresh_dir("video-writer-size");
  video_writer video(dir / "clip.mp4");
  video.write(frame_at(8, 8, 0));
  CHECK_THROWS_MATCHES(video.write(frame_at(8, 10, 1)), coral::usage_error,
                       Catch::Message(text(te::video_frame_size, (dir / "clip.mp4").string(), 1, 8, 10, 8, 8)));
}

TEST_CASE("finish() with no frame written is an error, and leaves no file", "[training][video][errors]") {
  const auto dir = coral::test::fresh_dir("video-writer-empty");
  video_writer video(dir / "clip.mp4");
  CHECK_THROWS_MATCHES(video.finish(), coral::error,
                       Catch::Message(text(te::video_no_frames, (dir / "clip.mp4").string())));
  CHECK(fs::is_empty(dir));
}

TEST_CASE("an ffmpeg that dies is reported with how it ended and its stderr, and nothing hangs or is left",
          "[training][video][errors]") {
  // It reads nothing: the writer's sends fail with EPIPE once the socket's buffer is full, or finish()
  // finds it dead; either way the same message.
  const auto tools = fake_ffmpeg("dies", "echo 'first line' >&2\necho 'Unknown encoder libx264' >&2\nexit 3");
  const auto dir = coral::test::fresh_dir("video-writer-dies-out");
  const auto file = dir / "clip.mp4";
  const auto expected = text(te::video_ffmpeg_failed, file.string(), "exit status 3",
                             "first line\nUnknown encoder libx264");
  const coral::test::scoped_env path("PATH", tools.string() + ":" + std::getenv("PATH"));
  for (const int frames : {1, 200}) {  // 200 frames of 256 x 256: far more than a socket buffer holds
    INFO(frames);
    video_writer video(file);
    auto write_all = [&] {
      for (int t = 0; t < frames; ++t) video.write(frame_at(256, 256, t));
      video.finish();
    };
    CHECK_THROWS_MATCHES(write_all(), coral::error, Catch::Message(expected));
    CHECK(fs::is_empty(dir));
  }
}

TEST_CASE("an ffmpeg that cannot be executed is reported as such", "[training][video][errors]") {
  const auto tools = coral::test::fresh_dir("video-writer-not-a-program");
  std::ofstream(tools / "ffmpeg") << "not a program\n";  // executable, but no format exec knows
  fs::permissions(tools / "ffmpeg", fs::perms::owner_all);
  const auto dir = coral::test::fresh_dir("video-writer-not-a-program-out");
  const coral::test::scoped_env path("PATH", tools.string() + ":" + std::getenv("PATH"));
  video_writer video(dir / "clip.mp4");
  CHECK_THROWS_MATCHES(video.write(frame_at(4, 4, 0)), coral::error,
                       Catch::Message(text(te::video_ffmpeg_spawn, (dir / "clip.mp4").string(),
                                           std::strerror(ENOEXEC))));
  CHECK(fs::is_empty(dir));
}

TEST_CASE("an ffmpeg killed by a signal is reported naming the signal", "[training][video][errors]") {
  const auto tools = fake_ffmpeg("killed", "kill -9 $$");
  const auto dir = coral::test::fresh_dir("video-writer-killed-out");
  const coral::test::scoped_env path("PATH", tools.string() + ":" + std::getenv("PATH"));
  video_writer video(dir / "clip.gif");
  auto write_all = [&] {  // the write itself may find it dead already
    video.write(frame_at(4, 4, 0));
    video.finish();
  };
  CHECK_THROWS_MATCHES(write_all(), coral::error,
                       Catch::Message(text(te::video_ffmpeg_failed, (dir / "clip.gif").string(),
                                           "killed by signal 9", "(nothing on stderr)")));
}

TEST_CASE("a video writer dropped before finish() removes its partial file", "[training][video]") {
  const auto dir = coral::test::fresh_dir("video-writer-dropped");
  {
    video_writer video(dir / "clip.mp4");
    video.write(frame_at(8, 8, 0));
  }
  CHECK(fs::is_empty(dir));
}
