#include "runner/json.h"

#include <cerrno>
#include <cstdlib>

#include "aotishim/error.h"

namespace aotishim::runner {

namespace {
constexpr int kMaxDepth = 64;

const char* type_name(Json::Type t) {
  switch (t) {
    case Json::Type::Null: return "null";
    case Json::Type::Bool: return "a boolean";
    case Json::Type::Number: return "a number";
    case Json::Type::String: return "a string";
    case Json::Type::Array: return "an array";
    case Json::Type::Object: return "an object";
  }
  return "?";
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}
}  // namespace

class JsonParser {
 public:
  JsonParser(const std::string& text, const std::string& what) : s_(text), what_(what) {}

  Json document() {
    Json value = parse_value(0);
    skip_space();
    if (pos_ != s_.size()) error("unexpected text after the document");
    return value;
  }

 private:
  const std::string& s_;
  const std::string& what_;
  size_t pos_ = 0;

  [[noreturn]] void error(const std::string& reason) const {
    throw Error(what_ + ": " + reason + " at offset " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t'))
      ++pos_;
  }
  bool consume(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) error(std::string("expected '") + c + "'");
  }
  void literal(const char* word) {
    for (const char* p = word; *p; ++p, ++pos_)
      if (pos_ >= s_.size() || s_[pos_] != *p) error("invalid literal");
  }

  Json parse_value(int depth) {
    if (depth > kMaxDepth) error("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    skip_space();
    if (pos_ >= s_.size()) error("unexpected end of text");
    Json v;
    const char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      v.type_ = Json::Type::Object;
      if (consume('}')) return v;
      do {
        skip_space();
        if (pos_ >= s_.size() || s_[pos_] != '"') error("expected a member name");
        std::string key = parse_string();
        expect(':');
        v.object_.emplace_back(std::move(key), parse_value(depth + 1));
      } while (consume(','));
      expect('}');
    } else if (c == '[') {
      ++pos_;
      v.type_ = Json::Type::Array;
      if (consume(']')) return v;
      do {
        v.array_.push_back(parse_value(depth + 1));
      } while (consume(','));
      expect(']');
    } else if (c == '"') {
      v.type_ = Json::Type::String;
      v.string_ = parse_string();
    } else if (c == 't') {
      literal("true");
      v.type_ = Json::Type::Bool;
      v.bool_ = true;
    } else if (c == 'f') {
      literal("false");
      v.type_ = Json::Type::Bool;
    } else if (c == 'n') {
      literal("null");
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      parse_number(v);
    } else {
      error(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  uint32_t hex4() {
    if (pos_ + 4 > s_.size()) error("truncated \\u escape");
    uint32_t cp = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[pos_++];
      cp <<= 4;
      if (h >= '0' && h <= '9') cp |= h - '0';
      else if (h >= 'a' && h <= 'f') cp |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') cp |= h - 'A' + 10;
      else error("invalid \\u escape");
    }
    return cp;
  }

  std::string parse_string() {
    ++pos_;  // the opening quote
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) error("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) error("unterminated string");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair
            if (pos_ + 2 > s_.size() || s_[pos_] != '\\' || s_[pos_ + 1] != 'u')
              error("unpaired surrogate");
            pos_ += 2;
            const uint32_t low = hex4();
            if (low < 0xDC00 || low >= 0xE000) error("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            error("unpaired surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default: error("invalid escape");
      }
    }
  }

  void parse_number(Json& v) {
    const size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      if (pos_ == from) error("invalid number");
    };
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else {
      digits();
    }
    bool integral = true;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      digits();
      integral = false;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      digits();
      integral = false;
    }
    const std::string text = s_.substr(start, pos_ - start);
    v.type_ = Json::Type::Number;
    v.number_ = std::strtod(text.c_str(), nullptr);
    if (integral) {
      errno = 0;
      const long long n = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == 0) {
        v.integral_ = true;
        v.int_ = n;
      }
    }
  }
};

Json Json::parse(const std::string& text, const std::string& what) {
  return JsonParser(text, what).document();
}

namespace {
[[noreturn]] void mismatch(const std::string& what, const char* wanted, Json::Type got) {
  throw Error(what + " must be " + wanted + ", not " + type_name(got));
}
}  // namespace

bool Json::as_bool(const std::string& what) const {
  if (type_ != Type::Bool) mismatch(what, "a boolean", type_);
  return bool_;
}
int64_t Json::as_int(const std::string& what) const {
  if (!is_integer()) mismatch(what, "an integer", type_);
  return int_;
}
double Json::as_double(const std::string& what) const {
  if (type_ != Type::Number) mismatch(what, "a number", type_);
  return integral_ ? static_cast<double>(int_) : number_;
}
const std::string& Json::as_string(const std::string& what) const {
  if (type_ != Type::String) mismatch(what, "a string", type_);
  return string_;
}
const std::vector<Json>& Json::as_array(const std::string& what) const {
  if (type_ != Type::Array) mismatch(what, "an array", type_);
  return array_;
}
const std::vector<std::pair<std::string, Json>>& Json::as_object(const std::string& what) const {
  if (type_ != Type::Object) mismatch(what, "an object", type_);
  return object_;
}
const Json* Json::find(const std::string& key) const {
  for (const auto& [k, v] : object_)
    if (k == key) return &v;
  return nullptr;
}

}  // namespace aotishim::runner
