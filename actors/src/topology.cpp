#include "coral/actors/sampler_options.hpp"

#include <thread>

#include "coral/actors/errors.hpp"
#include "coral/core/error.hpp"

namespace coral::actors {
namespace {

[[noreturn]] void reject(std::string_view flag, std::size_t value, std::string_view requirement) {
  throw config_error(fmt::format(fmt::runtime(errors::flag_out_of_range), flag, value, requirement));
}

}  // namespace

topology parse_topology(std::string_view text) {
  if (text == "sync") return topology::sync;
  if (text == "double-buffer") return topology::double_buffer;
  if (text == "pool") return topology::pool;
  throw config_error(fmt::format(fmt::runtime(coral::errors::bad_value), "--topology", text,
                                 "sync, double-buffer, pool"));
}

std::string_view to_string(topology t) noexcept {
  switch (t) {
    case topology::sync: return "sync";
    case topology::double_buffer: return "double-buffer";
    case topology::pool: return "pool";
  }
  return "?";
}

env_error_policy parse_env_error_policy(std::string_view text) {
  if (text == "fail") return env_error_policy::fail;
  if (text == "reset") return env_error_policy::reset;
  throw config_error(fmt::format(fmt::runtime(coral::errors::bad_value), "--on-env-error", text, "fail, reset"));
}

namespace {

/// The wiring of `o` as one shard.
wiring resolve_one(const sampler_options& o) {
  if (o.threads == 0) reject("--threads", o.threads, "at least 1 sampling thread is needed");
  if (o.threads > 1024) reject("--threads", o.threads, "at most 1024");
  if (o.num_envs == 0) reject("--num-envs", o.num_envs, "at least 1 env is needed");
  // 0 is auto, not yet resolved: checked as groups of one (see the header).
  const std::size_t k = o.envs_per_group == 0 ? 1 : o.envs_per_group;
  if (o.num_envs % k != 0) {
    reject("--envs-per-group", k, fmt::format("it must divide --num-envs ({})", o.num_envs));
  }
  wiring w;
  w.groups = o.num_envs / k;
  w.envs_per_group = k;
  switch (o.topo) {
    case topology::sync:
      w.ready_channels = 1;
      w.batch_size = o.batch_size == 0 ? o.num_envs : o.batch_size;
      if (w.batch_size != o.num_envs) {
        reject("--batch-size", w.batch_size,
               fmt::format("the sync topology steps every env at once: it must equal --num-envs ({})", o.num_envs));
      }
      break;
    case topology::double_buffer:
      w.ready_channels = 2;
      if (w.groups % 2 != 0) {
        reject("--envs-per-group", k,
               fmt::format("double-buffer splits the groups in two halves: {} groups is odd", w.groups));
      }
      w.batch_size = o.batch_size == 0 ? o.num_envs / 2 : o.batch_size;
      if (w.batch_size != o.num_envs / 2) {
        reject("--batch-size", w.batch_size,
               fmt::format("double-buffer acts on one half at a time: it must equal --num-envs / 2 ({})",
                           o.num_envs / 2));
      }
      break;
    case topology::pool:
      w.ready_channels = 1;
      w.batch_size = o.batch_size;
      if (w.batch_size == 0) w.batch_size = std::max<std::size_t>(k, (w.groups / 4) * k);
      if (w.batch_size >= o.num_envs) {
        reject("--batch-size", w.batch_size,
               fmt::format("the pool topology batches the first envs to finish: it must be below --num-envs "
                           "({}); use --topology sync for all",
                           o.num_envs));
      }
      break;
  }
  if (w.batch_size == 0) reject("--batch-size", w.batch_size, "at least 1");
  if (w.batch_size % k != 0) {
    reject("--batch-size", w.batch_size, fmt::format("it must be a multiple of --envs-per-group ({})", k));
  }
  if (o.min_batch_size > w.batch_size) {
    reject("--min-batch-size", o.min_batch_size, fmt::format("it must be at most the batch size ({})", w.batch_size));
  }
  if (o.min_batch_size > 0 && o.batch_timeout.count() <= 0) {
    reject("--batch-timeout-us", static_cast<std::size_t>(std::max<long>(0, o.batch_timeout.count())),
           "a minimum batch size needs a positive timeout");
  }
  return w;
}

}  // namespace

sampler_options one_shard(sampler_options o) {
  const std::size_t shards = o.shards == shards_auto ? 1 : o.shards;
  o.num_envs /= shards;
  o.batch_size /= shards;
  o.min_batch_size /= shards;
  o.threads /= shards;
  o.shards = 1;
  return o;
}

wiring resolve_wiring(const sampler_options& o) {
  auto whole = o;
  whole.shards = 1;
  wiring w = resolve_one(whole);  // the flags' own errors first, as for one shard
  const std::size_t shards = o.shards == shards_auto ? 1 : o.shards;
  if (shards == 1) return w;
  if (o.threads % shards != 0) {
    reject("--shards", shards, fmt::format("it must divide --threads ({}): each shard has threads of its own", o.threads));
  }
  if (w.groups % shards != 0) {
    reject("--shards", shards,
           fmt::format("it must divide the groups ({} of {} envs): each shard has whole groups", w.groups,
                       w.envs_per_group));
  }
  if (w.batch_size % (shards * w.envs_per_group) != 0) {
    reject("--shards", shards,
           fmt::format("each shard's batch is the batch ({}) / the shards, in whole groups of {}", w.batch_size,
                       w.envs_per_group));
  }
  if (o.min_batch_size % shards != 0) {
    reject("--shards", shards,
           fmt::format("it must divide --min-batch-size ({}): each shard's batcher takes its share", o.min_batch_size));
  }
  auto split = o;
  split.batch_size = w.batch_size;  // the topology's default made explicit
  // The checks above leave every shard a wiring of its own (its batch is
  // below or equal to its envs as the whole's is, its halves even as the
  // batch rule makes them); resolved for its ready channels and batch.
  wiring s = resolve_one(one_shard(split));
  s.groups = w.groups;
  s.shards = shards;
  return s;
}

}  // namespace coral::actors
