// Which chat template a checkpoint folder carries, found the way transformers
// finds it (tokenization_utils_base.py, PreTrainedTokenizerBase.from_pretrained
// and get_chat_template; file names from utils/hub.py):
//   * `chat_template.jinja` is the "default" template and
//     `additional_chat_templates/<name>.jinja` the named ones; when any of these
//     files exist they replace whatever tokenizer_config.json says;
//   * otherwise tokenizer_config.json's `chat_template`: one template, or a list
//     of {"name", "template"} (save_pretrained(save_jinja_files=False) with
//     several templates, and older Hub repos);
//   * of several named templates, apply_chat_template without tools renders
//     "default"; without one, transformers raises instead of choosing.
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include "llm2hef/core/checkpoint/chat_template.hpp"
#include "llm2hef/core/checkpoint/checkpoint_dir.hpp"
#include "llm2hef/core/checkpoint/checkpoint_files.hpp"
#include "llm2hef/core/io/regular_file.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kTemplateFile = "chat_template.jinja";
constexpr const char* kTemplateDir = "additional_chat_templates";

// The text must go into hailo-config.json, which is JSON: refuse what is not
// UTF-8 here, naming the file, rather than fail later while writing.
std::string read_template_file(const fs::path& path) {
  return checked_template_text(RegularFile(path).read_all(kMaxChatTemplateBytes), path.string());
}

void refuse_oversized(size_t bytes, const std::string& origin) {
  if (bytes > kMaxChatTemplateBytes)
    throw BadInput(origin + ": " + std::to_string(bytes) + " bytes exceed the limit of " +
                   std::to_string(kMaxChatTemplateBytes) + " bytes (4 MiB) for a chat template");
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

std::vector<std::string> names_of(const std::map<std::string, std::string>& named) {
  std::vector<std::string> names;
  for (const auto& [name, text] : named) names.push_back(name);
  return names;
}

// Named templates other than "default" are dropped: hailo-config.json carries
// one template and the runtime renders it for every prompt.
void note_unused(const std::map<std::string, std::string>& named, const std::string& where, ChatTemplate& out) {
  std::vector<std::string> unused;
  for (const auto& [name, text] : named)
    if (name != "default") unused.push_back(name);
  if (!unused.empty())
    out.notes.push_back("chat_template: named template(s) " + joined(unused) + " in " + where +
                        " not carried (hailo-config.json holds one template; 'default' is used, as "
                        "transformers' apply_chat_template does without tools)");
}

[[noreturn]] void no_default(const std::string& where, const std::vector<std::string>& names) {
  throw BadInput(where + ": named chat templates " + joined(names) +
                 " but none named 'default'; transformers' apply_chat_template refuses to choose one too. "
                 "Save the template the device should use as chat_template.jinja (or name it 'default')");
}

// tokenizer_config.json's `chat_template`, when the folder has no template files.
ChatTemplate from_tokenizer_config(const sdk::JsonFile& tc) {
  ChatTemplate out;
  const json& ct = tc.raw()["chat_template"];
  const std::string where = tc.where("chat_template");
  if (ct.is_string()) {
    out.text = ct.get<std::string>();
    refuse_oversized(out.text->size(), where);
    out.source = "tokenizer_config.json chat_template";
    out.origin = where;
    return out;
  }
  if (!ct.is_array()) throw BadInput(where + ": expected a string or a list of {\"name\", \"template\"}");
  std::map<std::string, std::string> named;
  for (size_t i = 0; i < ct.size(); ++i) {
    const json& e = ct[i];
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("template") ||
        !e["template"].is_string())
      throw BadInput(where + ": entry " + std::to_string(i) + " is not {\"name\": string, \"template\": string}");
    named[e["name"].get<std::string>()] =
        e["template"].get<std::string>();  // a later duplicate wins, as in transformers
  }
  auto it = named.find("default");
  if (it == named.end()) no_default(where, names_of(named));
  refuse_oversized(it->second.size(), where + " (the template named 'default')");
  out.text = it->second;
  out.source = "tokenizer_config.json chat_template, the template named 'default'";
  out.origin = where + " (the template named 'default')";
  note_unused(named, "tokenizer_config.json", out);
  return out;
}

}  // namespace

std::string checked_template_text(std::string s, const std::string& origin) {
  if (s.empty()) throw BadInput(origin + ": empty chat template");
  refuse_oversized(s.size(), origin);
  try {
    (void)json(s).dump();
  } catch (const json::exception&) {
    throw BadInput(origin + ": not valid UTF-8 text");
  }
  return s;
}

ChatTemplate chosen_chat_template(const sdk::Checkpoint& ckpt, const std::optional<fs::path>& file) {
  if (!file) return find_chat_template(ckpt);
  ChatTemplate out;
  out.text = read_template_file(*file);
  out.source = "--chat-template " + file->string();
  out.origin = file->string();
  const ChatTemplate own = find_chat_template(ckpt);
  out.notes.push_back("chat_template: taken from " + file->string() + " (--chat-template)" +
                      (own.text ? ", in place of the checkpoint's " + own.source : std::string()));
  return out;
}

ChatTemplate find_chat_template(const sdk::Checkpoint& ckpt) {
  const fs::path main_file = ckpt.dir() / kTemplateFile;
  const fs::path extra_dir = ckpt.dir() / kTemplateDir;
  std::map<std::string, std::string> named;
  std::map<std::string, fs::path> files;
  if (checkpoint_has_file(ckpt.dir(), main_file)) {
    named["default"] = read_template_file(main_file);
    files["default"] = main_file;
  }
  std::error_code ec;
  if (fs::is_directory(extra_dir, ec)) {
    std::vector<fs::path> extra;
    for (const auto& entry : fs::directory_iterator(extra_dir, ec))
      if (entry.path().extension() == ".jinja" && checkpoint_has_file(ckpt.dir(), entry.path()))
        extra.push_back(entry.path());
    std::sort(extra.begin(), extra.end());
    for (const auto& p : extra) {  // after chat_template.jinja, as transformers reads them
      named[p.stem().string()] = read_template_file(p);
      files[p.stem().string()] = p;
    }
  }

  const sdk::JsonFile& tc = ckpt.tokenizer_config();
  const bool config_has = tc.has("chat_template") && !tc.raw()["chat_template"].is_null();
  if (named.empty()) {
    if (config_has) return from_tokenizer_config(tc);
    return {};
  }

  ChatTemplate out;
  auto it = named.find("default");
  if (it == named.end()) no_default(extra_dir.string(), names_of(named));
  out.text = it->second;
  out.origin = files["default"].string();
  out.source =
      files["default"] == main_file ? std::string(kTemplateFile) : std::string(kTemplateDir) + "/default.jinja";
  note_unused(named, std::string(kTemplateDir) + "/", out);
  if (config_has) {
    const json& ct = tc.raw()["chat_template"];
    if (!(ct.is_string() && ct.get<std::string>() == *out.text))
      out.notes.push_back("chat_template: " + out.source + " used; the different chat_template in " + tc.origin() +
                          " is ignored (transformers gives the .jinja files priority)");
  }
  return out;
}

}  // namespace llm2hef::core
