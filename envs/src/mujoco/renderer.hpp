#pragma once
// MuJoCo's own OpenGL renderer on an offscreen EGL context (Mesa's
// surfaceless platform: no display, no window, software rendering where
// there is no GPU), for mujoco_env::render().

#include <memory>

#include "coral/envs/rgb_frame.hpp"

struct mjModel_;
struct mjData_;

namespace coral::envs::detail {

// One env's renderer: an EGL context of its own, made current only while it
// draws (so an env may draw on any thread, one at a time), MuJoCo's scene
// and GPU context for one model, a camera tracking body 1.
class mujoco_renderer {
 public:
  // Makes the context; throws coral::error (errors::mujoco_render_unavailable) if it cannot.
  explicit mujoco_renderer(const mjModel_& model);
  ~mujoco_renderer();
  mujoco_renderer(const mujoco_renderer&) = delete;
  mujoco_renderer& operator=(const mujoco_renderer&) = delete;

  // Draws `data` into `frame` (frame_height × frame_width); allocates nothing.
  void draw(const mjModel_& model, const mjData_& data, rgb_frame& frame);

  static constexpr int frame_height = 480;
  static constexpr int frame_width = 640;

 private:
  struct state;
  void free_resources() noexcept;
  std::unique_ptr<state> s_;
};

}  // namespace coral::envs::detail
