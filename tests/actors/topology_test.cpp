#include "coral/actors/sampler_options.hpp"

#include <catch2/catch.hpp>

#include "coral/core/error.hpp"

using namespace coral::actors;

namespace {
sampler_options opts(topology t, std::size_t envs, std::size_t batch, std::size_t per_group = 1,
                     std::size_t threads = 2) {
  sampler_options o;
  o.topo = t;
  o.num_envs = envs;
  o.batch_size = batch;
  o.envs_per_group = per_group;
  o.threads = threads;
  return o;
}
}  // namespace

TEST_CASE("the named topologies resolve to their wirings", "[actors][topology]") {
  auto sync = resolve_wiring(opts(topology::sync, 8, 0, 2));
  CHECK(sync.groups == 4);
  CHECK(sync.ready_channels == 1);
  CHECK(sync.batch_size == 8);
  auto db = resolve_wiring(opts(topology::double_buffer, 8, 0, 2));
  CHECK(db.ready_channels == 2);
  CHECK(db.batch_size == 4);
  auto pool = resolve_wiring(opts(topology::pool, 16, 4, 2));
  CHECK(pool.ready_channels == 1);
  CHECK(pool.batch_size == 4);
  auto pool_default = resolve_wiring(opts(topology::pool, 16, 0, 1));
  CHECK(pool_default.batch_size == 4);
}

TEST_CASE("topology names parse, and an unknown one names the flag", "[actors][topology][errors]") {
  CHECK(parse_topology("double-buffer") == topology::double_buffer);
  CHECK(to_string(topology::pool) == "pool");
  CHECK_THROWS_MATCHES(parse_topology("ring"), coral::config_error,
                       Catch::Message("--topology: invalid value 'ring' (allowed: sync, double-buffer, pool)"));
  CHECK_THROWS_MATCHES(parse_env_error_policy("ignore"), coral::config_error,
                       Catch::Message("--on-env-error: invalid value 'ignore' (allowed: fail, reset)"));
}

TEST_CASE("invalid combinations are rejected before start, naming the flag", "[actors][topology][errors]") {
  CHECK_THROWS_MATCHES(resolve_wiring(opts(topology::pool, 8, 4, 1, 0)), coral::config_error,
                       Catch::Message("--threads: 0 is invalid: at least 1 sampling thread is needed"));
  CHECK_THROWS_MATCHES(resolve_wiring(opts(topology::pool, 0, 4)), coral::config_error,
                       Catch::Message("--num-envs: 0 is invalid: at least 1 env is needed"));
  CHECK_THROWS_MATCHES(resolve_wiring(opts(topology::pool, 8, 4, 3)), coral::config_error,
                       Catch::Message("--envs-per-group: 3 is invalid: it must divide --num-envs (8)"));
  CHECK_THROWS_MATCHES(resolve_wiring(opts(topology::pool, 8, 16)), coral::config_error,
                       Catch::Message("--batch-size: 16 is invalid: the pool topology batches the first envs to "
                                      "finish: it must be below --num-envs (8); use --topology sync for all"));
  CHECK_THROWS_MATCHES(resolve_wiring(opts(topology::pool, 8, 3, 2)), coral::config_error,
                       Catch::Message("--batch-size: 3 is invalid: it must be a multiple of --envs-per-group (2)"));
  CHECK_THROWS_MATCHES(resolve_wiring(opts(topology::double_buffer, 6, 0, 2)), coral::config_error,
                       Catch::Message("--envs-per-group: 2 is invalid: double-buffer splits the groups in two "
                                      "halves: 3 groups is odd"));
  CHECK_THROWS_MATCHES(resolve_wiring(opts(topology::double_buffer, 8, 2, 2)), coral::config_error,
                       Catch::Message("--batch-size: 2 is invalid: double-buffer acts on one half at a time: it "
                                      "must equal --num-envs / 2 (4)"));
  CHECK_THROWS_MATCHES(resolve_wiring(opts(topology::sync, 8, 4)), coral::config_error,
                       Catch::Message("--batch-size: 4 is invalid: the sync topology steps every env at once: it "
                                      "must equal --num-envs (8)"));
  auto o = opts(topology::pool, 8, 4);
  o.min_batch_size = 2;
  CHECK_THROWS_MATCHES(resolve_wiring(o), coral::config_error,
                       Catch::Message("--batch-timeout-us: 0 is invalid: a minimum batch size needs a positive timeout"));
  o.min_batch_size = 6;
  CHECK_THROWS_MATCHES(resolve_wiring(o), coral::config_error,
                       Catch::Message("--min-batch-size: 6 is invalid: it must be at most the batch size (4)"));
}

TEST_CASE("shards split the envs, the batch and the threads evenly, each shard a wiring of its own",
          "[actors][topology][shards]") {
  auto o = opts(topology::pool, 16, 8, 2, 4);
  o.shards = 2;
  const auto w = resolve_wiring(o);
  CHECK(w.shards == 2);
  CHECK(w.groups == 8);          // all shards'
  CHECK(w.batch_size == 4);      // one shard's
  CHECK(w.ready_channels == 1);  // one shard's
  auto db = opts(topology::double_buffer, 16, 0, 2, 2);
  db.shards = 2;
  const auto wd = resolve_wiring(db);
  CHECK(wd.ready_channels == 2);
  CHECK(wd.batch_size == 4);  // half of a shard's 8 envs
  auto sync = opts(topology::sync, 8, 0, 1, 4);
  sync.shards = 4;
  CHECK(resolve_wiring(sync).batch_size == 2);
  o.shards = shards_auto;  // unresolved: checked as one shard
  CHECK(resolve_wiring(o).shards == 1);
  // One shard as a sampler of its own.
  auto m = opts(topology::pool, 16, 8, 2, 4);
  m.shards = 2;
  m.min_batch_size = 4;
  const auto one = one_shard(m);
  CHECK(one.num_envs == 8);
  CHECK(one.batch_size == 4);
  CHECK(one.min_batch_size == 2);
  CHECK(one.threads == 2);
  CHECK(one.shards == 1);
  CHECK(one.envs_per_group == 2);  // the rest as it was
}

TEST_CASE("a shard count that does not split the threads, groups, batch or minimum batch is refused, naming --shards",
          "[actors][topology][shards][errors]") {
  auto o = opts(topology::pool, 16, 8, 2, 4);
  o.shards = 3;
  CHECK_THROWS_MATCHES(resolve_wiring(o), coral::config_error,
                       Catch::Message("--shards: 3 is invalid: it must divide --threads (4): each shard has threads "
                                      "of its own"));
  o.shards = 8;
  CHECK_THROWS_MATCHES(resolve_wiring(o), coral::config_error,
                       Catch::Message("--shards: 8 is invalid: it must divide --threads (4): each shard has threads "
                                      "of its own"));
  auto g = opts(topology::pool, 12, 4, 4, 2);  // 3 groups
  g.shards = 2;
  CHECK_THROWS_MATCHES(resolve_wiring(g), coral::config_error,
                       Catch::Message("--shards: 2 is invalid: it must divide the groups (3 of 4 envs): each shard "
                                      "has whole groups"));
  auto b = opts(topology::pool, 16, 2, 2, 2);  // a batch of one group
  b.shards = 2;
  CHECK_THROWS_MATCHES(resolve_wiring(b), coral::config_error,
                       Catch::Message("--shards: 2 is invalid: each shard's batch is the batch (2) / the shards, in "
                                      "whole groups of 2"));
  auto m = opts(topology::pool, 16, 8, 1, 2);
  m.shards = 2;
  m.min_batch_size = 3;
  m.batch_timeout = std::chrono::microseconds(10);
  CHECK_THROWS_MATCHES(resolve_wiring(m), coral::config_error,
                       Catch::Message("--shards: 2 is invalid: it must divide --min-batch-size (3): each shard's "
                                      "batcher takes its share"));
  m.min_batch_size = 4;
  CHECK(resolve_wiring(m).shards == 2);
  // The flags' own errors come first, as for one shard.
  auto e = opts(topology::pool, 8, 3, 2, 2);
  e.shards = 3;
  CHECK_THROWS_MATCHES(resolve_wiring(e), coral::config_error,
                       Catch::Message("--batch-size: 3 is invalid: it must be a multiple of --envs-per-group (2)"));
}
