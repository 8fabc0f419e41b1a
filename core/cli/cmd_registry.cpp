// `llm2hef registry verify|manifest|index`: publishing adapters and checking
// what was published (docs/writing-an-adapter.md, "Publishing").
#include <algorithm>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cmd_registry_client.hpp"
#include "commands.hpp"
#include "llm2hef/core/io/atomic_output.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/core/io/output_guard.hpp"
#include "llm2hef/plugins/host.hpp"
#include "llm2hef/plugins/loader.hpp"
#include "llm2hef/plugins/probe.hpp"
#include "llm2hef/registry/manifest.hpp"
#include "llm2hef/registry/verify.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace fs = std::filesystem;

namespace llm2hef::cli {

namespace {

constexpr const char* kHelp = R"(Usage: llm2hef registry COMMAND ...

Adapter manifests: what a published adapter claims, the SDK ABI it needs and
the SHA-256 of its .so (schema: share/llm2hef/schema/adapter-manifest.schema.json),
and the client of a signed adapter index (docs/registry.md).

  search [TEXT] [--index DIR|URL] [--json]
      Adapters in a signed index: name, architectures, versions, and whether
      each build fits this llm2hef (and why not).

  install NAME[@VERSION] [--index DIR|URL] [--json]
      Downloads, checks (signature, build, size, SHA-256, claims) and installs
      an adapter into $XDG_DATA_HOME/llm2hef/adapters.

  list [--installed] [--json]
  uninstall NAME[@VERSION] [--json]
      The adapters installed from an index; removing one.

  keys list|add FILE|remove ID|generate PREFIX
      The public keys trusted for index signatures; a new key pair.

  sign INDEX --key SECRET [-o FILE]
  collect DIR [--first-party INDEX] [-o FILE]
      Publishing: assemble an index from reviewed entries, sign it.

  verify PATH [--library FILE] [--json]
      Checks a manifest, an index, or every *.json in a folder: schema, the
      library (beside the manifest, or FILE; and the host's safety rules), SHA-256 (before
      anything is loaded), SDK ABI and fingerprint, that it loads, and that its
      name, version, architectures and model_types equal the manifest's.
      Exit status 0 all passed, 1 a check failed, 3 unreadable PATH.

  manifest LIB.so --license SPDX --maintainer WHO [--homepage URL] [-o FILE] [--force]
      Writes the manifest of an adapter library (to stdout without -o). Publish
      it beside the .so.

  index DIR --license SPDX --maintainer WHO [--homepage URL] [-o FILE] [--force]
      One index of every adapter library in DIR (default DIR/index.json); the
      build writes one for the first-party adapters.

An existing output file is replaced only with --force, and never when it is
not a regular file (a device, FIFO or folder).

The global --allow-unsafe-adapters also applies here.
`llm2hef registry COMMAND --help` for each.
)";

constexpr const char* kVerifyHelp = R"(Usage: llm2hef registry verify PATH [--library FILE] [--json]

Checks a published adapter: PATH is a manifest, an index, or a folder (every
*.json in it). For each manifest: its schema
(share/llm2hef/schema/adapter-manifest.schema.json), the library (and the
host's safety rules), its size and SHA-256 (before anything is loaded), the
SDK ABI and fingerprint, that it loads (first in a child process), and that
its name, version, architectures and model_types equal the manifest's.

The library is, first match wins: FILE given with --library; library.file in
the manifest's folder (an index's folder for its entries); an index entry's
relative library.url, resolved against that folder. Never the current folder.

{options}

The global --allow-unsafe-adapters also applies here.
Exit status: 0 all passed, 1 a check failed, 2 usage, 3 unreadable PATH.
)";

constexpr const char* kManifestHelp =
    R"(Usage: llm2hef registry manifest LIB.so --license SPDX --maintainer WHO [--homepage URL] [-o FILE] [--force]

Writes the manifest of an adapter library: what it claims (name, version,
description, architectures, model_types), the SDK ABI and build fingerprint
it needs, its file name, size and SHA-256, and who publishes it. Publish it beside the .so. The
library is loaded (first in a child process) to read what it claims.

{options}

The global --allow-unsafe-adapters also applies here.
Exit status: 0 written, 2 usage, 3 a library that cannot be loaded or is refused.
)";

constexpr const char* kIndexHelp =
    R"(Usage: llm2hef registry index DIR --license SPDX --maintainer WHO [--homepage URL] [-o FILE] [--force]

Writes one index of every adapter library (*.so) in DIR, each entry a
manifest as `registry manifest` writes it; the build writes one for the
first-party adapters.

{options}

The global --allow-unsafe-adapters also applies here.
Exit status: 0 written, 2 usage, 3 no library in DIR, or one that cannot be
loaded or is refused.
)";

struct PublishArgs {
  std::string target, license, maintainer, homepage, output;
  bool force = false;
};

registry::Publisher publisher_from(const PublishArgs& a, const CLI::App& command) {
  registry::Publisher p;
  p.license = a.license;
  p.maintainer = a.maintainer;
  if (command.count("--homepage")) p.homepage = a.homepage;
  return p;
}

// Loads one library the way the host would, refusing unsafe files first.
plugins::LoadedAdapter load_checked(const Globals& g, const fs::path& library) {
  if (!fs::is_regular_file(library)) throw BadInput(library.string() + ": no such adapter library");
  if (!g.allow_unsafe_adapters) {
    const std::string refusal = plugins::unsafe_file_reason(library);
    if (!refusal.empty()) throw BadInput(library.string() + ": " + refusal);
  }
  if (const std::string died = plugins::probe_in_child(fs::absolute(library)); !died.empty())
    throw BadInput(library.string() + ": " + died);
  try {
    return plugins::load_adapter(fs::absolute(library));
  } catch (const plugins::PluginLoadError& e) {
    throw BadInput(e.what());
  }
}

void write_output(const nlohmann::json& document, const std::optional<std::string>& output, bool replace) {
  const std::string text = core::json_text(document, 2) + "\n";
  if (!output) {
    std::cout << text;
    return;
  }
  core::write_file_atomic(*output, text, replace);
}

struct VerifyArgs {
  std::string path, library;
  bool json = false;
};

int verify(const VerifyArgs& a, const Globals& g) {
  registry::VerifyOptions options;
  options.allow_unsafe = g.allow_unsafe_adapters;
  options.library = a.library;
  const registry::VerifyReport report = registry::verify_published(a.path, options);
  if (a.json)
    std::cout << core::json_text(report.to_json(), 2) << "\n";
  else
    std::cout << report.to_text();
  return report.passed() ? 0 : static_cast<int>(ExitCode::failure);
}

std::optional<std::string> output_of(const PublishArgs& a, const CLI::App& command) {
  return command.count("--output") ? std::optional<std::string>(a.output) : std::nullopt;
}

int manifest(const PublishArgs& a, Invocation& inv) {
  const registry::Publisher publisher = publisher_from(a, inv.command());
  const auto output = output_of(a, inv.command());
  if (output) core::check_file_output(*output, a.force, {{"the adapter library", a.target, {}}});
  const plugins::LoadedAdapter adapter = load_checked(inv.globals(), a.target);
  write_output(registry::adapter_manifest_json(registry::make_manifest(adapter, publisher)), output, a.force);
  // verify looks for library.file beside the manifest: say how to check one
  // written elsewhere.
  std::error_code ec;
  if (output && fs::weakly_canonical(fs::absolute(*output).parent_path(), ec) !=
                    fs::weakly_canonical(fs::absolute(a.target).parent_path(), ec))
    std::cerr << "note: " << *output << " is not beside " << a.target << "; check it with `llm2hef registry verify "
              << *output << " --library " << a.target << "`, or publish both in one folder\n";
  return 0;
}

int index(const PublishArgs& a, Invocation& inv) {
  const fs::path dir = a.target;
  if (!fs::is_directory(dir)) throw BadInput(dir.string() + ": not a folder");
  const registry::Publisher publisher = publisher_from(a, inv.command());
  const std::string output = output_of(a, inv.command()).value_or((dir / "index.json").string());
  // index reads DIR/*.so only, so its default output DIR/index.json is allowed.
  auto reads_library = [](const fs::path& relative) {
    return relative.has_filename() && relative.parent_path().empty() && relative.extension() == ".so";
  };
  core::check_file_output(output, a.force, {{"the adapter folder", dir, reads_library}});
  std::vector<fs::path> libraries;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".so" && entry.is_regular_file()) libraries.push_back(entry.path());
  std::sort(libraries.begin(), libraries.end());
  if (libraries.empty()) throw BadInput(dir.string() + ": no adapter library (*.so) in this folder");
  std::vector<registry::AdapterManifest> manifests;
  for (const auto& library : libraries)
    manifests.push_back(registry::make_manifest(load_checked(inv.globals(), library), publisher));
  write_output(registry::make_index(std::move(manifests)), output, a.force);
  return 0;
}

// `registry manifest` publishes one adapter, `registry index` every one in a
// folder: the same options, said of one or of several.
void add_publish_options(OptionRows& rows, CLI::App& app, PublishArgs& a, const char* target, bool one) {
  app.add_option(target, a.target)->required();
  rows.add(app.add_option("--license", a.license)->required(), "SPDX",
           std::string(one ? "the adapter's" : "the adapters'") + " licence, an SPDX expression (required)");
  rows.add(app.add_option("--maintainer", a.maintainer)->required(), "WHO",
           std::string("who answers for ") + (one ? "it" : "them") + " (required)");
  rows.add(app.add_option("--homepage", a.homepage), "URL",
           std::string("where ") + (one ? "it is" : "they are") + " published");
  rows.add(app.add_option("-o,--output", a.output), "FILE",
           one ? "write FILE instead of stdout" : "the index to write (default DIR/index.json)");
  rows.add(app.add_flag("--force", a.force), "", "replace FILE if it exists (only a regular file is replaced)");
}

}  // namespace

void add_registry_commands(CommandLine& cli) {
  CLI::App* group = cli.add_group(cli.root(), "registry", kHelp);

  auto verify_args = std::make_shared<VerifyArgs>();
  CLI::App* app = cli.add_command(*group, "verify", kVerifyHelp,
                                  [verify_args](Invocation& inv) { return verify(*verify_args, inv.globals()); });
  app->add_option("PATH", verify_args->path)->required();
  OptionRows& verify_rows = cli.options(*app, 18);
  verify_rows.add(app->add_option("--library", verify_args->library), "FILE",
                  "the library of the one manifest in PATH, kept elsewhere\n"
                  "(e.g. `registry manifest LIB -o other/folder/LIB.json`)");
  verify_rows.add(app->add_flag("--json", verify_args->json), "", "the report as JSON on stdout");

  auto manifest_args = std::make_shared<PublishArgs>();
  app = cli.add_command(*group, "manifest", kManifestHelp,
                        [manifest_args](Invocation& inv) { return manifest(*manifest_args, inv); });
  add_publish_options(cli.options(*app, 21), *app, *manifest_args, "LIB.so", true);

  auto index_args = std::make_shared<PublishArgs>();
  app = cli.add_command(*group, "index", kIndexHelp, [index_args](Invocation& inv) { return index(*index_args, inv); });
  add_publish_options(cli.options(*app, 21), *app, *index_args, "DIR", false);

  add_registry_client_commands(cli, *group);
}

}  // namespace llm2hef::cli
