// libFuzzer target: the checkpoint reader (training/src/checkpoint.cpp,
// read_checkpoint), which `coral train --resume` runs on whatever file it
// finds in the checkpoint directory.
//
// Input: one mode byte, then the file. Mode bit 0 set: the header's payload
// size and FNV-1a checksum are rewritten to match the bytes that follow
// before the file is written, so the fuzzer reaches the record parser with
// crafted payloads instead of stopping at the checksum; clear: the file is
// read as it is (damage, truncation).
//
// A file must either be refused with checkpoint_error or read into a
// checkpoint that writes and reads back to the same checkpoint.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "coral/training/checkpoint.hpp"
#include "fuzz_support.hpp"

namespace {

namespace training = coral::training;

constexpr std::size_t header_size = 8 + 4 + 8 + 8;  // magic, version, payload size, checksum

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

bool same(const training::checkpoint& a, const training::checkpoint& b) {
  return a.env == b.env && a.network == b.network && a.seed == b.seed && a.algo == b.algo && a.records == b.records &&
         a.learner.updates == b.learner.updates && a.learner.env_steps == b.learner.env_steps &&
         a.learner.adam_steps == b.learner.adam_steps && a.learner.rng == b.learner.rng &&
         same_floats(a.learner.parameters, b.learner.parameters) && same_floats(a.learner.adam_m, b.learner.adam_m) &&
         same_floats(a.learner.adam_v, b.learner.adam_v);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool repair = (data[0] & 1) != 0;
  std::vector<char> file(data + 1, data + size);
  if (repair && file.size() >= header_size) {
    const std::uint64_t payload = file.size() - header_size;
    const std::uint64_t sum = training::fnv1a64(file.data() + header_size, payload);
    std::memcpy(file.data() + 12, &payload, sizeof payload);
    std::memcpy(file.data() + 20, &sum, sizeof sum);
  }

  static const coral::fuzz::scratch_file input("coral-fuzz-checkpoint");
  static const coral::fuzz::scratch_file again("coral-fuzz-checkpoint-again");
  input.write(file.data(), file.size());
  training::checkpoint c;
  try {
    c = training::read_checkpoint(input.path());
  } catch (const training::checkpoint_error&) {
    return 0;  // refused with a named error: what a bad file must get
  }
  coral::fuzz::check(c.learner.adam_m.size() == c.learner.parameters.size() &&
                         c.learner.adam_v.size() == c.learner.parameters.size(),
                     "a checkpoint was read with optimiser moments of another size than its parameters");
  training::write_checkpoint(again.path(), c);
  coral::fuzz::check(same(training::read_checkpoint(again.path()), c),
                     "a checkpoint read, written and read again changed");
  return 0;
}
