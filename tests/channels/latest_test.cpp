#include "coral/channels/latest.hpp"
