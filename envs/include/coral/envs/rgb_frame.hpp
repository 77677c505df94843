#pragma once
/// \file
/// `rgb_frame`: an image an env draws its state into (env::render()), and
/// what coral's video writer encodes.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace coral::envs {

/// An RGB image: height × width pixels of 3 bytes (red, green, blue), rows
/// from the top, pixels from the left, no padding: byte (y · width + x) · 3 + c.
///
/// The buffer grows, never shrinks: resizing to a size it has held before
/// does not allocate, so an env that draws frames of one fixed size into the
/// same rgb_frame allocates once, on the first frame.
///
/// Thread safety: none; a plain value.
class rgb_frame {
 public:
  /// An empty frame (0 × 0).
  rgb_frame() = default;

  /// Sets the size to `height` × `width`. The pixels' values are then
  /// unspecified (the drawer paints them all). Allocates only if the buffer
  /// has never held that many bytes.
  void resize(std::size_t height, std::size_t width) {
    const std::size_t bytes = height * width * 3;
    if (bytes > buffer_.size()) buffer_.resize(bytes);
    height_ = height;
    width_ = width;
  }

  /// Rows.
  [[nodiscard]] std::size_t height() const noexcept { return height_; }
  /// Pixels per row.
  [[nodiscard]] std::size_t width() const noexcept { return width_; }
  /// True for a 0 × 0 frame (nothing drawn yet).
  [[nodiscard]] bool empty() const noexcept { return height_ == 0 || width_ == 0; }

  /// The height × width × 3 bytes.
  [[nodiscard]] std::span<std::uint8_t> pixels() noexcept { return {buffer_.data(), height_ * width_ * 3}; }
  /// The height × width × 3 bytes, read-only.
  [[nodiscard]] std::span<const std::uint8_t> pixels() const noexcept {
    return {buffer_.data(), height_ * width_ * 3};
  }

  /// The 3 bytes of pixel (y, x); no bounds check.
  [[nodiscard]] std::uint8_t* at(std::size_t y, std::size_t x) noexcept { return buffer_.data() + (y * width_ + x) * 3; }
  /// The 3 bytes of pixel (y, x), read-only; no bounds check.
  [[nodiscard]] const std::uint8_t* at(std::size_t y, std::size_t x) const noexcept {
    return buffer_.data() + (y * width_ + x) * 3;
  }

 private:
  std::vector<std::uint8_t> buffer_;
  std::size_t height_ = 0;
  std::size_t width_ = 0;
};

}  // namespace coral::envs
