#include "coral/channels/channel.hpp"
