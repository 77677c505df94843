// replay_actor's save and load: the limiter's counters, the sampling
// generator, the count of batches served, then the buffer's own blob.

#include <cstring>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/errors.hpp"
#include "coral/replay/replay_actor.hpp"

namespace coral::replay {
namespace {

constexpr char magic[8] = {'C', 'R', 'L', 'R', 'A', 'C', 'T', '1'};

template <class T>
void put(std::vector<char>& out, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  const auto* p = reinterpret_cast<const char*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

template <class T>
T take(std::span<const char>& in, const char* what) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (in.size() < sizeof(T)) throw config_error(fmt::format(fmt::runtime(errors::actor_state_malformed), what));
  T v;
  std::memcpy(&v, in.data(), sizeof v);
  in = in.subspan(sizeof v);
  return v;
}

}  // namespace

void replay_actor::save(std::vector<char>& out) const {
  out.insert(out.end(), magic, magic + sizeof magic);
  put(out, limiter_.inserts());
  put(out, limiter_.samples());
  put(out, served_);
  put(out, rng_);
  buffer_.save(out);
}

void replay_actor::load(std::span<const char> in) {
  if (in.size() < sizeof magic || std::memcmp(in.data(), magic, sizeof magic) != 0) {
    throw config_error(fmt::format(fmt::runtime(errors::actor_state_malformed), "not a replay actor state"));
  }
  in = in.subspan(sizeof magic);
  const auto inserts = take<std::uint64_t>(in, "limiter inserts");
  const auto samples = take<std::uint64_t>(in, "limiter samples");
  const auto served = take<std::uint64_t>(in, "batches served");
  const auto rng = take<envs::rng>(in, "generator");
  buffer_.load(in);
  limiter_ = rate_limiter(limiter_config_);
  limiter_.record_insert(inserts);
  limiter_.record_sample(samples);
  served_ = served;
  rng_ = rng;
  for (std::size_t s = 0; s < config_.buffer.num_streams; ++s) buffer_.cut(s);
  stats_.env_steps.store(inserts);
  stats_.sampled.store(samples);
  stats_.size.store(buffer_.size());
  raise_allowance();
}

}  // namespace coral::replay
