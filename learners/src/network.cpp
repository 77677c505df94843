// network_spec: a built-in network's shape from the env's spaces, its
// parameter count and signature, and torch's thread count.

#include "coral/learners/network.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "actor_critic.hpp"
#include "coral/core/error.hpp"
#include "coral/core/logging.hpp"
#include "coral/learners/blas_core.hpp"
#include "coral/learners/errors.hpp"

namespace coral::learners {
namespace {

void collect_leaves(const envs::space& s, network_spec& spec) {
  switch (s.kind()) {
    case envs::space_kind::discrete:
    case envs::space_kind::multi_discrete:
      spec.nvec.insert(spec.nvec.end(), s.nvec().begin(), s.nvec().end());
      break;
    case envs::space_kind::box:
      spec.low.insert(spec.low.end(), s.low().begin(), s.low().end());
      spec.high.insert(spec.high.end(), s.high().begin(), s.high().end());
      break;
    case envs::space_kind::dict:
    case envs::space_kind::tuple:
      for (const auto& c : s.children()) collect_leaves(c, spec);
      break;
  }
}

}  // namespace

network_spec network_spec::from_spaces(const envs::space& observation, const envs::space& action,
                                       std::vector<std::size_t> hidden, std::size_t frames) {
  network_spec spec;
  spec.raw_obs_dim = observation.flat_size();
  spec.frames = std::max<std::size_t>(frames, 1);
  spec.hidden = std::move(hidden);
  collect_leaves(action, spec);
  if (spec.nvec.size() != action.discrete_size() || spec.low.size() != action.continuous_size() ||
      spec.nvec.size() + spec.low.size() == 0) {
    throw config_error(fmt::format(fmt::runtime(errors::unsupported_action_space), action.to_string()));
  }
  return spec;
}

std::size_t network_spec::logits_dim() const noexcept {
  std::size_t n = 0;
  for (auto k : nvec) n += static_cast<std::size_t>(k);
  return n;
}

void use_one_torch_thread() {
  static std::once_flag once;
  std::call_once(once, [] {
    torch::set_num_threads(1);
    try {
      torch::set_num_interop_threads(1);
    } catch (const c10::Error&) {
      // Torch refuses once its inter-op pool has started (a host program ran
      // inter-op work first). coral never submits inter-op work, so the
      // pool's size does not matter to it.
      log::get("learners")->debug("torch inter-op threads already set; left as they are");
    }
    // OpenBLAS's kernels: the `coral` command has OpenBLAS choose again
    // first thing in main() where it chose its generic ones (blas_core.hpp).
    // Here, with threads running, that is no longer safe: a host program
    // (Python, an app of the user's) is told what to set instead.
    if (const char* better = blas_core_to_ask_for(); better != nullptr) {
      log::get("learners")->warn(
          "OpenBLAS does not know this CPU and runs its generic SSE3 kernels (Prescott): updates are slower. "
          "Set OPENBLAS_CORETYPE={} before the process starts (the coral command does this itself)",
          better);
    } else if (const std::string core = blas_core_in_use(); !core.empty()) {
      const char* chosen = std::getenv("OPENBLAS_CORETYPE");
      const char* threads = std::getenv("OPENBLAS_NUM_THREADS");
      log::get("learners")->debug("OpenBLAS runs its {} kernels on {} thread(s) (OPENBLAS_CORETYPE {}, "
                                  "OPENBLAS_NUM_THREADS {})",
                                  core, blas_threads_in_use(), chosen != nullptr ? chosen : "unset",
                                  threads != nullptr ? threads : "unset");
    }
  });
}

std::size_t parameter_count(const network_spec& spec) {
  torch::NoGradGuard no_grad;
  detail::actor_critic net(spec);
  std::size_t n = 0;
  for (const auto& p : net->ordered()) n += static_cast<std::size_t>(p.numel());
  return n;
}

std::size_t published_weight_count(const network_spec& spec) {
  return parameter_count(spec) + (spec.normalize_observations ? 2 * spec.input_dim() : 0);
}

std::string network_signature(const network_spec& spec) {
  // Without obs norm the text is what it was before the flag existed, so
  // those checkpoints still match.
  return fmt::format("mlp obs={} frames={} nvec=[{}] box={} hidden=[{}] params={}{}{}", spec.raw_obs_dim, spec.frames,
                     fmt::join(spec.nvec, ","), spec.continuous_dim(), fmt::join(spec.hidden, ","),
                     parameter_count(spec), spec.normalize_observations ? " obs_norm" : "",
                     spec.lstm > 0 ? fmt::format(" lstm={}", spec.lstm) : std::string());
}

}  // namespace coral::learners
