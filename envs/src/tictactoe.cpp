#include "coral/envs/tictactoe.hpp"

#include <algorithm>

namespace coral::envs {
namespace {

constexpr std::array<std::array<int, 3>, 8> lines = {{
    {0, 1, 2}, {3, 4, 5}, {6, 7, 8},  // rows
    {0, 3, 6}, {1, 4, 7}, {2, 5, 8},  // columns
    {0, 4, 8}, {2, 4, 6},             // diagonals
}};

std::size_t index_of(const tictactoe::board& b) noexcept {
  std::size_t index = 0;
  for (const auto c : b) index = index * 3 + static_cast<std::size_t>(c);
  return index;
}

constexpr std::int8_t unknown = 2;

/// Negamax over every position reachable from `b`, memoised in `table`.
int solve(tictactoe::board& b, int player, std::vector<std::int8_t>& table) {
  std::int8_t& memo = table[index_of(b)];
  if (memo != unknown) return memo;
  int best = -2;
  bool any = false;
  for (std::size_t cell = 0; cell < 9; ++cell) {
    if (b[cell] != 0) continue;
    any = true;
    b[cell] = static_cast<std::int8_t>(player + 1);
    const int v = tictactoe::wins(b, player) ? 1 : -solve(b, 1 - player, table);
    b[cell] = 0;
    best = std::max(best, v);
  }
  memo = static_cast<std::int8_t>(any ? best : 0);
  return memo;
}

/// The value of every position for the player to move, computed once.
const std::vector<std::int8_t>& value_table() {
  static const std::vector<std::int8_t> table = [] {
    std::vector<std::int8_t> t(19683, unknown);
    tictactoe::board b{};
    (void)solve(b, 0, t);
    return t;
  }();
  return table;
}

}  // namespace

std::vector<config_key> tictactoe::config_keys() { return common_keys("minimax", "perfect play"); }

tictactoe::tictactoe(const env_config& config, env_seed seed)
    : two_player_game(config, seed, "minimax", 3, 3, 9) {}

bool tictactoe::wins(const board& b, int player) noexcept {
  const auto mark = static_cast<std::int8_t>(player + 1);
  return std::any_of(lines.begin(), lines.end(), [&](const auto& l) {
    return b[l[0]] == mark && b[l[1]] == mark && b[l[2]] == mark;
  });
}

int tictactoe::value(const board& b, int player) {
  // Positions off the path from the empty board (hand-made ones with the
  // wrong player to move) are solved on the spot.
  const auto& table = value_table();
  if (const auto v = table[index_of(b)]; v != unknown) return v;
  board copy = b;
  std::vector<std::int8_t> scratch(19683, unknown);
  return solve(copy, player, scratch);
}

std::int32_t tictactoe::minimax_move(const board& b, int player, rng& r) {
  std::array<std::int32_t, 9> best{};
  std::size_t count = 0;
  int best_value = -2;
  board next = b;
  for (std::size_t cell = 0; cell < 9; ++cell) {
    if (b[cell] != 0) continue;
    next[cell] = static_cast<std::int8_t>(player + 1);
    const bool full = std::none_of(next.begin(), next.end(), [](std::int8_t c) { return c == 0; });
    const int v = wins(next, player) ? 1 : full ? 0 : -value(next, 1 - player);
    next[cell] = 0;
    if (v > best_value) {
      best_value = v;
      count = 0;
    }
    if (v == best_value) best[count++] = static_cast<std::int32_t>(cell);
  }
  return count == 0 ? 0 : best[r.below(count)];
}

game_outcome tictactoe::play(std::int32_t action, int player) {
  board_[static_cast<std::size_t>(action)] = static_cast<std::int8_t>(player + 1);
  if (wins(board_, player)) return game_outcome::win;
  if (std::none_of(board_.begin(), board_.end(), [](std::int8_t c) { return c == 0; })) return game_outcome::draw;
  return game_outcome::running;
}

bool tictactoe::completes(std::size_t cell, int player) const {
  if (board_[cell] != 0) return false;
  board b = board_;
  b[cell] = static_cast<std::int8_t>(player + 1);
  return wins(b, player);
}

void tictactoe::write_observation(std::span<float> obs, int player) const {
  const auto own = static_cast<std::int8_t>(player + 1);
  for (std::size_t cell = 0; cell < 9; ++cell) {
    obs[cell] = board_[cell] == 0 ? 0.0F : board_[cell] == own ? 1.0F : -1.0F;
  }
}

}  // namespace coral::envs
