#include "llm2hef/core/har/script_names.hpp"

#include "llm2hef/core/io/terminal_text.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::har {

bool is_script_name(std::string_view name) {
  bool part_empty = true;
  for (const char c : name) {
    if (c == '/') {
      if (part_empty) return false;  // a leading '/', or "//"
      part_empty = true;
      continue;
    }
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!word) return false;
    part_empty = false;
  }
  return !part_empty;  // empty, or a trailing '/'
}

std::string script_name(const HnModel& hn, const std::string& name) {
  if (!is_script_name(name))
    throw BadInput(hn.label() + ": layer '" + printable(name) +
                   "': not a name a model script can hold (letters, digits and '_' in '/'-separated parts, as the "
                   "DFC names layers); refused rather than written into a model-script line, which has no quoting");
  return name;
}

std::string script_name_list(const HnModel& hn, const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + script_name(hn, names[i]);
  return out + "]";
}

}  // namespace llm2hef::core::har
