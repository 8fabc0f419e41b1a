// The Python-literal dict at the start of a .npy file, read by a linear
// scanner: std::regex recurses per character and overflowed the stack on a
// crafted 30,000-dimension shape.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llm2hef::core {

struct NpyHeaderFields {
  std::string descr;  // e.g. "<f4"
  bool fortran_order = false;
  std::vector<int64_t> shape;
  uint64_t element_count = 1;  // product of shape, checked against overflow
};

// Throws BadInput "<label>: ..." when a key is missing or malformed, a
// dimension is not a plain non-negative integer, or the element count does
// not fit in 2^62.
NpyHeaderFields parse_npy_header_dict(std::string_view dict, const std::string& label);

}  // namespace llm2hef::core
