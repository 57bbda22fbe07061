// The sim scheduler: commands sharing a buffer object (one writing) keep
// submission order in every schedule; independent commands really are
// reordered, so a missing dependency shows.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "devices/sim/command_stream.h"

using aotishim::sim::Order;
using aotishim::sim_detail::Binding;
using aotishim::sim_detail::Command;
using aotishim::sim_detail::CommandStream;

namespace {

Binding bind(uint64_t buffer, bool write) {
  Binding b;
  b.buffer = buffer;
  b.base = 0x1000 * buffer;
  b.nbytes = 16;
  b.write = write;
  b.role = write ? "out" : "in";
  return b;
}

Command command(const std::string& name, std::vector<Binding> bindings) {
  Command c;
  c.name = name;
  c.bindings = std::move(bindings);
  return c;
}

std::vector<std::string> names(const std::vector<Command>& commands) {
  std::vector<std::string> out;
  for (const Command& c : commands) out.push_back(c.name);
  return out;
}

size_t position(const std::vector<std::string>& order, const std::string& name) {
  return static_cast<size_t>(std::find(order.begin(), order.end(), name) - order.begin());
}

}  // namespace

TEST_CASE("fifo and reverse orders of independent commands") {
  CommandStream stream;
  stream.submit(command("a", {bind(1, true)}));
  stream.submit(command("b", {bind(2, true)}));
  stream.submit(command("c", {bind(3, true)}));
  std::mt19937_64 rng(0);
  CHECK(names(stream.take_scheduled(Order::Reverse, rng)) ==
        std::vector<std::string>{"c", "b", "a"});
  CHECK(stream.pending() == 0);
  stream.submit(command("a", {bind(1, true)}));
  stream.submit(command("b", {bind(2, true)}));
  CHECK(names(stream.take_scheduled(Order::Fifo, rng)) == std::vector<std::string>{"a", "b"});
}

TEST_CASE("read-after-write, write-after-read and write-after-write stay ordered") {
  for (Order order : {Order::Fifo, Order::Reverse, Order::Shuffle}) {
    for (uint64_t seed = 0; seed < 20; ++seed) {
      CommandStream stream;
      stream.submit(command("write x", {bind(1, true)}));
      stream.submit(command("read x into y", {bind(1, false), bind(2, true)}));
      stream.submit(command("unrelated", {bind(9, true)}));
      stream.submit(command("overwrite x", {bind(1, true)}));
      stream.submit(command("read y", {bind(2, false)}));
      std::mt19937_64 rng(seed);
      auto order_seen = names(stream.take_scheduled(order, rng));
      REQUIRE(order_seen.size() == 5);
      CHECK(position(order_seen, "write x") < position(order_seen, "read x into y"));
      CHECK(position(order_seen, "read x into y") < position(order_seen, "overwrite x"));
      CHECK(position(order_seen, "read x into y") < position(order_seen, "read y"));
    }
  }
}

TEST_CASE("shuffle really reorders independent commands") {
  bool saw_non_fifo = false;
  for (uint64_t seed = 0; seed < 20 && !saw_non_fifo; ++seed) {
    CommandStream stream;
    for (uint64_t i = 0; i < 6; ++i) stream.submit(command(std::to_string(i), {bind(i + 1, true)}));
    std::mt19937_64 rng(seed);
    auto seen = names(stream.take_scheduled(Order::Shuffle, rng));
    saw_non_fifo = seen != std::vector<std::string>{"0", "1", "2", "3", "4", "5"};
  }
  CHECK(saw_non_fifo);
}

TEST_CASE("readers of one buffer are not ordered among themselves") {
  CommandStream stream;
  stream.submit(command("read 1", {bind(1, false)}));
  stream.submit(command("read 2", {bind(1, false)}));
  std::mt19937_64 rng(0);
  CHECK(names(stream.take_scheduled(Order::Reverse, rng)) ==
        std::vector<std::string>{"read 2", "read 1"});
}
