#include "coral/learners/checkpoint.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <span>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/learners/messages.hpp"

namespace coral::learners {
namespace {

constexpr char magic[8] = {'C', 'O', 'R', 'A', 'L', 'C', 'K', 'P'};
constexpr std::size_t header_size = 8 + 4 + 8 + 8;

template <class... Args>
[[noreturn]] void fail(std::string_view text, Args&&... args) {
  throw checkpoint_error(fmt::format(fmt::runtime(text), std::forward<Args>(args)...));
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

std::uint64_t fnv1a64(const void* bytes, std::size_t size) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (std::size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string network_signature(const network_spec& spec) {
  return fmt::format("mlp obs={} frames={} nvec=[{}] box={} hidden=[{}] params={}", spec.raw_obs_dim, spec.frames,
                     fmt::join(spec.nvec, ","), spec.continuous_dim(), fmt::join(spec.hidden, ","),
                     parameter_count(spec));
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
  w.floats("target_parameters", c.target_parameters);
  w.bytes("replay", c.replay.data(), c.replay.size());
  const auto& payload = w.data();
  const std::uint32_t version = checkpoint_format_version;
  const std::uint64_t size = payload.size();
  const std::uint64_t sum = fnv1a64(payload.data(), payload.size());

  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  auto tmp = file;
  tmp += ".tmp";
  {
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) fail(messages::checkpoint_io, file.string(), std::strerror(errno));
    bool ok = std::fwrite(magic, 1, sizeof magic, f) == sizeof magic &&
              std::fwrite(&version, sizeof version, 1, f) == 1 && std::fwrite(&size, sizeof size, 1, f) == 1 &&
              std::fwrite(&sum, sizeof sum, 1, f) == 1 &&
              std::fwrite(payload.data(), 1, payload.size(), f) == payload.size();
    ok = std::fflush(f) == 0 && ok;
    ok = std::fclose(f) == 0 && ok;
    if (!ok) fail(messages::checkpoint_io, file.string(), "write failed");
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) fail(messages::checkpoint_io, file.string(), ec.message());
}

checkpoint read_checkpoint(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(messages::checkpoint_io, file.string(), "cannot open");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string name = file.string();
  if (bytes.size() < sizeof magic || std::memcmp(bytes.data(), magic, sizeof magic) != 0) {
    if (bytes.size() < sizeof magic && std::equal(bytes.begin(), bytes.end(), std::begin(magic))) {
      fail(messages::checkpoint_truncated, name, bytes.size(), header_size);
    }
    fail(messages::checkpoint_not_coral, name);
  }
  if (bytes.size() < header_size) fail(messages::checkpoint_truncated, name, bytes.size(), header_size);
  std::uint32_t version = 0;
  std::uint64_t size = 0;
  std::uint64_t sum = 0;
  std::memcpy(&version, bytes.data() + 8, sizeof version);
  std::memcpy(&size, bytes.data() + 12, sizeof size);
  std::memcpy(&sum, bytes.data() + 20, sizeof sum);
  if (version < checkpoint_oldest_version || version > checkpoint_format_version) fail(messages::checkpoint_version, name, version, checkpoint_format_version);
  if (bytes.size() - header_size != size) {
    if (bytes.size() - header_size < size) fail(messages::checkpoint_truncated, name, bytes.size(), header_size + size);
    fail(messages::checkpoint_corrupted, name);  // trailing bytes
  }
  const char* payload = bytes.data() + header_size;
  if (fnv1a64(payload, size) != sum) fail(messages::checkpoint_corrupted, name);

  std::map<std::string, std::span<const char>, std::less<>> records;
  std::size_t at = 0;
  auto take = [&](std::size_t n) {
    if (size - at < n) fail(messages::checkpoint_bad_record, name, "<framing>");
    const char* p = payload + at;
    at += n;
    return p;
  };
  while (at < size) {
    std::uint32_t name_len = 0;
    std::memcpy(&name_len, take(4), 4);
    std::string key(take(name_len), name_len);
    std::uint64_t len = 0;
    std::memcpy(&len, take(8), 8);
    records[key] = std::span<const char>(take(len), len);
  }
  auto record = [&](std::string_view key) {
    auto it = records.find(key);
    if (it == records.end()) fail(messages::checkpoint_bad_record, name, key);
    return it->second;
  };
  auto u64 = [&](std::string_view key) {
    auto r = record(key);
    if (r.size() != 8) fail(messages::checkpoint_bad_record, name, key);
    std::uint64_t v = 0;
    std::memcpy(&v, r.data(), 8);
    return v;
  };
  auto floats = [&](std::string_view key) {
    auto r = record(key);
    if (r.size() % sizeof(float) != 0) fail(messages::checkpoint_bad_record, name, key);
    std::vector<float> v(r.size() / sizeof(float));
    if (!v.empty()) std::memcpy(v.data(), r.data(), r.size());  // an empty vector's data() may be null
    return v;
  };
  auto text = [&](std::string_view key) {
    auto r = record(key);
    return std::string(r.data(), r.size());
  };
  checkpoint c;
  c.env = text("env");
  c.network = text("network");
  c.seed = u64("seed");
  c.learner.updates = u64("updates");
  c.learner.env_steps = u64("env_steps");
  c.learner.adam_steps = u64("adam_steps");
  c.learner.rng = u64("rng");
  c.learner.parameters = floats("parameters");
  c.learner.adam_m = floats("adam_m");
  c.learner.adam_v = floats("adam_v");
  if (version >= 2) {
    c.algo = text("algo");
    c.target_parameters = floats("target_parameters");
    const auto r = record("replay");
    c.replay.assign(r.begin(), r.end());
  }
  if (c.learner.adam_m.size() != c.learner.parameters.size()) fail(messages::checkpoint_bad_record, name, "adam_m");
  if (c.learner.adam_v.size() != c.learner.parameters.size()) fail(messages::checkpoint_bad_record, name, "adam_v");
  return c;
}

std::filesystem::path checkpoint_path(const std::filesystem::path& dir, std::uint64_t env_steps) {
  return dir / fmt::format("checkpoint-{:012}.ckpt", env_steps);
}

std::optional<std::filesystem::path> newest_checkpoint(const std::filesystem::path& dir) {
  std::error_code ec;
  std::optional<std::filesystem::path> best;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const auto n = e.path().filename().string();
    if (n.starts_with("checkpoint-") && n.ends_with(".ckpt") && (!best || n > best->filename().string())) {
      best = e.path();
    }
  }
  return best;
}

}  // namespace coral::learners
