#include "renderer.hpp"

#ifdef CORAL_MUJOCO_RENDER
#include <EGL/egl.h>
#include <EGL/eglext.h>

#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <mujoco/mujoco.h>

#include "coral/core/error.hpp"
#include "coral/envs/errors.hpp"

namespace coral::envs::detail {
namespace {

[[noreturn]] void unavailable(const std::string& why) {
  throw error(fmt::format(fmt::runtime(errors::mujoco_render_unavailable), why));
}

std::string egl_error(const char* what) { return fmt::format("{} failed (EGL error 0x{:x})", what, eglGetError()); }

// The process's surfaceless EGL display, initialised once (never terminated:
// other renderers may share it).
EGLDisplay surfaceless_display() {
  static const EGLDisplay display = [] {
    auto get_display =
        reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(eglGetProcAddress("eglGetPlatformDisplayEXT"));
    if (get_display == nullptr) return EGL_NO_DISPLAY;
    EGLDisplay d = get_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
    EGLint major = 0, minor = 0;
    if (d == EGL_NO_DISPLAY || eglInitialize(d, &major, &minor) != EGL_TRUE) return EGL_NO_DISPLAY;
    return d;
  }();
  return display;
}

// Makes `context` current on this thread for one scope, and releases it after.
class current_context {
 public:
  current_context(EGLDisplay d, EGLContext c) : display_(d) {
    if (eglMakeCurrent(d, EGL_NO_SURFACE, EGL_NO_SURFACE, c) != EGL_TRUE) unavailable(egl_error("eglMakeCurrent"));
  }
  ~current_context() { eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT); }
  current_context(const current_context&) = delete;
  current_context& operator=(const current_context&) = delete;

 private:
  EGLDisplay display_;
};

}  // namespace

struct mujoco_renderer::state {
  EGLDisplay display = EGL_NO_DISPLAY;
  EGLContext context = EGL_NO_CONTEXT;
  mjvScene scene{};
  mjvCamera camera{};
  mjvOption option{};
  mjrContext gpu{};
  bool gpu_made = false;
  bool scene_made = false;
  std::vector<unsigned char> upside_down;  // what glReadPixels gives: the bottom row first
};

mujoco_renderer::mujoco_renderer(const mjModel_& model) : s_(std::make_unique<state>()) {
  s_->display = surfaceless_display();
  if (s_->display == EGL_NO_DISPLAY) {
    unavailable("no EGL display (Mesa's surfaceless platform; Debian: libegl1, libegl-mesa0, libgl1-mesa-dri)");
  }
  const EGLint attributes[] = {EGL_RED_SIZE,     8, EGL_GREEN_SIZE,      8,
                               EGL_BLUE_SIZE,    8, EGL_DEPTH_SIZE,      24,
                               EGL_STENCIL_SIZE, 8, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT,
                               // The default, a window, is what a surfaceless display has none of.
                               EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_NONE};
  EGLConfig config = nullptr;
  EGLint found = 0;
  if (eglChooseConfig(s_->display, attributes, &config, 1, &found) != EGL_TRUE || found < 1) {
    unavailable(egl_error("eglChooseConfig"));
  }
  if (eglBindAPI(EGL_OPENGL_API) != EGL_TRUE) unavailable(egl_error("eglBindAPI(OpenGL)"));
  s_->context = eglCreateContext(s_->display, config, EGL_NO_CONTEXT, nullptr);
  if (s_->context == EGL_NO_CONTEXT) unavailable(egl_error("eglCreateContext"));
  try {
    current_context current(s_->display, s_->context);
    mjv_defaultScene(&s_->scene);
    mjv_defaultCamera(&s_->camera);
    mjv_defaultOption(&s_->option);
    mjr_defaultContext(&s_->gpu);
    mjv_makeScene(&model, &s_->scene, 2000);
    s_->scene_made = true;
    mjr_makeContext(&model, &s_->gpu, mjFONTSCALE_100);  // MuJoCo's errors throw (install_mujoco_handlers)
    s_->gpu_made = true;
    if (s_->gpu.offWidth < frame_width || s_->gpu.offHeight < frame_height) {
      unavailable(fmt::format("the model's offscreen buffer is {}x{}, smaller than {}x{} (<visual><global "
                              "offwidth offheight>)", s_->gpu.offWidth, s_->gpu.offHeight, frame_width, frame_height));
    }
    mjr_setBuffer(mjFB_OFFSCREEN, &s_->gpu);
  } catch (...) {
    free_resources();
    throw;
  }
  // A side view that follows the body the task moves (body 1: the torso, the cart, the pendulum's base).
  s_->camera.type = mjCAMERA_TRACKING;
  s_->camera.trackbodyid = model.nbody > 1 ? 1 : 0;
  s_->camera.distance = 3.0;  // metres: the whole body of each task (stat.extent counts the floor plane too)
  s_->camera.elevation = -15;
  s_->camera.azimuth = 90;
  s_->upside_down.resize(static_cast<std::size_t>(frame_height) * frame_width * 3);
}

mujoco_renderer::~mujoco_renderer() { free_resources(); }

void mujoco_renderer::free_resources() noexcept {
  if (s_ == nullptr) return;
  if (s_->context != EGL_NO_CONTEXT) {
    if (eglMakeCurrent(s_->display, EGL_NO_SURFACE, EGL_NO_SURFACE, s_->context) == EGL_TRUE) {
      if (s_->gpu_made) mjr_freeContext(&s_->gpu);
      eglMakeCurrent(s_->display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    }
    eglDestroyContext(s_->display, s_->context);
  }
  if (s_->scene_made) mjv_freeScene(&s_->scene);
  s_.reset();
}

void mujoco_renderer::draw(const mjModel_& model, const mjData_& data, rgb_frame& frame) {
  current_context current(s_->display, s_->context);
  // mjv_updateScene takes mjData* but only reads it (and its own scratch); the env's state is unchanged.
  mjv_updateScene(&model, const_cast<mjData*>(&data), &s_->option, nullptr, &s_->camera, mjCAT_ALL, &s_->scene);
  const mjrRect viewport{0, 0, frame_width, frame_height};
  mjr_render(viewport, &s_->scene, &s_->gpu);
  mjr_readPixels(s_->upside_down.data(), nullptr, viewport, &s_->gpu);
  frame.resize(frame_height, frame_width);
  const std::size_t row = static_cast<std::size_t>(frame_width) * 3;
  for (std::size_t y = 0; y < static_cast<std::size_t>(frame_height); ++y) {
    std::memcpy(frame.at(y, 0), s_->upside_down.data() + (frame_height - 1 - y) * row, row);
  }
}

}  // namespace coral::envs::detail
#else  // built without EGL: mujoco_env::render() says it does not render and never makes one

namespace coral::envs::detail {
struct mujoco_renderer::state {};
mujoco_renderer::mujoco_renderer(const mjModel_&) {}
mujoco_renderer::~mujoco_renderer() = default;
void mujoco_renderer::free_resources() noexcept {}
void mujoco_renderer::draw(const mjModel_&, const mjData_&, rgb_frame&) {}
}  // namespace coral::envs::detail

#endif
