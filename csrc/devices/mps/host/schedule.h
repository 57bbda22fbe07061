// The order in which the host Metal runs commands that Metal leaves
// unordered. Metal orders two commands only when they bind the same buffer
// object and one of them writes it; everything else may run in any order on
// a GPU. The host runs such commands in a chosen order (submission order,
// reversed, or a seeded shuffle), so a missing dependency changes the result
// instead of hiding behind submission order.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

#include "devices/mps/host/hazards.h"

namespace aotishim::mps::host {

enum class Order { Fifo, Reverse, Shuffle };

// An execution order (indices into `commands`) that keeps every ordered pair
// in submission order and picks among the rest by `order`.
std::vector<size_t> schedule(const std::vector<const CommandRecord*>& commands, Order order,
                             std::mt19937_64& rng);

}  // namespace aotishim::mps::host
