#pragma once
// Private: a copy of a replay actor's state taken while the run goes on
// (DQN's and R2D2's checkpoints).

#include <cstdint>
#include <vector>

#include <asio/awaitable.hpp>

#include "coral/replay/basic_replay_actor.hpp"

namespace coral::training::detail {

/// Asks `replay` for a copy of its state, taken between two of its messages
/// and sent back by value (no code of ours runs on the replay actor), and
/// moves it into `out`. False when the replay closed first (the run is
/// stopping; the final checkpoint follows).
template <class Actor>
asio::awaitable<bool> snapshot_replay(Actor& replay, std::uint64_t tag, std::vector<char>& out) {
  typename Actor::message ask(replay::snapshot_request{tag});
  const bool asked = co_await replay.inbox().async_send(std::move(ask));
  if (!asked) co_return false;
  auto snap = co_await replay.snapshots().async_receive();
  if (!snap) co_return false;
  out = std::move(snap->state);
  co_return true;
}

}  // namespace coral::training::detail
