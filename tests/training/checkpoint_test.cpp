#include "coral/training/checkpoint.hpp"
#include "coral/training/checkpoint_dir.hpp"

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/core/errors.hpp"
#include "coral/training/errors.hpp"
#include "../support/scratch_dir.hpp"
#include "coral/training/algorithm_descriptor.hpp"

// Under a sanitizer, an allocation that fails aborts the process (the
// sanitizers' allocators do not throw std::bad_alloc by default).
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CORAL_TEST_SANITIZER 1
#endif
#endif
#if (defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)) && !defined(CORAL_TEST_SANITIZER)
#define CORAL_TEST_SANITIZER 1
#endif

namespace fs = std::filesystem;
using coral::test::fresh_dir;
using coral::test::read_bytes;
using namespace coral::training;

namespace {

/// A fresh, empty directory under the system's temporary directory.

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

TEST_CASE("a checkpoint reads back exactly what was written", "[training][checkpoint]") {
  const auto dir = fresh_dir("training-roundtrip");
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

TEST_CASE("a truncated checkpoint is refused with a clear error at every length", "[training][checkpoint]") {
  const auto dir = fresh_dir("training-truncated");
  const auto file = checkpoint_path(dir, 1);
  write_checkpoint(file, sample_checkpoint());
  const auto bytes = read_bytes(file);
  const auto cut = dir / "cut.ckpt";
  // From 0: an empty file once reached memcmp with a null pointer (found by fuzz/checkpoint_fuzz).
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    write_bytes(cut, std::vector<char>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)));
    const auto expected = std::max<std::size_t>(28, n < 28 ? 28 : bytes.size());
    INFO("length " << n);
    CHECK(refusal(cut) == fmt::format(fmt::runtime(training::errors::checkpoint_truncated), cut.string(), n, expected));
  }
}

TEST_CASE("a checkpoint with any byte of its payload changed is refused as corrupted", "[training][checkpoint]") {
  const auto dir = fresh_dir("training-corrupted");
  const auto file = checkpoint_path(dir, 1);
  write_checkpoint(file, sample_checkpoint());
  const auto bytes = read_bytes(file);
  const auto bad = dir / "bad.ckpt";
  for (std::size_t i = 28; i < bytes.size(); ++i) {
    auto copy = bytes;
    copy[i] = static_cast<char>(copy[i] ^ 0x01);
    write_bytes(bad, copy);
    INFO("byte " << i);
    CHECK(refusal(bad) == fmt::format(fmt::runtime(training::errors::checkpoint_corrupted), bad.string()));
  }
  // A changed checksum is a mismatch too.
  auto copy = bytes;
  copy[20] = static_cast<char>(copy[20] ^ 0x80);
  write_bytes(bad, copy);
  CHECK(refusal(bad) == fmt::format(fmt::runtime(training::errors::checkpoint_corrupted), bad.string()));
}

TEST_CASE("a file that is not a checkpoint, or of another version, is refused", "[training][checkpoint]") {
  const auto dir = fresh_dir("training-foreign");
  const auto text = dir / "notes.ckpt";
  write_bytes(text, std::vector<char>(100, 'x'));
  CHECK(refusal(text) == fmt::format(fmt::runtime(training::errors::checkpoint_not_coral), text.string()));

  const auto file = checkpoint_path(dir, 1);
  write_checkpoint(file, sample_checkpoint());
  auto bytes = read_bytes(file);
  bytes[8] = 9;  // format version 9
  write_bytes(file, bytes);
  CHECK(refusal(file) ==
        fmt::format(fmt::runtime(training::errors::checkpoint_version), file.string(), 9, checkpoint_format_version));

  const auto missing = dir / "missing.ckpt";
  CHECK(refusal(missing) ==
        fmt::format(fmt::runtime(training::errors::checkpoint_io), missing.string(), coral::errors::input_missing));
  const auto fifo = dir / "fifo.ckpt";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);  // never opened: it would block
  CHECK(refusal(fifo) == fmt::format(fmt::runtime(training::errors::checkpoint_not_a_file), fifo.string()));
  CHECK_THROWS_WITH(peek_checkpoint(fifo),
                    fmt::format(fmt::runtime(training::errors::checkpoint_not_a_file), fifo.string()));
}

TEST_CASE("a hand-made checkpoint is refused by its sizes, counters and values, naming the file",
          "[training][checkpoint]") {
  const auto dir = fresh_dir("training-hand-made");
  const auto file = checkpoint_path(dir, 1);
  write_checkpoint(file, sample_checkpoint());
  const auto good = read_bytes(file);
  const auto bad = dir / "bad.ckpt";

  // A size field of 2^64 - 1: the expected size is said whole, not wrapped.
  auto bytes = good;
  std::fill(bytes.begin() + 12, bytes.begin() + 20, static_cast<char>(0xff));
  write_bytes(bad, bytes);
  CHECK(refusal(bad) == fmt::format(fmt::runtime(training::errors::checkpoint_truncated), bad.string(), good.size(),
                                    "18446744073709551643"));

  // A counter at 2^64 - 1 once wrapped to 15 after 16 updates.
  auto c = sample_checkpoint();
  c.learner.updates = ~std::uint64_t{0};
  write_checkpoint(bad, c);
  CHECK(refusal(bad) == fmt::format(fmt::runtime(training::errors::checkpoint_count_too_large), bad.string(),
                                    "updates", ~std::uint64_t{0}, max_checkpoint_count));
  c = sample_checkpoint();
  c.learner.env_steps = max_checkpoint_count;  // the largest taken
  write_checkpoint(bad, c);
  CHECK(read_checkpoint(bad).learner.env_steps == max_checkpoint_count);

  // Non-finite weights were loaded and acted on.
  c = sample_checkpoint();
  c.learner.parameters[1] = std::numeric_limits<float>::quiet_NaN();
  write_checkpoint(bad, c);
  CHECK(refusal(bad) ==
        fmt::format(fmt::runtime(training::errors::checkpoint_not_finite), bad.string(), "parameters", 1, "nan"));
  c = sample_checkpoint();
  c.learner.adam_v[2] = std::numeric_limits<float>::infinity();
  write_checkpoint(bad, c);
  CHECK(refusal(bad) ==
        fmt::format(fmt::runtime(training::errors::checkpoint_not_finite), bad.string(), "adam_v", 2, "inf"));

  // A payload of zeros with a right checksum: empty records, one name many
  // times; refused at the second, not listed a hundred million times.
  std::vector<char> zeros(28 + 1200, '\0');
  std::memcpy(zeros.data(), good.data(), 12);  // magic and version
  const std::uint64_t size = 1200;
  const std::uint64_t sum = fnv1a64(zeros.data() + 28, 1200);
  std::memcpy(zeros.data() + 12, &size, 8);
  std::memcpy(zeros.data() + 20, &sum, 8);
  write_bytes(bad, zeros);
  CHECK(refusal(bad) == fmt::format(fmt::runtime(training::errors::checkpoint_bad_record), bad.string(), ""));
  CHECK_THROWS_WITH(peek_checkpoint(bad),
                    fmt::format(fmt::runtime(training::errors::checkpoint_bad_record), bad.string(), ""));
}

TEST_CASE("a large checkpoint with a valid header and a wrong checksum is refused without reading it into memory",
          "[training][checkpoint]") {
  const auto dir = fresh_dir("training-large");
  const auto file = dir / "large.ckpt";
  // 256 MiB, sparse: one record's framing, then zeros (the checksum of the
  // written file is left as it was). Read whole, it once took twice its size in memory.
  auto c = sample_checkpoint();
  write_checkpoint(file, c);
  auto bytes = read_bytes(file);
  const std::uint64_t total = std::uint64_t{256} << 20;
  const std::uint64_t size = total - 28;
  std::memcpy(bytes.data() + 12, &size, 8);
  write_bytes(file, bytes);
  fs::resize_file(file, total);
  CHECK(refusal(file) == fmt::format(fmt::runtime(training::errors::checkpoint_corrupted), file.string()));
  // Peeking walks the framing only: the zeros after the real records are empty records.
  CHECK_THROWS_WITH(peek_checkpoint(file),
                    fmt::format(fmt::runtime(training::errors::checkpoint_bad_record), file.string(), ""));
}

TEST_CASE("a checkpoint that does not fit in memory is refused as such, not ended on std::bad_alloc",
          "[training][checkpoint]") {
  // A valid checkpoint with a 384 MiB replay record of zeros (sparse), read
  // under an address-space limit 128 MiB above what the process has.
#ifdef CORAL_TEST_SANITIZER
  WARN("a sanitizer's allocator reserves address space by the terabyte and aborts on a failed allocation: nothing "
       "to check here");
  return;
#endif
  const auto dir = fresh_dir("training-no-memory");
  const auto small = dir / "small.ckpt";
  write_checkpoint(small, sample_checkpoint());
  auto bytes = read_bytes(small);
  const std::uint64_t zeros = std::uint64_t{384} << 20;
  const std::string key = "replay";
  const std::uint32_t key_size = static_cast<std::uint32_t>(key.size());
  bytes.insert(bytes.end(), reinterpret_cast<const char*>(&key_size), reinterpret_cast<const char*>(&key_size) + 4);
  bytes.insert(bytes.end(), key.begin(), key.end());
  bytes.insert(bytes.end(), reinterpret_cast<const char*>(&zeros), reinterpret_cast<const char*>(&zeros) + 8);
  std::uint64_t sum = 0xcbf29ce484222325ULL;  // FNV-1a 64 of the payload, zeros included
  for (std::size_t i = 28; i < bytes.size(); ++i) sum = (sum ^ static_cast<unsigned char>(bytes[i])) * 0x100000001b3ULL;
  for (std::uint64_t i = 0; i < zeros; ++i) sum *= 0x100000001b3ULL;
  const std::uint64_t size = bytes.size() - 28 + zeros;
  std::memcpy(bytes.data() + 12, &size, 8);
  std::memcpy(bytes.data() + 20, &sum, 8);
  const auto big = dir / "big.ckpt";
  write_bytes(big, bytes);
  fs::resize_file(big, bytes.size() + zeros);

  std::ifstream status("/proc/self/status");
  std::uint64_t vm_kib = 0;
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmSize:")) vm_kib = std::stoull(line.substr(7));
  }
  REQUIRE(vm_kib > 0);
  rlimit old{};
  REQUIRE(::getrlimit(RLIMIT_AS, &old) == 0);
  rlimit limited = old;
  limited.rlim_cur = (vm_kib << 10) + (std::uint64_t{128} << 20);
  REQUIRE(::setrlimit(RLIMIT_AS, &limited) == 0);
  const auto what = refusal(big);
  REQUIRE(::setrlimit(RLIMIT_AS, &old) == 0);
  CHECK(what == fmt::format(fmt::runtime(training::errors::checkpoint_no_memory), big.string(), bytes.size() + zeros));
  CHECK(read_checkpoint(big).records.front().second.size() == zeros);  // whole, with the limit lifted
}

TEST_CASE("the newest checkpoint is the one with the most env steps recorded inside it, whatever the names",
          "[training][checkpoint]") {
  const auto dir = fresh_dir("training-newest");
  CHECK_FALSE(newest_checkpoint(dir).has_value());
  for (std::uint64_t steps : {512U, 100000U, 4096U}) {
    auto c = sample_checkpoint();
    c.learner.env_steps = steps;
    write_checkpoint(checkpoint_path(dir, steps), c);
  }
  // A stray copy of an old checkpoint under the highest name, a directory and
  // an unreadable file named like checkpoints, and an unrelated file.
  fs::copy_file(checkpoint_path(dir, 512), dir / "checkpoint-999999999999.ckpt");
  fs::create_directories(dir / "checkpoint-999999999998.ckpt");
  write_bytes(dir / "checkpoint-999999999997.ckpt", std::vector<char>(100, 'x'));
  write_bytes(dir / "notes.txt", {'x'});
  const auto newest = newest_checkpoint(dir);
  REQUIRE(newest.has_value());
  CHECK(*newest == checkpoint_path(dir, 100000));

  const auto listing = list_checkpoints(dir);
  REQUIRE(listing.checkpoints.size() == 4);
  CHECK(listing.checkpoints[0].id.env_steps == 100000);
  CHECK(listing.checkpoints[1].id.env_steps == 4096);
  CHECK(listing.checkpoints[2].file == dir / "checkpoint-999999999999.ckpt");  // 512 steps, the greater name
  CHECK(listing.checkpoints[3].file == checkpoint_path(dir, 512));
  REQUIRE(listing.skipped.size() == 2);
  CHECK(listing.skipped[0].why ==
        fmt::format(fmt::runtime(training::errors::checkpoint_not_a_file), (dir / "checkpoint-999999999998.ckpt").string()));
  CHECK_FALSE(listing.skipped[0].regular_file);
  CHECK(listing.skipped[1].why ==
        fmt::format(fmt::runtime(training::errors::checkpoint_not_coral), (dir / "checkpoint-999999999997.ckpt").string()));
  CHECK(listing.skipped[1].regular_file);
  CHECK(refusal(dir / "checkpoint-999999999998.ckpt") ==
        fmt::format(fmt::runtime(training::errors::checkpoint_not_a_file), (dir / "checkpoint-999999999998.ckpt").string()));
}

TEST_CASE("peeking a checkpoint reads who wrote it and its env steps, and refuses what read_checkpoint refuses",
          "[training][checkpoint]") {
  const auto dir = fresh_dir("training-peek");
  auto c = sample_checkpoint();
  c.algo = "dqn";
  c.set_record("replay", std::vector<char>(100000, 'r'));  // sought past, not read
  const auto file = checkpoint_path(dir, 1536);
  write_checkpoint(file, c);
  const auto id = peek_checkpoint(file);
  CHECK(id.env == "cartpole");
  CHECK(id.network == c.network);
  CHECK(id.algo == "dqn");
  CHECK(id.seed == 7);
  CHECK(id.env_steps == 1536);
  CHECK(id.same_run(id_of(c)));
  auto other = id_of(c);
  other.seed = 8;
  CHECK_FALSE(id.same_run(other));

  const auto bytes = read_bytes(file);
  const auto cut = dir / "cut.ckpt";
  write_bytes(cut, std::vector<char>(bytes.begin(), bytes.begin() + 40));
  CHECK_THROWS_WITH(peek_checkpoint(cut),
                    fmt::format(fmt::runtime(training::errors::checkpoint_truncated), cut.string(), 40, bytes.size()));
  auto bad = bytes;
  for (std::size_t i = 28; i < 32; ++i) bad[i] = static_cast<char>(0xff);  // the first name's length: past the end
  write_bytes(cut, bad);
  CHECK_THROWS_WITH(peek_checkpoint(cut),
                    fmt::format(fmt::runtime(training::errors::checkpoint_bad_record), cut.string(), "<framing>"));
}

TEST_CASE("saving keeps the newest checkpoints of the run and never touches another run's", "[training][checkpoint]") {
  const auto dir = fresh_dir("training-prune");
  auto theirs = sample_checkpoint();
  theirs.seed = 99;
  theirs.learner.env_steps = 10;
  write_checkpoint(dir / "checkpoint-000000000010.ckpt", theirs);
  write_bytes(dir / "checkpoint-000000000011.ckpt", std::vector<char>(50, 'x'));  // unreadable: left alone
  auto c = sample_checkpoint();
  for (std::uint64_t steps = 100; steps <= 600; steps += 100) {
    c.learner.env_steps = steps;
    CHECK(save_checkpoint(dir, c, 3) == checkpoint_path(dir, steps));
  }
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"checkpoint-000000000010.ckpt", "checkpoint-000000000011.ckpt",
                                          "checkpoint-000000000400.ckpt", "checkpoint-000000000500.ckpt",
                                          "checkpoint-000000000600.ckpt"});
  // keep 0: all of them.
  for (std::uint64_t steps = 700; steps <= 900; steps += 100) {
    c.learner.env_steps = steps;
    (void)save_checkpoint(dir, c, 0);
  }
  CHECK(list_checkpoints(dir).checkpoints.size() == 1 + 6);
}

TEST_CASE("saving never overwrites a newer checkpoint, another run's, or a directory under its name",
          "[training][checkpoint]") {
  const auto dir = fresh_dir("training-no-overwrite");
  auto c = sample_checkpoint();
  // A checkpoint of 5000 steps misnamed as 1000.
  c.learner.env_steps = 5000;
  write_checkpoint(checkpoint_path(dir, 1000), c);
  c.learner.env_steps = 1000;
  const auto saved = save_checkpoint(dir, c, 0);
  CHECK(saved == dir / "checkpoint-000000001000-1.ckpt");
  CHECK(peek_checkpoint(checkpoint_path(dir, 1000)).env_steps == 5000);
  CHECK(peek_checkpoint(saved).env_steps == 1000);

  // Another run's checkpoint at the name, and a directory at the next.
  auto theirs = sample_checkpoint();
  theirs.env = "acrobot";
  theirs.learner.env_steps = 1;
  write_checkpoint(checkpoint_path(dir, 2000), theirs);
  fs::create_directories(dir / "checkpoint-000000002000-1.ckpt");
  c.learner.env_steps = 2000;
  CHECK(save_checkpoint(dir, c, 0) == dir / "checkpoint-000000002000-2.ckpt");
  CHECK(peek_checkpoint(checkpoint_path(dir, 2000)).env == "acrobot");

  // An older (or as old) checkpoint of the same run is overwritten in place.
  CHECK(save_checkpoint(dir, c, 0) == dir / "checkpoint-000000002000-2.ckpt");
  write_checkpoint(checkpoint_path(dir, 2500), c);  // 2000 steps under the name of 2500
  c.learner.env_steps = 2500;
  CHECK(save_checkpoint(dir, c, 0) == checkpoint_path(dir, 2500));
  CHECK(peek_checkpoint(checkpoint_path(dir, 2500)).env_steps == 2500);
}

TEST_CASE("temporaries left by killed checkpoint writes are removed, and nothing else", "[training][checkpoint]") {
  const auto dir = fresh_dir("training-tmp");
  write_bytes(dir / "checkpoint-000000000512.ckpt.tmp", {'x'});
  write_bytes(dir / "checkpoint-000000001024.ckpt.tmp", {'x'});
  write_bytes(dir / "notes.tmp", {'x'});
  write_checkpoint(checkpoint_path(dir, 1), sample_checkpoint());
  CHECK(remove_stale_temporaries(dir) == 2);
  CHECK_FALSE(fs::exists(dir / "checkpoint-000000000512.ckpt.tmp"));
  CHECK_FALSE(fs::exists(dir / "checkpoint-000000001024.ckpt.tmp"));
  CHECK(fs::exists(dir / "notes.tmp"));
  CHECK(fs::exists(checkpoint_path(dir, 1)));
  CHECK(remove_stale_temporaries(dir / "absent") == 0);
}

TEST_CASE("an algorithm's own records round-trip by name, and a common record's name is refused",
          "[training][checkpoint]") {
  const auto dir = fresh_dir("training-records");
  checkpoint c;
  c.env = "cartpole";
  c.network = "net";
  c.algo = "test-records";
  const std::vector<float> target{1.5f, -2.0f, 0.25f};
  c.set_floats("target_parameters", target);
  c.set_record("replay", {'a', 'b', 'c'});
  c.set_record("replay", {'x'});  // replaced, not added
  CHECK(c.records.size() == 2);
  CHECK_THROWS_AS(c.set_record("seed", {}), coral::usage_error);
  const auto file = dir / "records.ckpt";
  write_checkpoint(file, c);
  const auto back = read_checkpoint(file);
  CHECK(back.floats("target_parameters") == target);
  REQUIRE(back.record("replay") != nullptr);
  CHECK(*back.record("replay") == std::vector<char>{'x'});
  CHECK(back.record("no-such-record") == nullptr);
  CHECK(back.floats("no-such-record").empty());
  // A record that is not a whole number of floats is refused when read as floats.
  checkpoint odd;
  odd.set_record("target_parameters", {'1', '2', '3'});
  CHECK_THROWS_AS(odd.floats("target_parameters", "f"), checkpoint_error);
}
