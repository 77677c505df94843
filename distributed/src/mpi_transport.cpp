#include "coral/distributed/mpi_transport.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include "coral/core/error.hpp"
#include "coral/distributed/errors.hpp"

namespace coral::distributed {

struct mpi_transport::pending {
  MPI_Request request = MPI_REQUEST_NULL;
  std::size_t to = 0;
  int tag = 0;
  std::vector<std::byte> bytes;
};

namespace {

/// The longest a sampler's or the learner's final sends may wait to be received.
constexpr auto final_sends_limit = std::chrono::seconds(5);
/// The longest MPI_Finalize may take before the process ends without it.
constexpr auto finalize_limit = std::chrono::seconds(30);

}  // namespace

namespace {

/// Ends the process with `message` unless done() is called within `limit`:
/// for MPI calls that wait on every rank and have no timeout of their own.
class deadline_guard {
 public:
  deadline_guard(std::chrono::milliseconds limit, std::string message)
      : thread_([this, limit, message = std::move(message)] {
          const auto until = std::chrono::steady_clock::now() + limit;
          while (!done_.load() && std::chrono::steady_clock::now() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          }
          if (!done_.load()) {
            std::fputs(message.c_str(), stderr);
            std::fflush(nullptr);
            std::_Exit(2);
          }
        }) {}
  deadline_guard(const deadline_guard&) = delete;
  deadline_guard& operator=(const deadline_guard&) = delete;
  ~deadline_guard() {
    done_.store(true);
    thread_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace

std::shared_ptr<mpi_transport> mpi_transport::start(double limit_seconds) {
  // MPI_Init and the first collective wait for every rank: bounded here.
  const deadline_guard guard(
      std::chrono::milliseconds(static_cast<long long>(std::clamp(limit_seconds, 1.0, 1e6) * 1e3)),
      "error: " + fmt::format(fmt::runtime(errors::mpi_start_timeout), limit_seconds) + "\n");
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = 0;
  if (initialized == 0) {
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    throw error(fmt::format(fmt::runtime(errors::mpi_thread_level), provided, MPI_THREAD_SERIALIZED));
  }
  auto t = std::shared_ptr<mpi_transport>(new mpi_transport());
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  t->rank_ = static_cast<std::size_t>(rank);
  t->size_ = static_cast<std::size_t>(size);
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(host, &length);
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  for (int r = 0; r < size; ++r) {
    const char* h = all.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    t->hosts_.emplace_back(h, strnlen(h, MPI_MAX_PROCESSOR_NAME));
  }
  return t;
}

mpi_transport::~mpi_transport() {
  const auto until = std::chrono::steady_clock::now() + final_sends_limit;
  while (in_flight() != 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Sends a peer has not received yet (a stopped rank): the peer may read their buffers
  // whenever it runs again, for as long as this process lives, so they are never freed.
  std::vector<std::size_t> peers;
  for (auto& p : pending_) {
    MPI_Cancel(&p->request);
    int done = 0;
    MPI_Test(&p->request, &done, MPI_STATUS_IGNORE);
    if (done != 0) continue;
    MPI_Request_free(&p->request);
    peers.push_back(p->to);
    (void)p.release();
  }
  if (!peers.empty()) {
    // Said once the buffers are let go (a test resumes a stopped peer on this line).
    const auto count = peers.size();
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    std::string names;
    for (const auto r : peers) names += (names.empty() ? "" : ", ") + name(r);
    const auto text = fmt::format(fmt::runtime(errors::sends_undelivered), count, names,
                                  std::chrono::duration_cast<std::chrono::seconds>(final_sends_limit).count());
    std::fprintf(stderr, "coral: %s\n", text.c_str());
    std::fflush(stderr);
  }
  pending_.clear();
  // A peer that never calls MPI_Finalize would hold this one for ever.
  const deadline_guard guard(std::chrono::duration_cast<std::chrono::milliseconds>(finalize_limit),
                             "coral: MPI_Finalize did not return within 30 s; exiting without it\n");
  MPI_Finalize();
}

void mpi_transport::send(std::size_t to, wire_tag tag, std::vector<std::byte> bytes) {
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {
    throw error(fmt::format(fmt::runtime(errors::wire_too_big), bytes.size(), name(to)));
  }
  auto p = std::make_unique<pending>();
  p->to = to;
  p->tag = static_cast<int>(tag);
  p->bytes = std::move(bytes);
  MPI_Isend(p->bytes.data(), static_cast<int>(p->bytes.size()), MPI_BYTE, static_cast<int>(to), p->tag,
            MPI_COMM_WORLD, &p->request);
  pending_.push_back(std::move(p));
}

std::size_t mpi_transport::in_flight() {
  std::erase_if(pending_, [](const std::unique_ptr<pending>& p) {
    int done = 0;
    MPI_Test(&p->request, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
  return pending_.size();
}

std::size_t mpi_transport::in_flight(std::size_t to, wire_tag tag) {
  (void)in_flight();
  std::size_t n = 0;
  for (const auto& p : pending_) n += (p->to == to && p->tag == static_cast<int>(tag)) ? 1 : 0;
  return n;
}

std::optional<wire_message> mpi_transport::poll() {
  int found = 0;
  MPI_Message message;
  MPI_Status status;
  MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &found, &message, &status);
  if (found == 0) return std::nullopt;
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  wire_message m;
  m.from = static_cast<std::size_t>(status.MPI_SOURCE);
  m.tag = static_cast<wire_tag>(status.MPI_TAG);
  m.bytes.resize(static_cast<std::size_t>(count));
  MPI_Mrecv(m.bytes.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
  return m;
}

std::string mpi_transport::name(std::size_t r) const {
  if (r < hosts_.size()) return fmt::format("rank {} on {}", r, hosts_[r]);
  return fmt::format("rank {}", r);
}

}  // namespace coral::distributed
