// `coral tune`: for one env, its envs and its sampling threads, samples
// with every wiring worth trying (topology, envs per group, batch size,
// spinning, shards), ranks them by steps per second, and writes the fastest as a
// config file that `--config` takes (docs/cli.md).

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "coral/actors/builtin_policy.hpp"
#include "coral/actors/sampler.hpp"
#include "coral/cli.hpp"
#include "coral/core/error.hpp"
#include "coral/core/interrupts.hpp"
#include "coral/core/json.hpp"
#include "coral/core/runtime.hpp"
#include "coral/errors.hpp"
#include "coral/flag_checks.hpp"
#include "coral/sampler_flags.hpp"

namespace coral::cli {
namespace {

struct tune_flags {
  sampler_flags sampler;
  double seconds = 0.5;  // per candidate
  std::string out;       // default: tune-<env>-<threads>t.toml
  std::size_t show = 10;
};

/// One wiring to try and what it measured.
struct candidate {
  actors::sampler_options options;
  double steps_per_second = 0;
};

std::string describe(const actors::sampler_options& o) {
  const auto w = actors::resolve_wiring(o);
  return fmt::format("--topology {} --envs-per-group {} --batch-size {} --spin-us {} --shards {}",
                     actors::to_string(o.topo), o.envs_per_group, w.all_shards_batch(), o.spin.count(), w.shards);
}

/// Every wiring of `base`'s envs and threads worth trying: each topology,
/// group sizes that are powers of two dividing the envs, for pool a batch of
/// a quarter, half or all but one of the groups, three spin times, and each
/// of those as one shard and as the shards auto would make of it (where
/// that is more than one: `coral bench`'s default, docs/cli.md). A
/// wiring flag the user gave (`given`: --topology, a number for
/// --envs-per-group or --spin-us, --batch-size) is held at its value and
/// the rest are swept. Wirings the sampler refuses (resolve_wiring) are left
/// out; when that leaves none, the sampler's refusal of the first is thrown,
/// naming the flag.
std::vector<candidate> candidates(const actors::sampler_options& base, const sampler_flags& given) {
  using actors::topology;
  const bool topology_given = given.topology_flag->count() > 0;
  const bool batch_given = given.batch_size_flag->count() > 0;
  const bool spin_given = base.spin != actors::spin_auto;
  std::vector<topology> topologies{topology::sync, topology::double_buffer, topology::pool};
  if (topology_given) topologies = {base.topo};
  std::vector<std::size_t> group_sizes;
  for (std::size_t k = 1; k <= base.num_envs; k *= 2) {
    if (base.num_envs % k == 0) group_sizes.push_back(k);
  }
  if (base.envs_per_group > 0) group_sizes = {base.envs_per_group};
  std::vector<long> spins{0L, 50L, 500L};
  if (spin_given) spins = {static_cast<long>(base.spin.count())};
  std::vector<candidate> all;
  std::optional<actors::sampler_options> first;
  for (const auto topo : topologies) {
    for (const std::size_t k : group_sizes) {
      const std::size_t groups = base.num_envs / k;
      std::vector<std::size_t> batches{0};  // the topology's own
      if (batch_given) {
        batches = {base.batch_size};
      } else if (topo == topology::pool) {
        batches = {};
        for (const std::size_t g : {groups / 4, groups / 2, groups - 1}) {
          if (g >= 1 && std::find(batches.begin(), batches.end(), g * k) == batches.end()) batches.push_back(g * k);
        }
      }
      for (const auto batch : batches) {
        for (const long spin : spins) {
          auto o = base;
          o.topo = topo;
          o.envs_per_group = k;
          o.batch_size = batch;
          o.spin = std::chrono::microseconds(spin);
          o.shards = 1;
          if (!first) first = o;
          try {
            (void)actors::resolve_wiring(o);
          } catch (const config_error&) {
            continue;  // not a wiring of these envs and threads
          }
          all.push_back({o, 0});
          // choose_shards only returns counts that resolve.
          if (const auto shards = actors::choose_shards(o); shards > 1) {
            o.shards = shards;
            all.push_back({o, 0});
          }
        }
      }
    }
  }
  if (all.empty() && first) (void)actors::resolve_wiring(*first);  // the flags given allow no wiring: say why
  return all;
}

/// Samples `steps` env steps with `o` and a random policy; steps per second.
double measure(const actors::sampler_options& o, std::uint64_t steps) {
  actors::sampler s(o);
  auto pol = actors::make_builtin_policy("random", s.action_space(), s.rows(), o.seed, s.row_streams());
  runtime rt({.mode = o.executor, .handle_signals = true});
  s.spawn(rt, *pol, steps);
  rt.run();
  const auto st = s.stats();
  const double seconds = static_cast<double>(st.run_ns) * 1e-9;
  return seconds > 0 ? static_cast<double>(st.env_steps) / seconds : 0.0;
}

/// Whether this `coral` has the train command (a build without libtorch
/// does not, and refuses a config file with a [train] section).
#ifdef CORAL_HAVE_TRAIN
constexpr bool has_train = true;
#else
constexpr bool has_train = false;
#endif

/// A config section's keys for wiring `o` (with `shards = S` if asked).
std::string section_body(const tune_flags& f, const actors::sampler_options& o, bool with_shards) {
  const auto w = actors::resolve_wiring(o);
  std::string env_args;
  for (std::size_t i = 0; i < f.sampler.env_args.size(); ++i) {
    env_args += (i == 0 ? "" : ", ") + json::quote(f.sampler.env_args[i]);
  }
  std::string body = fmt::format("env = {}\n", json::quote(o.env));
  if (!env_args.empty()) body += fmt::format("env-arg = [{}]\n", env_args);
  body += fmt::format(
      "num-envs = {}\nthreads = {}\ntopology = {}\nenvs-per-group = {}\nbatch-size = {}\nspin-us = {}\n", o.num_envs,
      o.threads, json::quote(actors::to_string(o.topo)), o.envs_per_group, w.all_shards_batch(), o.spin.count());
  if (with_shards) body += fmt::format("shards = {}\n", w.shards);
  return body;
}

/// The config file: the env, its envs and threads, and the wiring, for both
/// commands that sample (bench alone where this coral has no train). `best`
/// goes to [bench]; [train], which samples as one shard, gets
/// `best_one_shard`, the fastest of one shard.
std::string config_text(const tune_flags& f, std::size_t tried, const candidate& best, const candidate& best_one_shard,
                        const candidate& first) {
  const auto& o = best.options;
  std::string train;
  if (has_train) {
    train = "\n[train]\n";
    if (best.options.shards != 1) {
      train += fmt::format("# train samples as one shard: the fastest of those, {:.0f} env steps/s.\n",
                           best_one_shard.steps_per_second);
    }
    train += section_body(f, best_one_shard.options, false);
  }
  return fmt::format(
      "# Written by coral tune: the fastest of {} wirings of {} envs of {} on {} sampling thread{},\n"
      "# {:.0f} env steps/s with a random policy ({:.2f}x the first tried: {}).\n"
      "# Use it with --config; flags typed on the command line win.\n\n[bench]\n{}{}",
      tried, o.num_envs, o.env, o.threads, o.threads == 1 ? "" : "s", best.steps_per_second,
      first.steps_per_second > 0 ? best.steps_per_second / first.steps_per_second : 0.0, describe(first.options),
      section_body(f, o, true), train);
}

/// Bytes the probe before a sweep writes: more than any config it writes.
constexpr std::size_t probe_bytes = 16 * 1024;

/// Writes `text` as the whole of `file`, flushed to the disk; the reason
/// when it could not (no file is left behind then).
std::optional<std::string> write_whole(const std::string& file, const std::string& text) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return std::string(std::strerror(errno));
  std::size_t done = 0;
  int failure = 0;
  while (done < text.size()) {
    const auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failure = n < 0 ? errno : ENOSPC;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (failure == 0 && ::fsync(fd) != 0) failure = errno;
  if (::close(fd) != 0 && failure == 0) failure = errno;
  if (failure == 0) return std::nullopt;
  ::unlink(file.c_str());
  return std::string(std::strerror(failure));
}

void run_tune(std::ostream& out, tune_flags& f) {
  if (!(f.seconds > 0 && f.seconds <= 3600)) {
    throw config_error(fmt::format(fmt::runtime(coral::errors::bad_value), "--seconds", f.seconds,
                                   "more than 0, at most 3600"));
  }
  const auto base = to_sampler_options(f.sampler);
  // The envs and threads as given must make a sampler; the wiring flags are what the sweep sets.
  auto plain = base;
  plain.topo = actors::topology::sync;
  plain.envs_per_group = 1;
  plain.batch_size = 0;
  plain.min_batch_size = 0;
  (void)actors::resolve_wiring(plain);
  check_sampler_memory(plain);  // a huge --num-envs is refused, not allocated
  auto all = candidates(base, f.sampler);
  if (all.empty()) throw usage_error("coral tune: no candidate although the sync wiring resolved");
  const auto path = f.out.empty() ? fmt::format("tune-{}-{}t.toml", base.env, base.threads) : f.out;
  // The file is written as `<out>.tmp`, then renamed over `<out>`: a failed
  // write never leaves a cut or empty file. Before the sweep, that temporary
  // is written as large as a config gets, so that a path too long, a
  // directory that cannot be written or a full filesystem is refused now,
  // not after minutes of measuring.
  const auto temporary = path + ".tmp";
  // The rename would replace whatever is there: only a regular file (or
  // nothing) may be (`--out /dev/null` as root would replace the device).
  std::error_code ec_status;
  const auto st = std::filesystem::status(path, ec_status);
  if (std::filesystem::is_directory(st)) {
    throw config_error(fmt::format(fmt::runtime(errors::tune_unwritable), path, "it is a directory"));
  }
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    throw config_error(fmt::format(fmt::runtime(errors::tune_unwritable), path, "it is not a regular file"));
  }
  if (const auto why = write_whole(temporary, std::string(probe_bytes, '#'))) {
    throw config_error(fmt::format(fmt::runtime(errors::tune_unwritable), path, *why));
  }
  std::filesystem::remove(temporary);
  // Steps per candidate from a first measurement of the first wiring, so
  // that each takes about --seconds.
  const auto first_rate = measure(all.front().options, std::max<std::uint64_t>(2000, 64 * base.num_envs));
  const auto steps = std::max<std::uint64_t>(1000, static_cast<std::uint64_t>(first_rate * f.seconds));
  out << fmt::format("coral tune: env {}, {} envs, {} sampling thread{}: {} wirings, {} env steps each\n", base.env,
                     base.num_envs, base.threads, base.threads == 1 ? "" : "s", all.size(), steps)
      << std::flush;
  const std::size_t total = all.size();
  std::size_t measured = 0;
  for (auto& c : all) {
    if (interrupted()) break;
    c.steps_per_second = measure(c.options, steps);
    ++measured;
  }
  bool cut_short = interrupted();  // a signal: rank what was measured, write nothing
  if (cut_short) all.resize(measured > 0 ? measured - 1 : 0);  // the last one was stopped part-way
  if (all.empty()) {
    out << "interrupted before any wiring was measured: nothing written\n";
    return;
  }
  const auto first = all.front();
  auto by_rate = [](const candidate& a, const candidate& b) { return a.steps_per_second > b.steps_per_second; };
  std::stable_sort(all.begin(), all.end(), by_rate);
  // A shared machine makes one measurement noisy: the leaders are measured
  // twice more and ranked by the median of their three.
  constexpr std::size_t leaders = 5;
  for (std::size_t i = 0; i < std::min(leaders, all.size()) && !interrupted(); ++i) {
    std::vector<double> rates{all[i].steps_per_second, measure(all[i].options, steps), measure(all[i].options, steps)};
    std::sort(rates.begin(), rates.end());
    if (!interrupted()) all[i].steps_per_second = rates[1];
  }
  std::stable_sort(all.begin(), all.end(), by_rate);
  cut_short = cut_short || interrupted();
  const auto& best = all.front();
  for (std::size_t i = 0; i < std::min(f.show, all.size()); ++i) {
    out << fmt::format("{:3}. {:>12.0f} steps/s  {:.2f}x  {}\n", i + 1, all[i].steps_per_second,
                       best.steps_per_second > 0 ? all[i].steps_per_second / best.steps_per_second : 0.0,
                       describe(all[i].options));
  }
  if (cut_short) {
    out << fmt::format("interrupted after {} of {} wirings: nothing written\n", all.size(), total);
    return;
  }
  const auto one_shard = std::find_if(all.begin(), all.end(), [](const candidate& c) { return c.options.shards == 1; });
  const auto text = config_text(f, all.size(), best, one_shard == all.end() ? best : *one_shard, first);
  std::optional<std::string> why = write_whole(temporary, text);
  std::error_code ec;
  if (!why) std::filesystem::rename(temporary, path, ec);
  if (!why && ec) why = ec.message();
  if (why) {
    std::filesystem::remove(temporary, ec);
    // The sweep is not lost: its result goes to stdout.
    out << fmt::format(fmt::runtime(errors::tune_written_here), path) << text << std::flush;
    throw error(fmt::format(fmt::runtime(errors::tune_unwritable), path, *why));
  }
  out << fmt::format("best: {} ({:.0f} steps/s); written to {}: coral bench --config {}{}\n", describe(best.options),
                     best.steps_per_second, path, path, has_train ? ", coral train --config " + path : std::string());
}

}  // namespace

void add_tune_command(CLI::App& app, std::ostream& out) {
  auto flags = std::make_shared<tune_flags>();
  auto* cmd = app.add_subcommand(
      "tune", "sample with every topology, group size, batch size, spin time and shard count for an env and thread "
              "count; rank them and write the fastest as a config file");
  add_sampler_flags(*cmd, flags->sampler, {.threads = 2});
  cmd->add_option("--seconds", flags->seconds, "about how long each wiring samples")->capture_default_str();
  cmd->add_option("--out", flags->out, "the config file to write (default tune-<env>-<threads>t.toml)")
      ->check(non_empty("a file name"));
  cmd->add_option("--show", flags->show, "how many of the ranking to print")->capture_default_str();
  cmd->callback([&out, flags] { run_tune(out, *flags); });
}

}  // namespace coral::cli
