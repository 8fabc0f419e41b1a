#include "llm2hef/registry/report.hpp"

#include <algorithm>
#include <sstream>

#include "llm2hef/registry/registry.hpp"

namespace llm2hef::registry {

namespace {

const char* to_string(plugins::SearchRoot::State s) {
  switch (s) {
    case plugins::SearchRoot::State::folder: return "folder";
    case plugins::SearchRoot::State::file: return "file";
    case plugins::SearchRoot::State::missing: return "missing";
    case plugins::SearchRoot::State::unreadable: return "unreadable";
  }
  return "unknown";
}

// The renderer reads back a document that may have been produced elsewhere
// (or edited), so every lookup tolerates a missing or mistyped field.
std::string str(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return {};
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string joined(const nlohmann::json& j, const char* key, const char* sep) {
  std::string out;
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_array()) return out;
  for (const auto& e : j.at(key)) {
    if (!e.is_string()) continue;
    if (!out.empty()) out += sep;
    out += e.get<std::string>();
  }
  return out;
}

const nlohmann::json& array_at(const nlohmann::json& j, const char* key) {
  static const nlohmann::json empty = nlohmann::json::array();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : empty;
}

// Left-aligned columns, two spaces apart; the last column is not padded.
std::string table(const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<std::size_t> width;
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) {
      if (width.size() <= c) width.resize(c + 1, 0);
      width[c] = std::max(width[c], r[c].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line = indent;
    for (std::size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace

nlohmann::json adapters_report(const plugins::AdapterHost& host, bool verbose) {
  nlohmann::json adapters = nlohmann::json::array();
  for (const auto& a : host.adapters()) {
    const auto& info = a.info();
    nlohmann::json options = nlohmann::json::array();
    for (const auto& o : info.options)
      options.push_back({{"name", o.name}, {"choices", o.choices}, {"default", o.default_value}, {"help", o.help}});
    adapters.push_back({{"name", info.name},
                        {"version", info.version},
                        {"description", info.description},
                        {"architectures", info.architectures},
                        {"model_types", info.model_types},
                        {"file", a.path().string()},
                        {"options", std::move(options)},
                        {"applied_keys", info.applied_keys}});
  }

  nlohmann::json conflicts = nlohmann::json::array();
  for (const auto& c : architecture_conflicts(host)) {
    nlohmann::json names = nlohmann::json::array();
    for (const auto* a : c.adapters) names.push_back(a->name());
    conflicts.push_back({{"architecture", c.architecture}, {"adapters", names}, {"chosen", names.front()}});
  }

  nlohmann::json report = {{"adapters", std::move(adapters)}, {"conflicts", std::move(conflicts)}};
  if (!verbose) return report;

  nlohmann::json roots = nlohmann::json::array();
  for (const auto& r : host.roots())
    roots.push_back({{"path", r.path.string()},
                     {"kind", plugins::to_string(r.kind)},
                     {"state", to_string(r.state)},
                     {"note", r.note}});
  nlohmann::json considered = nlohmann::json::array();
  for (const auto& c : host.considered())
    considered.push_back({{"file", c.file.string()},
                          {"root", c.root.string()},
                          {"root_kind", plugins::to_string(c.root_kind)},
                          {"status", c.loaded ? "loaded" : "skipped"},
                          {"reason", c.reason},
                          {"error", c.error ? nlohmann::json(plugins::to_string(*c.error)) : nlohmann::json()}});
  report["roots"] = std::move(roots);
  report["considered"] = std::move(considered);
  return report;
}

std::string adapters_text(const nlohmann::json& report) {
  std::ostringstream out;
  const auto& adapters = array_at(report, "adapters");

  if (adapters.empty()) {
    out << "No adapters found.";
    if (!report.contains("considered")) out << " Run with --verbose to see where llm2hef looked.";
    out << "\n";
  } else {
    std::vector<std::vector<std::string>> rows{{"NAME", "VERSION", "ARCHITECTURES", "MODEL TYPES", "FILE"}};
    for (const auto& a : adapters)
      rows.push_back({str(a, "name"), str(a, "version"), joined(a, "architectures", ", "),
                      joined(a, "model_types", ", "), str(a, "file")});
    out << table(rows, "");

    // Descriptions and options are free text of any length: listed under the
    // table rather than in it, so the columns stay readable.
    out << "\n";
    for (const auto& a : adapters) {
      std::string desc = str(a, "description");
      out << str(a, "name") << (desc.empty() ? "" : ": " + desc) << "\n";
      for (const auto& o : array_at(a, "options")) {
        std::string choices = joined(o, "choices", "|");
        std::string line = "  --" + str(o, "name") + " " + (choices.empty() ? "VALUE" : choices);
        std::string def = str(o, "default");
        if (!def.empty()) line += " (default: " + def + ")";
        std::string help = str(o, "help");
        if (!help.empty()) line += "  " + help;
        out << line << "\n";
      }
      const std::string applied = joined(a, "applied_keys", ", ");
      if (!applied.empty()) out << "  applies: " << applied << "\n";
    }
  }

  const auto& conflicts = array_at(report, "conflicts");
  if (!conflicts.empty()) {
    out << "\nConflicts (the adapter found first is used, with a warning; --adapter NAME chooses another):\n";
    for (const auto& c : conflicts)
      out << "  " << str(c, "architecture") << ": " << joined(c, "adapters", ", ") << " -> " << str(c, "chosen")
          << "\n";
  }

  const auto& roots = array_at(report, "roots");
  if (report.contains("roots")) {
    out << "\nSearch roots, in order of precedence:\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : roots) {
      std::string state = str(r, "state");
      std::string note = str(r, "note");
      rows.push_back({str(r, "kind"), str(r, "path"), note.empty() ? state : state + ": " + note});
    }
    out << (rows.empty() ? "  (none)\n" : table(rows, "  "));
  }

  const auto& considered = array_at(report, "considered");
  if (report.contains("considered")) {
    out << "\nFiles considered:\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& c : considered) {
      std::string reason = str(c, "reason");
      rows.push_back({str(c, "status"), str(c, "file"),
                      reason.empty() ? "[" + str(c, "root_kind") + "]" : "[" + str(c, "root_kind") + "] " + reason});
    }
    out << (rows.empty() ? "  (none)\n" : table(rows, "  "));
  }
  return out.str();
}

}  // namespace llm2hef::registry
