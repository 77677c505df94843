#pragma once
/// \file
/// Exit codes of programs built on coral, the `coral` command first (docs/cli.md
/// lists them; tests assert them).

namespace coral::exit_codes {
/// The command did what it was asked (for `train`: the run finished, solved or not).
inline constexpr int ok = 0;
/// A bad flag, config file or value, rejected before anything started.
inline constexpr int bad_input = 1;
/// The run started and failed: an actor or env fault, a non-finite value, a
/// stall, or actors that ignored a stop past the deadline.
inline constexpr int run_failed = 2;
// A second SIGINT or SIGTERM ends the process at once with 128 + the signal
// number (130, 143): see core/interrupts.hpp.
}  // namespace coral::exit_codes
