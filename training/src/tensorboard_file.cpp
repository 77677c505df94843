#include "tensorboard_file.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <cmath>
#include <limits>
#include <cstring>
#include <fstream>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/training/errors.hpp"
#include "tfevents.hpp"

namespace coral::training::detail {
namespace {

namespace fs = std::filesystem;

struct column_group {
  std::string_view column;
  std::string_view group;
};

// Every column a built-in algorithm writes (training_run's common ones
// included), by what it measures; the table in docs/training.md.
constexpr column_group groups[] = {
    {"seconds", "charts"},
    {"env_steps", "charts"},
    {"steps_per_second", "charts"},
    {"episodes", "charts"},
    {"mean_return", "charts"},
    {"mean_length", "charts"},
    {"updates", "charts"},
    {"learning_rate", "charts"},
    {"policy_loss", "losses"},
    {"value_loss", "losses"},
    {"entropy", "losses"},
    {"approx_kl", "losses"},
    {"clip_fraction", "losses"},
    {"td_loss", "losses"},
    {"mean_q", "losses"},
    {"q_max", "losses"},
    {"mean_abs_td", "losses"},
    {"grad_norm", "losses"},
    {"replay_size", "replay"},
    {"inserts_per_second", "replay"},
    {"samples_per_second", "replay"},
    {"replay_ratio", "replay"},
    {"sample_us", "replay"},
    {"inbox_depth", "replay"},
    {"ready_batches", "replay"},
    {"waiting_requests", "replay"},
    {"sequences_added", "replay"},
    {"sequences_sampled", "replay"},
    {"priority_mean", "replay"},
    {"priority_min", "replay"},
    {"priority_max", "replay"},
    {"stale_updates", "replay"},
    {"mean_policy_lag", "actor"},
    {"max_policy_lag", "actor"},
    {"held_groups", "actor"},
    {"learner_steps_per_second", "learner"},
    {"updates_per_second", "learner"},
    {"burn_in_ms", "learner"},
    {"learn_ms", "learner"},
};

[[noreturn]] void refuse(const fs::path& dir, const std::string& why) {
  throw config_error(fmt::format(fmt::runtime(errors::dir_unusable), "--run-dir", dir.string(), why));
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// This host's name as a file name may hold it (TensorBoard's names carry it).
std::string host_for_file_name() {
  std::array<char, HOST_NAME_MAX + 1> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0 || name[0] == '\0') return "localhost";
  std::string host(name.data());
  host.resize(std::min<std::size_t>(host.size(), 64));  // run_files.cpp's longest name counts on it
  for (auto& c : host) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
    if (!plain) c = '_';
  }
  return host;
}

/// The event files in `dir`, oldest (by name: the time leads) first.
std::vector<fs::path> event_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.path().filename().string().starts_with(event_file_prefix)) continue;
    std::error_code kind;
    if (entry.is_regular_file(kind)) out.push_back(entry.path());
  }
  if (ec) refuse(dir, ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

/// Writes all of `bytes` to `fd`; false with errno set when it cannot.
bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const auto n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

/// Copies the records of `files`, in order, that a run resuming from
/// `resumed_steps` keeps into `into`, which it creates and syncs: the file's
/// first record (a file_version of its own), then every Event up to those
/// steps (a text summary only below them). A file's records end at the
/// first that is cut short or fails its CRC. Returns the steps of the last
/// metrics row kept, if any. Throws config_error (errors::dir_unusable).
std::optional<std::uint64_t> keep_records(const fs::path& dir, const std::vector<fs::path>& files, const fs::path& into,
                                          std::uint64_t resumed_steps) {
  const auto name = files.back().filename().string();
  const int fd = ::open(into.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) refuse(dir, fmt::format("cannot rewrite {}: {}", name, std::strerror(errno)));
  auto fail = [&](const std::string& why) {
    ::close(fd);
    std::error_code ignored;
    fs::remove(into, ignored);
    refuse(dir, why);
  };
  std::optional<std::uint64_t> last_row;
  std::string out = tfevents::frame(tfevents::version_event(now_seconds()));
  auto flush = [&] {
    if (!write_all(fd, out)) fail(fmt::format("cannot rewrite {}: {}", name, std::strerror(errno)));
    out.clear();
  };
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) fail(fmt::format("cannot read {}: {}", file.filename().string(), std::strerror(errno)));
    std::string data;
    while (tfevents::read_record(in, data)) {
      const auto kind = tfevents::inspect(data);
      if (!kind) break;  // not an Event: nothing after it is trusted either
      if (kind->opens_file || kind->step < 0) continue;
      const auto step = static_cast<std::uint64_t>(kind->step);
      if (kind->text ? step >= resumed_steps : step > resumed_steps) continue;
      if (!kind->text) last_row = step;
      out += tfevents::frame(data);
      if (out.size() >= (std::size_t{1} << 20)) flush();
    }
  }
  flush();
  if (::fsync(fd) != 0) fail(fmt::format("cannot rewrite {}: {}", name, std::strerror(errno)));
  if (::close(fd) != 0) {
    const int why = errno;
    std::error_code ignored;
    fs::remove(into, ignored);
    refuse(dir, fmt::format("cannot rewrite {}: {}", name, std::strerror(why)));
  }
  return last_row;
}

/// `v` as TensorBoard's simple_value holds it: past a float's range, an
/// infinity (a plain conversion is undefined there).
float to_float(double v) {
  if (std::isfinite(v) && std::fabs(v) > std::numeric_limits<float>::max()) {
    return v > 0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
  }
  return static_cast<float>(v);
}

}  // namespace

std::string tensorboard_tag(std::string_view column) {
  if (column.find('/') != std::string_view::npos) return std::string(column);
  for (const auto& g : groups) {
    if (g.column == column) return fmt::format("{}/{}", g.group, column);
  }
  return fmt::format("metrics/{}", column);
}

tensorboard_file::tensorboard_file(const std::string& run_dir, std::string_view header, bool append,
                                   std::uint64_t resumed_steps) {
  if (run_dir.empty()) return;
  bool found_steps = false;
  for (std::size_t start = 0;;) {
    const auto comma = header.find(',', start);
    const auto column = header.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (column == "env_steps" && !found_steps) {
      step_column_ = tags_.size();
      found_steps = true;
    }
    tags_.push_back(tensorboard_tag(column));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (!found_steps) throw usage_error("tensorboard_file: the metrics header has no env_steps column: " + std::string(header));

  const fs::path dir = run_dir;
  const auto temporary = dir / ".tensorboard-resume.tmp";  // no "tfevents": TensorBoard reads every such name
  std::error_code ec;
  fs::remove(temporary, ec);  // a killed resume's
  const auto old = event_files(dir);
  if (append && !old.empty()) {
    file_ = old.back();
    last_step_ = keep_records(dir, old, temporary, resumed_steps);
    fs::rename(temporary, file_, ec);
    if (ec) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      refuse(dir, ec.message());
    }
    for (const auto& file : old) {
      if (file != file_) fs::remove(file, ec);  // merged into file_
    }
    fd_ = ::open(file_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd_ < 0) refuse(dir, std::strerror(errno));
    return;
  }
  // A fresh run starts anew, as metrics.csv does: another run's records
  // would draw a second curve over this one's.
  for (const auto& file : old) {
    fs::remove(file, ec);
    if (ec) refuse(dir, fmt::format("cannot remove {}: {}", file.filename().string(), ec.message()));
  }
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  file_ = dir / fmt::format("{}{:010}.{}.{}", event_file_prefix, seconds.count(), host_for_file_name(), ::getpid());
  fd_ = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) refuse(dir, std::strerror(errno));
  write_event(tfevents::version_event(now_seconds()));
}

tensorboard_file::~tensorboard_file() {
  if (fd_ >= 0) ::close(fd_);
}

void tensorboard_file::write_event(const std::string& event) {
  if (fd_ < 0 || !error_.empty()) return;
  // One write per record: a reader never sees half of one unless the
  // process dies inside the call, and a resume drops that one.
  if (!write_all(fd_, tfevents::frame(event))) error_ = std::strerror(errno);
}

void tensorboard_file::write_row(std::string_view row) {
  if (fd_ < 0 || !error_.empty()) return;
  std::vector<std::string_view> fields;
  for (std::size_t start = 0;;) {
    const auto comma = row.find(',', start);
    fields.push_back(row.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (fields.size() <= step_column_) return;
  std::uint64_t step = 0;
  const auto s = fields[step_column_];
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), step);
  if (ec != std::errc() || end != s.data() + s.size() || step > static_cast<std::uint64_t>(INT64_MAX)) return;
  if (last_step_ && step <= *last_step_) return;
  std::vector<tfevents::scalar> scalars;
  scalars.reserve(fields.size());
  for (std::size_t i = 0; i < fields.size() && i < tags_.size(); ++i) {
    double v = 0;
    const auto f = fields[i];
    const auto [at, parsed] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (parsed != std::errc() || at != f.data() + f.size()) continue;
    scalars.push_back({tags_[i], to_float(v)});
  }
  write_event(tfevents::scalars_event(now_seconds(), static_cast<std::int64_t>(step), scalars));
  last_step_ = step;
}

void tensorboard_file::write_text(std::string_view tag, std::string_view markdown, std::uint64_t step) {
  write_event(tfevents::text_event(now_seconds(), static_cast<std::int64_t>(step), tag, markdown));
}

bool tensorboard_file::close(std::ostream& warnings) {
  if (fd_ < 0) return false;
  if (::close(fd_) != 0 && error_.empty()) error_ = std::strerror(errno);
  fd_ = -1;
  if (error_.empty()) return true;
  warnings << fmt::format(fmt::runtime(errors::metrics_write_failed), file_.string(), error_) << '\n';
  return false;
}

}  // namespace coral::training::detail
