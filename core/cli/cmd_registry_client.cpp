// `llm2hef registry search|install|list|uninstall`: finding adapters in a
// signed index and installing them into the user's adapter folder
// (docs/registry.md). Keys, signing and collecting: cmd_registry_keys.cpp.
#include <cstdlib>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cmd_registry_client.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/core/io/staging.hpp"
#include "llm2hef/registry/index_client.hpp"
#include "llm2hef/registry/installer.hpp"
#include "llm2hef/registry/search.hpp"
#include "llm2hef/registry/temp_file.hpp"
#include "llm2hef/registry/trusted_keys.hpp"
#include "llm2hef/registry/user_dirs.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace llm2hef::cli {

namespace {

constexpr const char* kSearchHelp = R"(Usage: llm2hef registry search [TEXT] [--index DIR|URL] [--json]

Lists the adapters of a signed index whose name, description, architectures
or model_types contain TEXT (all without TEXT): name, architectures, every
version, and whether each build fits this llm2hef (SDK ABI and fingerprint)
and why not. The index's signature is checked against the trusted keys
(`llm2hef registry keys list`) first; an index that does not verify is refused.

{options}

Exit status: 0 ok, 1 the signature does not verify or its key is not trusted,
2 usage, 3 an index that cannot be fetched or read.
)";

constexpr const char* kInstallHelp = R"(Usage: llm2hef registry install NAME[@VERSION] [--index DIR|URL] [--json]

Installs an adapter from a signed index into the user's adapter folder,
$XDG_DATA_HOME/llm2hef/adapters (default ~/.local/share/llm2hef/adapters),
which llm2hef searches after its built-in adapters. Without @VERSION, the
newest version built for this llm2hef. In order, each step a gate:
  the index signature (trusted keys), the entry (schema, url, size);
  the build: SDK ABI and fingerprint equal this llm2hef's (otherwise refused,
    naming the build that would fit);
  nothing of that name installed or built in;
  the download (http, https or file; no redirect to another scheme; time-outs;
    at most the entry's size), its size and SHA-256, before anything loads it;
  its name, version, architectures and model_types, read by loading it in a
    child process, equal the entry's;
  then the library and its manifest (<name>.adapter.json) are put in place.
A failure at any step leaves the folder as it was.

{options}

The global --allow-unsafe-adapters also applies here.
Exit status: 0 installed, 1 a check failed (signature, build, size, SHA-256,
load, claims), 2 usage (unknown name or version, already installed), 3 a
download or file that cannot be read or written.
)";

constexpr const char* kListHelp = R"(Usage: llm2hef registry list [--installed] [--json]

The adapters installed with `registry install`: name, version,
architectures, library, and whether the library is still what was installed
(its SHA-256). What an index offers: `registry search`; every adapter this
llm2hef finds, built in or installed: `llm2hef adapters`.

{options}

Exit status: 0 ok, 2 usage, 3 an installed manifest that cannot be read.
)";

constexpr const char* kUninstallHelp = R"(Usage: llm2hef registry uninstall NAME[@VERSION] [--json]

Removes an adapter installed with `registry install` (its library and its
manifest) from the user's adapter folder.

{options}

Exit status: 0 removed, 2 not installed (or installed in another version).
)";

std::string index_argument(const std::string& given, const CLI::App& command) {
  if (command.count("--index")) return given;
  if (const char* env = std::getenv("LLM2HEF_INDEX"); env && *env) return env;
  throw UsageError(command_path(command) +
                   ": no index: pass --index DIR|URL or set LLM2HEF_INDEX (llm2hef has no default index yet)");
}

registry::SignedIndex load_index(const std::string& given, const CLI::App& command) {
  const registry::IndexSource source = registry::index_source(index_argument(given, command));
  return registry::load_signed_index(source, registry::trusted_public_keys());
}

struct SearchArgs {
  std::string text, index;
  bool json = false;
};

int search(const SearchArgs& a, Invocation& inv) {
  const registry::SignedIndex index = load_index(a.index, inv.command());
  json adapters = json::array();
  for (const registry::SearchMatch& match : registry::search_index(index, a.text, registry::installed_versions())) {
    json versions = json::array();
    for (const registry::SearchVersion& v : match.versions) {
      const registry::AdapterManifest& manifest = v.entry->manifest;
      versions.push_back({{"version", v.entry->version()},
                          {"compatible", v.incompatibility.empty()},
                          {"reason", v.incompatibility.empty() ? json(nullptr) : json(v.incompatibility)},
                          {"url", v.entry->library_url},
                          {"license", manifest.license},
                          {"maintainer", manifest.maintainer}});
    }
    const registry::AdapterManifest& newest = match.newest();
    adapters.push_back({{"name", match.name},
                        {"description", newest.description.value_or("")},
                        {"architectures", newest.architectures},
                        {"model_types", newest.listed_model_types()},
                        {"installed", match.installed ? json(*match.installed) : json(nullptr)},
                        {"versions", versions}});
  }
  const json report = {{"index", index.source.index_url},
                       {"signed_by", index.signer.key_id},
                       {"host", registry::host_build_requirement()},
                       {"adapters", adapters}};
  if (a.json) {
    std::cout << core::json_text(report, 2) << "\n";
    return 0;
  }
  std::cout << "index " << index.source.index_url << " (signed by key " << index.signer.key_id << ")\n";
  if (adapters.empty()) std::cout << "no adapter matches" << (a.text.empty() ? "" : " '" + a.text + "'") << "\n";
  for (const auto& ad : adapters) {
    std::string archs;
    for (const auto& x : ad["architectures"]) archs += (archs.empty() ? "" : ", ") + x.get<std::string>();
    std::cout << ad["name"].get<std::string>() << ": " << archs;
    if (!ad["installed"].is_null()) std::cout << " [installed " << ad["installed"].get<std::string>() << "]";
    std::cout << "\n";
    for (const auto& v : ad["versions"])
      std::cout << "  " << v["version"].get<std::string>() << "  "
                << (v["compatible"].get<bool>() ? std::string("compatible")
                                                : "incompatible: " + v["reason"].get<std::string>())
                << "\n";
  }
  return 0;
}

json installed_json(const registry::InstalledAdapter& a, bool with_state) {
  json j = {{"name", a.name()},
            {"version", a.version()},
            {"architectures", a.manifest.architectures},
            {"model_types", a.manifest.listed_model_types()},
            {"library", a.library.string()},
            {"manifest", a.manifest_file.string()},
            {"source", a.manifest.library.url.value_or("")}};
  if (with_state) j["state"] = registry::to_string(registry::installed_state(a));
  return j;
}

struct InstallArgs {
  std::string spec, index;
  bool json = false;
};

int install(const InstallArgs& a, Invocation& inv) {
  if (a.spec.empty() || a.spec.front() == '@' || a.spec.back() == '@')
    throw UsageError("registry install: expected NAME or NAME@VERSION, got '" + a.spec + "'");
  const registry::SignedIndex index = load_index(a.index, inv.command());
  const registry::IndexEntry& entry = registry::select_entry(index, a.spec);
  const fs::path dir = registry::installed_adapter_dir();
  registry::InstallOptions options;
  options.allow_unsafe = inv.globals().allow_unsafe_adapters;
  // What a killed install (SIGKILL, the OOM killer) left: nobody holds it.
  core::sweep_stale_scratch(dir, registry::kTempFilePrefix);
  const registry::InstalledAdapter installed = registry::install_adapter(entry, dir, inv.host(), options);
  if (a.json) {
    json j = installed_json(installed, false);
    j["index"] = index.source.index_url;
    j["signed_by"] = index.signer.key_id;
    std::cout << core::json_text(j, 2) << "\n";
  } else {
    std::cout << "installed " << installed.name() << " " << installed.version() << " -> " << installed.library.string()
              << " (from " << entry.library_url << ", index signed by key " << index.signer.key_id << ")\n";
  }
  return 0;
}

struct ListArgs {
  bool installed = false;  // the default; accepted for scripts written for the flag
  bool json = false;
};

int list(const ListArgs& a) {
  const fs::path dir = registry::installed_adapter_dir();
  json rows = json::array();
  for (const auto& ad : registry::installed_adapters(dir)) rows.push_back(installed_json(ad, true));
  if (a.json) {
    std::cout << core::json_text(json{{"folder", dir.string()}, {"adapters", rows}}, 2) << "\n";
    return 0;
  }
  std::cout << "installed adapters in " << dir.string() << ":" << (rows.empty() ? " none" : "") << "\n";
  for (const auto& r : rows)
    std::cout << "  " << r["name"].get<std::string>() << " " << r["version"].get<std::string>() << "  "
              << r["library"].get<std::string>()
              << (r["state"] == "ok" ? std::string() : "  [" + r["state"].get<std::string>() + "]") << "\n";
  return 0;
}

struct UninstallArgs {
  std::string spec;
  bool json = false;
};

int uninstall(const UninstallArgs& a) {
  const auto at = a.spec.find('@');
  const std::string name = a.spec.substr(0, at);
  const std::optional<std::string> version =
      at == std::string::npos ? std::nullopt : std::optional<std::string>(a.spec.substr(at + 1));
  if (name.empty() || (version && version->empty()))
    throw UsageError("registry uninstall: expected NAME or NAME@VERSION, got '" + a.spec + "'");
  const registry::InstalledAdapter removed =
      registry::uninstall_adapter(name, version, registry::installed_adapter_dir());
  if (a.json)
    std::cout << core::json_text(installed_json(removed, false), 2) << "\n";
  else
    std::cout << "uninstalled " << removed.name() << " " << removed.version() << " (" << removed.library.string()
              << ")\n";
  return 0;
}

}  // namespace

void add_registry_client_commands(CommandLine& cli, CLI::App& group) {
  auto search_args = std::make_shared<SearchArgs>();
  CLI::App* app = cli.add_command(group, "search", kSearchHelp,
                                  [search_args](Invocation& inv) { return search(*search_args, inv); });
  app->add_option("TEXT", search_args->text);
  OptionRows& search_rows = cli.options(*app, 19);
  search_rows.add(app->add_option("--index", search_args->index), "DIR|URL",
                  "the index: a folder holding index.json and index.json.sig,\n"
                  "an index file, or an http(s)/file URL (of index.json, or\n"
                  "of its folder); default $LLM2HEF_INDEX");
  search_rows.add(app->add_flag("--json", search_args->json), "", "the result as JSON on stdout");

  auto install_args = std::make_shared<InstallArgs>();
  app = cli.add_command(group, "install", kInstallHelp,
                        [install_args](Invocation& inv) { return install(*install_args, inv); });
  app->add_option("NAME", install_args->spec)->required();
  OptionRows& install_rows = cli.options(*app, 19);
  install_rows.add(app->add_option("--index", install_args->index), "DIR|URL",
                   "as for `registry search`; default $LLM2HEF_INDEX");
  install_rows.add(app->add_flag("--json", install_args->json), "", "what was installed, as JSON on stdout");

  auto list_args = std::make_shared<ListArgs>();
  app = cli.add_command(group, "list", kListHelp, [list_args](Invocation&) { return list(*list_args); });
  OptionRows& list_rows = cli.options(*app, 15);
  list_rows.add(app->add_flag("--installed", list_args->installed), "",
                "the installed adapters (what `list` shows anyway; kept for\n"
                "scripts that pass it)");
  list_rows.add(app->add_flag("--json", list_args->json), "", "as JSON on stdout");

  auto uninstall_args = std::make_shared<UninstallArgs>();
  app = cli.add_command(group, "uninstall", kUninstallHelp,
                        [uninstall_args](Invocation&) { return uninstall(*uninstall_args); });
  app->add_option("NAME", uninstall_args->spec)->required();
  OptionRows& uninstall_rows = cli.options(*app, 10);
  uninstall_rows.add(app->add_flag("--json", uninstall_args->json), "", "what was removed, as JSON on stdout");

  add_registry_keys_commands(cli, group);
}

}  // namespace llm2hef::cli
