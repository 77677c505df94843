#include "coral/core/runtime.hpp"
