#pragma once
/// \file
/// `basic_replay_actor<Storage>`: the one owner of a replay storage and its
/// rate limiter, whatever the storage holds. `replay_actor` (transitions,
/// DQN; replay_actor.hpp) and `sequence_replay_actor` (sequences, R2D2;
/// sequence_replay_actor.hpp) are its two instantiations, compiled once in
/// the library.
///
/// Everything that touches the storage is a message to its inbox, so nothing
/// around the storage is locked (Ape-X's Python implementations spend their
/// effort on exactly that lock):
///
/// - a block from the sampling side (the feeder) carries items (transitions
///   or whole sequences) and the env steps they account for;
/// - a `snapshot_request` asks for a copy of the actor's state (save()),
///   which the actor sends back on snapshots(): how a checkpoint gets the
///   replay while the run goes on. It is data, not code: nothing but the
///   actor's own state is touched on the actor's thread, and the copy goes
///   back by value (an earlier version ran a caller's closure here, and a
///   closure built inside a co_await expression is destroyed twice by
///   GCC 12, which freed the checkpoint it pointed to);
/// - a batch from the learner is a request: "fill me". The learner keeps
///   `prefetch` of them in flight, so the next batches are sampled while it
///   trains on this one. When it is done with a batch it hands the same
///   object back with its new priorities (TD errors) written in: the actor
///   applies them and refills it. Batches go round in a loop and are never
///   reallocated.
///
/// The rate limiter and the insert allowance are rate_limited_replay's (the
/// base): inserts are counted in env steps, samples in the units
/// `ratio_counts` names.
///
/// A Storage is a class that owns the storage and adapts it to the actor:
/// - types config_type, buffer_type, block_type, batch_type, stats_type
///   (derived from replay_counters);
/// - `static constexpr char state_magic[8]` and `std::string_view
///   state_name` (the reason a state of another kind is refused with);
/// - static streams(config) (env streams, for the default batcher_hold) and
///   trained_steps_per_draw(config);
/// - a constructor from its config_type, buffer() (const and not), size()
///   (items that can be sampled now), reserve(batch, n), insert(block,
///   stats), fill(batch, n, prioritized, beta, rng), apply_update(batch,
///   prioritized) -> update_result, publish(stats), save(out), load(in) and resumed().
///
/// Thread safety: run() is one actor. inbox(), samples(), snapshots(),
/// free_blocks(), the counters in stats() and the allowance (see
/// rate_limited_replay) may be used from any thread. buffer(), limiter() and
/// the save/load functions only while the actor is not running.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <variant>
#include <vector>

#include <asio/awaitable.hpp>

#include "coral/channels/channel.hpp"
#include "coral/core/rng.hpp"
#include "coral/replay/rate_limited_replay.hpp"

namespace coral::replay {

/// Asks the replay actor for a copy of its state, taken between two
/// messages; the answer is a replay_snapshot on snapshots() with the same tag.
struct snapshot_request {
  std::uint64_t tag = 0;  ///< the caller's label (e.g. the env steps of the checkpoint), echoed back
};

/// The replay actor's state as save() writes it, at the moment it handled a snapshot_request.
struct replay_snapshot {
  std::uint64_t tag = 0;    ///< the request's tag
  std::vector<char> state;  ///< the actor's save(); its load() takes it
};

/// What the rate limiter counts as one sampled unit.
enum class ratio_unit {
  /// Trained steps: 1 per transition; length − burn_in per sequence. The
  /// ratio is then the times each env step is trained on, the same figure
  /// for DQN and R2D2.
  trained_steps,
  /// Draws: transitions, or whole sequences.
  draws,
};

/// Settings of a basic_replay_actor over a storage with config `BufferConfig`.
template <class BufferConfig>
struct basic_replay_actor_config {
  BufferConfig buffer;                ///< the storage
  /// The replay ratio: sampled units (ratio_counts) per inserted env step.
  double samples_per_insert = 8.0;
  std::uint64_t min_size = 1000;      ///< env steps inserted before the first sample
  /// Slack of the ratio, in sampled units; 0: the smallest that lets both
  /// sides always move, batch units + (max_group_steps + batcher_hold) ×
  /// samples_per_insert (see rate_limited_replay.cpp).
  double error_buffer = 0;
  std::size_t max_group_steps = 1;    ///< the most env steps the gate lets through at once
  /// The most env steps the gate let through that the inference batcher
  /// may keep without acting, waiting for a full batch (batcher_hold());
  /// unset: the most it could ever be, every stream but one group.
  std::optional<std::size_t> batcher_hold;
  std::size_t batch_size = 128;       ///< draws per batch
  std::size_t prefetch = 4;           ///< batches the learner keeps in flight
  bool prioritized = true;            ///< false: uniform sampling, weights 1
  double beta_start = 0.4;            ///< importance exponent at the start...
  double beta_end = 1.0;              ///< ...annealed linearly to this...
  std::uint64_t beta_steps = 0;       ///< ...over this many env steps inserted (0: beta_end at once)
  std::uint64_t seed = 0;             ///< the sampling generator's seed
  /// The unit of samples_per_insert and error_buffer (the same for
  /// transitions, where one draw trains one step).
  ratio_unit ratio_counts = ratio_unit::trained_steps;
};

/// Counters every replay actor keeps for the progress line; each is
/// updated by the actor alone.
struct replay_counters {
  std::atomic<std::uint64_t> env_steps{0};         ///< env steps inserted
  std::atomic<std::uint64_t> sampled{0};           ///< items drawn (transitions, or sequences)
  std::atomic<std::uint64_t> batches{0};           ///< batches served
  std::atomic<std::uint64_t> priority_updates{0};  ///< priorities applied
  std::atomic<std::uint64_t> stale_updates{0};     ///< priorities ignored (slot overwritten)
  std::atomic<std::uint64_t> sample_ns{0};         ///< time sampling and gathering, all batches (÷ batches: per batch)
  std::atomic<std::uint64_t> size{0};              ///< items that can be sampled now
  std::atomic<std::uint64_t> waiting_requests{0};  ///< requests the limiter holds now
};

/// What a Storage did with the priorities handed back in a batch.
struct update_result {
  std::size_t applied = 0;  ///< priorities set
  std::size_t stale = 0;    ///< priorities ignored: the slot was overwritten since the draw
};

/// The replay actor over `Storage` (see the file comment).
template <class Storage>
class basic_replay_actor : public rate_limited_replay {
 public:
  using config_type = basic_replay_actor_config<typename Storage::config_type>;
  using block_type = typename Storage::block_type;
  using batch_type = typename Storage::batch_type;
  using stats_type = typename Storage::stats_type;
  using buffer_type = typename Storage::buffer_type;
  /// What the inbox takes.
  using message = std::variant<std::unique_ptr<block_type>, std::unique_ptr<batch_type>, snapshot_request>;

  /// Builds the storage and the limiter; throws config_error for bad settings
  /// (the storage's and the limiter's messages, errors::zero_batch,
  /// zero_prefetch, bad_exponent for beta).
  explicit basic_replay_actor(const config_type& config);

  /// Inserts, returned batches and snapshot requests.
  [[nodiscard]] channel<message>& inbox() noexcept { return inbox_; }
  /// Filled batches for the learner (capacity: prefetch).
  [[nodiscard]] channel<std::unique_ptr<batch_type>>& samples() noexcept { return samples_; }
  /// Answers to snapshot requests (capacity: one; ask again only after the
  /// answer came). Closed by close(), so a caller waiting here sees the stop.
  [[nodiscard]] channel<replay_snapshot>& snapshots() noexcept { return snapshots_; }
  /// Emptied blocks for the feeder to reuse.
  [[nodiscard]] channel<std::unique_ptr<block_type>>& free_blocks() noexcept { return free_blocks_; }

  /// A new request of this actor's batch size (the learner sends `prefetch` of them at the start).
  [[nodiscard]] std::unique_ptr<batch_type> make_request() const;

  /// The actor's body; ends when the inbox is closed and drained, or samples() is closed.
  [[nodiscard]] asio::awaitable<void> run();
  /// Closes every channel: receivers drain what is buffered, then see the
  /// close; later sends fail. The actor's run() ends at its next message.
  void close() noexcept;
  /// After the run: applies the inserts and priority updates still buffered
  /// in the (closed) inbox, so that a final checkpoint holds them (snapshot
  /// requests are dropped: the run is over and nobody waits for them).
  void drain();

  [[nodiscard]] const stats_type& stats() const noexcept { return stats_; }
  [[nodiscard]] const config_type& config() const noexcept { return config_; }
  /// The importance exponent for the env steps inserted so far.
  [[nodiscard]] double beta() const noexcept;
  /// Sampled units (what the limiter counts) per draw.
  [[nodiscard]] std::uint64_t units_per_draw() const noexcept { return units_per_draw_; }

  /// The storage (not while running).
  [[nodiscard]] buffer_type& buffer() noexcept { return storage_.buffer(); }
  /// The storage (not while running).
  [[nodiscard]] const buffer_type& buffer() const noexcept { return storage_.buffer(); }

  /// Appends the limiter's counters, the batches served, the generator and
  /// then the storage's own blob to `out`.
  void save(std::vector<char>& out) const;
  /// save() into a new vector.
  [[nodiscard]] std::vector<char> save() const {
    std::vector<char> out;
    save(out);
    return out;
  }
  /// Restores what save() wrote, then tells the storage the run resumes
  /// (the transition storage cuts every stream: a resumed run starts fresh
  /// episodes, so the pending transitions of the old ones can never
  /// complete). Throws config_error for a malformed or mismatched state.
  void load(std::span<const char> in);

 private:
  void insert(block_type& block);
  void handle(message& msg);
  void serve_waiting();
  void fill(batch_type& b);

  config_type config_;
  std::uint64_t units_per_draw_;
  Storage storage_;
  coral::rng rng_;
  channel<message> inbox_;
  channel<std::unique_ptr<batch_type>> samples_;
  channel<std::unique_ptr<block_type>> free_blocks_;
  channel<replay_snapshot> snapshots_;
  std::deque<std::unique_ptr<batch_type>> waiting_;
  stats_type stats_;
  std::uint64_t served_ = 0;
};

}  // namespace coral::replay
