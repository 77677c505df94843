#include "coral/envs/tictactoe.hpp"
#include "coral/envs/connect4.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "coral/core/error.hpp"
#include "coral/core/rng.hpp"
#include "harness.hpp"

using namespace coral::envs;
using coral::envs::testing::harness;

namespace {

// Plays `moves` alternately in a two-agent game (slot 0 first); returns after the last.
void play(harness& h, const std::vector<std::int32_t>& moves) {
  for (const auto m : moves) {
    const std::size_t mover = h.batch.active()[0] != 0 ? 0 : 1;
    REQUIRE(h.batch.active()[1 - mover] == 0);
    h.batch.discrete_actions()(mover, 0) = m;
    h.slice.step_all();
  }
}

std::vector<std::uint8_t> mask(const harness& h, std::size_t row) {
  auto m = h.batch.action_masks().row(row);
  return {m.begin(), m.end()};
}

}  // namespace

TEST_CASE("tictactoe: two slots take turns, full cells are masked, and a row win ends both rows",
          "[envs][tictactoe][multiagent]") {
  harness h("tictactoe", {}, 1);
  h.slice.set_autoreset(false);
  CHECK(h.batch.teams()[0] == 0);
  CHECK(h.batch.teams()[1] == 1);
  h.slice.reset_all();
  CHECK(h.batch.active()[0] == 1);
  CHECK(h.batch.active()[1] == 0);
  play(h, {4});
  CHECK(mask(h, 1) == std::vector<std::uint8_t>{1, 1, 1, 1, 0, 1, 1, 1, 1});
  CHECK(h.obs(1)[4] == -1.0F);  // the other's mark, seen by slot 1
  CHECK(h.obs(0)[4] == 1.0F);
  // X: 4, 3, 5 wins the middle row; O: 0, 8.
  play(h, {0, 3, 8, 5});
  CHECK(h.batch.terminated()[0] == 1);
  CHECK(h.batch.terminated()[1] == 1);  // the waiting player learns the outcome on the same step
  CHECK(h.batch.rewards()[0] == 1.0F);
  CHECK(h.batch.rewards()[1] == -1.0F);
  CHECK(h.batch.episode_returns()[1] == -1.0F);
  CHECK(h.batch.episode_lengths()[0] == 3);
  CHECK(h.batch.episode_lengths()[1] == 2);  // the losing step was not one of its moves
}

TEST_CASE("tictactoe: column and diagonal wins, a draw, and an illegal move loses", "[envs][tictactoe]") {
  tictactoe::board column{1, 2, 0, 1, 2, 0, 1, 0, 0};
  CHECK(tictactoe::wins(column, 0));
  CHECK_FALSE(tictactoe::wins(column, 1));
  tictactoe::board diagonal{0, 0, 2, 1, 2, 1, 2, 1, 0};
  CHECK(tictactoe::wins(diagonal, 1));

  harness h("tictactoe", {}, 1);
  h.slice.set_autoreset(false);
  h.slice.reset_all();
  // X O X / X O O / O X X: a draw.
  play(h, {0, 1, 2, 4, 3, 5, 7, 6, 8});
  CHECK(h.batch.terminated()[0] == 1);
  CHECK(h.batch.terminated()[1] == 1);
  CHECK(h.batch.rewards()[0] == 0.0F);
  CHECK(h.batch.rewards()[1] == 0.0F);

  h.slice.reset_all();
  play(h, {4, 4});  // O marks a taken cell
  CHECK(h.batch.rewards()[1] == -1.0F);
  CHECK(h.batch.rewards()[0] == 1.0F);
  CHECK(h.batch.terminated()[0] == 1);
}

TEST_CASE("tictactoe: minimax values the empty board a draw and takes a win or blocks one",
          "[envs][tictactoe][minimax]") {
  coral::rng r(coral::env_seed{1, 0});
  CHECK(tictactoe::value(tictactoe::board{}, 0) == 0);
  // X to move with 0 and 1 marked: 2 wins.
  CHECK(tictactoe::minimax_move({1, 1, 0, 2, 2, 0, 0, 0, 0}, 0, r) == 2);
  // O to move, X threatens 1-4-7: O must take 7 (and holds the draw).
  CHECK(tictactoe::value({2, 1, 0, 0, 1, 0, 0, 0, 0}, 1) == 0);
  CHECK(tictactoe::minimax_move({2, 1, 0, 0, 1, 0, 0, 0, 0}, 1, r) == 7);
}

TEST_CASE("tictactoe: minimax never loses against random play, as either player", "[envs][tictactoe][minimax]") {
  int losses = 0;
  int games = 0;
  coral::rng agent(coral::env_seed{3, 0});
  for (const char* side : {"first", "second"}) {
    harness h("tictactoe", {{"opponent", "minimax"}, {"side", side}}, 11);
    CHECK(h.batch.rows() == 1);
    h.slice.reset_all();
    while (games < 1000) {
      // A random legal cell for the agent.
      std::vector<std::int32_t> legal;
      for (std::int32_t a = 0; a < 9; ++a) {
        if (h.batch.action_masks()(0, static_cast<std::size_t>(a)) != 0) legal.push_back(a);
      }
      REQUIRE_FALSE(legal.empty());
      h.batch.discrete_actions()(0, 0) = legal[agent.below(legal.size())];
      h.slice.step_all();
      if (h.batch.terminated()[0] != 0) {
        ++games;
        losses += h.batch.rewards()[0] > 0.0F ? 1 : 0;  // the agent won: minimax lost
        if (games % 500 == 0) break;
      }
    }
  }
  CHECK(games == 1000);
  CHECK(losses == 0);
}

TEST_CASE("connect4: a full column is masked, and vertical, horizontal and diagonal fours win",
          "[envs][connect4][multiagent]") {
  harness h("connect4", {}, 1);
  h.slice.set_autoreset(false);
  h.slice.reset_all();
  play(h, {0, 0, 0, 0, 0, 0});
  CHECK(mask(h, 0) == std::vector<std::uint8_t>{0, 1, 1, 1, 1, 1, 1});
  CHECK(h.batch.observations()(0, 35) == -1.0F);  // row 5, column 0: the second player's piece, to slot 0

  h.slice.reset_all();
  play(h, {1, 2, 1, 2, 1, 2, 1});  // four in column 1
  CHECK(h.batch.rewards()[0] == 1.0F);
  CHECK(h.batch.rewards()[1] == -1.0F);

  connect4::board b;
  CHECK_FALSE(b.drop(0, 0));
  CHECK_FALSE(b.drop(1, 0));
  CHECK_FALSE(b.drop(2, 0));
  CHECK(b.drop(3, 0));  // horizontal
  connect4::board d;
  // A rising diagonal for player 1 from (0,0): columns 0..3 filled to heights 1..4.
  CHECK_FALSE(d.drop(0, 1));
  CHECK_FALSE(d.drop(1, 0));
  CHECK_FALSE(d.drop(1, 1));
  CHECK_FALSE(d.drop(2, 0));
  CHECK_FALSE(d.drop(2, 0));
  CHECK_FALSE(d.drop(2, 1));
  CHECK_FALSE(d.drop(3, 0));
  CHECK_FALSE(d.drop(3, 0));
  CHECK_FALSE(d.drop(3, 0));
  CHECK(d.drop(3, 1));
}

TEST_CASE("connect4: the search opponent takes an immediate win and blocks an immediate loss",
          "[envs][connect4][search]") {
  coral::rng r(coral::env_seed{1, 0});
  connect4::board threat;  // player 0 has three in column 5; player 1 to move
  threat.drop(5, 0);
  threat.drop(0, 1);
  threat.drop(5, 0);
  threat.drop(6, 1);
  threat.drop(5, 0);
  for (int depth = 2; depth <= 4; ++depth) CHECK(connect4::search_move(threat, 1, depth, r) == 5);
  connect4::board win;  // player 1 has three in a row on the bottom: 1, 2, 3
  win.drop(1, 1);
  win.drop(2, 1);
  win.drop(3, 1);
  win.drop(1, 0);
  win.drop(2, 0);
  win.drop(6, 0);
  for (int depth = 1; depth <= 4; ++depth) {
    const auto m = connect4::search_move(win, 1, depth, r);
    CHECK((m == 0 || m == 4));
  }
}

TEST_CASE("connect4 against the search opponent has one row, active every step", "[envs][connect4]") {
  harness h("connect4", {{"opponent", "search"}, {"side", "second"}, {"depth", "2"}}, 3);
  CHECK(h.batch.rows() == 1);
  h.slice.reset_all();
  int pieces = 0;
  for (const auto c : h.obs(0)) pieces += c != 0.0F ? 1 : 0;
  CHECK(pieces == 1);  // the opponent moved first
  h.batch.discrete_actions()(0, 0) = 3;
  h.slice.step_all();
  CHECK(h.batch.active()[0] == 1);
}

TEST_CASE("a two-agent game's opening plays 0 to N random moves; with an opponent the board starts empty",
          "[envs][tictactoe][connect4]") {
  for (const char* game : {"tictactoe", "connect4"}) {
    INFO(game);
    std::vector<int> seen(5, 0);
    for (std::uint64_t seed = 0; seed < 60; ++seed) {
      harness h(game, {{"opening", "4"}}, seed);
      h.slice.reset_all();
      // Pieces on the board, from the mover's row: own and the other's.
      const std::size_t mover = h.batch.active()[0] != 0 ? 0 : 1;
      REQUIRE(h.batch.active()[1 - mover] == 0);
      int own = 0, other = 0;
      for (const float x : h.batch.observations().row(mover)) {
        own += x > 0 ? 1 : 0;
        other += x < 0 ? 1 : 0;
      }
      const int moves = own + other;
      REQUIRE(moves <= 4);
      ++seen[static_cast<std::size_t>(moves)];
      // The first player has moved as often as the second, or once more: it is the second's turn then.
      CHECK(mover == static_cast<std::size_t>(moves % 2));
      CHECK(other == (moves + 1) / 2);
      // The mask leaves the occupied cells (tic-tac-toe) out.
      if (std::string(game) == "tictactoe") {
        const auto m = h.batch.action_masks().row(mover);
        int legal = 0;
        for (const auto b : m) legal += b;
        CHECK(legal == 9 - moves);
      }
    }
    for (int k = 0; k <= 4; ++k) CHECK(seen[static_cast<std::size_t>(k)] > 0);
    harness opponent(game, {{"opening", "4"}, {"opponent", "random"}, {"side", "first"}}, 1);
    opponent.slice.reset_all();
    for (const float x : opponent.batch.observations().row(0)) CHECK(x == 0.0f);
  }
}

// Plays the same three moves with the default board and with `board`, and
// after each calls check(signs row, `board` row) for both rows.
template <class Check>
void same_moves(const char* game, const char* board, Check check) {
  harness signs(game, {}, 3);
  harness other(game, {{"board", board}}, 3);
  signs.slice.reset_all();
  other.slice.reset_all();
  for (int move = 0; move < 3; ++move) {
    const std::size_t mover = signs.batch.active()[0] != 0 ? 0 : 1;
    signs.batch.discrete_actions()(mover, 0) = move;
    other.batch.discrete_actions()(mover, 0) = move;
    signs.slice.step_all();
    other.slice.step_all();
    for (std::size_t row = 0; row < 2; ++row) check(signs.batch.observations().row(row), other.batch.observations().row(row));
  }
}

TEST_CASE("board=cells observes each cell as a category: 0 empty, 1 own, 2 the other's", "[envs][tictactoe][connect4]") {
  for (const char* game : {"tictactoe", "connect4"}) {
    INFO(game);
    harness cells(game, {{"board", "cells"}}, 3);
    const auto& space = cells.slice.at(0).observation_space();
    REQUIRE(space.kind() == space_kind::multi_discrete);
    CHECK(space.nvec() == std::vector<std::int32_t>(harness(game, {}, 3).slice.at(0).observation_space().flat_size(), 3));
    // Each row's cells say what its signs say.
    same_moves(game, "cells", [](auto s, auto c) {
      for (std::size_t i = 0; i < s.size(); ++i) CHECK(c[i] == (s[i] > 0 ? 1.0f : s[i] < 0 ? 2.0f : 0.0f));
    });
  }
  CHECK_THROWS_AS(harness("tictactoe", {{"board", "pieces"}}, 1), coral::config_error);
}

TEST_CASE("board=planes observes the grid as two planes: own pieces, the other's", "[envs][tictactoe][connect4]") {
  for (const auto& [game, rows, columns] : {std::tuple{"tictactoe", 3U, 3U}, std::tuple{"connect4", 6U, 7U}}) {
    INFO(game);
    harness planes(game, {{"board", "planes"}}, 3);
    const auto& space = planes.slice.at(0).observation_space();
    REQUIRE(space.kind() == space_kind::box);
    CHECK(space.shape() == std::vector<std::size_t>{rows, columns, 2});
    float last_pieces = 0;
    same_moves(game, "planes", [&](auto s, auto p) {
      REQUIRE(p.size() == 2 * s.size());
      float pieces = 0;
      for (std::size_t i = 0; i < s.size(); ++i) {
        CHECK(p[2 * i] == (s[i] > 0 ? 1.0f : 0.0f));
        CHECK(p[2 * i + 1] == (s[i] < 0 ? 1.0f : 0.0f));
        pieces += p[2 * i] + p[2 * i + 1];
      }
      last_pieces = pieces;
    });
    CHECK(last_pieces == 3.0f);  // three moves in, three pieces on the planes
  }
}

namespace {

// The lines of a game as lists of cells (row-major on its grid): three in a
// row on 3 x 3, four in a row on 6 x 7.
std::vector<std::vector<std::size_t>> lines_of(std::size_t rows, std::size_t columns, std::size_t length) {
  std::vector<std::vector<std::size_t>> lines;
  const std::array<std::array<int, 2>, 4> directions = {{{0, 1}, {1, 0}, {1, 1}, {1, -1}}};
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < columns; ++c) {
      for (const auto& [dr, dc] : directions) {
        std::vector<std::size_t> line;
        for (std::size_t k = 0; k < length; ++k) {
          const auto rr = static_cast<long>(r) + static_cast<long>(k) * dr;
          const auto cc = static_cast<long>(c) + static_cast<long>(k) * dc;
          if (rr < 0 || cc < 0 || rr >= static_cast<long>(rows) || cc >= static_cast<long>(columns)) break;
          line.push_back(static_cast<std::size_t>(rr) * columns + static_cast<std::size_t>(cc));
        }
        if (line.size() == length) lines.push_back(line);
      }
    }
  }
  return lines;
}

}  // namespace

TEST_CASE("board=threats adds the cells where one's own piece, or the other's, would complete a line",
          "[envs][tictactoe][connect4]") {
  for (const auto& [game, rows, columns, length] :
       {std::tuple{"tictactoe", 3U, 3U, 3U}, std::tuple{"connect4", 6U, 7U, 4U}}) {
    INFO(game);
    harness h(game, {{"board", "threats"}}, 11);
    const auto& space = h.slice.at(0).observation_space();
    REQUIRE(space.kind() == space_kind::box);
    CHECK(space.shape() == std::vector<std::size_t>{rows, columns, 4});
    const auto lines = lines_of(rows, columns, length);
    const std::size_t cells = rows * columns;
    coral::rng moves(5);
    h.slice.reset_all();
    std::size_t threats_seen = 0;
    // Random games; after each move both rows' threat planes are what a scan
    // of the lines over their own two planes finds.
    for (int step = 0; step < 400; ++step) {
      for (std::size_t row = 0; row < 2; ++row) {
        const auto o = h.batch.observations().row(row);
        for (std::size_t i = 0; i < cells; ++i) {
          bool own = false;
          bool other = false;
          if (o[4 * i] == 0.0f && o[4 * i + 1] == 0.0f) {
            for (const auto& line : lines) {
              if (std::find(line.begin(), line.end(), i) == line.end()) continue;
              bool all_own = true;
              bool all_other = true;
              for (const auto j : line) {
                if (j == i) continue;
                all_own = all_own && o[4 * j] == 1.0f;
                all_other = all_other && o[4 * j + 1] == 1.0f;
              }
              own = own || all_own;
              other = other || all_other;
            }
          }
          CHECK(o[4 * i + 2] == (own ? 1.0f : 0.0f));
          CHECK(o[4 * i + 3] == (other ? 1.0f : 0.0f));
          threats_seen += own || other ? 1 : 0;
        }
      }
      const std::size_t mover = h.batch.active()[0] != 0 ? 0 : 1;
      std::vector<std::int32_t> legal;
      const auto m = h.batch.action_masks().row(mover);
      for (std::size_t a = 0; a < m.size(); ++a) {
        if (m[a] != 0) legal.push_back(static_cast<std::int32_t>(a));
      }
      // A row whose game just ended (a full board: nothing legal) is reset by the step.
      h.batch.discrete_actions()(mover, 0) = legal.empty() ? 0 : legal[moves.below(legal.size())];
      h.slice.step_all();
    }
    CHECK(threats_seen > 50);  // the random games made threats to check
  }
}
