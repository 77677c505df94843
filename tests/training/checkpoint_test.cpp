#include "coral/training/checkpoint.hpp"
#include "coral/training/checkpoint_dir.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/training/errors.hpp"
#include "../support/scratch_dir.hpp"
#include "coral/training/algorithm_descriptor.hpp"

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
  CHECK(refusal(missing) == fmt::format(fmt::runtime(training::errors::checkpoint_io), missing.string(), "cannot open"));
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
