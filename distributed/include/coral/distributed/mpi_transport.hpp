#pragma once
/// \file
/// The ranks of an MPI job as a transport: non-blocking sends
/// (MPI_Isend, each buffer kept until its request completes) and matched
/// probes for what arrives (MPI_Improbe + MPI_Mrecv), polled by the bridge
/// actor. MPI is initialised with MPI_THREAD_SERIALIZED (one thread at a
/// time makes MPI calls: the bridge actor while the run goes on, the
/// caller's thread before and after), checked at start.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "coral/distributed/transport.hpp"

namespace coral::distributed {

class mpi_transport final : public transport {
 public:
  /// Initialises MPI (once per process) and learns every rank's host name.
  /// Throws coral::error if the MPI library cannot give MPI_THREAD_SERIALIZED.
  /// When that start does not complete within `limit_seconds` (a rank
  /// stopped or never started: MPI_Init waits for every rank), prints
  /// errors::mpi_start_timeout and ends the process with exit code 2 rather
  /// than hang.
  [[nodiscard]] static std::shared_ptr<mpi_transport> start(double limit_seconds = 60);
  /// Waits for the sends in flight (at most a few seconds) and finalises
  /// MPI; if MPI_Finalize does not return within 30 s (a peer that never
  /// finalises), ends the process with exit code 2 rather than hang. The
  /// buffers of sends that did not complete are never freed (MPI may still
  /// read them while a peer receives): the process ends soon after.
  ~mpi_transport() override;
  mpi_transport(const mpi_transport&) = delete;
  mpi_transport& operator=(const mpi_transport&) = delete;

  std::size_t rank() const override { return rank_; }
  std::size_t size() const override { return size_; }
  void send(std::size_t to, wire_tag tag, std::vector<std::byte> bytes) override;
  std::size_t in_flight(std::size_t to, wire_tag tag) override;
  std::size_t in_flight() override;
  std::optional<wire_message> poll() override;
  /// "rank 2 on host-b".
  std::string name(std::size_t r) const override;

 private:
  mpi_transport() = default;
  struct pending;
  std::size_t rank_ = 0;
  std::size_t size_ = 1;
  std::vector<std::string> hosts_;
  std::vector<std::unique_ptr<pending>> pending_;
};

}  // namespace coral::distributed
