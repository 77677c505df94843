#pragma once
/// \file
/// The interface an env author implements, and `env_rows`, the view of the
/// batch rows an env reads its actions from and writes its results into.
///
/// An env owns max_agents() consecutive rows of an env_batch (one row for a
/// single-agent env). It never allocates them and never copies out of them:
/// reset() and step() write observations, rewards and flags in place, into
/// the rows the batcher reads.
///
/// ## What an env writes
///
/// - reset(rows): the first observation of a new episode in every row, and
///   `active(i) = 0` for agent slots that are not in play (all rows are set
///   active by the caller beforehand, so a single-agent env never touches
///   the mask). reward and flags are cleared by the caller.
/// - step(rows): applies the action of every active row, then writes, for
///   every row that was active when the action was taken: the next
///   observation, the reward, `terminated` (the episode reached a terminal
///   state of the MDP) and `truncated` (it was cut short, e.g. by a time
///   limit). Both may be set. For multi-agent envs it also updates
///   `active(i)` for the next step. Rows that were inactive are cleared by
///   the caller after step() (reward 0, flags 0) unless the env ended them
///   (a waiting agent, below).
///
/// An env never resets itself inside step(): auto-reset (see env_slice) is
/// done by the caller, which keeps the final observation available.
///
/// ## Multi-agent envs
///
/// Agent slot i is always row i of the env's rows: the order is stable for
/// the life of the env, whichever agents are in play. `active(i)` says
/// whether slot i holds an agent this step; an inactive row's observation is
/// meaningless and its action is ignored. An agent whose episode ends
/// (terminated or truncated on its row) while others play on is normally set
/// inactive; if it stays active, its next step starts a new episode for that
/// slot (a respawn). The env's episode is over when, after a step, no row is
/// both active and not ended.
///
/// A waiting agent (turn-based games): a row that was inactive for a step
/// because its agent waits for its turn may still end on that step: if the
/// env sets its `terminated` or `truncated`, the caller keeps that row's
/// reward and flags (instead of clearing them) and counts the reward in the
/// slot's episode return, not a step in its length. This is how the player
/// who did not move learns the outcome of a game the other one ended: the
/// outcome belongs to that slot's last acted step. Inactive rows that do not
/// end are cleared as above. (Rows inactive before a step have their reward
/// and flags cleared by the caller before step(), so a stale flag never
/// counts as a new ending.)
///
/// ## Action masks
///
/// An env whose action space has Discrete or MultiDiscrete leaves may
/// declare which of their values are legal, per row and step, by returning
/// action_mask_size(action_space()) from action_mask_size() (0, the default,
/// means "no mask": every value is legal). The mask row of a slot is one byte
/// per value of every int32 component of the action row, in leaf order:
/// Discrete(n) takes n bytes (byte k for action k), MultiDiscrete(nvec) takes
/// nvec[0] + nvec[1] + ... bytes, component after component; Box leaves take
/// none. 1 = legal, 0 = illegal. This is a factored mask (each component is
/// masked on its own, as each gets its own head), not a mask over the
/// product of the components, which would grow multiplicatively.
///
/// The caller fills every mask row with 1 before reset(); the env writes the
/// mask of every row that is active after reset() and after step() (for the
/// action it takes next), and may leave other rows alone. An active row
/// whose mask leaves some component without a legal value is a fault of the
/// env, reported like a non-finite observation (errors::all_actions_masked,
/// naming the row). A policy that ignores masks still works: the env then
/// sees illegal actions and handles them as its documentation says.
///
/// Gymnasium puts the mask in the observation, under an `action_mask` key
/// of a Dict space; Python envs written that way are mapped onto this
/// column (python/), and a C++ env may do both.
///
/// ## Teams
///
/// Slots may belong to teams: team_count() teams, numbered from 0, and slot
/// i belongs to team_of(i) for the life of the env (a single-agent env has
/// one team, 0). The batch carries a row's team id in its `teams` column,
/// written once when the env is bound to its rows; a team id outside
/// [0, team_count()) is refused there (errors::team_out_of_range). Which
/// team a learner trains and which play as frozen opponents is the policy's
/// business, not the env's.
///
/// ## Randomness
///
/// Every env owns an rng seeded from (seed, env index) that it receives at
/// construction; the same seed and index give the same trajectory for the
/// same actions.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "coral/core/rng.hpp"
#include "coral/envs/rgb_frame.hpp"
#include "coral/envs/space.hpp"

namespace coral::envs {

// The generator and the seed of each env's stream (core/rng.hpp) are part of
// the env interface: an env is made with its env_seed and owns an rng.
using coral::env_seed;
using coral::rng;

/// The rows of one env inside an env_batch: pointers and strides, no
/// ownership. Cheap to copy; valid while the batch lives.
///
/// Thread safety: the env stepping these rows is their only user until it
/// returns from reset() or step().
class env_rows {
 public:
  /// The raw parts of a view; filled in by env_batch::rows().
  struct parts {
    std::size_t count = 0;                 ///< number of rows (agent slots)
    float* observations = nullptr;         ///< row-major, stride obs_dim
    std::size_t obs_dim = 0;
    const std::int32_t* discrete_actions = nullptr;  ///< row-major, stride discrete_dim
    std::size_t discrete_dim = 0;
    const float* continuous_actions = nullptr;       ///< row-major, stride continuous_dim
    std::size_t continuous_dim = 0;
    float* rewards = nullptr;
    std::uint8_t* terminated = nullptr;
    std::uint8_t* truncated = nullptr;
    std::uint8_t* active = nullptr;
    std::uint8_t* action_masks = nullptr;  ///< row-major, stride mask_dim
    std::size_t mask_dim = 0;
  };

  /// A view over the given parts.
  explicit env_rows(const parts& p) noexcept : p_(p) {}

  /// Number of rows (the env's max_agents()).
  [[nodiscard]] std::size_t size() const noexcept { return p_.count; }

  /// The flat observation row of agent slot i (width: flat size of the observation space).
  [[nodiscard]] std::span<float> observation(std::size_t i = 0) const noexcept {
    return {p_.observations + i * p_.obs_dim, p_.obs_dim};
  }
  /// The int32 part of agent slot i's action row.
  [[nodiscard]] std::span<const std::int32_t> discrete_action(std::size_t i = 0) const noexcept {
    return {p_.discrete_actions + i * p_.discrete_dim, p_.discrete_dim};
  }
  /// The float part of agent slot i's action row.
  [[nodiscard]] std::span<const float> continuous_action(std::size_t i = 0) const noexcept {
    return {p_.continuous_actions + i * p_.continuous_dim, p_.continuous_dim};
  }
  /// The action of a Discrete action space: the first int32 of slot i's action row.
  [[nodiscard]] std::int32_t action(std::size_t i = 0) const noexcept { return p_.discrete_actions[i * p_.discrete_dim]; }

  /// Reward of agent slot i for the step just taken.
  [[nodiscard]] float& reward(std::size_t i = 0) const noexcept { return p_.rewards[i]; }
  /// 1 if agent slot i's episode reached a terminal state this step.
  [[nodiscard]] std::uint8_t& terminated(std::size_t i = 0) const noexcept { return p_.terminated[i]; }
  /// 1 if agent slot i's episode was cut short this step.
  [[nodiscard]] std::uint8_t& truncated(std::size_t i = 0) const noexcept { return p_.truncated[i]; }
  /// 1 if agent slot i is in play (its observation is valid, its next action is used).
  [[nodiscard]] std::uint8_t& active(std::size_t i = 0) const noexcept { return p_.active[i]; }
  /// Agent slot i's action-mask row (1 = legal), width action_mask_size()
  /// of the action space; see the file comment. Empty for a space without
  /// discrete leaves.
  [[nodiscard]] std::span<std::uint8_t> action_mask(std::size_t i = 0) const noexcept {
    return {p_.action_masks + i * p_.mask_dim, p_.mask_dim};
  }

 private:
  parts p_;
};

/// An environment. Implement reset(), step() and the two spaces; the rest
/// has meaningful defaults.
///
/// Thread safety: an env is used by one thread at a time.
class env {
 public:
  virtual ~env() = default;

  /// Starts a new episode; see the file comment for what it writes.
  virtual void reset(const env_rows& rows) = 0;

  /// Takes one step with the actions in `rows`; see the file comment.
  virtual void step(const env_rows& rows) = 0;

  /// The space of one agent's observation; the batch stores it flattened.
  [[nodiscard]] virtual const space& observation_space() const noexcept = 0;

  /// The space of one agent's action; the batch stores it flattened.
  [[nodiscard]] virtual const space& action_space() const noexcept = 0;

  /// Number of rows (agent slots) this env owns; fixed for its life.
  [[nodiscard]] virtual std::size_t max_agents() const noexcept { return 1; }

  /// 0 if the env does not mask actions; otherwise action_mask_size(action_space()),
  /// and the env writes the mask rows (see the file comment). Any other
  /// value is refused when the env is bound to its rows (errors::mask_width).
  [[nodiscard]] virtual std::size_t action_mask_size() const noexcept { return 0; }

  /// Number of teams the slots belong to (see the file comment); at least 1.
  [[nodiscard]] virtual std::size_t team_count() const noexcept { return 1; }

  /// The team of agent slot `slot` (< max_agents()), in [0, team_count()).
  [[nodiscard]] virtual std::size_t team_of(std::size_t /*slot*/) const noexcept { return 0; }

  /// The best expected return per episode (per agent), if known.
  [[nodiscard]] virtual std::optional<double> optimal_return() const noexcept { return std::nullopt; }

  /// The mean return per episode (per agent) at which a learner counts as
  /// having solved this env, if there is one.
  [[nodiscard]] virtual std::optional<double> solved_return() const noexcept { return std::nullopt; }

  /// Bytes this env holds on the heap besides the object itself (a
  /// simulator's state): what one more env costs, which the memory check
  /// adds to its small per-env figure before anything is built. 0 for envs
  /// whose state is a few numbers.
  [[nodiscard]] virtual std::size_t heap_bytes() const noexcept { return 0; }

  /// Draws the current state into `frame` and returns true, or returns
  /// false, leaving `frame` as it was, if this env does not render (the
  /// default): the return value is the capability query, so a caller can
  /// ask once, after the first reset, before it commits to anything (a
  /// video file, an encoder). An env that renders resizes `frame` to its
  /// frame size, the same for every call over the env's life, and paints
  /// every pixel; it allocates nothing after the first call with the same
  /// frame (rgb_frame keeps its buffer). Between steps only: it reads the
  /// state that reset() or step() left, and changes nothing the next step
  /// sees. May throw coral::error (a renderer that cannot start).
  [[nodiscard]] virtual bool render(rgb_frame& /*frame*/) const { return false; }

 protected:
  env() = default;
  env(const env&) = default;
  env& operator=(const env&) = default;
};

}  // namespace coral::envs
