#pragma once
/// \file
/// Error texts of distributed runs: the wire format, the bridge, the MPI transport (fmt format strings).

#include <string_view>

namespace coral::distributed::errors {

/// A message that does not decode: the sender, the field.
inline constexpr std::string_view wire_malformed = "--distributed: a malformed message from {}: {}";
/// A rank that stopped with an error: the rank, its error.
inline constexpr std::string_view rank_failed = "--distributed: {} failed: {}";

/// The MPI library cannot give the thread level coral needs: what it gave, what is needed.
inline constexpr std::string_view mpi_thread_level =
    "--distributed: the MPI library provides thread level {}, coral needs MPI_THREAD_SERIALIZED ({})";
/// MPI's start did not complete in time: the limit in seconds.
inline constexpr std::string_view mpi_start_timeout =
    "--distributed: the MPI start did not complete within {} s: a rank did not join (stopped, or not started); exiting";
/// A message over MPI's 2 GiB count limit: its size, the receiver.
inline constexpr std::string_view wire_too_big = "--distributed: a message of {} bytes for {} is over MPI's limit of 2 GiB";
/// At the end, sends a peer has not received yet (a stopped rank): how many, to whom, the wait in seconds.
inline constexpr std::string_view sends_undelivered =
    "--distributed: {} message(s) to {} not received within {} s; their buffers stay until this process ends";

}  // namespace coral::distributed::errors
