#include "llm2hef/core/io/dims_text.hpp"

namespace llm2hef::core {

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  const size_t shown = dims.size() > kMaxTensorRank ? kMaxTensorRank : dims.size();
  for (size_t i = 0; i < shown; ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  if (shown < dims.size()) text += ", ... (" + std::to_string(dims.size()) + " dimensions)";
  return text + "]";
}

}  // namespace llm2hef::core
