// The one way a value from outside llm2hef (a folder or file name, a Hub repo
// name, an adapter's name) enters the Python scripts export writes: as a
// Python string literal of printable ASCII. No line break, quote or byte of
// the value can then end a comment or a string and become code (issue 41).
#pragma once

#include <string>
#include <string_view>

namespace llm2hef::core {

// A double-quoted Python 3 str literal whose value is `text` read as UTF-8:
// printable ASCII stays as it is (but " and \ are escaped), line breaks and tabs are
// written \n, \r and \t, every other code
// point is written as \xNN, \uNNNN or \UNNNNNNNN, and bytes that are not
// UTF-8 become U+FFFD. The result holds only the bytes 0x20-0x7e.
std::string python_literal(std::string_view text);

}  // namespace llm2hef::core
