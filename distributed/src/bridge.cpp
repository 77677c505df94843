#include "coral/distributed/bridge.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/training/errors.hpp"
#include "coral/training/training_run.hpp"
#include "coral/distributed/errors.hpp"
#include "coral/distributed/wire.hpp"

namespace coral::distributed {
namespace {

/// The shortest wait for a silent peer (see bridge::silence_limit).
constexpr double min_silence_seconds = 10.0;
/// How often a sampler reports its counters when it has no episode to send.
constexpr std::int64_t report_every_ns = 100'000'000;
/// The bridge's longest nap when there is nothing to move.
constexpr auto max_nap = std::chrono::microseconds(250);

std::vector<std::byte> encode_stop(stop_reason why, const std::string& text) {
  std::vector<std::byte> out;
  wire::writer w(out);
  w.put(static_cast<std::uint8_t>(why));
  w.put_text(text);
  return out;
}

std::string_view to_string(stop_reason why) {
  switch (why) {
    case stop_reason::ended: return "ended";
    case stop_reason::interrupted: return "interrupted";
    case stop_reason::failed: return "failed";
  }
  return "?";
}

}  // namespace

bridge::bridge(transport& t, const training::train_options& options, training::distribution_part& algo,
               training::training_run& run)
    : t_(&t),
      options_(&options),
      algo_(&algo),
      run_(&run),
      learner_(t.rank() == 0),
      peers_(learner_ ? t.size() - 1 : 1) {
  const auto now = now_ns();
  for (auto& p : peers_) p.heard_ns.store(now);
  last_episodes_ns_ = now;
}

double bridge::silence_limit(const training::train_options& o) { return std::max(min_silence_seconds, o.stall_seconds); }

std::int64_t bridge::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count();
}

void bridge::send(std::size_t to, wire_tag tag, std::vector<std::byte> bytes) {
  bytes_out_.fetch_add(bytes.size(), std::memory_order_relaxed);
  messages_out_.fetch_add(1, std::memory_order_relaxed);
  t_->send(to, tag, std::move(bytes));
}

// ---- handshake ------------------------------------------------------------

void bridge::handshake_learner(const fingerprint& mine, const run_start& start) {
  const double limit = silence_limit(*options_);
  std::vector<bool> greeted(t_->size(), false);
  std::size_t left = samplers();
  std::string refusal;
  auto last = clock::now();
  while (left > 0) {
    auto m = t_->poll();
    if (!m) {
      if (std::chrono::duration<double>(clock::now() - last).count() > limit) {
        std::string silent;
        for (std::size_t r = 1; r < t_->size(); ++r) {
          if (greeted[r]) continue;
          silent += (silent.empty() ? "" : ", ") + t_->name(r);
          peer_of(r).stopped = stop_reason::failed;  // gone: the end waits no longer for it
        }
        throw error(fmt::format(fmt::runtime(training::errors::distributed_no_answer), t_->name(0), silent, "its hello", limit));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    last = clock::now();
    if (m->tag != wire_tag::hello || m->from == 0 || greeted[m->from]) {
      wire::reader(m->bytes, t_->name(m->from)).bad("a hello was expected");
    }
    greeted[m->from] = true;
    --left;
    wire::reader in(m->bytes, t_->name(m->from));
    const auto n = in.get<std::uint64_t>("hello size");
    for (std::uint64_t i = 0; i < n && refusal.empty(); ++i) {
      auto what = in.get_text("hello");
      auto value = in.get_text("hello");
      if (i >= mine.size() || mine[i].first != what) in.bad("hello fields");
      if (mine[i].second != value) {
        refusal = fmt::format(fmt::runtime(training::errors::distributed_mismatch), t_->name(m->from), what, value, mine[i].second);
      }
    }
    if (refusal.empty() && n != mine.size()) in.bad("hello fields");
  }
  if (!refusal.empty()) throw config_error(refusal);  // the run closes the bridge: every sampler hears why
  std::vector<std::byte> out;
  wire::writer w(out);
  w.put(start.start_steps);
  w.put(start.version);
  w.put_vector(start.weights);
  for (std::size_t r = 1; r < t_->size(); ++r) {
    send(r, wire_tag::setup, out);
    peer_of(r).weights_sent = start.version;
  }
}

run_start bridge::handshake_sampler(const fingerprint& mine) {
  std::vector<std::byte> out;
  wire::writer w(out);
  w.put<std::uint64_t>(mine.size());
  for (const auto& [what, value] : mine) {
    w.put_text(what);
    w.put_text(value);
  }
  send(0, wire_tag::hello, std::move(out));
  const double limit = silence_limit(*options_);
  const auto started = clock::now();
  for (;;) {
    auto m = t_->poll();
    if (!m) {
      if (std::chrono::duration<double>(clock::now() - started).count() > limit) {
        peers_[0].stopped = stop_reason::failed;  // gone: the end waits no longer for it
        throw error(fmt::format(fmt::runtime(training::errors::distributed_no_answer), t_->name(t_->rank()), t_->name(0),
                                "the run's setup", limit));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    wire::reader in(m->bytes, t_->name(m->from));
    if (m->tag == wire_tag::stop) {
      (void)in.get<std::uint8_t>("stop reason");
      const auto text = in.get_text("stop text");
      peers_[0].stopped = stop_reason::failed;
      throw config_error(text);
    }
    if (m->tag != wire_tag::setup || m->from != 0) in.bad("the run's setup was expected");
    run_start s;
    s.start_steps = in.get<std::uint64_t>("start steps");
    s.version = in.get<std::uint64_t>("weights version");
    in.get_vector(s.weights, "weights");
    in.finish("setup");
    return s;
  }
}

// ---- the actor ------------------------------------------------------------

void bridge::on_stop(std::size_t from, std::span<const std::byte> bytes, runtime* rt) {
  wire::reader in(bytes, t_->name(from));
  const auto code = in.get<std::uint8_t>("stop reason");
  if (code > static_cast<std::uint8_t>(stop_reason::failed)) in.bad("stop reason");
  const auto why = static_cast<stop_reason>(code);
  const auto text = in.get_text("stop text");
  auto& p = learner_ ? peer_of(from) : peers_[0];
  p.stopped = why;
  if (why == stop_reason::interrupted) interrupted_.store(true);
  if (why == stop_reason::failed) {
    std::lock_guard lock(failure_mutex_);
    if (failure_.empty()) failure_ = fmt::format(fmt::runtime(errors::rank_failed), t_->name(from), text);
  }
  if (rt == nullptr) return;  // closing: the run already stopped
  if (!learner_) {
    stopped_during_run_ = true;
    rt->request_stop();  // the learner stops the run
    return;
  }
  if (why == stop_reason::failed) {
    run_->say(failure() + "; stopping every rank");
    run_->end(std::nullopt);
  } else if (why == stop_reason::interrupted) {
    run_->end(std::nullopt);
  } else if (std::all_of(peers_.begin(), peers_.end(), [](const peer& q) { return q.stopped.has_value(); })) {
    run_->end(actors::gate_end::step_limit);  // every sampler did its share
  }
}

void bridge::on_message(wire_message& m, runtime* rt) {
  bytes_in_.fetch_add(m.bytes.size(), std::memory_order_relaxed);
  messages_in_.fetch_add(1, std::memory_order_relaxed);
  const auto from = m.from;
  const auto name = t_->name(from);
  if (learner_ ? (from == 0 || from >= t_->size()) : from != 0) {
    wire::reader(m.bytes, name).bad("a message from a rank that is not a peer");
  }
  auto& p = learner_ ? peer_of(from) : peers_[0];
  p.heard_ns.store(now_ns());
  if (m.tag == wire_tag::stop) {
    on_stop(from, m.bytes, rt);
    return;
  }
  if (rt == nullptr || p.stopped) return;  // closing, or after the peer's stop: dropped
  switch (m.tag) {
    case wire_tag::data: {
      if (!learner_) break;
      wire::reader in(m.bytes, name);
      p.env_steps.store(in.get<std::uint64_t>("env steps"));
      if (!p.pending.empty() ||
          !algo_->accept(from - 1, std::span<const std::byte>(m.bytes).subspan(sizeof(std::uint64_t)), name)) {
        p.pending.push_back(std::move(m.bytes));
      }
      return;
    }
    case wire_tag::episodes: {
      if (!learner_) break;
      wire::reader in(m.bytes, name);
      p.env_steps.store(in.get<std::uint64_t>("env steps"));
      const auto latency_sum = in.get<std::int64_t>("latency");
      const auto latency_count = in.get<std::uint64_t>("latency count");
      std::vector<double> returns, lengths;
      in.get_vector(returns, "episode returns");
      in.get_vector(lengths, "episode lengths");
      in.finish("episodes");
      if (returns.size() != lengths.size()) in.bad("episode lengths");
      remote_latency_ns_.fetch_add(latency_sum, std::memory_order_relaxed);
      remote_latency_count_.fetch_add(latency_count, std::memory_order_relaxed);
      for (std::size_t i = 0; i < returns.size(); ++i) run_->episode(returns[i], lengths[i]);
      return;
    }
    case wire_tag::weights: {
      if (learner_) break;
      wire::reader in(m.bytes, name);
      const auto version = in.get<std::uint64_t>("weights version");
      const auto sent_ns = in.get<std::int64_t>("weights time");
      std::vector<float> w;
      in.get_vector(w, "weights");
      in.finish("weights");
      latency_ns_sum_.fetch_add(now_ns() - sent_ns, std::memory_order_relaxed);
      latency_count_.fetch_add(1, std::memory_order_relaxed);
      if (run_->weights().publish(std::move(w), version)) weights_arrived_ = true;
      return;
    }
    case wire_tag::control:
      if (learner_) break;
      algo_->apply_control(m.bytes, name);
      return;
    case wire_tag::progress: {
      if (learner_) break;
      wire::reader in(m.bytes, name);
      const auto steps = in.get<std::uint64_t>("learner steps");
      in.finish("progress");
      learner_steps_.store(steps, std::memory_order_relaxed);
      return;
    }
    default: break;
  }
  wire::reader(m.bytes, name).bad(fmt::format("an unexpected message (tag {})", static_cast<int>(m.tag)));
}

bool bridge::step_learner(runtime& rt) {
  bool moved = false;
  for (int i = 0; i < 64; ++i) {
    auto m = t_->poll();
    if (!m) break;
    moved = true;
    on_message(*m, &rt);
  }
  algo_->pump();
  for (std::size_t r = 1; r < t_->size(); ++r) {
    auto& p = peer_of(r);
    while (!p.pending.empty()) {
      const auto& bytes = p.pending.front();
      if (!algo_->accept(r - 1, std::span<const std::byte>(bytes).subspan(sizeof(std::uint64_t)), t_->name(r))) break;
      p.pending.pop_front();
      moved = true;
    }
  }
  // The newest weights to every sampler that has none on the way.
  const auto v = run_->weights().version();
  std::vector<std::byte> encoded;  // once per round, for every sampler that needs it
  std::uint64_t encoded_version = 0;
  for (std::size_t r = 1; r < t_->size(); ++r) {
    auto& p = peer_of(r);
    if (p.stopped || p.weights_sent >= v || t_->in_flight(r, wire_tag::weights) != 0) continue;
    if (encoded.empty()) {
      const auto w = run_->weights().read();
      wire::writer out(encoded);
      out.put(w.version);
      const auto published = published_ns_.load(std::memory_order_acquire);
      out.put(published != 0 ? published : now_ns());
      out.put_vector(*w.value);
      encoded_version = w.version;
    }
    p.weights_sent = encoded_version;
    send(r, wire_tag::weights, encoded);
    moved = true;
  }
  for (std::size_t r = 1; r < t_->size(); ++r) {
    if (peer_of(r).stopped) continue;
    std::vector<std::byte> out;
    if (algo_->control(r - 1, out)) {
      send(r, wire_tag::control, std::move(out));
      moved = true;
    }
  }
  // What the learner does, for the samplers' stall watchdogs.
  if (now_ns() - last_progress_ns_ > report_every_ns) {
    last_progress_ns_ = now_ns();
    std::vector<std::byte> out;
    wire::writer w(out);
    w.put(run_->activity().steps());
    for (std::size_t r = 1; r < t_->size(); ++r) {
      if (!peer_of(r).stopped && t_->in_flight(r, wire_tag::progress) == 0) send(r, wire_tag::progress, out);
    }
  }
  (void)t_->in_flight();
  return moved;
}

void bridge::send_episodes() {
  std::vector<double> returns, lengths;
  {
    std::lock_guard lock(episodes_mutex_);
    returns.swap(returns_);
    lengths.swap(lengths_);
  }
  std::vector<std::byte> out;
  wire::writer w(out);
  w.put(run_->has_gate() ? run_->gate().env_steps() : std::uint64_t{0});  // no gate yet: refused at the handshake
  w.put(latency_ns_sum_.exchange(0));
  w.put(latency_count_.exchange(0));
  w.put_vector(returns);
  w.put_vector(lengths);
  send(0, wire_tag::episodes, std::move(out));
  last_episodes_ns_ = now_ns();
}

asio::awaitable<void> bridge::run(runtime& rt) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  auto nap = std::chrono::microseconds(10);
  while (!rt.stop_requested()) {
    bool moved = false;
    if (learner_) {
      moved = step_learner(rt);
    } else {
      for (int i = 0; i < 64; ++i) {
        auto m = t_->poll();
        if (!m) break;
        moved = true;
        on_message(*m, &rt);
      }
      if (weights_arrived_) {
        weights_arrived_ = false;
        const bool told = co_await run_->tell_gate();
        if (!told) co_return;
      }
      for (int i = 0; i < 16; ++i) {
        scratch_.clear();
        wire::writer w(scratch_);
        w.put(run_->gate().env_steps());
        if (!algo_->take(scratch_)) break;
        send(0, wire_tag::data, scratch_);
        moved = true;
      }
      bool have_episodes;
      {
        std::lock_guard lock(episodes_mutex_);
        have_episodes = !returns_.empty();
      }
      if (have_episodes || now_ns() - last_episodes_ns_ > report_every_ns) {
        send_episodes();
        moved = true;
      }
      (void)t_->in_flight();
    }
    if (moved) {
      nap = std::chrono::microseconds(10);
      continue;
    }
    timer.expires_after(nap);
    co_await timer.async_wait(asio::use_awaitable);
    nap = std::min<std::chrono::microseconds>(nap * 2, max_nap);
  }
}

// ---- the end ----------------------------------------------------------------

std::string bridge::close(stop_reason why, const std::string& text) {
  if (!learner_) send_episodes();  // the last episodes and the final count
  const auto bytes = encode_stop(why, text);
  if (learner_) {
    for (std::size_t r = 1; r < t_->size(); ++r) send(r, wire_tag::stop, bytes);
  } else {
    send(0, wire_tag::stop, bytes);
  }
  // Wait for every peer's stop, for as long as some peer keeps talking, and
  // for this rank's messages to be delivered.
  const double limit = silence_limit(*options_);
  auto all_stopped = [&] {
    return std::all_of(peers_.begin(), peers_.end(), [](const peer& p) { return p.stopped.has_value(); });
  };
  auto last = clock::now();
  while (!all_stopped() || t_->in_flight() != 0) {
    auto m = t_->poll();
    if (m) {
      last = clock::now();
      on_message(*m, nullptr);
      continue;
    }
    if (std::chrono::duration<double>(clock::now() - last).count() > limit) break;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  std::string silent;
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    if (!peers_[i].stopped) silent += (silent.empty() ? "" : ", ") + t_->name(learner_ ? i + 1 : 0);
  }
  return silent;
}

// ---- what others read -------------------------------------------------------

void bridge::episode(double episode_return, double episode_length) {
  std::lock_guard lock(episodes_mutex_);
  returns_.push_back(episode_return);
  lengths_.push_back(episode_length);
}

std::uint64_t bridge::env_steps() const {
  std::uint64_t n = 0;
  for (const auto& p : peers_) n += p.env_steps.load(std::memory_order_relaxed);
  return n;
}

std::string bridge::failure() const {
  std::lock_guard lock(failure_mutex_);
  return failure_;
}

std::string bridge::row(double seconds) {
  std::string out = "ranks";
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    auto& p = peers_[i];
    const auto steps = p.env_steps.load(std::memory_order_relaxed);
    const double rate = seconds > 0 ? static_cast<double>(steps - p.steps_at_row) / seconds : 0.0;
    p.steps_at_row = steps;
    const auto part = algo_->rank_row(i);
    out += fmt::format(" {} {:.0f}/s{}{}", i + 1, rate, part.empty() ? "" : " ", part);
  }
  const auto bytes = bytes_in_.load() + bytes_out_.load();
  const auto latency_ns = remote_latency_ns_.exchange(0);
  const auto latency_count = remote_latency_count_.exchange(0);
  const auto messages = messages_in_.load() + messages_out_.load();
  const auto per_second = [seconds](std::uint64_t n) { return seconds > 0 ? static_cast<double>(n) / seconds : 0.0; };
  out += fmt::format(" | wire {:.2f} MB/s {:.0f} msg/s, weights {:.0f} us", 1e-6 * per_second(bytes - bytes_at_row_),
                     per_second(messages - messages_at_row_),
                     latency_count > 0 ? 1e-3 * static_cast<double>(latency_ns) / static_cast<double>(latency_count) : 0.0);
  bytes_at_row_ = bytes;
  messages_at_row_ = messages;
  return out;
}

void bridge::describe(std::string& out) const {
  const auto now = now_ns();
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    const auto& p = peers_[i];
    out += fmt::format("  {}: last message {:.1f} s ago, {} env steps{}\n", t_->name(learner_ ? i + 1 : 0),
                       1e-9 * static_cast<double>(now - p.heard_ns.load()), p.env_steps.load(),
                       p.stopped ? fmt::format(", stopped ({})", to_string(*p.stopped)) : "");
  }
}

namespace {

/// A transport's ranks as a run sees them.
class transport_ranks final : public training::remote_ranks {
 public:
  explicit transport_ranks(std::shared_ptr<transport> t) : t_(std::move(t)) {}
  std::size_t rank() const override { return t_->rank(); }
  std::size_t size() const override { return t_->size(); }
  std::string name(std::size_t r) const override { return t_->name(r); }
  std::unique_ptr<training::remote_link> link(const training::train_options& options, training::algorithm& algo,
                                              training::training_run& run) override {
    auto* part = algo.distribution();
    if (part == nullptr) throw usage_error("distributed::over: the algorithm has no distributed form");
    return std::make_unique<bridge>(*t_, options, *part, run);
  }

 private:
  std::shared_ptr<transport> t_;
};

}  // namespace

std::shared_ptr<training::remote_ranks> over(std::shared_ptr<transport> t) {
  if (!t) throw usage_error("distributed::over: no transport");
  return std::make_shared<transport_ranks>(std::move(t));
}

}  // namespace coral::distributed
