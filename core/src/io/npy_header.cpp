// A hand-written linear scanner for the .npy header dict (npy_header.hpp):
// std::regex recursed per character and overflowed the stack on a crafted
// shape, and no npy reader library is among the dependencies; writing .npy
// and .npz stays with libarchive (npy.cpp).
#include "llm2hef/core/io/npy_header.hpp"

#include <cctype>

#include "llm2hef/core/io/dims_text.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace {

size_t skip_spaces(std::string_view s, size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

// Position just after `'key':` and the spaces that follow, or npos.
size_t value_of(std::string_view dict, std::string_view key) {
  const std::string quoted = "'" + std::string(key) + "'";
  const size_t at = dict.find(quoted);
  if (at == std::string_view::npos) return at;
  size_t i = skip_spaces(dict, at + quoted.size());
  if (i >= dict.size() || dict[i] != ':') return std::string_view::npos;
  return skip_spaces(dict, i + 1);
}

}  // namespace

NpyHeaderFields parse_npy_header_dict(std::string_view dict, const std::string& label) {
  NpyHeaderFields h;
  size_t i = value_of(dict, "descr");
  if (i == std::string_view::npos || i >= dict.size() || dict[i] != '\'')
    throw BadInput(label + ": .npy header has no simple 'descr' string");
  const size_t end = dict.find('\'', i + 1);
  if (end == std::string_view::npos || end - i - 1 > 8) throw BadInput(label + ": .npy header 'descr' is malformed");
  h.descr = std::string(dict.substr(i + 1, end - i - 1));

  i = value_of(dict, "fortran_order");
  if (i == std::string_view::npos) throw BadInput(label + ": .npy header has no 'fortran_order'");
  if (dict.substr(i, 5) == "False")
    h.fortran_order = false;
  else if (dict.substr(i, 4) == "True")
    h.fortran_order = true;
  else
    throw BadInput(label + ": .npy header 'fortran_order' is neither True nor False");

  i = value_of(dict, "shape");
  if (i == std::string_view::npos || i >= dict.size() || dict[i] != '(')
    throw BadInput(label + ": .npy header has no shape");
  constexpr uint64_t kMaxElements = uint64_t{1} << 62;
  for (++i;;) {
    i = skip_spaces(dict, i);
    if (i >= dict.size()) throw BadInput(label + ": .npy header shape is not closed");
    if (dict[i] == ')') break;
    if (!std::isdigit(static_cast<unsigned char>(dict[i])))
      throw BadInput(label + ": .npy header shape holds '" + std::string(1, dict[i]) + "', not a dimension");
    uint64_t v = 0;
    for (; i < dict.size() && std::isdigit(static_cast<unsigned char>(dict[i])); ++i) {
      v = v * 10 + static_cast<uint64_t>(dict[i] - '0');
      if (v > kMaxElements) throw BadInput(label + ": .npy dimension out of range");
    }
    if (v != 0 && h.element_count > kMaxElements / v)
      throw BadInput(label + ": .npy shape has more than 2^62 elements");
    h.element_count *= v;
    h.shape.push_back(static_cast<int64_t>(v));
    if (h.shape.size() > kMaxTensorRank)
      throw BadInput(label + ": .npy shape has more than " + std::to_string(kMaxTensorRank) + " dimensions");
    i = skip_spaces(dict, i);
    if (i < dict.size() && dict[i] == ',') ++i;
  }
  return h;
}

}  // namespace llm2hef::core
