// Text from an input file, made safe to print on a terminal.
#pragma once

#include <string>
#include <string_view>

namespace llm2hef::core {

// `text` with every control byte (below 0x20, and 0x7F) and every backslash
// written as \xNN. A string that comes from a file (a key's comment, a
// plan's model name, a layer name) must not reach a terminal as it is: an
// escape sequence in it could recolour or rewrite the screen, a line break
// fake other lines of the report. The backslash is escaped too, so a
// printed "\x1b" always means the byte, never the four characters. Other
// bytes, UTF-8 included, are kept. --json output keeps strings exact instead
// (JSON escapes control characters itself).
std::string printable(std::string_view text);

}  // namespace llm2hef::core
