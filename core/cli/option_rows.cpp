#include "option_rows.hpp"

#include <stdexcept>

namespace llm2hef::cli {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(text.substr(start, end - start));
  lines.push_back(text.substr(start));
  return lines;
}

}  // namespace

std::string option_label(const CLI::Option& option) {
  std::string label;
  for (const auto& s : option.get_snames()) label += (label.empty() ? "-" : ", -") + s;
  for (const auto& l : option.get_lnames()) label += (label.empty() ? "--" : ", --") + l;
  return label;
}

CLI::Option* OptionRows::add(CLI::Option* option, std::string value, std::string text) {
  std::string label = option_label(*option);
  if (!value.empty()) label += " " + value;
  rows_.push_back({option, std::move(label), std::move(text), false});
  return option;
}

CLI::Option* OptionRows::add_sharing(CLI::Option* option, std::string value) {
  if (rows_.empty() || !rows_.back().option) throw std::logic_error("a row sharing a text needs a row above it");
  add(option, std::move(value), "");
  rows_.back().shares_text = true;
  return option;
}

CLI::Option* OptionRows::add_choices(CLI::Option* option, const std::vector<Choice>& choices) {
  std::vector<std::string> values;
  for (const Choice& c : choices) {
    values.push_back(c.value);
    rows_.push_back({option, option_label(*option) + " " + c.value, c.text, false});
  }
  option->check(CLI::IsMember(values));
  return option;
}

void OptionRows::gap() { rows_.push_back({}); }

std::string OptionRows::render() const {
  const auto beside = [this](const std::string& label) {
    return label.size() < column_ ? label + std::string(column_ - label.size(), ' ') : label + "  ";
  };
  std::string out;
  for (std::size_t i = 0; i < rows_.size();) {
    if (!rows_[i].option) {
      out += "\n";
      ++i;
      continue;
    }
    std::vector<std::string> lines = lines_of(rows_[i].text);
    const bool below = lines.size() > 1 && lines.front().empty();
    if (below) out += "  " + rows_[i].label + "\n";
    std::size_t next = below ? 1 : 0;
    // This row (unless its text starts below it) and the rows sharing its text.
    std::size_t end = i + 1;
    while (end < rows_.size() && rows_[end].shares_text) ++end;
    for (std::size_t r = below ? i + 1 : i; r < end; ++r) {
      const std::string label = "  " + rows_[r].label;
      out += next < lines.size() && !lines[next].empty() ? beside(label) + lines[next] + "\n" : label + "\n";
      ++next;
    }
    for (; next < lines.size(); ++next)
      out += lines[next].empty() ? "\n" : std::string(column_, ' ') + lines[next] + "\n";
    i = end;
  }
  return out;
}

std::vector<const CLI::Option*> OptionRows::described() const {
  std::vector<const CLI::Option*> out;
  for (const Row& r : rows_)
    if (r.option) out.push_back(r.option);
  return out;
}

std::string with_option_rows(const std::string& text, const OptionRows& rows) {
  static const std::string kMarker = "{options}\n";
  const std::size_t at = text.find(kMarker);
  if (at == std::string::npos) throw std::logic_error("a help text with option rows has no {options} line");
  return text.substr(0, at) + rows.render() + text.substr(at + kMarker.size());
}

}  // namespace llm2hef::cli
