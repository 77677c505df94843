#include "coral/core/input_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/core/errors.hpp"
#include "../support/scratch_dir.hpp"

namespace fs = std::filesystem;
using coral::input_file;
using coral::input_file_fault;

namespace {

std::string not_regular(const char* what) { return fmt::format(fmt::runtime(coral::errors::input_not_regular), what); }

}  // namespace

TEST_CASE("a user's input file is opened only when it is a regular file within its bound", "[core][input_file]") {
  const auto dir = coral::test::fresh_dir("core-input-file");
  std::ofstream(dir / "ten.txt") << "0123456789";

  input_file ten((dir / "ten.txt").string(), 10);
  REQUIRE(ten);
  CHECK(ten.size() == 10);
  std::string head(4, '\0');
  REQUIRE(ten.read(head.data(), head.size()));
  CHECK(head == "0123");
  REQUIRE(ten.skip(2));
  std::string rest;
  REQUIRE(ten.read_rest(rest));
  CHECK(rest == "6789");
  char more = 0;
  CHECK_FALSE(ten.read(&more, 1));
  CHECK(ten.problem() == fmt::format(fmt::runtime(coral::errors::input_short), 1, 10, 10));
  CHECK_FALSE(ten.skip(1));
  REQUIRE(ten.rewind());
  REQUIRE(ten.read(&more, 1));
  CHECK(more == '0');

  const input_file small((dir / "ten.txt").string(), 9);
  CHECK(small.fault() == input_file_fault::too_large);
  CHECK(small.problem() == fmt::format(fmt::runtime(coral::errors::input_too_large), 10, 9));

  const input_file missing((dir / "none.txt").string(), 10);
  CHECK(missing.fault() == input_file_fault::missing);
  CHECK(missing.problem() == coral::errors::input_missing);
  const input_file below_a_file((dir / "ten.txt" / "x").string(), 10);
  CHECK(below_a_file.fault() == input_file_fault::missing);
}

TEST_CASE("a FIFO, a directory or a device is refused without being opened or read", "[core][input_file]") {
  const auto dir = coral::test::fresh_dir("core-input-special");
  const auto fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // No writer ever comes: opening it for reading would block this test.
  const input_file f(fifo.string(), 1 << 20);
  CHECK(f.fault() == input_file_fault::not_regular);
  CHECK(f.problem() == not_regular("a FIFO"));

  std::string problem;
  CHECK(coral::check_input_file(dir.string(), 1 << 20, problem) == input_file_fault::not_regular);
  CHECK(problem == not_regular("a directory"));
  CHECK(coral::check_input_file("/dev/zero", 1 << 20, problem) == input_file_fault::not_regular);
  CHECK(problem == not_regular("a character device"));
  CHECK(coral::check_input_file("/dev/null", 1 << 20, problem) == input_file_fault::not_regular);

  // A link to a FIFO is what it points to.
  fs::create_symlink(fifo, dir / "link");
  CHECK(coral::check_input_file((dir / "link").string(), 1 << 20, problem) == input_file_fault::not_regular);
  CHECK(problem == not_regular("a FIFO"));
}

TEST_CASE("an unreadable file says why", "[core][input_file]") {
  if (::geteuid() == 0) {
    WARN("root reads every file: nothing to check");
    return;
  }
  const auto dir = coral::test::fresh_dir("core-input-unreadable");
  const auto secret = dir / "secret";
  std::ofstream(secret) << "x";
  fs::permissions(secret, fs::perms::none);
  const input_file f(secret.string(), 10);
  CHECK(f.fault() == input_file_fault::unreadable);
  CHECK(f.problem() == "Permission denied");
}
