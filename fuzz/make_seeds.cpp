// Writes the seed inputs that come from the code itself, so that they follow
// every format change: valid checkpoints, replay blobs and replay actor
// states (with the mode byte their targets read first), one `--env-arg` input per registered env
// with every key at its default, one `--actions` input per registered env,
// and config files nested to the loader's depth bound and past it.
// Hand-written seeds live in fuzz/corpus/<target>/.
//
// Usage: make_seeds DIR   (writes DIR/checkpoint/, DIR/replay_blob/,
//                          DIR/replay_actor/, DIR/env_arg/, DIR/actions/, DIR/config/)

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

#include "coral/action_text.hpp"
#include "coral/config_file.hpp"
#include "coral/envs/registry.hpp"
#include "coral/core/rng.hpp"
#include "coral/envs/space.hpp"
#include "coral/training/checkpoint.hpp"
#include "coral/replay/replay_actor.hpp"
#include "coral/replay/replay_buffer.hpp"

namespace {

namespace fs = std::filesystem;
namespace replay = coral::replay;
namespace envs = coral::envs;

// The mode byte of the checkpoint and replay_blob targets: 1 repairs the
// checksum, so that mutations of a valid seed get past it.
constexpr char repair = 1;

void write(const fs::path& file, std::string_view bytes) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void write(const fs::path& file, char mode, const std::vector<char>& bytes) {
  std::string s(1, mode);
  s.append(bytes.begin(), bytes.end());
  write(file, s);
}

// Inserts `count` transitions on every stream of `b`, episodes of
// `episode_length`, values drawn from `r`.
void fill(replay::replay_buffer& b, const replay::replay_config& c, std::size_t count, std::size_t episode_length,
          coral::rng& r) {
  std::vector<float> obs(c.obs_dim), next(c.obs_dim), cont(c.continuous_action_dim);
  std::vector<std::int32_t> disc(c.discrete_action_dim);
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t stream = 0; stream < c.num_streams; ++stream) {
      for (auto& x : obs) x = static_cast<float>(r.uniform(-1, 1));
      for (auto& x : next) x = static_cast<float>(r.uniform(-1, 1));
      for (auto& x : cont) x = static_cast<float>(r.uniform(-1, 1));
      for (auto& x : disc) x = static_cast<std::int32_t>(r() % 4);
      const bool last = i % episode_length == episode_length - 1;
      b.insert(stream, replay::transition{.observation = obs,
                                          .discrete_action = disc,
                                          .continuous_action = cont,
                                          .n_step_return = static_cast<float>(r.uniform(-2, 2)),
                                          .discount = last ? 0.0f : 0.9f,
                                          .steps = last ? 1u : static_cast<std::uint32_t>(c.n_step),
                                          .next_observation = next,
                                          .last_of_episode = last});
    }
  }
}

std::vector<char> replay_blob(const replay::replay_config& c, std::size_t count, std::size_t episode_length,
                              bool update, bool cut) {
  replay::replay_buffer b(c);
  coral::rng r(count);
  fill(b, c, count, episode_length, r);
  if (update && b.size() > 0) {
    replay::sampled_batch s;
    b.sample_prioritized(r, 5, 0.4, s);
    b.update_priorities(s.keys, std::vector<float>{0.5f, 2.0f, 0.0f, 7.0f, 0.125f});
  }
  if (cut) b.cut(0);
  std::vector<char> out;
  b.save(out);
  return out;
}

void replay_seeds(const fs::path& dir) {
  const replay::replay_config wide{.capacity = 24, .num_streams = 2, .obs_dim = 3, .discrete_action_dim = 1,
                                   .continuous_action_dim = 1, .n_step = 3, .alpha = 0.6};
  const replay::replay_config narrow{.capacity = 8, .num_streams = 1, .obs_dim = 1, .discrete_action_dim = 1,
                                     .continuous_action_dim = 0, .n_step = 1, .alpha = 0.0};
  const replay::replay_config many{.capacity = 16, .num_streams = 4, .obs_dim = 2, .discrete_action_dim = 2,
                                   .continuous_action_dim = 2, .n_step = 2, .alpha = 1.0};
  write(dir / "empty", repair, replay_blob(wide, 0, 1, false, false));
  write(dir / "partial", repair, replay_blob(wide, 5, 4, true, false));
  write(dir / "partial-unrepaired", 0, replay_blob(wide, 5, 4, true, false));
  write(dir / "wrapped-cut", repair, replay_blob(wide, 40, 7, true, true));
  write(dir / "alpha0", repair, replay_blob(narrow, 6, 3, true, false));
  write(dir / "streams", repair, replay_blob(many, 9, 2, true, true));
}

// A replay actor's state (replay_actor::save) with a buffer of `count`
// transitions per stream and the limiter's counters set to `inserts` and
// `samples`.
std::vector<char> actor_state(const replay::replay_config& c, std::size_t count, std::uint64_t inserts,
                              std::uint64_t samples) {
  replay::replay_actor actor({.buffer = c, .min_size = 1});
  coral::rng r(count);
  fill(actor.buffer(), c, count, 3, r);
  std::vector<char> out = actor.save();
  // After the 8-byte magic: inserts, then samples (basic_replay_actor_impl.hpp).
  std::memcpy(out.data() + 8, &inserts, sizeof inserts);
  std::memcpy(out.data() + 16, &samples, sizeof samples);
  return out;
}

void actor_seeds(const fs::path& dir) {
  // The mode byte of the replay_actor target: repair, prioritized, a ratio
  // of 0.5 samples per insert, sampling from 1 insert on, inserts after the load.
  constexpr char mode = 1 | 2 | (1 << 2) | (1 << 4) | 64;
  const replay::replay_config small{.capacity = 16, .num_streams = 2, .obs_dim = 2, .discrete_action_dim = 1,
                                    .continuous_action_dim = 1, .n_step = 2, .alpha = 0.6};
  write(dir / "empty", mode, actor_state(small, 0, 0, 0));
  write(dir / "filled", mode, actor_state(small, 6, 12, 4));
  write(dir / "filled-uniform", static_cast<char>(mode & ~2), actor_state(small, 6, 12, 4));
  write(dir / "wrapped", mode, actor_state(small, 20, 40, 400));
  write(dir / "counters-huge", mode, actor_state(small, 6, std::uint64_t{1} << 62, std::uint64_t{1} << 63));
}

void checkpoint_seeds(const fs::path& dir) {
  namespace training = coral::training;
  const fs::path tmp = fs::temp_directory_path() / fmt::format("coral-make-seeds-{}.ckpt", ::getpid());
  auto save = [&](const fs::path& file, const training::checkpoint& c) {
    training::write_checkpoint(tmp, c);
    std::ifstream in(tmp, std::ios::binary);
    write(file, repair, std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
    fs::remove(tmp);
  };
  training::checkpoint ppo;
  ppo.env = "cartpole";
  ppo.network = "mlp obs=4 frames=1 nvec=[2] box=0 hidden=[2] params=5";
  ppo.seed = 7;
  ppo.learner = {.parameters = {0.5f, -1.0f, 2.0f, 0.0f, 1e-3f},
                 .adam_m = {0.0f, 0.1f, 0.2f, 0.3f, 0.4f},
                 .adam_v = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f},
                 .adam_steps = 3,
                 .updates = 3,
                 .env_steps = 3072,
                 .rng = 12345};
  save(dir / "ppo", ppo);
  training::checkpoint dqn = ppo;
  dqn.algo = "dqn";
  const std::vector<float> target{0.25f, 0.5f, 1.0f, 2.0f, 4.0f};
  dqn.set_floats("target_parameters", target);
  dqn.set_record("replay", replay_blob({.capacity = 8, .num_streams = 2, .obs_dim = 1}, 3, 2, false, false));
  save(dir / "dqn", dqn);
  save(dir / "empty", training::checkpoint{});
}

void env_seeds(const fs::path& env_arg_dir, const fs::path& actions_dir) {
  const auto& registry = envs::registry::global();
  for (const auto& name : registry.names()) {
    std::string args = name + "\n";
    for (const auto& key : registry.find(name).keys) args += fmt::format("{}={}\n", key.name, key.default_value);
    write(env_arg_dir / name, args);

    const auto e = registry.make(name, {}, 0, 0);
    const auto& space = e->action_space();
    coral::rng r(1);
    std::vector<std::int32_t> d(space.discrete_size());
    std::vector<float> c(space.continuous_size());
    std::string actions = name + "\n";
    for (int step = 0; step < 4; ++step) {
      if (step > 0) actions += ',';
      for (std::size_t row = 0; row < e->max_agents(); ++row) {
        envs::sample_action(space, r, d, c);
        if (row > 0) actions += '/';
        actions += coral::cli::format_action(space, d, c);
      }
    }
    write(actions_dir / name, actions);
  }
}

// Config files nested to the loader's bound and past it, each way a TOML
// text nests (dotted keys, table headers, arrays, inline tables, all
// mixed), plus the 40,000-part key that once overflowed toml++'s stack.
void config_seeds(const fs::path& dir) {
  const std::size_t bound = coral::cli::max_config_depth;
  auto dotted = [](std::size_t parts) {
    std::string k = "a";
    for (std::size_t i = 1; i < parts; ++i) k += ".a";
    return k;
  };
  for (const std::size_t depth : {bound - 2, bound - 1, bound, bound + 1}) {
    write(dir / fmt::format("deep-key-{}.toml", depth), "[train]\n" + dotted(depth - 1) + " = 1\n");
    write(dir / fmt::format("deep-header-{}.toml", depth), "[" + dotted(depth) + "]\nx = 1\n");
    write(dir / fmt::format("deep-array-{}.toml", depth),
          "[train]\nhidden = " + std::string(depth - 2, '[') + "64" + std::string(depth - 2, ']') + "\n");
    std::string inline_table = "1";
    for (std::size_t i = 2; i < depth; ++i) inline_table = "{b=" + inline_table + "}";
    write(dir / fmt::format("deep-inline-{}.toml", depth), "[train]\nx = " + inline_table + "\n");
    write(dir / fmt::format("deep-mixed-{}.toml", depth),
          "[train.a]\nb.c = [{d.e = [" + std::string(depth - 9, '[') + "'\"]'" + std::string(depth - 9, ']') +
              "]}] # ]]]\n");
  }
  write(dir / "deep-key-40000.toml", "[train]\n" + dotted(40000) + " = 1\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fputs("usage: make_seeds DIR\n", stderr);
    return 2;
  }
  const fs::path dir = argv[1];
  replay_seeds(dir / "replay_blob");
  actor_seeds(dir / "replay_actor");
  checkpoint_seeds(dir / "checkpoint");
  env_seeds(dir / "env_arg", dir / "actions");
  config_seeds(dir / "config");
  return 0;
}
