// The JSON reader and the extern-kernel nodes read with it: values, strictness
// (malformed text is an error with its offset, never a crash), and how each
// serialized argument kind maps to the flattened ints and tensors.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "aotishim/error.h"
#include "runner/extern_nodes.h"
#include "runner/json.h"
#include "temp_file.h"

using aotishim::OpArg;
using aotishim::OpReturn;
using aotishim::runner::Json;

TEST_CASE("json: values, order and escapes") {
  const Json j = Json::parse(
      R"({"b": [1, -2, 3.5, 1e2, true, false, null], "a": "x\"\\\n\u00e9\ud83d\ude00", "n": {}})",
      "t");
  const auto& members = j.as_object("doc");
  REQUIRE(members.size() == 3);
  CHECK(members[0].first == "b");  // the file's order
  const auto& b = j.find("b")->as_array("b");
  CHECK(b[0].as_int("") == 1);
  CHECK(b[1].as_int("") == -2);
  CHECK(!b[2].is_integer());
  CHECK(b[2].as_double("") == 3.5);
  CHECK(b[3].as_double("") == 100.0);
  CHECK(!b[3].is_integer());
  CHECK(b[4].as_bool(""));
  CHECK(!b[5].as_bool(""));
  CHECK(b[6].is_null());
  CHECK(j.find("a")->as_string("") == "x\"\\\n\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(j.find("n")->as_object("").empty());
  CHECK(j.find("missing") == nullptr);
}

TEST_CASE("json: malformed text is an error naming the place") {
  const char* bad[] = {"",        "{",           "[1,]",       "{\"a\" 1}",  "01",  "1.",
                       "\"abc",   "\"\\x\"",     "\"\\ud800\"", "nul",       "[1] 2",
                       "{\"a\":1,}", "\"\x01\"", "-",          "[true false]"};
  for (const char* text : bad) {
    CAPTURE(text);
    CHECK_THROWS_AS(Json::parse(text, "file 'x.json'"), aotishim::Error);
  }
  try {
    Json::parse("[1, 2, @]", "file 'x.json'");
    FAIL("no error");
  } catch (const aotishim::Error& e) {
    CHECK(std::string(e.what()) == "file 'x.json': unexpected character '@' at offset 7");
  }
  // deep nesting is refused, not a stack overflow
  CHECK_THROWS_WITH_AS(Json::parse(std::string(100000, '['), "deep"),
                       doctest::Contains("nested deeper than 64"), aotishim::Error);
  CHECK_THROWS_WITH_AS(Json::parse("\"a\"", "v").as_int("field"),
                       "field must be an integer, not a string", aotishim::Error);
}

TEST_CASE("extern nodes: argument kinds, counts and recorded layouts") {
  const std::string path = write_temp_file(R"({"nodes": [
    {"name": "buf1", "node": {"target": "ns::op.out", "inputs": [
      {"name": "x", "arg": {"as_tensor": {"name": "buf0"}}, "kind": 1},
      {"name": "xs", "arg": {"as_tensors": [{"name": "a"}, {"name": "b"}]}, "kind": 1},
      {"name": "maybe", "arg": {"as_optional_tensors": [{"as_tensor": {"name": "c"}}, {"as_none": true}]}, "kind": 1},
      {"name": "n", "arg": {"as_sym_int": {"as_name": "s0"}}, "kind": 1},
      {"name": "dims", "arg": {"as_ints": [1, 2, 3]}, "kind": 1},
      {"name": "alpha", "arg": {"as_float": 0.5}, "kind": 1},
      {"name": "dtype", "arg": {"as_scalar_type": 13}, "kind": 2},
      {"name": "fmt", "arg": {"as_memory_format": 2}, "kind": 2},
      {"name": "bias", "arg": {"as_none": true}, "kind": 2}],
     "outputs": [{"as_tensor": {"name": "buf2"}}, {"as_tensors": [{"name": "buf3"}, {"name": "buf4"}]},
                 {"as_optional_tensor": {"as_none": true}}],
     "metadata": {"torch_library_custom_op": "1", "aotishim.outputs":
       "[{\"dtype\": \"bfloat16\", \"sizes\": [2, \"s0\"], \"strides\": [1, 2]}, {\"dtype\": \"int64\", \"sizes\": [], \"strides\": []}, {\"dtype\": \"bool\", \"sizes\": [3], \"strides\": [1]}]"}}},
    {"name": "buf5", "node": {"target": "ns::obj", "inputs": [
      {"name": "o", "arg": {"as_custom_obj": {"name": "c0", "class_fqn": "x"}}, "kind": 1}],
     "outputs": [{"as_int": 3}], "metadata": {}}}]})");
  const auto nodes = aotishim::runner::read_extern_nodes(path);
  std::remove(path.c_str());
  REQUIRE(nodes.size() == 2);
  const auto& n = nodes[0];
  CHECK(n.target == "ns::op.out");
  CHECK(n.custom_op);
  CHECK(n.unsupported.empty());
  CHECK(n.input_tensors == 4);  // x, a, b, c
  CHECK(n.input_ints == 4);     // n, 1, 2, 3
  CHECK(n.inputs[2].present == std::vector<bool>{true, false});
  CHECK(n.inputs[5].value.kind == OpArg::Kind::Float);
  CHECK(n.inputs[5].value.float_value == 0.5);
  CHECK(n.inputs[6].value.kind == OpArg::Kind::ScalarType);
  CHECK(n.inputs[6].value.int_value == 15);  // serialized BFLOAT16 -> c10's bfloat16
  CHECK(n.inputs[6].value.keyword);
  CHECK(n.inputs[7].value.string_value == "channels_last");
  CHECK(n.inputs[8].value.kind == OpArg::Kind::None);
  REQUIRE(n.returns.size() == 3);
  CHECK(n.returns[1].kind == OpReturn::Kind::TensorList);
  CHECK(n.returns[1].count == 2);
  CHECK(n.returns[2].kind == OpReturn::Kind::None);
  REQUIRE(n.outputs.size() == 3);
  CHECK(n.outputs[0].known);
  CHECK(n.outputs[0].dtype == 15);
  CHECK(n.outputs[0].sizes == std::vector<int64_t>{2, -1});  // symbolic: checked at run time only
  CHECK(n.outputs[1].dtype == 4);
  CHECK(nodes[1].unsupported.find("as_custom_obj") != std::string::npos);
  CHECK(nodes[1].output_ints == 1);
}

TEST_CASE("extern nodes: malformed files name the file and the node") {
  const std::string path = write_temp_file(R"({"nodes": [{"node": {"inputs": []}}]})");
  CHECK_THROWS_WITH_AS(aotishim::runner::read_extern_nodes(path),
                       doctest::Contains("node 0 has no target"), aotishim::Error);
  std::ofstream(path) << R"({"nodes": [{"node": {"target": "a::b", "outputs": [{"as_tensor": {"name": "x"}}],
    "metadata": {"aotishim.outputs": "[]"}}}]})";
  CHECK_THROWS_WITH_AS(aotishim::runner::read_extern_nodes(path),
                       doctest::Contains("describes 0 tensors, the node returns 1"), aotishim::Error);
  std::remove(path.c_str());
  CHECK_THROWS_WITH_AS(aotishim::runner::read_extern_nodes("/nonexistent/m.json"),
                       doctest::Contains("cannot read"), aotishim::Error);
  CHECK(aotishim::runner::extern_nodes_path("/a/m.so") == "/a/m.json");
}
