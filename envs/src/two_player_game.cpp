#include "coral/envs/two_player_game.hpp"

#include <fmt/format.h>

namespace coral::envs {

std::vector<config_key> two_player_game::common_keys(std::string_view reference, std::string_view reference_what) {
  return {{.name = "opponent", .type = config_type::text, .default_value = "none",
           .description = fmt::format("none (two agent slots, one per player), random, or {} ({}; also named "
                                      "reference) playing the other side inside the env (one agent slot)",
                                      reference, reference_what)},
          {.name = "side", .type = config_type::text, .default_value = "random",
           .description = "with an opponent: the agent's side, first, second or random (drawn each episode)"},
          {.name = "board", .type = config_type::text, .default_value = "signs",
           .description = "the observation: signs (a Box, +1 own piece, -1 the other's, 0 empty), cells (a "
                          "MultiDiscrete of 3 per cell: 0 empty, 1 own, 2 the other's; PPO sees it one-hot) or "
                          "planes (a Box of rows x columns x 2 in [0, 1]: own pieces, the other's; for --conv) or "
                          "threats (planes, and 2 more: the empty cells where a piece of one's own, or of the "
                          "other's, would complete a line)"},
          {.name = "opening", .default_value = "0",
           .description = "two agent slots only: each game starts after a number of random moves drawn from 0 to "
                          "this (training on varied positions; ignored with an opponent)",
           .min = 0, .max = 4}};
}

namespace {

space board_space(const std::string& board, std::size_t rows, std::size_t columns) {
  if (board == "cells") return space::multi_discrete(std::vector<std::int32_t>(rows * columns, 3));
  if (board == "planes") return space::box({rows, columns, 2}, 0.0F, 1.0F);
  if (board == "threats") return space::box({rows, columns, 4}, 0.0F, 1.0F);
  return space::box({rows * columns}, -1.0F, 1.0F);
}

}  // namespace

two_player_game::two_player_game(const env_config& config, env_seed seed, std::string_view reference,
                                 std::size_t rows, std::size_t columns, std::int32_t actions)
    : observation_space_(board_space(config.get_string("board"), rows, columns)),
      action_space_(space::discrete(actions)),
      rng_(seed),
      opening_(config.get_int("opening")) {
  const std::string& opponent = config.get_string("opponent");
  if (opponent == "none") {
    opponent_ = opponent_kind::none;
  } else if (opponent == "random") {
    opponent_ = opponent_kind::random;
  } else if (opponent == reference || opponent == "reference") {
    opponent_ = opponent_kind::reference;
  } else {
    config.reject("opponent", fmt::format("'{}' is not one of none, random, {} (or reference)", opponent, reference));
  }
  const std::string& board = config.get_string("board");
  if (board != "signs" && board != "cells" && board != "planes" && board != "threats") {
    config.reject("board", fmt::format("'{}' is not one of signs, cells, planes, threats", board));
  }
  board_ = board == "cells"     ? board_kind::cells
           : board == "planes"  ? board_kind::planes
           : board == "threats" ? board_kind::threats
                                : board_kind::signs;
  const std::string& side = config.get_string("side");
  if (side == "first") {
    side_ = side_kind::first;
  } else if (side == "second") {
    side_ = side_kind::second;
  } else if (side == "random") {
    side_ = side_kind::random;
  } else {
    config.reject("side", fmt::format("'{}' is not one of first, second, random", side));
  }
}

void two_player_game::observe(std::span<float> obs, int player) const {
  if (board_ == board_kind::planes || board_ == board_kind::threats) {
    // The signs into the first cells, then spread from the last cell down,
    // so that no cell is overwritten before it is read.
    const std::size_t planes = board_ == board_kind::planes ? 2 : 4;
    const std::size_t cells = obs.size() / planes;
    write_observation(obs.first(cells), player);
    for (std::size_t i = cells; i-- > 0;) {
      const float x = obs[i];
      const std::span<float> at = obs.subspan(planes * i, planes);
      at[0] = x > 0 ? 1.0F : 0.0F;
      at[1] = x < 0 ? 1.0F : 0.0F;
      if (planes == 4) {
        at[2] = completes(i, player) ? 1.0F : 0.0F;
        at[3] = completes(i, 1 - player) ? 1.0F : 0.0F;
      }
    }
    return;
  }
  write_observation(obs, player);
  if (board_ != board_kind::cells) return;
  for (auto& x : obs) x = x > 0 ? 1.0F : x < 0 ? 2.0F : 0.0F;  // own, the other's, empty
}

void two_player_game::write_mask(std::span<std::uint8_t> mask) const {
  for (std::size_t a = 0; a < mask.size(); ++a) mask[a] = legal(static_cast<std::int32_t>(a)) ? 1 : 0;
}

std::int32_t two_player_game::opponent_move() {
  if (opponent_ == opponent_kind::reference) return reference_move(to_move_, rng_);
  return random_move();
}

std::int32_t two_player_game::random_move() {
  // Uniform among the legal moves: count, draw, walk.
  const std::int32_t n = action_space_.n();
  std::uint64_t legal_moves = 0;
  for (std::int32_t a = 0; a < n; ++a) legal_moves += legal(a) ? 1 : 0;
  std::uint64_t pick = rng_.below(legal_moves);
  for (std::int32_t a = 0; a < n; ++a) {
    if (!legal(a)) continue;
    if (pick == 0) return a;
    --pick;
  }
  return 0;
}

void two_player_game::write_rows(const env_rows& rows) const {
  if (opponent_ == opponent_kind::none) {
    for (int p = 0; p < 2; ++p) {
      observe(rows.observation(row_of(p)), p);
      rows.active(row_of(p)) = p == to_move_ ? 1 : 0;
    }
  } else {
    observe(rows.observation(0), agent_player_);
  }
  write_mask(rows.action_mask(row_of(to_move_)));
}

void two_player_game::reset(const env_rows& rows) {
  clear_board();
  to_move_ = 0;
  if (opponent_ == opponent_kind::none && opening_ > 0) {
    // At most 4 moves: no game (tic-tac-toe's, connect four's) ends that soon.
    const auto moves = rng_.below(static_cast<std::uint64_t>(opening_) + 1);
    for (std::uint64_t m = 0; m < moves; ++m) {
      (void)play(random_move(), to_move_);
      to_move_ = 1 - to_move_;
    }
  }
  if (opponent_ != opponent_kind::none) {
    agent_player_ = side_ == side_kind::first ? 0 : side_ == side_kind::second ? 1 : static_cast<int>(rng_.below(2));
    if (agent_player_ == 1) {
      (void)play(opponent_move(), 0);  // a first move never ends a game
      to_move_ = 1;
    }
  }
  write_rows(rows);
}

void two_player_game::finish(const env_rows& rows, int winner) {
  auto reward_of = [winner](int player) { return winner < 0 ? 0.0F : winner == player ? 1.0F : -1.0F; };
  if (opponent_ == opponent_kind::none) {
    for (int p = 0; p < 2; ++p) {
      const std::size_t row = row_of(p);
      observe(rows.observation(row), p);
      rows.reward(row) = reward_of(p);
      rows.terminated(row) = 1;
      rows.active(row) = 0;
    }
    return;
  }
  observe(rows.observation(0), agent_player_);
  rows.reward(0) = reward_of(agent_player_);
  rows.terminated(0) = 1;
}

void two_player_game::step(const env_rows& rows) {
  const int mover = to_move_;
  const std::int32_t action = rows.action(row_of(mover));
  rows.reward(row_of(mover)) = 0.0F;
  rows.terminated(row_of(mover)) = 0;
  rows.truncated(row_of(mover)) = 0;
  if (action < 0 || action >= action_space_.n() || !legal(action)) {
    finish(rows, 1 - mover);
    return;
  }
  game_outcome outcome = play(action, mover);
  if (outcome != game_outcome::running) {
    finish(rows, outcome == game_outcome::win ? mover : -1);
    return;
  }
  to_move_ = 1 - mover;
  if (opponent_ != opponent_kind::none) {
    outcome = play(opponent_move(), to_move_);
    if (outcome != game_outcome::running) {
      finish(rows, outcome == game_outcome::win ? to_move_ : -1);
      return;
    }
    to_move_ = 1 - to_move_;
  }
  write_rows(rows);
}

}  // namespace coral::envs
