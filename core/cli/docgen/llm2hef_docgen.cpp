// llm2hef_docgen OUT_DIR: the man pages and the bash and zsh completions of
// every command, generated at build time from the command tree llm2hef
// itself builds (the same CLI::App objects, the same hand-written help
// texts, whose option rows come from the options themselves), so they
// cannot drift from `llm2hef COMMAND --help`; an option without a help row
// fails the build here.
//
// Writes OUT_DIR/man/llm2hef.1 and llm2hef-<command>[-<sub>...].1 (the help
// text, verbatim, as the page's body), OUT_DIR/bash/llm2hef and
// OUT_DIR/zsh/_llm2hef, and OUT_DIR/commands.txt (one command path a line).
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "../commands.hpp"
#include "llm2hef/sdk/abi.hpp"

namespace fs = std::filesystem;

namespace {

struct Command {
  std::vector<std::string> path;  // {"har", "fix"}; empty for llm2hef itself
  const CLI::App* app = nullptr;
  const CLI::App* parent = nullptr;
  std::vector<std::string> subcommands;
  std::vector<std::string> options;         // every spelling: -o --output
  std::vector<std::string> valued_options;  // those taking a value
};

std::string joined(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : separator) + w;
  return out;
}

void collect(const CLI::App& app, std::vector<std::string> path, std::vector<Command>& out) {
  Command c;
  c.path = path;
  c.app = &app;
  c.parent = app.get_parent();
  for (const CLI::Option* opt : app.get_options([](const CLI::Option*) { return true; })) {
    if (!opt->nonpositional()) continue;
    std::vector<std::string> spellings;
    for (const auto& s : opt->get_snames()) spellings.push_back("-" + s);
    for (const auto& l : opt->get_lnames()) spellings.push_back("--" + l);
    const bool valued = opt->get_items_expected_min() > 0;  // flags (--json, --help) take none
    for (const auto& s : spellings) {
      c.options.push_back(s);
      if (valued) c.valued_options.push_back(s);
    }
  }
  std::sort(c.options.begin(), c.options.end());
  const auto subs = app.get_subcommands([](const CLI::App*) { return true; });
  for (const CLI::App* sub : subs) c.subcommands.push_back(sub->get_name());
  out.push_back(c);
  for (const CLI::App* sub : subs) {
    auto sub_path = path;
    sub_path.push_back(sub->get_name());
    collect(*sub, sub_path, out);
  }
}

std::string help_text(const CLI::App& app) {
  return app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
}

// roff: backslashes escaped, hyphens as \-, a line starting with . or ' kept literal.
std::string roff(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (char ch : text) {
    if (line_start && (ch == '.' || ch == '\'')) out += "\\&";
    if (ch == '\\')
      out += "\\e";
    else if (ch == '-')
      out += "\\-";
    else
      out += ch;
    line_start = ch == '\n';
  }
  return out;
}

std::string upper(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

// The page's one-line summary: the first sentence of the text after the
// Usage line (the overview's first line for llm2hef itself).
std::string summary(const std::string& help, bool top) {
  std::istringstream in(help);
  std::string line, text;
  bool past_usage = top;
  while (std::getline(in, line)) {
    if (!past_usage) {
      if (line.empty()) past_usage = true;
      continue;
    }
    if (line.empty()) {
      if (text.empty()) continue;
      break;
    }
    text += (text.empty() ? "" : " ") + line;
  }
  if (top) {
    const auto dash = text.find(" - ");
    if (dash != std::string::npos) text = text.substr(dash + 3);
  }
  // The sentence ends at a full stop or colon followed by a space or the
  // end ("hailo-contract.md" does not end it).
  for (std::size_t i = 0; i < text.size(); ++i)
    if ((text[i] == '.' || text[i] == ':') && (i + 1 == text.size() || text[i + 1] == ' ')) {
      text.resize(i);
      break;
    }
  if (text.size() > 100) text = text.substr(0, 97) + "...";
  return text;
}

// What the parent's help says of the command in its table: "  adapters   list
// the adapters found", "  inspect HAR [--json]   what a HAR holds". Empty
// when the parent describes it otherwise.
std::string listed_summary(const std::string& parent_help, const std::string& name) {
  std::istringstream in(parent_help);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("  " + name, 0) != 0) continue;
    const std::size_t after = 2 + name.size();
    if (after < line.size() && line[after] != ' ') continue;
    const auto gap = line.find("   ", after);
    if (gap != std::string::npos) {
      const auto text = line.find_first_not_of(' ', gap);
      if (text != std::string::npos) return line.substr(text);
    }
    return {};  // described on wrapped lines below: the command's own first sentence is clearer
  }
  return {};
}

std::string page_name(const Command& c) { return joined({"llm2hef", joined(c.path, "-")}, c.path.empty() ? "" : "-"); }

void write_file(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error(file.string() + ": cannot write");
}

void write_man_page(const fs::path& dir, const Command& c, const std::vector<Command>& all) {
  const std::string name = page_name(c);
  const std::string help = help_text(*c.app);
  std::ostringstream page;
  page << ".\\\" Generated by llm2hef_docgen from `llm2hef " << joined(c.path, " ") << (c.path.empty() ? "" : " ")
       << "--help`; do not edit.\n";
  page << ".TH " << roff(upper(name)) << " 1 \"\" \"llm2hef " << LLM2HEF_SDK_VERSION << "\" \"llm2hef manual\"\n";
  std::string what;
  if (c.parent) what = listed_summary(help_text(*c.parent), c.path.back());
  if (what.empty()) what = summary(help, c.path.empty());
  page << ".SH NAME\n" << roff(name) << " \\- " << roff(what) << "\n";
  page << ".SH DESCRIPTION\n";
  page << "The text below is what\n.B llm2hef " << roff(joined(c.path, " ")) << (c.path.empty() ? "" : " ")
       << "\\-\\-help\nprints.\n";
  page << ".PP\n.nf\n" << roff(help) << (help.empty() || help.back() == '\n' ? "" : "\n") << ".fi\n";
  page << ".SH SEE ALSO\n";
  std::vector<std::string> see;
  if (!c.path.empty()) {
    std::vector<std::string> parent(c.path.begin(), c.path.end() - 1);
    see.push_back(page_name(Command{parent, nullptr, nullptr, {}, {}, {}}) + "(1)");
  }
  for (const auto& other : all)
    if (other.path.size() == c.path.size() + 1 && std::equal(c.path.begin(), c.path.end(), other.path.begin()))
      see.push_back(page_name(other) + "(1)");
  page << roff(joined(see, ", ")) << (see.empty() ? "" : "\n.PP\n");
  page << "The documentation installed in share/doc/llm2hef, among it hailo\\-contract.md.\n";
  write_file(dir / (name + ".1"), page.str());
}

// Keys of the completion tables: "llm2hef", "llm2hef har", "llm2hef har fix".
std::string key(const Command& c) { return joined({"llm2hef", joined(c.path, " ")}, c.path.empty() ? "" : " "); }

std::string bash_table(const char* name, const std::vector<Command>& all, std::vector<std::string> Command::*field) {
  std::string out = "  " + std::string(name) + "=(\n";
  for (const auto& c : all)
    if (!(c.*field).empty()) out += "    [\"" + key(c) + "\"]=\"" + joined(c.*field, " ") + "\"\n";
  return out + "  )\n";
}

std::string zsh_table(const char* name, const std::vector<Command>& all, std::vector<std::string> Command::*field) {
  std::string out = "  " + std::string(name) + "=(\n";
  for (const auto& c : all)
    if (!(c.*field).empty()) out += "    '" + key(c) + "' '" + joined(c.*field, " ") + "'\n";
  return out + "  )\n";
}

// Both shells walk the words before the cursor the same way: a word naming a
// subcommand of the path so far extends it; a word after an option that
// takes a value (of the path or of llm2hef itself) is that value.
void write_bash(const fs::path& file, const std::vector<Command>& all) {
  std::string s =
      "# bash completion for llm2hef. Generated by llm2hef_docgen from llm2hef's own command tree;\n"
      "# do not edit.\n"
      "_llm2hef() {\n"
      "  local -A subcommands options valued\n";
  s += bash_table("subcommands", all, &Command::subcommands);
  s += bash_table("options", all, &Command::options);
  s += bash_table("valued", all, &Command::valued_options);
  s += R"(  local cur=${COMP_WORDS[COMP_CWORD]} path=llm2hef word i skip=0
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if ((skip)); then skip=0; continue; fi
    if [[ $word == -* ]]; then
      [[ " ${valued[$path]} ${valued[llm2hef]} " == *" $word "* ]] && skip=1
      continue
    fi
    [[ " ${subcommands[$path]} " == *" $word "* ]] && path="$path $word"
  done
  if ((skip)); then
    COMPREPLY=($(compgen -f -- "$cur"))
    compopt -o filenames 2>/dev/null
    return 0
  fi
  if [[ $path == "llm2hef help" ]]; then
    COMPREPLY=($(compgen -W "${subcommands[llm2hef]}" -- "$cur"))
  elif [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "${options[$path]}" -- "$cur"))
  elif [[ -n ${subcommands[$path]} ]]; then
    COMPREPLY=($(compgen -W "${subcommands[$path]}" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
    compopt -o filenames 2>/dev/null
  fi
  return 0
}
complete -F _llm2hef llm2hef
)";
  write_file(file, s);
}

void write_zsh(const fs::path& file, const std::vector<Command>& all) {
  std::string s =
      "#compdef llm2hef\n"
      "# zsh completion for llm2hef. Generated by llm2hef_docgen from llm2hef's own command tree;\n"
      "# do not edit.\n"
      "_llm2hef() {\n"
      "  local -A subcommands options valued\n";
  s += zsh_table("subcommands", all, &Command::subcommands);
  s += zsh_table("options", all, &Command::options);
  s += zsh_table("valued", all, &Command::valued_options);
  s += R"(  local cmdpath=llm2hef word i skip=0
  for (( i = 2; i < CURRENT; i++ )); do
    word=${words[i]}
    if (( skip )); then skip=0; continue; fi
    if [[ $word == -* ]]; then
      [[ " ${valued[$cmdpath]} ${valued[llm2hef]} " == *" $word "* ]] && skip=1
      continue
    fi
    [[ " ${subcommands[$cmdpath]} " == *" $word "* ]] && cmdpath="$cmdpath $word"
  done
  if (( skip )); then
    _files
  elif [[ $cmdpath == "llm2hef help" ]]; then
    compadd -- ${=subcommands[llm2hef]}
  elif [[ ${words[CURRENT]} == -* ]]; then
    compadd -- ${=options[$cmdpath]}
  elif [[ -n ${subcommands[$cmdpath]} ]]; then
    compadd -- ${=subcommands[$cmdpath]}
  else
    _files
  fi
}
_llm2hef "$@"
)";
  write_file(file, s);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: llm2hef_docgen OUT_DIR\n";
    return 2;
  }
  try {
    llm2hef::cli::CommandLine cli;
    llm2hef::cli::add_all_commands(cli);
    // Every option gets its help row where it is defined; one without is a
    // build error here rather than an option nobody can find in the help.
    const std::vector<std::string> undescribed = cli.undescribed_options();
    if (!undescribed.empty()) {
      std::string list;
      for (const auto& o : undescribed) list += "\n  " + o;
      throw std::runtime_error("options without a help row (add them through CommandLine::options):" + list);
    }
    std::vector<Command> all;
    collect(cli.root(), {}, all);
    const fs::path out = argv[1];
    for (const char* sub : {"man", "bash", "zsh"}) fs::create_directories(out / sub);
    // Pages of commands that no longer exist must not linger.
    for (const auto& entry : fs::directory_iterator(out / "man"))
      if (entry.path().extension() == ".1") fs::remove(entry.path());
    std::string list;
    for (const auto& c : all) {
      write_man_page(out / "man", c, all);
      list += joined(c.path, " ") + "\n";
    }
    write_bash(out / "bash" / "llm2hef", all);
    write_zsh(out / "zsh" / "_llm2hef", all);
    write_file(out / "commands.txt", list);
  } catch (const std::exception& e) {
    std::cerr << "llm2hef_docgen: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
