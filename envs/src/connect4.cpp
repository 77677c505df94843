#include "coral/envs/connect4.hpp"

#include <algorithm>

namespace coral::envs {
namespace {

constexpr int win_score = 1000;
constexpr std::array<int, 7> search_order = {3, 2, 4, 1, 5, 0, 6};  // centre first: earlier cut-offs

int cell(const connect4::board& b, int row, int column) noexcept {
  return b.cells[static_cast<std::size_t>(row * connect4::columns + column)];
}

/// True if the piece at (row, column) is part of four in a line.
bool four_through(const connect4::board& b, int row, int column) noexcept {
  const int mark = cell(b, row, column);
  constexpr std::array<std::array<int, 2>, 4> directions = {{{0, 1}, {1, 0}, {1, 1}, {1, -1}}};
  for (const auto& [dr, dc] : directions) {
    int run = 1;
    for (int sign = -1; sign <= 1; sign += 2) {
      int r = row + sign * dr;
      int c = column + sign * dc;
      while (r >= 0 && r < connect4::rows && c >= 0 && c < connect4::columns && cell(b, r, c) == mark) {
        ++run;
        r += sign * dr;
        c += sign * dc;
      }
    }
    if (run >= 4) return true;
  }
  return false;
}

/// The horizon score of `b` for `player`; see the header.
int evaluate(const connect4::board& b, int player) noexcept {
  const int own = player + 1;
  int score = 0;
  for (int row = 0; row < connect4::rows; ++row) {
    const int centre = cell(b, row, 3);
    score += centre == own ? 3 : centre != 0 ? -3 : 0;
  }
  constexpr std::array<std::array<int, 2>, 4> directions = {{{0, 1}, {1, 0}, {1, 1}, {1, -1}}};
  for (int row = 0; row < connect4::rows; ++row) {
    for (int column = 0; column < connect4::columns; ++column) {
      for (const auto& [dr, dc] : directions) {
        const int end_r = row + 3 * dr;
        const int end_c = column + 3 * dc;
        if (end_r < 0 || end_r >= connect4::rows || end_c < 0 || end_c >= connect4::columns) continue;
        int mine = 0;
        int theirs = 0;
        for (int k = 0; k < 4; ++k) {
          const int v = cell(b, row + k * dr, column + k * dc);
          mine += v == own ? 1 : 0;
          theirs += v != 0 && v != own ? 1 : 0;
        }
        if (theirs == 0) score += mine == 2 ? 2 : mine == 3 ? 5 : 0;
        if (mine == 0) score -= theirs == 2 ? 2 : theirs == 3 ? 5 : 0;
      }
    }
  }
  return score;
}

int negamax(connect4::board& b, int player, int depth, int alpha, int beta) {
  if (b.full()) return 0;
  if (depth == 0) return evaluate(b, player);
  int best = -win_score * 2;
  for (const int column : search_order) {
    if (!b.open(column)) continue;
    const bool won = b.drop(column, player);
    const int v = won ? win_score + depth : -negamax(b, 1 - player, depth - 1, -beta, -alpha);
    b.lift(column);
    best = std::max(best, v);
    alpha = std::max(alpha, v);
    if (alpha >= beta) break;
  }
  return best;
}

}  // namespace

bool connect4::board::drop(int column, int player) noexcept {
  auto& h = heights[static_cast<std::size_t>(column)];
  const int row = h++;
  cells[static_cast<std::size_t>(row * columns + column)] = static_cast<std::int8_t>(player + 1);
  return four_through(*this, row, column);
}

void connect4::board::lift(int column) noexcept {
  auto& h = heights[static_cast<std::size_t>(column)];
  --h;
  cells[static_cast<std::size_t>(h * columns + column)] = 0;
}

bool connect4::board::full() const noexcept {
  return std::all_of(heights.begin(), heights.end(), [](std::int8_t h) { return h >= rows; });
}

std::vector<config_key> connect4::config_keys() {
  auto keys = common_keys("search", "a depth-limited alpha-beta search");
  keys.push_back({.name = "depth", .type = config_type::integer, .default_value = "4",
                  .description = "plies the search opponent looks ahead", .min = 1, .max = 8});
  return keys;
}

connect4::connect4(const env_config& config, env_seed seed)
    : two_player_game(config, seed, "search", rows, columns, 7),
      depth_(static_cast<int>(config.get_int("depth"))),
      first_only_(config.get_string("opponent") != "none" && config.get_string("side") == "first") {}

std::optional<double> connect4::optimal_return() const noexcept {
  // Solved: the first player wins with perfect play. Other settings have no known figure.
  if (first_only_) return 1.0;
  return std::nullopt;
}

std::int32_t connect4::search_move(board b, int player, int depth, rng& r) {
  // Scores at the root without pruning, so that equal moves are really equal.
  std::array<std::int32_t, 7> best{};
  std::size_t count = 0;
  int best_value = -win_score * 4;
  for (int column = 0; column < columns; ++column) {
    if (!b.open(column)) continue;
    const bool won = b.drop(column, player);
    const int v = won ? win_score + depth : -negamax(b, 1 - player, depth - 1, -win_score * 4, win_score * 4);
    b.lift(column);
    if (v > best_value) {
      best_value = v;
      count = 0;
    }
    if (v == best_value) best[count++] = column;
  }
  return count == 0 ? 0 : best[r.below(count)];
}

game_outcome connect4::play(std::int32_t action, int player) {
  if (board_.drop(action, player)) return game_outcome::win;
  if (board_.full()) return game_outcome::draw;
  return game_outcome::running;
}

bool connect4::completes(std::size_t i, int player) const {
  if (board_.cells[i] != 0) return false;
  board b = board_;
  b.cells[i] = static_cast<std::int8_t>(player + 1);
  return four_through(b, static_cast<int>(i) / columns, static_cast<int>(i) % columns);
}

void connect4::write_observation(std::span<float> obs, int player) const {
  const auto own = static_cast<std::int8_t>(player + 1);
  for (std::size_t i = 0; i < board_.cells.size(); ++i) {
    const auto c = board_.cells[i];
    obs[i] = c == 0 ? 0.0F : c == own ? 1.0F : -1.0F;
  }
}

}  // namespace coral::envs
