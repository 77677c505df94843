#pragma once
/// \file
/// Error texts of the MPI transport (fmt format strings).

#include <string_view>

namespace coral::distributed::errors {

/// The MPI library cannot give the thread level coral needs: what it gave, what is needed.
inline constexpr std::string_view mpi_thread_level =
    "--distributed: the MPI library provides thread level {}, coral needs MPI_THREAD_SERIALIZED ({})";
/// A message over MPI's 2 GiB count limit: its size, the receiver.
inline constexpr std::string_view wire_too_big = "--distributed: a message of {} bytes for {} is over MPI's limit of 2 GiB";

}  // namespace coral::distributed::errors
