// A small, strict JSON reader for the files AOTInductor packages beside a
// model (the extern-kernel nodes). The runtime links no JSON library: the
// ones in common use are not among the headers every platform's build (and
// the macOS compile check) can reach, and these files need only reading.
// Inputs are bounded: nesting depth, and the size the caller reads.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace aotishim::runner {

class Json {
 public:
  enum class Type { Null, Bool, Number, String, Array, Object };

  // Throws aotishim::Error "<what>: <reason> at offset N" for malformed text.
  static Json parse(const std::string& text, const std::string& what);

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::Null; }
  bool is_bool() const { return type_ == Type::Bool; }
  bool is_number() const { return type_ == Type::Number; }
  bool is_string() const { return type_ == Type::String; }
  bool is_array() const { return type_ == Type::Array; }
  bool is_object() const { return type_ == Type::Object; }
  // A number written without fraction or exponent that fits int64.
  bool is_integer() const { return type_ == Type::Number && integral_; }

  // Typed access; each throws aotishim::Error naming `what` on a mismatch.
  bool as_bool(const std::string& what) const;
  int64_t as_int(const std::string& what) const;
  double as_double(const std::string& what) const;
  const std::string& as_string(const std::string& what) const;
  const std::vector<Json>& as_array(const std::string& what) const;
  // Members in the file's order.
  const std::vector<std::pair<std::string, Json>>& as_object(const std::string& what) const;

  // An object's member, or null when absent (or when this is not an object).
  const Json* find(const std::string& key) const;

 private:
  friend class JsonParser;
  Type type_ = Type::Null;
  bool bool_ = false;
  bool integral_ = false;
  int64_t int_ = 0;
  double number_ = 0;
  std::string string_;
  std::vector<Json> array_;
  std::vector<std::pair<std::string, Json>> object_;
};

}  // namespace aotishim::runner
