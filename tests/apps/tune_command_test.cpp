// `coral tune` through the CLI in-process: the sweep, its ranking, the
// config file it writes and that `coral bench --config` takes, and its
// refusals.

#include "coral/cli.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "child_process.hpp"
#include "run_cli.hpp"
#include "../support/scratch_dir.hpp"

#include "coral/core/errors.hpp"
#include "coral/errors.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using coral::test::run_cli;

TEST_CASE("coral tune ranks every wiring it tried and writes the fastest as a config that bench takes",
          "[apps][tune]") {
  const auto dir = fs::temp_directory_path() / "coral-tune-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto file = (dir / "noop.toml").string();
  std::string out, err;
  REQUIRE(run_cli({"tune", "--env", "noop", "--num-envs", "8", "--threads", "2", "--seconds", "0.02", "--out", file,
                   "--show", "100"},
                  out, err) == 0);
  INFO(out << err);
  // What the sampler accepts of 3 topologies x group sizes 1, 2, 4, 8 x their batches x 3 spin times,
  // each as one shard and, where the envs and batch split in two, as two.
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex("coral tune: env noop, 8 envs, 2 sampling threads: ([0-9]+) wirings")));
  const int wirings = std::stoi(m[1].str());
  // 42 of one shard (4 group sizes; pool with 1 group has no batch below all
  // the envs), and 24 of two (8 wirings x 3 spins): sync at groups of 1, 2
  // and 4, double-buffer at 1 and 2 (groups of 4 leave one per shard, which
  // has no halves), pool at groups of 1 with a batch of 2 or 4 and groups of
  // 2 with a batch of 4 (the other batches do not split in whole groups).
  CHECK(wirings == 66);
  // Every one ranked, fastest first, at 1.00x of the best.
  const std::regex line(R"(\n *([0-9]+)\. +([0-9]+) steps/s  ([0-9.]+)x  --topology (\S+) --envs-per-group ([0-9]+) --batch-size ([0-9]+) --spin-us ([0-9]+) --shards ([12]))");
  std::vector<double> rates;
  std::string best_topology, best_group, best_batch, best_spin, best_shards;
  std::set<std::string> shard_counts;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it) {
    rates.push_back(std::stod((*it)[2].str()));
    shard_counts.insert((*it)[8].str());
    if (rates.size() == 1) {
      CHECK((*it)[3].str() == "1.00");
      best_topology = (*it)[4].str();
      best_group = (*it)[5].str();
      best_batch = (*it)[6].str();
      best_spin = (*it)[7].str();
      best_shards = (*it)[8].str();
    }
  }
  CHECK(static_cast<int>(rates.size()) == wirings);
  CHECK(shard_counts == std::set<std::string>{"1", "2"});
  CHECK(std::is_sorted(rates.rbegin(), rates.rend()));
  CHECK(rates.back() > 0);

  // The file holds that wiring for bench and train, and bench runs with it.
  std::ifstream in(file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("[bench]\nenv = \"noop\"\nnum-envs = 8\nthreads = 2\ntopology = \"" + best_topology +
                  "\"\nenvs-per-group = " + best_group + "\nbatch-size = " + best_batch + "\nspin-us = " + best_spin +
                  "\nshards = " + best_shards + "\n") != std::string::npos);
#ifdef CORAL_HAVE_TRAIN
  // train samples as one shard: its section has no shards key, and says so when bench's has more.
  const auto train = text.find("[train]\n");
  REQUIRE(train != std::string::npos);
  CHECK(text.find("env = \"noop\"", train) != std::string::npos);
  CHECK(text.find("shards", train) == std::string::npos);
  CHECK((best_shards == "2") == (text.find("# train samples as one shard", train) != std::string::npos));
#else
  // A coral without libtorch has no train command and refuses a [train] section.
  CHECK(text.find("[train]") == std::string::npos);
#endif
  REQUIRE(run_cli({"bench", "--config", file, "--steps", "2000", "--no-baseline"}, out, err) == 0);
  CHECK(out.starts_with(fmt::format("coral bench: env noop, topology {}, 8 envs in {} groups of {}, batch {}, 2 threads{},",
                                    best_topology, 8 / std::stoi(best_group), best_group, best_batch,
                                    best_shards == "2" ? " in 2 shards (each 4 envs, batch " +
                                                             std::to_string(std::stoi(best_batch) / 2) + ", 1 thread)"
                                                       : "")));
  fs::remove_all(dir);
}

TEST_CASE("coral tune holds a wiring flag given at its value and sweeps the rest", "[apps][tune]") {
  // Given flags were once ignored: --topology sync still ranked all three.
  const auto file = (fs::temp_directory_path() / "coral-tune-held.toml").string();
  std::string out, err;
  REQUIRE(run_cli({"tune", "--env", "noop", "--num-envs", "8", "--threads", "2", "--seconds", "0.02", "--out", file,
                   "--show", "100", "--topology", "pool", "--spin-us", "0"},
                  out, err) == 0);
  INFO(out << err);
  const std::regex line(R"(\n *[0-9]+\. +[0-9]+ steps/s  [0-9.]+x  --topology (\S+) --envs-per-group ([0-9]+) --batch-size ([0-9]+) --spin-us ([0-9]+) --shards [12])");
  std::set<std::string> topologies, spins, groups;
  int ranked = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it, ++ranked) {
    topologies.insert((*it)[1].str());
    groups.insert((*it)[2].str());
    spins.insert((*it)[4].str());
  }
  CHECK(ranked > 1);
  CHECK(topologies == std::set<std::string>{"pool"});
  CHECK(spins == std::set<std::string>{"0"});
  CHECK(groups.size() > 1);  // the group size, not given, is still swept
  fs::remove(file);
  // Flags that allow no wiring are refused with the sampler's reason.
  CHECK(run_cli({"tune", "--env", "noop", "--num-envs", "8", "--batch-size", "8", "--topology", "pool", "--out", file},
                out, err) == 1);
  CHECK(err.starts_with("error: --batch-size: 8 is invalid: the pool topology batches the first envs to finish"));
  CHECK_FALSE(fs::exists(file));
}

TEST_CASE("coral tune refuses bad flags before it samples anything", "[apps][tune]") {
  std::string out, err;
  CHECK(run_cli({"tune", "--seconds", "0"}, out, err) == 1);
  CHECK(err == "error: " + fmt::format(fmt::runtime(coral::errors::bad_value), "--seconds", 0, "more than 0, at most 3600") +
                   "\n");
  CHECK(run_cli({"tune", "--out", "/nonexistent-dir/x.toml"}, out, err) == 1);
  CHECK(err == "error: " +
                   fmt::format(fmt::runtime(coral::cli::errors::tune_unwritable), "/nonexistent-dir/x.toml",
                               std::strerror(ENOENT)) +
                   "\n");
  CHECK(out.empty());  // refused before the sweep
  CHECK(run_cli({"tune", "--env", "noop", "--num-envs", "200000000", "--out", "/tmp/coral-tune-huge.toml"}, out, err) ==
        1);
  CHECK(err.starts_with("error: --num-envs: 200000000"));  // the memory budget's refusal, before anything is built
  CHECK(out.empty());
  CHECK(run_cli({"tune", "--num-envs", "0"}, out, err) == 1);
  CHECK(err.starts_with("error: --num-envs"));
}

TEST_CASE("coral tune refuses an --out it could not write whole before the sweep, and leaves no file", "[apps][tune]") {
  const auto dir = coral::test::fresh_dir("tune-fsize");
  // A file size limit of 8 KiB (SIGXFSZ ignored, so a write past it fails
  // with EFBIG): the config would fit, the probe as large as a config can
  // get does not, as on a full filesystem.
  coral::test::invocation inv;
  inv.argv = {"/bin/bash", "-c",
              std::string("trap '' XFSZ; ulimit -f 8; exec '") + CORAL_BINARY +
                  "' tune --env noop --seconds 0.1 --out x.toml"};
  inv.cwd = dir.string();
  coral::test::child c(inv, 60s);
  const auto r = c.finish();
  REQUIRE_FALSE(r.killed);
  CHECK(r.exit_code == 1);
  CHECK(r.err == "error: " +
                     fmt::format(fmt::runtime(coral::cli::errors::tune_unwritable), "x.toml", std::strerror(EFBIG)) +
                     "\n");
  CHECK(r.out.empty());  // refused before the sweep
  CHECK_FALSE(fs::exists(dir / "x.toml"));
  CHECK_FALSE(fs::exists(dir / "x.toml.tmp"));
  fs::remove_all(dir);
}

TEST_CASE("coral tune whose --out cannot be written after the sweep prints the config instead, and leaves no file",
          "[apps][tune]") {
  const auto dir = coral::test::fresh_dir("tune-lost-out");
  std::string out, err;
  fs::create_directories(dir / "taken");
  CHECK(run_cli({"tune", "--env", "noop", "--out", (dir / "taken").string()}, out, err) == 1);
  CHECK(err == "error: " +
                   fmt::format(fmt::runtime(coral::cli::errors::tune_unwritable), (dir / "taken").string(),
                               "it is a directory") +
                   "\n");
  // A device: the rename would replace it (as root, /dev/null itself).
  CHECK(run_cli({"tune", "--env", "noop", "--out", "/dev/null"}, out, err) == 1);
  CHECK(err == "error: " +
                   fmt::format(fmt::runtime(coral::cli::errors::tune_unwritable), "/dev/null",
                               "it is not a regular file") +
                   "\n");
  CHECK(fs::is_character_file("/dev/null"));
  CHECK_FALSE(fs::exists("/dev/null.tmp"));
  // A directory made where the file goes while the sweep runs: the rename
  // fails at the end, and the sweep's result comes out on stdout.
  coral::test::invocation inv;
  inv.argv = {CORAL_BINARY, "tune", "--env", "noop", "--seconds", "0.05", "--out", "x.toml"};
  inv.cwd = dir.string();
  coral::test::child c(inv, 120s);
  REQUIRE(c.wait_for_output("coral tune: env noop"));
  fs::create_directories(dir / "x.toml");
  const auto r = c.finish();
  REQUIRE_FALSE(r.killed);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.out, Catch::Contains(fmt::format(fmt::runtime(coral::cli::errors::tune_written_here), "x.toml") +
                                    "# Written by coral tune"));
  CHECK_THAT(r.err, Catch::StartsWith(fmt::format("error: --out: cannot write 'x.toml': ")));
  CHECK_FALSE(fs::exists(dir / "x.toml.tmp"));
  fs::remove_all(dir);
}
