#include "coral/learners/checkpoint.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/learners/messages.hpp"

namespace fs = std::filesystem;
using namespace coral::learners;

namespace {

/// A fresh, empty directory under the system's temporary directory.
fs::path fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("coral-learners-test-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

checkpoint sample_checkpoint() {
  checkpoint c;
  c.env = "cartpole";
  c.network = "mlp obs=4 frames=1 nvec=[2] box=0 hidden=[64,64] params=3";
  c.seed = 7;
  c.learner.parameters = {1.5f, -2.0f, 0.25f};
  c.learner.adam_m = {0.1f, 0.2f, 0.3f};
  c.learner.adam_v = {0.01f, 0.02f, 0.03f};
  c.learner.adam_steps = 12;
  c.learner.updates = 3;
  c.learner.env_steps = 1536;
  c.learner.rng = 0xDEADBEEFULL;
  return c;
}

std::vector<char> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string refusal(const fs::path& p) {
  try {
    (void)read_checkpoint(p);
  } catch (const checkpoint_error& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("a checkpoint reads back exactly what was written", "[learners][checkpoint]") {
  const auto dir = fresh_dir("roundtrip");
  const auto file = checkpoint_path(dir, 1536);
  write_checkpoint(file, sample_checkpoint());
  const auto c = read_checkpoint(file);
  const auto want = sample_checkpoint();
  CHECK(c.env == want.env);
  CHECK(c.network == want.network);
  CHECK(c.seed == want.seed);
  CHECK(c.learner.parameters == want.learner.parameters);
  CHECK(c.learner.adam_m == want.learner.adam_m);
  CHECK(c.learner.adam_v == want.learner.adam_v);
  CHECK(c.learner.adam_steps == want.learner.adam_steps);
  CHECK(c.learner.updates == want.learner.updates);
  CHECK(c.learner.env_steps == want.learner.env_steps);
  CHECK(c.learner.rng == want.learner.rng);
  CHECK_FALSE(fs::exists(fs::path(file.string() + ".tmp")));  // written to a temporary, then renamed
}

TEST_CASE("a truncated checkpoint is refused with a clear error at every length", "[learners][checkpoint]") {
  const auto dir = fresh_dir("truncated");
  const auto file = checkpoint_path(dir, 1);
  write_checkpoint(file, sample_checkpoint());
  const auto bytes = read_bytes(file);
  const auto cut = dir / "cut.ckpt";
  // From 0: an empty file once reached memcmp with a null pointer (found by fuzz/checkpoint_fuzz).
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    write_bytes(cut, std::vector<char>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)));
    const auto expected = std::max<std::size_t>(28, n < 28 ? 28 : bytes.size());
    INFO("length " << n);
    CHECK(refusal(cut) == fmt::format(fmt::runtime(messages::checkpoint_truncated), cut.string(), n, expected));
  }
}

TEST_CASE("a checkpoint with any byte of its payload changed is refused as corrupted", "[learners][checkpoint]") {
  const auto dir = fresh_dir("corrupted");
  const auto file = checkpoint_path(dir, 1);
  write_checkpoint(file, sample_checkpoint());
  const auto bytes = read_bytes(file);
  const auto bad = dir / "bad.ckpt";
  for (std::size_t i = 28; i < bytes.size(); ++i) {
    auto copy = bytes;
    copy[i] = static_cast<char>(copy[i] ^ 0x01);
    write_bytes(bad, copy);
    INFO("byte " << i);
    CHECK(refusal(bad) == fmt::format(fmt::runtime(messages::checkpoint_corrupted), bad.string()));
  }
  // A changed checksum is a mismatch too.
  auto copy = bytes;
  copy[20] = static_cast<char>(copy[20] ^ 0x80);
  write_bytes(bad, copy);
  CHECK(refusal(bad) == fmt::format(fmt::runtime(messages::checkpoint_corrupted), bad.string()));
}

TEST_CASE("a file that is not a checkpoint, or of another version, is refused", "[learners][checkpoint]") {
  const auto dir = fresh_dir("foreign");
  const auto text = dir / "notes.ckpt";
  write_bytes(text, std::vector<char>(100, 'x'));
  CHECK(refusal(text) == fmt::format(fmt::runtime(messages::checkpoint_not_coral), text.string()));

  const auto file = checkpoint_path(dir, 1);
  write_checkpoint(file, sample_checkpoint());
  auto bytes = read_bytes(file);
  bytes[8] = 9;  // format version 9
  write_bytes(file, bytes);
  CHECK(refusal(file) ==
        fmt::format(fmt::runtime(messages::checkpoint_version), file.string(), 9, checkpoint_format_version));

  const auto missing = dir / "missing.ckpt";
  CHECK(refusal(missing) == fmt::format(fmt::runtime(messages::checkpoint_io), missing.string(), "cannot open"));
}

TEST_CASE("the newest checkpoint is the one with the most env steps", "[learners][checkpoint]") {
  const auto dir = fresh_dir("newest");
  CHECK_FALSE(newest_checkpoint(dir).has_value());
  for (std::uint64_t steps : {512U, 100000U, 4096U}) write_checkpoint(checkpoint_path(dir, steps), sample_checkpoint());
  write_bytes(dir / "notes.txt", {'x'});
  const auto newest = newest_checkpoint(dir);
  REQUIRE(newest.has_value());
  CHECK(*newest == checkpoint_path(dir, 100000));
}
