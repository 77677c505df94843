#pragma once
/// \file
/// `slab<T>`: a pre-allocated, cache-line-aligned 2-D array of trivial values.
///
/// Slabs hold the bulk data of the sampling loop (observations, actions,
/// rewards, flags) as struct-of-arrays: one slab per field, one row per env
/// (or per agent). Rows are packed back to back with no padding, so rows
/// [first, first + count) are one contiguous block that a group of envs owns
/// and that a batcher can hand to a policy as a dense matrix.
///
/// A slab allocates once, in its constructor, and never again: nothing in its
/// interface resizes it. Element values start at zero.
///
/// Thread safety: a slab is plain memory. Distinct rows may be written from
/// distinct threads at the same time; who may touch which row, and when, is
/// the protocol of whoever hands the rows out (the env group and the batcher
/// exchange ownership of rows through messages on channels).

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

namespace coral {

/// A rows × cols array of T, row-major, its storage aligned to `slab_alignment`.
template <class T>
  requires std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>
class slab {
 public:
  /// Alignment of the first element, in bytes (one cache line).
  static constexpr std::size_t alignment = 64;

  /// An empty slab: zero rows, zero columns, no storage.
  slab() noexcept = default;

  /// Allocates rows × cols elements, all zero. Either extent may be zero, in
  /// which case nothing is allocated and every row is an empty span.
  slab(std::size_t rows, std::size_t cols) : rows_(rows), cols_(cols) {
    const std::size_t n = rows * cols;
    if (n > 0) {
      data_.reset(static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{alignment})));
      std::memset(static_cast<void*>(data_.get()), 0, n * sizeof(T));
    }
  }

  slab(slab&& other) noexcept
      : data_(std::move(other.data_)), rows_(std::exchange(other.rows_, 0)), cols_(std::exchange(other.cols_, 0)) {}

  slab& operator=(slab&& other) noexcept {
    data_ = std::move(other.data_);
    rows_ = std::exchange(other.rows_, 0);
    cols_ = std::exchange(other.cols_, 0);
    return *this;
  }

  slab(const slab&) = delete;
  slab& operator=(const slab&) = delete;

  /// Number of rows.
  [[nodiscard]] std::size_t rows() const noexcept { return rows_; }
  /// Number of elements in each row (also the distance between rows).
  [[nodiscard]] std::size_t cols() const noexcept { return cols_; }
  /// rows() × cols().
  [[nodiscard]] std::size_t size() const noexcept { return rows_ * cols_; }

  /// First element; null when size() is 0.
  [[nodiscard]] T* data() noexcept { return data_.get(); }
  /// First element; null when size() is 0.
  [[nodiscard]] const T* data() const noexcept { return data_.get(); }

  /// Row r (r < rows(), unchecked).
  [[nodiscard]] std::span<T> row(std::size_t r) noexcept { return {data_.get() + r * cols_, cols_}; }
  /// Row r (r < rows(), unchecked).
  [[nodiscard]] std::span<const T> row(std::size_t r) const noexcept { return {data_.get() + r * cols_, cols_}; }

  /// Rows [first, first + count) as one contiguous span of count × cols() elements (unchecked).
  [[nodiscard]] std::span<T> block(std::size_t first, std::size_t count) noexcept {
    return {data_.get() + first * cols_, count * cols_};
  }
  /// Rows [first, first + count) as one contiguous span of count × cols() elements (unchecked).
  [[nodiscard]] std::span<const T> block(std::size_t first, std::size_t count) const noexcept {
    return {data_.get() + first * cols_, count * cols_};
  }

  /// Element (r, c) (unchecked).
  [[nodiscard]] T& operator()(std::size_t r, std::size_t c) noexcept { return data_[r * cols_ + c]; }
  /// Element (r, c) (unchecked).
  [[nodiscard]] const T& operator()(std::size_t r, std::size_t c) const noexcept { return data_[r * cols_ + c]; }

  /// Sets every element to `value`.
  void fill(const T& value) noexcept {
    for (std::size_t i = 0; i < size(); ++i) data_[i] = value;
  }

 private:
  struct aligned_delete {
    void operator()(T* p) const noexcept { ::operator delete(static_cast<void*>(p), std::align_val_t{alignment}); }
  };

  std::unique_ptr<T[], aligned_delete> data_;
  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
};

}  // namespace coral
