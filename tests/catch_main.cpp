// Catch2's own POSIX signal handlers are off: the runtime tests send SIGINT
// to coral's handler on purpose, and under ThreadSanitizer Catch's handler
// caught it instead. Crashes are still reported by the sanitizers and ctest.
#define CATCH_CONFIG_NO_POSIX_SIGNALS
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
