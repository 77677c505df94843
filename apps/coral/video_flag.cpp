#include "coral/video_flag.hpp"

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/errors.hpp"

namespace coral::cli {

void add_video_flags(CLI::App& cmd, std::string& path, int& fps, const std::string& help) {
  cmd.add_option("--video", path, help);
  cmd.add_option("--video-fps", fps, "frames per second of --video")->check(CLI::Range(1, 1000))->capture_default_str();
}

void open_video(std::optional<training::video_writer>& video, const std::string& path, int fps) {
  try {
    video.emplace(path, training::video_options{.fps = fps});
  } catch (const config_error& e) {
    throw config_error(fmt::format("--video: {}", e.what()));
  }
}

void first_frame(const envs::env& e, const std::string& name, envs::rgb_frame& frame) {
  bool drawn = false;
  try {
    drawn = e.render(frame);
  } catch (const std::exception& why) {  // a renderer that cannot start (MuJoCo without EGL)
    throw config_error(fmt::format("--video: {}", why.what()));
  }
  if (!drawn) throw config_error(fmt::format(fmt::runtime(errors::env_does_not_render), name));
}

}  // namespace coral::cli
