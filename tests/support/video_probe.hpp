#pragma once
/// \file
/// Test support: what ffprobe says of a video file (its first video stream's
/// size and decoded frame count). Needs Debian's ffmpeg (scripts/deps.sh).

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

namespace coral::test {

/// A video's first video stream, as ffprobe decodes it.
struct video_facts {
  int width = 0;
  int height = 0;
  int frames = 0;  ///< frames decoded (nb_read_frames)
  std::string codec;
  bool read = false;  ///< false: ffprobe could not read the file
};

/// Runs ffprobe on `path` (a test's own scratch path: no quote in it).
inline video_facts probe_video(const std::filesystem::path& path) {
  const std::string command =
      "ffprobe -v error -count_frames -select_streams v:0 "
      "-show_entries stream=codec_name,width,height,nb_read_frames -of csv=p=0 '" + path.string() + "' 2>/dev/null";
  video_facts facts;
  std::FILE* out = ::popen(command.c_str(), "r");
  if (out == nullptr) return facts;
  std::string text;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, out) != nullptr) text += buffer;
  if (::pclose(out) != 0) return facts;
  // codec_name,width,height,nb_read_frames
  std::istringstream fields(text);
  std::string codec, width, height, frames;
  if (!std::getline(fields, codec, ',') || !std::getline(fields, width, ',') || !std::getline(fields, height, ',') ||
      !std::getline(fields, frames)) {
    return facts;
  }
  facts.codec = codec;
  facts.width = std::stoi(width);
  facts.height = std::stoi(height);
  facts.frames = std::stoi(frames);
  facts.read = true;
  return facts;
}

}  // namespace coral::test
