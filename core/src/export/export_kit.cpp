#include "llm2hef/core/export/export_kit.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace llm2hef::core {

std::map<std::string, std::string> export_kit_manifest_files() {
  std::map<std::string, std::string> files;
  for (const ExportKitFile& f : kExportKit) files.emplace(f.path, f.description);
  return files;
}

namespace {

// Words of `text` in lines of at most `width` characters (a longer word
// gets a line of its own rather than being cut).
std::vector<std::string> wrap(std::string_view text, std::size_t width) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find(' ', start), text.size());
    const std::string_view word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > width) lines.push_back(std::exchange(line, ""));
    if (!line.empty()) line += ' ';
    line += word;
    start = end + 1;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

}  // namespace

std::string export_kit_help(std::size_t width) {
  constexpr std::size_t kIndent = 2, kGap = 2;
  std::size_t column = 0;
  for (const ExportKitFile& f : kExportKit) column = std::max(column, f.path.size());
  column += kIndent + kGap;
  // A narrow width still leaves the descriptions 20 columns.
  const std::size_t text_width = width > column + 20 ? width - column : 20;
  std::string out;
  for (const ExportKitFile& f : kExportKit) {
    std::string first(kIndent, ' ');
    first += f.path;
    first.resize(column, ' ');
    bool is_first = true;
    for (const std::string& line : wrap(f.help.empty() ? f.description : f.help, text_width)) {
      out += is_first ? first : std::string(column, ' ');
      out += line + "\n";
      is_first = false;
    }
  }
  return out;
}

}  // namespace llm2hef::core
