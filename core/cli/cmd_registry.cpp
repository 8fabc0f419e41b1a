// `llm2hef registry verify|manifest|index`: publishing adapters and checking
// what was published (docs/writing-an-adapter.md, "Publishing").
#include <algorithm>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "args.hpp"
#include "commands.hpp"
#include "llm2hef/core/atomic_output.hpp"
#include "llm2hef/core/json_text.hpp"
#include "llm2hef/core/output_guard.hpp"
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
the SHA-256 of its .so (schema: share/llm2hef/schema/adapter-manifest.schema.json).

  verify PATH [--json]
      Checks a manifest, an index, or every *.json in a folder: schema, the
      library beside it (and the host's safety rules), SHA-256 (before
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
)";

registry::Publisher publisher_from(const Args& args) {
  registry::Publisher p;
  p.license = args.require("license");
  p.maintainer = args.require("maintainer");
  p.homepage = args.get("homepage");
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

int verify(const Globals& g, const Args& args) {
  if (args.positionals().size() != 2) throw UsageError("registry verify takes one manifest, index or folder");
  registry::VerifyOptions options;
  options.allow_unsafe = g.allow_unsafe_adapters;
  const registry::VerifyReport report = registry::verify_published(args.positionals()[1], options);
  if (args.has("json"))
    std::cout << core::json_text(report.to_json(), 2) << "\n";
  else
    std::cout << report.to_text();
  return report.passed() ? 0 : static_cast<int>(ExitCode::failure);
}

int manifest(const Globals& g, const Args& args) {
  if (args.positionals().size() != 2) throw UsageError("registry manifest takes one adapter library (.so)");
  const registry::Publisher publisher = publisher_from(args);
  if (const auto output = args.get("output")) core::check_file_output(*output, args.has("force"));
  const plugins::LoadedAdapter adapter = load_checked(g, args.positionals()[1]);
  write_output(registry::make_manifest(adapter, publisher), args.get("output"), args.has("force"));
  return 0;
}

int index(const Globals& g, const Args& args) {
  if (args.positionals().size() != 2) throw UsageError("registry index takes one folder of adapter libraries");
  const fs::path dir = args.positionals()[1];
  if (!fs::is_directory(dir)) throw BadInput(dir.string() + ": not a folder");
  const registry::Publisher publisher = publisher_from(args);
  const std::string output = args.get("output").value_or((dir / "index.json").string());
  core::check_file_output(output, args.has("force"));
  std::vector<fs::path> libraries;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".so" && entry.is_regular_file()) libraries.push_back(entry.path());
  std::sort(libraries.begin(), libraries.end());
  if (libraries.empty()) throw BadInput(dir.string() + ": no adapter library (*.so) in this folder");
  std::vector<nlohmann::json> manifests;
  for (const auto& library : libraries) manifests.push_back(registry::make_manifest(load_checked(g, library), publisher));
  write_output(registry::make_index(std::move(manifests)), output, args.has("force"));
  return 0;
}

}  // namespace

int cmd_registry(const Globals& g, const std::vector<std::string>& argv) {
  Args args(argv, {"license", "maintainer", "homepage", "output", "o"}, {"json", "force", "help", "h"});
  if (args.has("help") || args.has("h") || args.positionals().empty()) {
    if (args.positionals().empty() && !(args.has("help") || args.has("h")))
      throw UsageError("registry needs a command: verify, manifest or index (see llm2hef registry --help)");
    std::cout << kHelp;
    return 0;
  }
  const std::string& sub = args.positionals()[0];
  if (sub == "verify") return verify(g, args);
  if (sub == "manifest") return manifest(g, args);
  if (sub == "index") return index(g, args);
  throw UsageError("unknown registry command '" + sub + "' (verify, manifest, index)");
}

}  // namespace llm2hef::cli
