#pragma once
/// \file
/// latest<T>: a versioned latest-value cell, how the learner broadcasts
/// weights to the inference batcher.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

namespace coral {

/// A value published with its version.
template <class T>
struct versioned {
  std::shared_ptr<const T> value;  ///< immutable snapshot; null before the first publish
  std::uint64_t version = 0;       ///< 0 before the first publish, then 1, 2, ...
};

/// Holds the newest published value of T and its version.
///
/// Writers publish immutable snapshots; readers take the newest one without
/// waiting for writers and without copying T (they share the snapshot, which
/// lives as long as any reader holds it). Versions increase by one per
/// publish, so a reader knows how stale its copy is (policy lag).
///
/// Thread safety: every member may be called from any thread at once.
/// Readers never block on a writer's copy of T: publish() builds the snapshot
/// before swapping a pointer in.
template <class T>
class latest {
 public:
  /// Publishes `value` as the next version and returns that version.
  std::uint64_t publish(T value) {
    auto next = std::make_shared<node>();
    next->value = std::make_shared<const T>(std::move(value));
    std::uint64_t v = 0;
    auto cur = head_.load(std::memory_order_acquire);
    do {
      v = (cur ? cur->version : 0) + 1;
      next->version = v;
    } while (!head_.compare_exchange_weak(cur, next, std::memory_order_acq_rel,
                                          std::memory_order_acquire));
    // Concurrent publishers may finish out of order: only ever raise version_.
    auto seen = version_.load(std::memory_order_relaxed);
    while (seen < v && !version_.compare_exchange_weak(seen, v, std::memory_order_release,
                                                       std::memory_order_relaxed)) {
    }
    return v;
  }

  /// The newest value and its version ({nullptr, 0} before any publish).
  [[nodiscard]] versioned<T> read() const {
    auto cur = head_.load(std::memory_order_acquire);
    if (!cur) return {};
    return {cur->value, cur->version};
  }

  /// The newest value if its version is newer than `seen`, else nullopt.
  /// Cheap when nothing changed: one atomic load, no reference counting.
  [[nodiscard]] std::optional<versioned<T>> read_newer(std::uint64_t seen) const {
    if (version_.load(std::memory_order_acquire) <= seen) return std::nullopt;
    auto v = read();
    if (v.version <= seen) return std::nullopt;
    return v;
  }

  /// The newest version published (0 if none).
  [[nodiscard]] std::uint64_t version() const noexcept {
    return version_.load(std::memory_order_acquire);
  }

 private:
  struct node {
    std::shared_ptr<const T> value;
    std::uint64_t version = 0;
  };
  std::atomic<std::shared_ptr<node>> head_;
  std::atomic<std::uint64_t> version_{0};
};

}  // namespace coral
