#include "coral/learners/train.hpp"
#include <catch2/catch.hpp>
TEST_CASE("placeholder", "[learning]") {}
