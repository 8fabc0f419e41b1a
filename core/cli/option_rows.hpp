// The option rows of a command's help, attached to the options the parser is
// given: each row is written where its option is added to CLI11, so the help,
// the man page (the help verbatim) and the completions (the parser's
// options) come from one definition and cannot disagree (issue 38).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace llm2hef::cli {

class OptionRows {
 public:
  // Rows are laid out in two columns: the label at two spaces, its text at
  // `column` (at least one space after the label; two after a longer one).
  explicit OptionRows(std::size_t column) : column_(column) {}

  // One row: the option's spellings ("-o, --output"), then `value` (its
  // value's name, empty for a flag), then `text`. `text` is as wrapped as it
  // prints: '\n' starts a line at the text column; a text starting with
  // '\n' starts below the label, for a label too long to share its line.
  // Returns `option`, so a definition reads as one statement.
  CLI::Option* add(CLI::Option* option, std::string value, std::string text);

  // A row for an option with no text of its own: it shares the text of the
  // row above, whose lines are laid beside that row's label and this one's
  // in turn ("--eval-chat FILE", "--eval-text FILE": one text for both).
  CLI::Option* add_sharing(CLI::Option* option, std::string value);

  // One row per value of an option that takes one of a few words
  // ("--layout onnx", "--layout device"): the parser accepts exactly those.
  struct Choice {
    std::string value, text;
  };
  CLI::Option* add_choices(CLI::Option* option, const std::vector<Choice>& choices);

  // An empty line before the next row.
  void gap();

  // The rows as the help prints them, each line ending in '\n'.
  std::string render() const;

  // The options that have a row (to check every option has one).
  std::vector<const CLI::Option*> described() const;

 private:
  struct Row {
    const CLI::Option* option = nullptr;  // null for a gap
    std::string label, text;
    bool shares_text = false;
  };
  std::size_t column_;
  std::vector<Row> rows_;
};

// "-o, --output": the option's spellings as a row names them.
std::string option_label(const CLI::Option& option);

// `text` with the line "{options}" replaced by the rendered rows.
std::string with_option_rows(const std::string& text, const OptionRows& rows);

}  // namespace llm2hef::cli
