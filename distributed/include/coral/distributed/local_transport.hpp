#pragma once
/// \file
/// Ranks that are threads of one process: the transport the tests run
/// distributed runs over, under the sanitizers.

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "coral/distributed/transport.hpp"

namespace coral::distributed {

/// Ranks that are threads of one process: `size` endpoints sharing mailboxes.
/// Delivery is immediate (in_flight() is 0 unless a test holds a rank's mail).
///
/// Thread safety: each endpoint is used by one thread at a time; endpoints
/// may be used from different threads at once.
class local_transport final : public transport {
 public:
  /// The endpoints of `size` ranks, index = rank.
  [[nodiscard]] static std::vector<std::shared_ptr<local_transport>> make(std::size_t size);

  std::size_t rank() const override { return rank_; }
  std::size_t size() const override { return boxes_->size(); }
  void send(std::size_t to, wire_tag tag, std::vector<std::byte> bytes) override;
  std::size_t in_flight(std::size_t, wire_tag) override { return 0; }
  std::size_t in_flight() override { return 0; }
  std::optional<wire_message> poll() override;

  /// Drops everything sent to this rank from now on (a test's dead rank).
  void go_deaf();

 private:
  struct mailbox {
    std::mutex mutex;
    std::deque<wire_message> messages;
    bool deaf = false;
  };
  local_transport(std::size_t rank, std::shared_ptr<std::vector<mailbox>> boxes)
      : rank_(rank), boxes_(std::move(boxes)) {}

  std::size_t rank_;
  std::shared_ptr<std::vector<mailbox>> boxes_;
};

}  // namespace coral::distributed
