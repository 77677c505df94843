#include "coral/distributed/local_transport.hpp"

namespace coral::distributed {

std::vector<std::shared_ptr<local_transport>> local_transport::make(std::size_t size) {
  auto boxes = std::make_shared<std::vector<mailbox>>(size);
  std::vector<std::shared_ptr<local_transport>> ranks;
  for (std::size_t r = 0; r < size; ++r) ranks.push_back(std::shared_ptr<local_transport>(new local_transport(r, boxes)));
  return ranks;
}

void local_transport::send(std::size_t to, wire_tag tag, std::vector<std::byte> bytes) {
  auto& box = boxes_->at(to);
  std::lock_guard lock(box.mutex);
  if (box.deaf) return;
  box.messages.push_back({rank_, tag, std::move(bytes)});
}

std::optional<wire_message> local_transport::poll() {
  auto& box = (*boxes_)[rank_];
  std::lock_guard lock(box.mutex);
  if (box.messages.empty()) return std::nullopt;
  auto m = std::move(box.messages.front());
  box.messages.pop_front();
  return m;
}

void local_transport::go_deaf() {
  auto& box = (*boxes_)[rank_];
  std::lock_guard lock(box.mutex);
  box.deaf = true;
  box.messages.clear();
}

}  // namespace coral::distributed
