#include "llm2hef/core/dfc/python_literal.hpp"

#include <cstdint>
#include <cstdio>

namespace llm2hef::core {

namespace {

constexpr char32_t kReplacement = 0xFFFD;

// The code point at text[at], advancing `at`; U+FFFD (one byte consumed) for
// a byte that does not start a well-formed UTF-8 sequence: overlong forms,
// surrogates and values past U+10FFFF included.
char32_t next_code_point(std::string_view text, size_t& at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  size_t length = 0;
  char32_t cp = 0, minimum = 0;
  if (lead < 0x80) {
    ++at;
    return lead;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2, cp = lead & 0x1F, minimum = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, cp = lead & 0x0F, minimum = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, cp = lead & 0x07, minimum = 0x10000;
  } else {
    ++at;
    return kReplacement;
  }
  if (at + length > text.size()) {
    ++at;
    return kReplacement;
  }
  for (size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) {
      ++at;
      return kReplacement;
    }
    cp = (cp << 6) | (byte(at + i) & 0x3F);
  }
  if (cp < minimum || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++at;
    return kReplacement;
  }
  at += length;
  return cp;
}

}  // namespace

std::string python_literal(std::string_view text) {
  std::string out = "\"";
  for (size_t at = 0; at < text.size();) {
    const char32_t cp = next_code_point(text, at);
    if (cp == '\n' || cp == '\r' || cp == '\t') {
      out += cp == '\n' ? "\\n" : cp == '\r' ? "\\r" : "\\t";
    } else if (cp == '"' || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp >= 0x20 && cp < 0x7F) {
      out += static_cast<char>(cp);
    } else {
      char buf[16];
      const auto value = static_cast<unsigned long>(cp);
      if (cp < 0x100)
        std::snprintf(buf, sizeof buf, "\\x%02lx", value);
      else if (cp < 0x10000)
        std::snprintf(buf, sizeof buf, "\\u%04lx", value);
      else
        std::snprintf(buf, sizeof buf, "\\U%08lx", value);
      out += buf;
    }
  }
  return out + "\"";
}

}  // namespace llm2hef::core
