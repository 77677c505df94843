#include "coral/training/checkpoint.hpp"
#include "coral/training/checkpoint_dir.hpp"

#include <array>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <new>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <set>
#include <span>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/core/input_file.hpp"
#include "coral/training/errors.hpp"

namespace coral::training {
namespace {

constexpr char magic[8] = {'C', 'O', 'R', 'A', 'L', 'C', 'K', 'P'};
constexpr std::size_t header_size = 8 + 4 + 8 + 8;

__extension__ typedef unsigned __int128 wide_size;  // a size past 2^64, for messages

template <class... Args>
[[noreturn]] void fail(std::string_view text, Args&&... args) {
  throw checkpoint_error(fmt::format(fmt::runtime(text), std::forward<Args>(args)...));
}

/// What the fixed header says.
struct header {
  std::uint32_t version = 0;
  std::uint64_t size = 0;  ///< payload bytes
  std::uint64_t sum = 0;   ///< FNV-1a 64 of the payload
};

/// Checks the header of a file of `total` bytes whose first
/// min(total, header_size) bytes are at `head`.
header check_header(const std::string& name, const char* head, std::size_t total) {
  if (total < sizeof magic || std::memcmp(head, magic, sizeof magic) != 0) {
    // std::equal, not memcmp: an empty file's data() may be null.
    if (total < sizeof magic && std::equal(head, head + total, std::begin(magic))) {
      fail(errors::checkpoint_truncated, name, total, header_size);
    }
    fail(errors::checkpoint_not_coral, name);
  }
  if (total < header_size) fail(errors::checkpoint_truncated, name, total, header_size);
  header h;
  std::memcpy(&h.version, head + 8, sizeof h.version);
  std::memcpy(&h.size, head + 12, sizeof h.size);
  std::memcpy(&h.sum, head + 20, sizeof h.sum);
  if (h.version < checkpoint_oldest_version || h.version > checkpoint_format_version) {
    fail(errors::checkpoint_version, name, h.version, checkpoint_format_version);
  }
  if (total - header_size != h.size) {
    if (total - header_size < h.size) {
      // In 128 bits: a size field near 2^64 would wrap to a small expected size.
      fail(errors::checkpoint_truncated, name, total, static_cast<wide_size>(header_size) + h.size);
    }
    fail(errors::checkpoint_corrupted, name);  // trailing bytes
  }
  return h;
}

/// Writes all of `size` bytes to `fd`.
bool write_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const auto n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

/// Syncs directory `dir` (so that a rename in it survives a power cut).
void sync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: the file itself is synced
  (void)::fsync(fd);
  ::close(fd);
}

/// Whether writing checkpoint `id` to `file` would destroy something that is
/// not an older (or as old) checkpoint of the same run.
bool occupied(const std::filesystem::path& file, const checkpoint_id& id) {
  std::error_code ec;
  const auto st = std::filesystem::symlink_status(file, ec);
  if (ec || st.type() == std::filesystem::file_type::not_found) return false;
  if (st.type() != std::filesystem::file_type::regular) return true;
  try {
    const auto there = peek_checkpoint(file);
    return !(there.same_run(id) && there.env_steps <= id.env_steps);
  } catch (const checkpoint_error&) {
    return true;  // unreadable: left for a person to look at
  }
}

class writer {
 public:
  void bytes(std::string_view name, const void* data, std::size_t size) {
    put(static_cast<std::uint32_t>(name.size()));
    out_.insert(out_.end(), name.begin(), name.end());
    put(static_cast<std::uint64_t>(size));
    const auto* p = static_cast<const char*>(data);
    out_.insert(out_.end(), p, p + size);
  }
  void text(std::string_view name, std::string_view s) { bytes(name, s.data(), s.size()); }
  void u64(std::string_view name, std::uint64_t v) { bytes(name, &v, sizeof v); }
  void floats(std::string_view name, const std::vector<float>& v) { bytes(name, v.data(), v.size() * sizeof(float)); }
  void doubles(std::string_view name, const std::vector<double>& v) {
    bytes(name, v.data(), v.size() * sizeof(double));
  }
  [[nodiscard]] const std::vector<char>& data() const noexcept { return out_; }

 private:
  template <class T>
  void put(T v) {
    const auto* p = reinterpret_cast<const char*>(&v);
    out_.insert(out_.end(), p, p + sizeof v);
  }
  std::vector<char> out_;
};

}  // namespace

namespace {

constexpr std::uint64_t fnv1a64_seed = 0xcbf29ce484222325ULL;

/// FNV-1a 64 of `bytes` continued from `h`.
std::uint64_t fnv1a64_more(std::uint64_t h, const void* bytes, std::size_t size) noexcept {
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (std::size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

std::uint64_t fnv1a64(const void* bytes, std::size_t size) noexcept {
  return fnv1a64_more(fnv1a64_seed, bytes, size);
}

namespace {

/// The records every checkpoint has (the rest are its algorithm's).
constexpr std::array<std::string_view, 13> common_records{
    "env",    "network", "seed", "updates", "env_steps", "adam_steps",         "rng",
    "parameters", "adam_m", "adam_v", "algo", "observation_moments", "reward_scaling"};

bool is_common_record(std::string_view key) {
  return std::find(common_records.begin(), common_records.end(), key) != common_records.end();
}

}  // namespace

void checkpoint::set_record(std::string name, std::vector<char> bytes) {
  if (is_common_record(name)) throw usage_error("checkpoint::set_record: '" + name + "' is a common record");
  for (auto& [key, value] : records) {
    if (key == name) {
      value = std::move(bytes);
      return;
    }
  }
  records.emplace_back(std::move(name), std::move(bytes));
}

void checkpoint::set_floats(std::string name, std::span<const float> values) {
  std::vector<char> bytes(values.size_bytes());
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), values.size_bytes());
  set_record(std::move(name), std::move(bytes));
}

const std::vector<char>* checkpoint::record(std::string_view name) const noexcept {
  for (const auto& [key, value] : records) {
    if (key == name) return &value;
  }
  return nullptr;
}

std::vector<float> checkpoint::floats(std::string_view name, std::string_view file) const {
  const auto* r = record(name);
  if (r == nullptr) return {};
  if (r->size() % sizeof(float) != 0) {
    throw checkpoint_error(fmt::format(fmt::runtime(errors::checkpoint_bad_record), file, name));
  }
  std::vector<float> v(r->size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), r->data(), r->size());
  return v;
}

void write_checkpoint(const std::filesystem::path& file, const checkpoint& c) {
  writer w;
  w.text("env", c.env);
  w.text("network", c.network);
  w.u64("seed", c.seed);
  w.u64("updates", c.learner.updates);
  w.u64("env_steps", c.learner.env_steps);
  w.u64("adam_steps", c.learner.adam_steps);
  w.u64("rng", c.learner.rng);
  w.floats("parameters", c.learner.parameters);
  w.floats("adam_m", c.learner.adam_m);
  w.floats("adam_v", c.learner.adam_v);
  w.text("algo", c.algo);
  w.doubles("observation_moments", c.learner.observation_moments);
  w.doubles("reward_scaling", c.learner.reward_scaling);
  for (const auto& [key, bytes] : c.records) w.bytes(key, bytes.data(), bytes.size());
  const auto& payload = w.data();
  const std::uint32_t version = checkpoint_format_version;
  const std::uint64_t size = payload.size();
  const std::uint64_t sum = fnv1a64(payload.data(), payload.size());

  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  auto tmp = file;
  tmp += ".tmp";
  {
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail(errors::checkpoint_io, file.string(), std::strerror(errno));
    bool ok = write_all(fd, magic, sizeof magic) && write_all(fd, &version, sizeof version) &&
              write_all(fd, &size, sizeof size) && write_all(fd, &sum, sizeof sum) &&
              write_all(fd, payload.data(), payload.size());
    ok = ok && ::fsync(fd) == 0;
    int write_errno = ok ? 0 : errno;
    if (::close(fd) != 0 && ok) {
      ok = false;
      write_errno = errno;
    }
    if (!ok) {
      std::filesystem::remove(tmp, ec);
      fail(errors::checkpoint_io, file.string(), fmt::format("write failed: {}", std::strerror(write_errno)));
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    fail(errors::checkpoint_io, file.string(), ec.message());
  }
  sync_directory(file.parent_path());
}

namespace {

/// Where a record's bytes lie in a checkpoint's payload.
struct record_place {
  std::string key;
  std::uint64_t at = 0;  ///< offset in the payload
  std::uint64_t size = 0;
};

/// A checkpoint file, opened and its header checked.
struct open_checkpoint {
  std::string name;
  input_file in;
  header h;

  explicit open_checkpoint(const std::filesystem::path& file) : name(file.string()), in(name, max_checkpoint_bytes) {
    if (in.fault() == input_file_fault::not_regular) fail(errors::checkpoint_not_a_file, name);
    if (!in) fail(errors::checkpoint_io, name, in.problem());
    char head[header_size] = {};
    read(head, static_cast<std::size_t>(std::min<std::uint64_t>(in.size(), header_size)));
    h = check_header(name, head, static_cast<std::size_t>(in.size()));
  }

  void read(void* to, std::size_t n) {
    if (!in.read(to, n)) fail(errors::checkpoint_io, name, in.problem());
  }

  /// Walks the record framing from the start of the payload, reading each
  /// record's name and length and seeking past its bytes: every length is
  /// checked against what is left of the file before anything is allocated.
  std::vector<record_place> places() {
    constexpr std::uint64_t max_key = 4096;  // record names are short
    std::vector<record_place> out;
    std::set<std::string, std::less<>> seen;
    std::uint64_t at = 0;
    const std::uint64_t size = h.size;
    auto take = [&](void* to, std::uint64_t n) {
      if (size - at < n) fail(errors::checkpoint_bad_record, name, "<framing>");
      read(to, static_cast<std::size_t>(n));
      at += n;
    };
    while (at < size) {
      std::uint32_t key_size = 0;
      take(&key_size, 4);
      if (key_size > max_key) fail(errors::checkpoint_bad_record, name, "<framing>");
      std::string key(key_size, '\0');
      take(key.data(), key_size);
      std::uint64_t len = 0;
      take(&len, 8);
      // A name twice is never written, and a run of empty records (a
      // payload of zeros) would otherwise list billions of them.
      if (size - at < len || !seen.insert(key).second) fail(errors::checkpoint_bad_record, name, key);
      if (!in.skip(len)) fail(errors::checkpoint_io, name, in.problem());
      out.push_back({std::move(key), at, len});
      at += len;
    }
    return out;
  }

  /// Record `p`'s bytes (the file positioned anywhere).
  std::vector<char> bytes(const record_place& p) {
    if (!in.rewind() || !in.skip(header_size + p.at)) fail(errors::checkpoint_io, name, in.problem());
    std::vector<char> v(static_cast<std::size_t>(p.size));
    read(v.data(), v.size());
    return v;
  }

  /// Whether the payload's checksum is the header's, read in chunks: a
  /// corrupted file of any size is refused in constant memory.
  bool checksum_matches() {
    if (!in.rewind() || !in.skip(header_size)) fail(errors::checkpoint_io, name, in.problem());
    std::vector<char> chunk(std::size_t{1} << 20);
    std::uint64_t hash = fnv1a64_seed;
    for (std::uint64_t left = h.size; left > 0;) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left, chunk.size()));
      read(chunk.data(), n);
      hash = fnv1a64_more(hash, chunk.data(), n);
      left -= n;
    }
    return hash == h.sum;
  }
};

/// Throws errors::checkpoint_not_finite for the first value of record `key` that is NaN or infinite.
template <class T>
void check_finite(const std::string& file, std::string_view key, const std::vector<T>& values) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) fail(errors::checkpoint_not_finite, file, key, i, values[i]);
  }
}

checkpoint read_verified(const std::filesystem::path& file) {
  open_checkpoint f(file);
  const std::string& name = f.name;
  const std::uint32_t version = f.h.version;
  // The header's size was checked against the file's. Then the checksum,
  // read in chunks (constant memory whatever the size), then the framing,
  // then the records, each allocated once at its size.
  if (!f.checksum_matches()) fail(errors::checkpoint_corrupted, name);
  if (!f.in.rewind() || !f.in.skip(header_size)) fail(errors::checkpoint_io, name, f.in.problem());
  const auto places = f.places();

  std::map<std::string, std::vector<char>, std::less<>> records;
  for (const auto& p : places) records[p.key] = f.bytes(p);
  auto record = [&](std::string_view key) -> std::vector<char>& {
    auto it = records.find(key);
    if (it == records.end()) fail(errors::checkpoint_bad_record, name, key);
    return it->second;
  };
  auto u64 = [&](std::string_view key) {
    const auto& r = record(key);
    if (r.size() != 8) fail(errors::checkpoint_bad_record, name, key);
    std::uint64_t v = 0;
    std::memcpy(&v, r.data(), 8);
    return v;
  };
  auto counter = [&](std::string_view key) {
    const auto v = u64(key);
    if (v > max_checkpoint_count) fail(errors::checkpoint_count_too_large, name, key, v, max_checkpoint_count);
    return v;
  };
  auto numbers = [&]<class T>(std::string_view key, std::vector<T>& to) {
    const auto& r = record(key);
    if (r.size() % sizeof(T) != 0) fail(errors::checkpoint_bad_record, name, key);
    to.resize(r.size() / sizeof(T));
    if (!to.empty()) std::memcpy(to.data(), r.data(), r.size());  // an empty vector's data() may be null
    check_finite(name, key, to);
  };
  auto text = [&](std::string_view key) {
    const auto& r = record(key);
    return std::string(r.data(), r.size());
  };
  checkpoint c;
  c.env = text("env");
  c.network = text("network");
  c.seed = u64("seed");
  c.learner.updates = counter("updates");
  c.learner.env_steps = counter("env_steps");
  c.learner.adam_steps = counter("adam_steps");
  c.learner.rng = u64("rng");
  numbers("parameters", c.learner.parameters);
  numbers("adam_m", c.learner.adam_m);
  numbers("adam_v", c.learner.adam_v);
  if (version >= 2) {
    c.algo = text("algo");
  }
  if (version >= 3) {
    numbers("observation_moments", c.learner.observation_moments);
    numbers("reward_scaling", c.learner.reward_scaling);
  }
  if (c.learner.adam_m.size() != c.learner.parameters.size()) fail(errors::checkpoint_bad_record, name, "adam_m");
  if (c.learner.adam_v.size() != c.learner.parameters.size()) fail(errors::checkpoint_bad_record, name, "adam_v");
  // Every other record is the algorithm's (format 2 and 3 files: target_parameters and replay).
  for (auto& [key, bytes] : records) {
    if (!is_common_record(key)) c.records.emplace_back(key, std::move(bytes));
  }
  return c;
}

}  // namespace

checkpoint read_checkpoint(const std::filesystem::path& file) {
  try {
    return read_verified(file);
  } catch (const std::bad_alloc&) {
    // Under a memory limit (ulimit -v, a cgroup): a file that does not fit
    // is one that cannot be used, and --resume passes on to the next.
    std::error_code ec;
    fail(errors::checkpoint_no_memory, file.string(), std::filesystem::file_size(file, ec));
  }
}

std::filesystem::path checkpoint_path(const std::filesystem::path& dir, std::uint64_t env_steps) {
  return dir / fmt::format("checkpoint-{:012}.ckpt", env_steps);
}

checkpoint_id id_of(const checkpoint& c) {
  return {.env = c.env, .network = c.network, .algo = c.algo, .seed = c.seed, .env_steps = c.learner.env_steps};
}

checkpoint_id peek_checkpoint(const std::filesystem::path& file) {
  // Peeking does not verify the checksum; read_checkpoint() does.
  open_checkpoint f(file);
  const std::string& name = f.name;
  const auto places = f.places();
  checkpoint_id id;
  auto find = [&](std::string_view key) -> const record_place* {
    for (const auto& p : places) {
      if (p.key == key) return &p;
    }
    return nullptr;
  };
  constexpr std::uint64_t max_text = 4096;  // env names and signatures are short
  auto text = [&](std::string_view key, std::string& to) {
    const auto* p = find(key);
    if (p == nullptr || p->size > max_text) fail(errors::checkpoint_bad_record, name, key);
    const auto bytes = f.bytes(*p);
    to.assign(bytes.begin(), bytes.end());
  };
  auto u64 = [&](std::string_view key) {
    const auto* p = find(key);
    if (p == nullptr || p->size != 8) fail(errors::checkpoint_bad_record, name, key);
    std::uint64_t v = 0;
    const auto bytes = f.bytes(*p);
    std::memcpy(&v, bytes.data(), 8);
    return v;
  };
  text("env", id.env);
  text("network", id.network);
  if (f.h.version >= 2) text("algo", id.algo);
  id.seed = u64("seed");
  id.env_steps = u64("env_steps");
  return id;
}

bool is_checkpoint_name(std::string_view name) noexcept {
  return name.size() > std::string_view("checkpoint-.ckpt").size() && name.starts_with("checkpoint-") &&
         name.ends_with(".ckpt");
}

checkpoint_listing list_checkpoints(const std::filesystem::path& dir) {
  checkpoint_listing out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (!is_checkpoint_name(e.path().filename().string())) continue;
    std::error_code type_ec;
    if (!e.is_regular_file(type_ec)) {
      out.skipped.push_back({e.path(), fmt::format(fmt::runtime(errors::checkpoint_not_a_file), e.path().string()), false});
      continue;
    }
    try {
      out.checkpoints.push_back({e.path(), peek_checkpoint(e.path())});
    } catch (const checkpoint_error& err) {
      out.skipped.push_back({e.path(), err.what(), true});
    }
  }
  std::sort(out.checkpoints.begin(), out.checkpoints.end(), [](const auto& a, const auto& b) {
    if (a.id.env_steps != b.id.env_steps) return a.id.env_steps > b.id.env_steps;
    return a.file.filename() > b.file.filename();
  });
  std::sort(out.skipped.begin(), out.skipped.end(),
            [](const auto& a, const auto& b) { return a.file.filename() > b.file.filename(); });
  return out;
}

std::optional<std::filesystem::path> newest_checkpoint(const std::filesystem::path& dir) {
  auto listing = list_checkpoints(dir);
  if (listing.checkpoints.empty()) return std::nullopt;
  return std::move(listing.checkpoints.front().file);
}

std::filesystem::path save_checkpoint(const std::filesystem::path& dir, const checkpoint& c, std::size_t keep) {
  const auto id = id_of(c);
  auto file = checkpoint_path(dir, id.env_steps);
  for (std::size_t k = 1; occupied(file, id); ++k) file = dir / fmt::format("checkpoint-{:012}-{}.ckpt", id.env_steps, k);
  write_checkpoint(file, c);
  if (keep == 0) return file;
  std::size_t kept = 0;
  for (const auto& listed : list_checkpoints(dir).checkpoints) {
    if (!listed.id.same_run(id)) continue;
    if (kept < keep) {
      ++kept;
      continue;
    }
    std::error_code ec;
    if (listed.file != file) std::filesystem::remove(listed.file, ec);  // best effort: a survivor is harmless
  }
  return file;
}

std::size_t remove_stale_temporaries(const std::filesystem::path& dir) {
  std::size_t removed = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const auto name = e.path().filename().string();
    std::error_code type_ec;
    if (!name.ends_with(".tmp") || !is_checkpoint_name(std::string_view(name).substr(0, name.size() - 4)) ||
        !e.is_regular_file(type_ec)) {
      continue;
    }
    std::error_code remove_ec;
    if (std::filesystem::remove(e.path(), remove_ec)) ++removed;
  }
  return removed;
}

}  // namespace coral::training
