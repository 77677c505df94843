#pragma once
/// \file
/// latest<T>: a versioned latest-value cell, how the learner broadcasts
/// weights to the inference batcher.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
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
/// Readers never wait for a writer's copy of T: publish() builds the
/// snapshot first, then swaps a pointer in under a short lock.
template <class T>
class latest {
 public:
  /// Publishes `value` as the next version and returns that version.
  std::uint64_t publish(T value) {
    auto snapshot = std::make_shared<const T>(std::move(value));
    std::shared_ptr<const T> old;  // released outside the lock
    std::lock_guard lock(mutex_);
    old = std::exchange(value_, std::move(snapshot));
    const auto v = version_.load(std::memory_order_relaxed) + 1;
    version_.store(v, std::memory_order_release);
    return v;
  }

  /// Publishes `value` as version `version`, which must be newer than the
  /// current one (versions may skip: a distributed run's samplers publish
  /// the learner's numbering and may miss versions it replaced). Returns
  /// false, publishing nothing, when `version` is not newer.
  bool publish(T value, std::uint64_t version) {
    auto snapshot = std::make_shared<const T>(std::move(value));
    std::shared_ptr<const T> old;  // released outside the lock
    std::lock_guard lock(mutex_);
    if (version <= version_.load(std::memory_order_relaxed)) return false;
    old = std::exchange(value_, std::move(snapshot));
    version_.store(version, std::memory_order_release);
    return true;
  }
  /// The newest value and its version ({nullptr, 0} before any publish).
  [[nodiscard]] versioned<T> read() const {
    std::lock_guard lock(mutex_);
    return {value_, version_.load(std::memory_order_relaxed)};
  }

  /// The newest value if its version is newer than `seen`, else nullopt.
  /// Cheap when nothing changed: one atomic load, no lock, no reference count.
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
  // A mutex rather than std::atomic<std::shared_ptr>: the critical sections
  // are a pointer copy, readers enter only when the version moved (once per
  // learner update), and libstdc++ 12's atomic<shared_ptr> draws race reports
  // from ThreadSanitizer.
  mutable std::mutex mutex_;
  std::shared_ptr<const T> value_;
  std::atomic<std::uint64_t> version_{0};
};

}  // namespace coral
