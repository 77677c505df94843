#pragma once
// Filled shapes on an rgb_frame, for the envs' render(): what a rasteriser of
// a few boxes, poles and cells needs. Coordinates are pixels, x to the right
// and y down from the frame's top-left corner; a pixel is painted when its
// centre (x + 0.5, y + 0.5) lies inside the shape. Everything is clipped to
// the frame. No allocation.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "coral/envs/rgb_frame.hpp"

namespace coral::envs::canvas {

/// A colour.
struct rgb {
  std::uint8_t r = 0, g = 0, b = 0;
};

/// A point in pixel coordinates.
struct point {
  double x = 0, y = 0;
};

inline void put(rgb_frame& f, std::size_t y, std::size_t x, rgb c) noexcept {
  std::uint8_t* p = f.at(y, x);
  p[0] = c.r;
  p[1] = c.g;
  p[2] = c.b;
}

/// Paints every pixel.
inline void fill(rgb_frame& f, rgb c) noexcept {
  for (std::size_t y = 0; y < f.height(); ++y) {
    for (std::size_t x = 0; x < f.width(); ++x) put(f, y, x, c);
  }
}

// The pixel range [first, last) whose centres lie in [lo, hi), clipped to [0, size).
inline std::array<std::size_t, 2> span_of(double lo, double hi, std::size_t size) noexcept {
  const double first = std::clamp(std::ceil(lo - 0.5), 0.0, static_cast<double>(size));
  const double last = std::clamp(std::ceil(hi - 0.5), 0.0, static_cast<double>(size));
  return {static_cast<std::size_t>(first), static_cast<std::size_t>(std::max(first, last))};
}

/// Paints the axis-aligned rectangle [x0, x1) × [y0, y1).
inline void fill_rect(rgb_frame& f, double x0, double y0, double x1, double y1, rgb c) noexcept {
  const auto xs = span_of(x0, x1, f.width());
  const auto ys = span_of(y0, y1, f.height());
  for (std::size_t y = ys[0]; y < ys[1]; ++y) {
    for (std::size_t x = xs[0]; x < xs[1]; ++x) put(f, y, x, c);
  }
}

/// Paints the convex quadrilateral with corners `q` in order (either winding).
inline void fill_quad(rgb_frame& f, const std::array<point, 4>& q, rgb c) noexcept {
  double x0 = q[0].x, x1 = q[0].x, y0 = q[0].y, y1 = q[0].y;
  for (const point& p : q) {
    x0 = std::min(x0, p.x);
    x1 = std::max(x1, p.x);
    y0 = std::min(y0, p.y);
    y1 = std::max(y1, p.y);
  }
  const auto xs = span_of(x0, x1, f.width());
  const auto ys = span_of(y0, y1, f.height());
  // Inside: the centre is on the same side of all four edges.
  auto side = [&](std::size_t i, double px, double py) {
    const point& a = q[i];
    const point& b = q[(i + 1) % 4];
    return (b.x - a.x) * (py - a.y) - (b.y - a.y) * (px - a.x);
  };
  for (std::size_t y = ys[0]; y < ys[1]; ++y) {
    for (std::size_t x = xs[0]; x < xs[1]; ++x) {
      const double px = static_cast<double>(x) + 0.5;
      const double py = static_cast<double>(y) + 0.5;
      bool any_negative = false, any_positive = false;
      for (std::size_t i = 0; i < 4; ++i) {
        const double s = side(i, px, py);
        any_negative = any_negative || s < 0;
        any_positive = any_positive || s > 0;
      }
      if (!(any_negative && any_positive)) put(f, y, x, c);
    }
  }
}

/// Paints a bar of width `width` from `a` to `b` (a thick line with square ends).
inline void fill_bar(rgb_frame& f, point a, point b, double width, rgb c) noexcept {
  const double dx = b.x - a.x, dy = b.y - a.y;
  const double length = std::hypot(dx, dy);
  if (length == 0) return;
  const double nx = -dy / length * width / 2, ny = dx / length * width / 2;
  fill_quad(f, {point{a.x + nx, a.y + ny}, point{b.x + nx, b.y + ny}, point{b.x - nx, b.y - ny}, point{a.x - nx, a.y - ny}},
            c);
}

/// Paints the disc of radius `r` around (cx, cy).
inline void fill_circle(rgb_frame& f, double cx, double cy, double r, rgb c) noexcept {
  const auto xs = span_of(cx - r, cx + r, f.width());
  const auto ys = span_of(cy - r, cy + r, f.height());
  for (std::size_t y = ys[0]; y < ys[1]; ++y) {
    for (std::size_t x = xs[0]; x < xs[1]; ++x) {
      const double ex = static_cast<double>(x) + 0.5 - cx, ey = static_cast<double>(y) + 0.5 - cy;
      if (ex * ex + ey * ey <= r * r) put(f, y, x, c);
    }
  }
}

}  // namespace coral::envs::canvas
