#pragma once
/// \file
/// `--video FILE` of `coral envs rollout` and `coral eval`: the video file
/// and its env's first frame, each refused before anything runs, naming the
/// flag.

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "coral/envs/env.hpp"
#include "coral/envs/rgb_frame.hpp"
#include "coral/training/video_writer.hpp"

namespace coral::cli {

/// Declares `--video` (a file; `help` says what goes into it) and
/// `--video-fps` (1 to 1000, default `fps`'s value) on `cmd`.
void add_video_flags(CLI::App& cmd, std::string& path, int& fps, const std::string& help);

/// Makes `video` a writer of `path` at `fps` frames per second. A path it
/// cannot write (a missing directory, a name ending in neither .mp4 nor
/// .gif, a directory) or no ffmpeg on PATH is a config_error `--video:
/// <why>` (the texts of training::errors::video_*).
void open_video(std::optional<training::video_writer>& video, const std::string& path, int fps);

/// Renders `e` (env `name`, reset) into `frame`: config_error
/// errors::env_does_not_render when it does not render, `--video: <why>`
/// when its renderer cannot start.
void first_frame(const envs::env& e, const std::string& name, envs::rgb_frame& frame);

}  // namespace coral::cli
