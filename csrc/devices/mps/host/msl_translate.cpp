#include "devices/mps/host/msl_translate.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <cstring>
#include <stdexcept>

namespace aotishim::mps::host {
namespace {

[[noreturn]] void reject(const std::string& what, const std::string& text) {
  std::string shown = text.size() > 300 ? text.substr(0, 300) + "..." : text;
  throw std::runtime_error("host Metal: " + what + ": " + shown);
}

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Is `word` at `at` as a whole identifier?
bool word_at(const std::string& s, size_t at, const char* word) {
  const size_t n = std::strlen(word);
  return s.compare(at, n, word) == 0 && (at == 0 || !is_ident(s[at - 1])) &&
         (at + n >= s.size() || !is_ident(s[at + n]));
}

// Index of the bracket closing the one at `open`, skipping nested ones.
size_t matching(const std::string& s, size_t open, char o, char c) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == o) ++depth;
    if (s[i] == c && --depth == 0) return i;
  }
  reject("unbalanced brackets", s.substr(open));
}

// The source with string/char literals and comments kept apart: positions in
// `mask` are true where code (not a literal or comment) is.
std::vector<bool> code_mask(const std::string& s) {
  std::vector<bool> code(s.size(), true);
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"' || s[i] == '\'') {
      const char q = s[i];
      size_t j = i + 1;
      while (j < s.size() && s[j] != q) j += s[j] == '\\' ? 2 : 1;
      for (size_t k = i; k <= j && k < s.size(); ++k) code[k] = false;
      i = j;
    } else if (s.compare(i, 2, "//") == 0) {
      size_t j = s.find('\n', i);
      if (j == std::string::npos) j = s.size();
      for (size_t k = i; k < j; ++k) code[k] = false;
      i = j;
    } else if (s.compare(i, 2, "/*") == 0) {
      size_t j = s.find("*/", i + 2);
      j = j == std::string::npos ? s.size() : j + 2;
      for (size_t k = i; k < j; ++k) code[k] = false;
      i = j - 1;
    }
  }
  return code;
}

// Splits at top-level commas.
std::vector<std::string> split_params(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '<' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == '>' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  if (!trim(s.substr(start)).empty()) out.push_back(s.substr(start));
  return out;
}

struct Attribute {
  size_t begin, end;  // [[ ... ]] span
  std::string text;   // inside, trimmed
};

std::vector<Attribute> attributes_in(const std::string& s, const std::vector<bool>& code) {
  std::vector<Attribute> out;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (!code[i] || s[i] != '[' || s[i + 1] != '[') continue;
    const size_t close = s.find("]]", i + 2);
    if (close == std::string::npos) reject("unterminated attribute", s.substr(i));
    out.push_back({i, close + 2, trim(s.substr(i + 2, close - i - 2))});
    i = close + 1;
  }
  return out;
}

const char* const kPositionAttributes[] = {
    "thread_position_in_grid",        "threadgroup_position_in_grid",
    "thread_position_in_threadgroup", "threads_per_threadgroup",
    "threadgroups_per_grid",          "threads_per_grid",
    "dispatch_threads_per_threadgroup",
    "thread_index_in_threadgroup",    "simdgroup_index_in_threadgroup",
    "thread_index_in_simdgroup",      "threads_per_simdgroup",
    "simdgroups_per_threadgroup",     "thread_execution_width",
};

KernelParam read_param(const std::string& text, const std::string& decl) {
  const std::vector<bool> code = code_mask(text);
  const std::vector<Attribute> attrs = attributes_in(text, code);
  if (attrs.size() != 1) {
    reject("a kernel parameter needs exactly one attribute ([[buffer(n)]], a thread position...)",
           trim(text) + "  in  " + decl);
  }
  const Attribute& a = attrs[0];
  const std::string declarator = trim(text.substr(0, a.begin));
  size_t e = declarator.size();
  size_t b = e;
  while (b > 0 && is_ident(declarator[b - 1])) --b;
  if (b == e) reject("a kernel parameter without a name", decl);
  KernelParam p;
  p.name = declarator.substr(b);
  p.type = trim(declarator.substr(0, b));
  p.attribute = a.text;
  auto indexed = [&](const char* head) -> int {
    const size_t n = std::strlen(head);
    if (a.text.compare(0, n, head) != 0 || a.text.size() < n + 2 || a.text[n] != '(') return -1;
    const std::string digits = trim(a.text.substr(n + 1, a.text.size() - n - 2));
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
      reject("an attribute index must be a number", a.text + "  in  " + decl);
    }
    return std::stoi(digits);
  };
  if ((p.index = indexed("buffer")) >= 0) {
    p.kind = KernelParam::Buffer;
  } else if ((p.index = indexed("threadgroup")) >= 0) {
    p.kind = KernelParam::Threadgroup;
  } else {
    p.kind = KernelParam::Position;
    bool known = false;
    for (const char* name : kPositionAttributes) known = known || a.text == name;
    if (!known) reject("unsupported kernel parameter attribute [[" + a.text + "]]", decl);
  }
  if (p.kind != KernelParam::Position && p.index >= 31) {
    reject("argument index " + std::to_string(p.index) + " is out of range (0..30)", decl);
  }
  return p;
}

// The declaration head before a kernel's name: from the previous top-level
// ';' or '}' (or the start) to `at`.
size_t declaration_start(const std::string& s, const std::vector<bool>& code, size_t at) {
  size_t i = at;
  while (i > 0) {
    const char c = s[i - 1];
    if (code[i - 1] && (c == ';' || c == '}' || c == '{')) break;
    --i;
  }
  return i;
}

// Replaces `threadgroup T name[...];` statements inside function bodies by
// thread-local statics: the threads of a threadgroup run as fibers of one
// host thread, so one thread_local instance is the group's shared memory.
void lower_threadgroup_variables(std::string& s) {
  std::vector<bool> code = code_mask(s);
  int depth = 0;
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (code[i]) {
      if (s[i] == '{') ++depth;
      if (s[i] == '}') --depth;
    }
    if (code[i] && depth > 0 && word_at(s, i, "threadgroup")) {
      size_t k = out.size();
      while (k > 0 && std::isspace(static_cast<unsigned char>(out[k - 1]))) --k;
      const bool statement_start = k == 0 || out[k - 1] == ';' || out[k - 1] == '{' || out[k - 1] == '}';
      const size_t end = s.find(';', i);
      const std::string decl = s.substr(i, end == std::string::npos ? std::string::npos : end - i);
      const size_t bracket = decl.find_first_of("[=");
      const std::string head = decl.substr(0, bracket);
      if (statement_start && head.find_first_of("*&(") == std::string::npos) {
        out += "static thread_local";
        i += std::strlen("threadgroup") - 1;
        continue;
      }
    }
    out += s[i];
  }
  s = out;
}

std::string entry_symbol(size_t i) { return "aotishim_msl_entry_" + std::to_string(i); }

// Whether a kernel may store through a buffer parameter: not when its address
// space is `constant` or its pointee is const (`device const T*`, `const
// device T&`); a const pointer (`device T* const`) still stores. The host
// Metal's hazard checker tells reads from writes by this, as Metal's own
// tracking does not need to.
bool writable(const KernelParam& p) {
  if (p.kind != KernelParam::Buffer) return false;
  const size_t star = p.type.find_first_of("*&");
  const std::string pointee = p.type.substr(0, star);
  for (const char* word : {"constant", "const"}) {
    for (size_t at = pointee.find(word); at != std::string::npos; at = pointee.find(word, at + 1))
      if (word_at(pointee, at, word)) return false;
  }
  return true;
}

const char* position_field(const std::string& attribute) {
  if (attribute == "thread_execution_width") return "threads_per_simdgroup";
  return attribute.c_str();
}

}  // namespace

Translation translate_msl(const std::string& preprocessed) {
  Translation t;
  const std::string& s = preprocessed;
  const std::vector<bool> code = code_mask(s);
  std::vector<Attribute> attrs = attributes_in(s, code);
  std::vector<std::pair<size_t, size_t>> cut;  // spans to remove: attributes, `kernel` keywords

  // Kernel markers: [[kernel]] attributes and `kernel` keywords before a return type.
  std::vector<size_t> markers;
  for (const Attribute& a : attrs) {
    if (a.text == "kernel") markers.push_back(a.end);
  }
  for (size_t i = 0; i < s.size(); ++i) {
    if (code[i] && word_at(s, i, "kernel")) {
      size_t j = i + 6;
      while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      if (word_at(s, j, "void")) {
        markers.push_back(i + 6);
        cut.push_back({i, i + 6});
      }
    }
  }
  for (const Attribute& a : attrs) cut.push_back({a.begin, a.end});

  std::sort(markers.begin(), markers.end());
  std::set<size_t> seen;  // a declaration with both [[kernel]] and `kernel` is one kernel
  for (size_t marker : markers) {
    const size_t open = s.find('(', marker);
    if (open == std::string::npos) reject("a kernel without a parameter list", s.substr(marker));
    if (!seen.insert(open).second) continue;
    const size_t close = matching(s, open, '(', ')');
    const size_t head_start = declaration_start(s, code, marker);
    const std::string head = s.substr(head_start, open - head_start);
    const std::string decl = trim(s.substr(head_start, close + 1 - head_start));
    // The function name, with template arguments for an explicit instance.
    size_t name_end = open;
    while (name_end > 0 && std::isspace(static_cast<unsigned char>(s[name_end - 1]))) --name_end;
    size_t args_begin = name_end;
    if (s[name_end - 1] == '>') {
      int depth = 0;
      size_t i = name_end;
      while (i > 0) {
        --i;
        if (s[i] == '>') ++depth;
        if (s[i] == '<' && --depth == 0) break;
      }
      args_begin = i;
    }
    size_t name_begin = args_begin;
    while (name_begin > 0 && is_ident(s[name_begin - 1])) --name_begin;
    const std::string fn = s.substr(name_begin, args_begin - name_begin);
    const std::string targs = s.substr(args_begin, name_end - args_begin);
    const std::string head_code = trim(head);
    const bool is_template = head_code.compare(0, 8, "template") == 0;
    bool template_definition = false;
    if (is_template) {
      size_t k = 8;
      while (k < head_code.size() && std::isspace(static_cast<unsigned char>(head_code[k]))) ++k;
      template_definition = k < head_code.size() && head_code[k] == '<';
    }
    if (template_definition) continue;  // its instances are the kernels
    if (is_template && targs.empty()) reject("a kernel template instance without arguments", decl);

    KernelSignature k;
    k.name = fn;
    k.callee = fn + targs;
    const std::vector<bool> head_mask = code_mask(head);
    for (const Attribute& a : attributes_in(head, head_mask)) {
      if (a.text.compare(0, 10, "host_name(") == 0) {
        std::string n = trim(a.text.substr(10, a.text.size() - 11));
        if (n.size() < 2 || n.front() != '"' || n.back() != '"') {
          reject("host_name takes a string literal", decl);
        }
        k.name = n.substr(1, n.size() - 2);
      }
    }
    for (const std::string& param : split_params(s.substr(open + 1, close - open - 1))) {
      k.params.push_back(read_param(param, decl));
    }
    for (const KernelSignature& other : t.kernels) {
      if (other.name == k.name) reject("two kernels named '" + k.name + "'", decl);
    }
    t.kernels.push_back(std::move(k));
  }

  // The source without attributes and `kernel` keywords.
  std::sort(cut.begin(), cut.end());
  std::string body;
  size_t at = 0;
  for (const auto& [b, e] : cut) {
    if (b < at) continue;
    body.append(s, at, b - at);
    body += ' ';
    at = e;
  }
  body.append(s, at, std::string::npos);
  lower_threadgroup_variables(body);

  // One entry per kernel, then the table.
  std::string entries = "\n// ---- host Metal entry points ----\n";
  std::string table;
  for (size_t i = 0; i < t.kernels.size(); ++i) {
    const KernelSignature& k = t.kernels[i];
    std::string call, params;
    for (size_t j = 0; j < k.params.size(); ++j) {
      const KernelParam& p = k.params[j];
      if (j > 0) call += ",\n      ";
      if (p.kind == KernelParam::Buffer) {
        call += "aotishim_msl_buffer_arg<" + p.type + ">(self->buffers[" + std::to_string(p.index) + "])";
      } else if (p.kind == KernelParam::Threadgroup) {
        call += "aotishim_msl_buffer_arg<" + p.type + ">(self->threadgroup_memory[" +
                std::to_string(p.index) + "])";
      } else {
        call += "aotishim_msl_position<" + p.type + ">(self->" + position_field(p.attribute) + ")";
      }
      const char* kind = p.kind == KernelParam::Buffer        ? "AOTISHIM_MSL_PARAM_BUFFER"
                         : p.kind == KernelParam::Threadgroup ? "AOTISHIM_MSL_PARAM_THREADGROUP"
                                                              : "AOTISHIM_MSL_PARAM_POSITION";
      params += std::string("  {") + kind + ", " + std::to_string(p.index) + ", \"" + p.name +
                "\", \"" + p.attribute + "\", " + (writable(p) ? "1" : "0") + "},\n";
    }
    entries += "static void " + entry_symbol(i) + "(const aotishim_msl_thread* self) {\n" +
               "  aotishim_msl_self = self;\n  " + k.callee + "(\n      " + call + ");\n}\n";
    entries += "static const aotishim_msl_param " + entry_symbol(i) + "_params[] = {\n" + params +
               "  {0, 0, nullptr, nullptr, 0}};\n";
    table += "  {\"" + k.name + "\", " + entry_symbol(i) + ", " + std::to_string(k.params.size()) +
             ", " + entry_symbol(i) + "_params},\n";
  }
  entries += "static const aotishim_msl_kernel aotishim_msl_kernel_table[] = {\n" + table +
             "  {nullptr, nullptr, 0, nullptr}};\n";
  entries += "extern \"C\" __attribute__((visibility(\"default\"))) const aotishim_msl_kernel*\n"
             "aotishim_msl_kernels(int32_t* count, int32_t* abi_version) {\n"
             "  *count = " + std::to_string(t.kernels.size()) + ";\n"
             "  *abi_version = AOTISHIM_MSL_ABI_VERSION;\n"
             "  return aotishim_msl_kernel_table;\n}\n";
  t.source = "using namespace metal;\n" + body + entries;
  return t;
}

}  // namespace aotishim::mps::host
