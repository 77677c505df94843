// Private header under test: the TensorBoard event file of a run.
#include "../../training/src/tensorboard_file.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../../training/src/tfevents.hpp"
#include "../support/event_file_reader.hpp"
#include "../support/scratch_dir.hpp"
#include "coral/core/error.hpp"
#include "coral/training/errors.hpp"

namespace fs = std::filesystem;
namespace tb = coral::test::tfevents;
using coral::training::detail::tensorboard_file;
using coral::training::detail::tensorboard_tag;

namespace {

constexpr std::string_view ppo_header =
    "seconds,env_steps,steps_per_second,episodes,mean_return,mean_length,policy_loss,value_loss,entropy,approx_kl,"
    "clip_fraction,learning_rate,mean_policy_lag,max_policy_lag,updates";

/// The one event file in `dir`.
fs::path only_event_file(const fs::path& dir) {
  const auto files = tb::event_files_in(dir);
  REQUIRE(files.size() == 1);
  return files.front();
}

/// The columns of a CSV line.
std::vector<std::string> split(std::string_view line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in{std::string(line)};
  while (std::getline(in, field, ',')) out.push_back(field);
  return out;
}

/// A PPO-like row at `steps` env steps whose values vary with `k`.
std::string row_at(std::uint64_t steps, int k) {
  return fmt::format("{:.3f},{},{:.1f},{},{},{},{},{},{},{},{},{},{},{},{}", 0.25 * k, steps, 1234.5 * k, 3 * k,
                     -17.125 + k, 200.0 / (k + 1), -0.0123 * k, 1e-7 * k, 0.69, 1.5e-3, 0.2, 3e-4, 0.5 * k, k, k);
}

/// Checks that `e` holds `row`'s columns of `header` as scalars, tag by
/// tag, at the row's env steps.
void check_row(const tb::event& e, std::string_view header, const std::string& row) {
  const auto columns = split(header);
  const auto values = split(row);
  REQUIRE(values.size() == columns.size());
  CHECK(e.step == std::stoll(values[1]));
  CHECK(e.wall_time.has_value());
  REQUIRE(e.values.size() == columns.size());
  for (std::size_t i = 0; i < columns.size(); ++i) {
    CAPTURE(columns[i], values[i]);
    CHECK(e.values[i].tag == tensorboard_tag(columns[i]));
    REQUIRE(e.values[i].simple_value.has_value());
    const float expected = std::strtof(values[i].c_str(), nullptr);  // correctly rounded; inf past a float's range
    if (std::isnan(expected)) {
      CHECK(std::isnan(*e.values[i].simple_value));
    } else {
      CHECK(*e.values[i].simple_value == expected);
    }
    CHECK_FALSE(e.values[i].plugin_name.has_value());
  }
}

}  // namespace

TEST_CASE("metrics columns are grouped into TensorBoard tags by what they measure", "[training][tensorboard]") {
  CHECK(tensorboard_tag("mean_return") == "charts/mean_return");
  CHECK(tensorboard_tag("mean_length") == "charts/mean_length");
  CHECK(tensorboard_tag("steps_per_second") == "charts/steps_per_second");
  CHECK(tensorboard_tag("learning_rate") == "charts/learning_rate");
  CHECK(tensorboard_tag("policy_loss") == "losses/policy_loss");
  CHECK(tensorboard_tag("entropy") == "losses/entropy");
  CHECK(tensorboard_tag("approx_kl") == "losses/approx_kl");
  CHECK(tensorboard_tag("clip_fraction") == "losses/clip_fraction");
  CHECK(tensorboard_tag("td_loss") == "losses/td_loss");
  CHECK(tensorboard_tag("replay_ratio") == "replay/replay_ratio");
  CHECK(tensorboard_tag("priority_max") == "replay/priority_max");
  CHECK(tensorboard_tag("mean_policy_lag") == "actor/mean_policy_lag");
  CHECK(tensorboard_tag("held_groups") == "actor/held_groups");
  CHECK(tensorboard_tag("learn_ms") == "learner/learn_ms");
  // A column no table names, and one that names its own group.
  CHECK(tensorboard_tag("counted") == "metrics/counted");
  CHECK(tensorboard_tag("custom/thing") == "custom/thing");
}

TEST_CASE("every metrics row round-trips through the event file: tags, steps and values, both CRCs checked",
          "[training][tensorboard]") {
  const auto dir = coral::test::fresh_dir("tensorboard-rows");
  std::vector<std::string> rows;
  {
    tensorboard_file f(dir.string(), ppo_header, false);
    REQUIRE(f.is_open());
    CHECK(f.path().parent_path() == dir);
    CHECK(f.path().filename().string().starts_with("events.out.tfevents."));
    for (int k = 0; k < 20; ++k) {
      rows.push_back(row_at(512 * (k + 1), k));
      f.write_row(rows.back());
    }
    // Every value a double may print as: NaN, infinities, the extremes of a float and past them.
    rows.push_back("1,20000,nan,inf,-inf,3.4028234663852886e+38,1e+300,-1e-300,0,-0,1e-45,5,6,7,8");
    f.write_row(rows.back());
    std::ostringstream warnings;
    CHECK(f.close(warnings));
    CHECK(warnings.str().empty());
  }
  const auto events = tb::read_event_file(only_event_file(dir));
  REQUIRE(events.size() == rows.size() + 1);
  CHECK(events[0].file_version == "brain.Event:2");
  CHECK(events[0].step == 0);
  CHECK(events[0].values.empty());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CAPTURE(rows[i]);
    CHECK_FALSE(events[i + 1].file_version.has_value());
    check_row(events[i + 1], ppo_header, rows[i]);
  }
  // What a float makes of the extremes.
  const auto& last = events.back().values;
  CHECK(std::isinf(*last[3].simple_value));
  CHECK(*last[3].simple_value > 0);
  CHECK(std::isinf(*last[4].simple_value));
  CHECK(*last[4].simple_value < 0);
  CHECK(*last[5].simple_value == 3.4028234663852886e+38F);
  CHECK(std::isinf(*last[6].simple_value));
  fs::remove_all(dir);
}

TEST_CASE("the run's settings are a text summary: a scalar string tensor of TensorBoard's text plugin",
          "[training][tensorboard]") {
  const auto dir = coral::test::fresh_dir("tensorboard-text");
  const std::string settings = "    [train]\n    algo = \"ppo\"\n    env = \"cartpole\"\n    hidden = [64, 64]\n";
  {
    tensorboard_file f(dir.string(), ppo_header, false);
    f.write_text("config", settings, 4096);
    std::ostringstream warnings;
    CHECK(f.close(warnings));
  }
  const auto events = tb::read_event_file(only_event_file(dir));
  REQUIRE(events.size() == 2);
  const auto& e = events[1];
  CHECK(e.step == 4096);
  REQUIRE(e.values.size() == 1);
  const auto& v = e.values[0];
  CHECK(v.tag == "config");
  CHECK(v.plugin_name == "text");
  CHECK(v.dtype == 7U);  // DT_STRING
  CHECK(v.dims == 0U);   // a scalar
  CHECK(v.string_val == std::vector<std::string>{settings});
  CHECK_FALSE(v.simple_value.has_value());
}

TEST_CASE("steps only grow down the event file: a row at no more env steps than the last is not written",
          "[training][tensorboard]") {
  const auto dir = coral::test::fresh_dir("tensorboard-steps");
  {
    tensorboard_file f(dir.string(), ppo_header, false);
    f.write_row(row_at(1024, 1));
    f.write_row(row_at(1024, 2));  // the final row, at the last update's steps
    f.write_row(row_at(512, 3));
    f.write_row("1,not-a-number,3,4,5,6,7,8,9,10,11,12,13,14,15");
    f.write_row(row_at(2048, 4));
    std::ostringstream warnings;
    CHECK(f.close(warnings));
  }
  const auto events = tb::read_event_file(only_event_file(dir));
  REQUIRE(events.size() == 3);
  check_row(events[1], ppo_header, row_at(1024, 1));
  check_row(events[2], ppo_header, row_at(2048, 4));
}

TEST_CASE("a resume keeps the records up to its steps, drops a record cut short, and appends to the same file",
          "[training][tensorboard][resume]") {
  const auto dir = coral::test::fresh_dir("tensorboard-resume");
  fs::path first_file;
  {
    tensorboard_file f(dir.string(), ppo_header, false);
    f.write_text("config", "first", 0);
    for (int k = 1; k <= 10; ++k) f.write_row(row_at(100 * k, k));
    f.write_text("config", "a killed resume's", 500);  // at the steps resumed from below: replaced
    first_file = f.path();
    std::ostringstream warnings;
    CHECK(f.close(warnings));
  }
  // Killed in the middle of a record: half of one more is there.
  const auto whole = coral::test::read_bytes(first_file);
  {
    const auto cut = coral::training::detail::tfevents::frame(
        coral::training::detail::tfevents::text_event(0, 1100, "config", "cut short"));
    std::ofstream(first_file, std::ios::binary | std::ios::app) << cut.substr(0, cut.size() / 2);
  }
  CHECK_THROWS_AS(tb::read_event_file(first_file), tb::bad_file);  // TensorBoard would stop there

  {
    tensorboard_file f(dir.string(), ppo_header, true, 500);
    CHECK(f.path() == first_file);  // the same file, continued
    f.write_text("config", "resumed", 500);
    f.write_row(row_at(500, 99));  // not past the kept rows: not written
    for (int k = 6; k <= 8; ++k) f.write_row(row_at(100 * k, 100 + k));
    std::ostringstream warnings;
    CHECK(f.close(warnings));
  }
  CHECK(only_event_file(dir) == first_file);
  CHECK_FALSE(fs::exists(dir / ".tensorboard-resume.tmp"));
  const auto events = tb::read_event_file(first_file);
  std::vector<std::int64_t> row_steps;
  std::vector<std::string> texts;
  std::size_t versions = 0;
  for (const auto& e : events) {
    if (e.file_version) ++versions;
    for (const auto& v : e.values) {
      if (v.plugin_name == "text") texts.push_back(v.string_val.at(0));
    }
    if (!e.values.empty() && !e.values[0].plugin_name) row_steps.push_back(e.step);
  }
  CHECK(versions == 1);
  CHECK(events.front().file_version == "brain.Event:2");
  CHECK(row_steps == std::vector<std::int64_t>{100, 200, 300, 400, 500, 600, 700, 800});
  CHECK(texts == std::vector<std::string>{"first", "resumed"});
  check_row(events[6], ppo_header, row_at(500, 5));    // the first run's, kept as written
  check_row(events[8], ppo_header, row_at(600, 106));  // this run's
  fs::remove_all(dir);
}

TEST_CASE("a record whose CRC does not match ends what a resume keeps", "[training][tensorboard][resume]") {
  const auto dir = coral::test::fresh_dir("tensorboard-crc");
  fs::path file;
  {
    tensorboard_file f(dir.string(), ppo_header, false);
    for (int k = 1; k <= 4; ++k) f.write_row(row_at(100 * k, k));
    file = f.path();
    std::ostringstream warnings;
    CHECK(f.close(warnings));
  }
  // Flip a byte in the data of the third row's record.
  auto bytes = coral::test::read_bytes(file);
  const auto events_before = tb::read_event_file(file);
  REQUIRE(events_before.size() == 5);
  std::size_t at = 0;
  for (int record = 0; record < 3; ++record) {
    std::uint64_t length = 0;
    std::memcpy(&length, bytes.data() + at, 8);
    at += 16 + length;
  }
  bytes[at + 20] = static_cast<char>(bytes[at + 20] ^ 0x40);
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  CHECK_THROWS_AS(tb::read_event_file(file), tb::bad_file);
  {
    tensorboard_file f(dir.string(), ppo_header, true, 1000);
    f.write_row(row_at(1100, 11));
    std::ostringstream warnings;
    CHECK(f.close(warnings));
  }
  const auto events = tb::read_event_file(file);
  REQUIRE(events.size() == 4);  // the version, the rows at 100 and 200, this run's at 1100
  CHECK(events[2].step == 200);
  CHECK(events[3].step == 1100);
  fs::remove_all(dir);
}

TEST_CASE("a fresh run removes the event files in its run dir; a resume merges them into the newest",
          "[training][tensorboard][resume]") {
  const auto dir = coral::test::fresh_dir("tensorboard-fresh");
  namespace ev = coral::training::detail::tfevents;
  auto write_file = [&](const std::string& name, std::int64_t step) {
    std::ofstream(dir / name, std::ios::binary)
        << ev::frame(ev::version_event(1)) << ev::frame(ev::text_event(1, step, "config", name));
  };
  write_file("events.out.tfevents.1000000000.old.1", 10);
  write_file("events.out.tfevents.1000000001.old.2", 20);
  {
    tensorboard_file f(dir.string(), ppo_header, true, 1000);
    CHECK(f.path() == dir / "events.out.tfevents.1000000001.old.2");
    std::ostringstream warnings;
    CHECK(f.close(warnings));
  }
  const auto merged = tb::read_event_file(only_event_file(dir));
  REQUIRE(merged.size() == 3);  // one version, both texts in the order of the files
  CHECK(merged[1].values.at(0).string_val.at(0) == "events.out.tfevents.1000000000.old.1");
  CHECK(merged[2].values.at(0).string_val.at(0) == "events.out.tfevents.1000000001.old.2");
  {
    tensorboard_file f(dir.string(), ppo_header, false);
    CHECK(f.path() != dir / "events.out.tfevents.1000000001.old.2");
    std::ostringstream warnings;
    CHECK(f.close(warnings));
  }
  CHECK(tb::read_event_file(only_event_file(dir)).size() == 1);  // only its version record
  fs::remove_all(dir);
}

TEST_CASE("no event file without a run dir; a header without env_steps is a misuse", "[training][tensorboard][errors]") {
  tensorboard_file none("", ppo_header, false);
  CHECK_FALSE(none.is_open());
  none.write_row(row_at(1, 1));
  std::ostringstream warnings;
  CHECK_FALSE(none.close(warnings));
  const auto dir = coral::test::fresh_dir("tensorboard-misuse");
  CHECK_THROWS_AS(tensorboard_file(dir.string(), "seconds,steps", false), coral::usage_error);
  fs::remove_all(dir);
}

TEST_CASE("an event file that cannot be written is reported at close naming it, as metrics.csv is",
          "[training][tensorboard][errors]") {
  const auto dir = coral::test::fresh_dir("tensorboard-full");
  tensorboard_file f(dir.string(), ppo_header, false);
  {
    // Files of this process may not grow: the next write fails with EFBIG
    // (SIGXFSZ ignored), as a full disk fails it with ENOSPC.
    struct file_size_limit {
      rlimit old{};
      void (*old_handler)(int) = nullptr;
      file_size_limit() {
        ::getrlimit(RLIMIT_FSIZE, &old);
        old_handler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit none = old;
        none.rlim_cur = 1;
        ::setrlimit(RLIMIT_FSIZE, &none);
      }
      ~file_size_limit() {
        ::setrlimit(RLIMIT_FSIZE, &old);
        std::signal(SIGXFSZ, old_handler);
      }
    } limited;
    f.write_row(row_at(100, 1));
  }
  f.write_row(row_at(200, 2));  // after a failure: nothing more, so no record follows a gap
  std::ostringstream warnings;
  CHECK_FALSE(f.close(warnings));
  CHECK(warnings.str() == fmt::format(fmt::runtime(coral::training::errors::metrics_write_failed), f.path().string(),
                                      std::strerror(EFBIG)) +
                              "\n");
  CHECK(tb::read_event_file(f.path()).size() == 1);  // the version record only
  fs::remove_all(dir);
}
