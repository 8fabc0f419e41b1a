// `llm2hef package`: every check first, then the store is written in one
// StoreWriter transaction.
#include <fstream>
#include <sstream>

#include "llm2hef/core/hef/hef_contract.hpp"
#include "llm2hef/core/io/contract_doc.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/core/io/regular_file.hpp"
#include "llm2hef/core/hef/hef_file.hpp"
#include "llm2hef/core/package/package.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"
#include "store_writer.hpp"

namespace llm2hef::core::package {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Resources compared with the export's files are small; this only bounds a
// corrupt size field.
constexpr uint64_t kMaxComparedResource = 512ull << 20;

ExportFacts load_export(const fs::path& manifest) {
  ExportFacts f;
  f.manifest_path = manifest.string();
  f.manifest = read_manifest(manifest);
  const fs::path resources = manifest.parent_path() / "resources";
  f.hailo_config = sdk::JsonFile::load(resources / "hailo-config.json").raw();
  f.tokenizer = sdk::JsonFile::load(resources / "tokenizer.json", sdk::JsonLimits::tokenizer()).raw();
  return f;
}

// The HEF must pass `hef check` against the export's manifest (the genai
// contract plus agreement with the export), and carry the very hailo-config.json
// and tokenizer.json the store manifest is built from. The only place package
// calls the check; whatever rules it has are the rules packaging enforces.
// hailo-ollama loads with optimize_memory_on_device left false (hailo-contract.md
// section 11), the ContractOptions default: the resource-order rule is a warning here.
json require_checked_hef(const fs::path& hef_path, const ExportFacts& facts, const std::array<uint32_t, 2>& hailort,
                         std::vector<std::string>& notes) {
  const auto src = hef::open_file_source(hef_path.string());
  const hef::HefInfo info = hef::read_hef(*src);
  hef::ContractOptions options;
  options.manifest = facts.manifest;
  options.manifest_path = facts.manifest_path;
  options.hailort = hailort;
  const hef::ContractReport report = hef::check_hef_contract(*src, info, options);
  if (report.errors() > 0) {
    const std::string version = std::to_string(hailort[0]) + "." + std::to_string(hailort[1]);
    std::ostringstream msg;
    msg << hef_path.string() << ": fails `llm2hef hef check --manifest " << facts.manifest_path << " --hailort "
        << version << "` (" << report.errors() << " error(s)); not packaged:";
    for (const auto& f : report.findings)
      if (f.severity == hef::Severity::error)
        msg << "\n  [" << f.rule << ", hailo-contract.md section " << f.section << "] " << f.message;
    msg << "\nsections cited refer to " << contract_doc_path().string();
    throw Error(ExitCode::failure, msg.str());
  }
  for (const auto& f : report.findings)
    if (f.severity == hef::Severity::warning) notes.push_back("hef check warning [" + f.rule + "]: " + f.message);

  // The server renders the manifest's template and stop tokens while the
  // runtime uses the HEF's own copies: they must be the same files.
  const std::pair<const char*, const json*> compared[] = {{"hailo-config.json", &facts.hailo_config},
                                                          {"tokenizer.json", &facts.tokenizer}};
  for (const auto& [name, exported] : compared) {
    const hef::Resource* r = info.resource(name);
    if (!r) throw BadInput(hef_path.string() + ": carries no " + name + " resource");
    const std::string bytes = hef::read_resource(*src, *r, kMaxComparedResource);
    // The one bounded reader (depth, size), as for every JSON llm2hef reads.
    const json embedded = sdk::parse_json(bytes, hef_path.string() + ": resource " + name,
                                          std::string(name) == "tokenizer.json" ? sdk::JsonLimits::tokenizer()
                                                                                : sdk::JsonLimits::small_file());
    if (embedded != *exported)
      throw BadInput(hef_path.string() + ": its " + name + " differs from resources/" + name + " beside " +
                     facts.manifest_path + "; the HEF was not compiled from this export (or its config was"
                     " replaced with `hef set-config`: then copy that file into the export's resources/)");
  }
  return hef::contract_json(report);
}

}  // namespace

PackageResult package_model(const PackageOptions& o) {
  std::error_code ec;
  if (!fs::exists(o.hef, ec)) throw BadInput(o.hef.string() + ": no such file (the HEF the DFC compiled)");
  if (!fs::is_regular_file(o.hef, ec)) throw BadInput(o.hef.string() + ": not a regular file");
  if (!fs::exists(o.export_manifest, ec))
    throw BadInput(o.export_manifest.string() + ": no such file (the manifest.json `llm2hef export` wrote)");

  // A common slip: the hailo-ollama folder instead of its models folder.
  if (!fs::exists(o.store / "manifests", ec) && fs::is_directory(o.store / "models" / "manifests", ec))
    throw UsageError("--store " + o.store.string() + " holds models/manifests: the store is the models folder, " +
                     (o.store / "models").string());

  PackageResult r;
  r.model = o.model;
  StoreWriter store(o.store);
  r.store = o.store;
  r.manifest = store.manifest_path(o.model);
  // Cheap refusals before hashing a multi-GB file.
  if (fs::exists(r.manifest, ec) && !o.force)
    throw UsageError(o.model.key() + " already exists in " + o.store.string() + " (" + r.manifest.string() +
                     "); pass --force to replace it");
  if (fs::exists(r.manifest, ec)) {
    // Only reported; a damaged old manifest is still replaceable.
    // A FIFO or device here is refused (BadInput), never read or replaced.
    const json old = json::parse(RegularFile(r.manifest).read_all(1u << 20), nullptr, /*allow_exceptions=*/false);
    r.replaced_hef = old.is_object() && old.contains("hef_h10h") && old["hef_h10h"].is_string()
                         ? old["hef_h10h"].get<std::string>()
                         : std::string();
  }

  const ExportFacts facts = load_export(o.export_manifest);
  r.hef_check = require_checked_hef(o.hef, facts, o.hailort, r.notes);

  // Built before hashing so that a missing field is reported at once.
  r.ollama_manifest = make_ollama_manifest(facts, std::string(), r.notes);
  r.hef_bytes = fs::file_size(o.hef);
  r.sha256 = sha256_of_file(o.hef, o.progress);
  r.blob = store.blob_path(r.sha256);
  r.ollama_manifest["hef_h10h"] = r.sha256;

  r.blob_reused = store.put_blob(o.hef, r.sha256, o.progress);
  store.put_manifest(o.model, core::json_text(r.ollama_manifest, 4) + "\n", o.force);
  store.commit();
  return r;
}

}  // namespace llm2hef::core::package
