#include "coral/training/live_view.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/core/json.hpp"

namespace coral::training {
namespace {

std::string json_names(const std::vector<std::string>& names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : ",") + json::quote(names[i]);
  return out + "]";
}

/// `x` as a Prometheus sample value (Go's float syntax: NaN, +Inf, -Inf).
std::string prometheus_number(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "+Inf" : "-Inf";
  return json::number(x);
}

}  // namespace

std::string prometheus_label(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

live_view::live_view(live_source source) : source_(std::move(source)) {
  if (source_.graph == nullptr || !source_.actors || !source_.finished || !source_.counters) {
    throw usage_error("live_view: the source needs a graph, actors, finished and counters");
  }
  started_ = clock::now();
  window_start_ = started_;
  busy_samples_.assign(source_.graph->activities().size(), 0);
  for (const auto& b : source_.graph->busy_times()) waited_at_start_.push_back(b.waited_ns());
  at_window_start_ = source_.counters();
  last_ = at_window_start_;
}

void live_view::sample() {
  const auto& activities = source_.graph->activities();
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < activities.size(); ++i) busy_samples_[i] += activities[i].busy_now() ? 1 : 0;
  ++samples_;
}

std::vector<live_view::actor_state> live_view::actors_now() const {
  const auto names = source_.actors();
  std::vector<actor_state> out;
  out.reserve(names.size());
  for (const auto& name : names) out.push_back({name, !source_.finished(name), std::nullopt});
  std::lock_guard lock(mutex_);
  for (auto& a : out) {
    if (const auto at = busy_.find(a.name); at != busy_.end()) a.busy = at->second;
  }
  return out;
}

void live_view::tick() {
  const auto& graph = *source_.graph;
  // Read the run's side first, outside the lock: these take its own locks.
  const auto counters = source_.counters();
  std::vector<std::int64_t> waited;
  for (const auto& b : graph.busy_times()) waited.push_back(b.waited_ns());
  const auto now = clock::now();

  std::lock_guard lock(mutex_);
  const double window = std::chrono::duration<double>(now - window_start_).count();
  seconds_ = std::chrono::duration<double>(now - started_).count();
  if (window > 0) {
    steps_per_second_ =
        static_cast<double>(counters.env_steps - std::min(counters.env_steps, at_window_start_.env_steps)) / window;
    updates_per_second_ =
        static_cast<double>(counters.updates - std::min(counters.updates, at_window_start_.updates)) / window;
  }
  const auto& activities = graph.activities();
  for (std::size_t i = 0; i < activities.size(); ++i) {
    if (samples_ > 0) busy_[activities[i].actor] = static_cast<double>(busy_samples_[i]) / static_cast<double>(samples_);
    busy_samples_[i] = 0;
  }
  samples_ = 0;
  const auto& busy_times = graph.busy_times();
  for (std::size_t i = 0; i < busy_times.size(); ++i) {
    const double waited_s = 1e-9 * static_cast<double>(waited[i] - waited_at_start_[i]);
    if (window > 0) busy_[busy_times[i].actor] = std::clamp(1.0 - waited_s / window, 0.0, 1.0);
    waited_at_start_[i] = waited[i];
  }
  if (counters.mean_return && counters.episodes != curve_episodes_) {
    curve_episodes_ = counters.episodes;
    curve_.emplace_back(counters.env_steps, *counters.mean_return);
    if (curve_.size() > max_curve_points) {
      std::size_t kept = 0;
      for (std::size_t i = 0; i < curve_.size(); i += 2) curve_[kept++] = curve_[i];
      curve_.resize(kept);
    }
  }
  at_window_start_ = counters;
  last_ = counters;
  window_start_ = now;
}

std::string live_view::state_json() const {
  const auto& graph = *source_.graph;
  std::string channels;
  for (const auto& c : graph.channels()) {
    channels += fmt::format(R"({}{{"name":{},"senders":{},"receivers":{},"depth":{},"capacity":{}}})",
                            channels.empty() ? "" : ",", json::quote(c.name), json_names(c.senders),
                            json_names(c.receivers), c.depth(), c.capacity);
  }
  std::string figures;
  for (const auto& f : graph.figures()) {
    figures += fmt::format(R"({}{}:{})", figures.empty() ? "" : ",", json::quote(f.name), json::number(f.read()));
  }
  const auto actor_list = actors_now();
  std::lock_guard lock(mutex_);
  std::string actors;
  for (const auto& a : actor_list) {
    actors += fmt::format(R"({}{{"name":{},"running":{},"busy":{}}})", actors.empty() ? "" : ",", json::quote(a.name),
                          a.running, a.busy ? json::number(*a.busy) : "null");
  }
  std::string curve;
  for (const auto& [steps, ret] : curve_) {
    curve += fmt::format("{}[{},{}]", curve.empty() ? "" : ",", steps, json::number(ret));
  }
  return fmt::format(
      R"({{"title":{},"seconds":{},"env_steps":{},"updates":{},"episodes":{},"mean_return":{},)"
      R"("env_steps_per_second":{},"updates_per_second":{},"actors":[{}],"channels":[{}],"figures":{{{}}},)"
      R"("curve":[{}]}})",
      json::quote(source_.title), json::number(seconds_), last_.env_steps, last_.updates, last_.episodes,
      last_.mean_return ? json::number(*last_.mean_return) : "null", json::number(steps_per_second_),
      json::number(updates_per_second_), actors, channels, figures, curve);
}

std::string live_view::prometheus() const {
  const auto& graph = *source_.graph;
  std::string out;
  auto family = [&out](std::string_view name, std::string_view type, std::string_view help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  auto sample = [&out](std::string_view name, std::string_view labels, std::string_view value) {
    if (labels.empty()) {
      out += fmt::format("{} {}\n", name, value);
    } else {
      out += fmt::format("{}{{{}}} {}\n", name, labels, value);
    }
  };
  // The channels and figures are read now; the rest is the last tick's.
  std::vector<std::size_t> depths;
  for (const auto& c : graph.channels()) depths.push_back(c.depth());
  std::vector<double> figures;
  for (const auto& f : graph.figures()) figures.push_back(f.read());
  const auto actor_list = actors_now();

  std::lock_guard lock(mutex_);
  family("coral_env_steps_total", "counter", "Env steps acted on, a resumed run's included.");
  sample("coral_env_steps_total", "", fmt::format("{}", last_.env_steps));
  family("coral_updates_total", "counter", "Learner updates done.");
  sample("coral_updates_total", "", fmt::format("{}", last_.updates));
  family("coral_episodes_total", "counter", "Episodes finished.");
  sample("coral_episodes_total", "", fmt::format("{}", last_.episodes));
  family("coral_env_steps_per_second", "gauge", "Env steps per second over the last window (about 1 s).");
  sample("coral_env_steps_per_second", "", prometheus_number(steps_per_second_));
  family("coral_updates_per_second", "gauge", "Learner updates per second over the last window.");
  sample("coral_updates_per_second", "", prometheus_number(updates_per_second_));
  if (last_.mean_return) {
    family("coral_mean_return", "gauge", "Mean return of the recent episodes (the last 100).");
    sample("coral_mean_return", "", prometheus_number(*last_.mean_return));
  }
  family("coral_uptime_seconds", "gauge", "Seconds since the live view started.");
  sample("coral_uptime_seconds", "", prometheus_number(seconds_));
  family("coral_actor_running", "gauge", "1 while the actor runs, 0 once it ended.");
  for (const auto& a : actor_list) sample("coral_actor_running", "actor=" + prometheus_label(a.name), a.running ? "1" : "0");
  family("coral_actor_busy_ratio", "gauge", "Share of the last window the actor spent working rather than waiting.");
  for (const auto& a : actor_list) {
    if (a.busy) sample("coral_actor_busy_ratio", "actor=" + prometheus_label(a.name), prometheus_number(*a.busy));
  }
  family("coral_channel_depth", "gauge", "Messages buffered in the channel.");
  for (std::size_t i = 0; i < depths.size(); ++i) {
    sample("coral_channel_depth", "channel=" + prometheus_label(graph.channels()[i].name), fmt::format("{}", depths[i]));
  }
  family("coral_channel_capacity", "gauge", "Messages the channel buffers at most.");
  for (const auto& c : graph.channels()) {
    sample("coral_channel_capacity", "channel=" + prometheus_label(c.name), fmt::format("{}", c.capacity));
  }
  for (std::size_t i = 0; i < figures.size(); ++i) {
    const auto name = "coral_" + graph.figures()[i].name;
    family(name, "gauge", graph.figures()[i].help);
    sample(name, "", prometheus_number(figures[i]));
  }
  return out;
}

}  // namespace coral::training
