// `llm2hef package`: every check first, then the store is written in one
// StoreWriter transaction.
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include "llm2hef/core/chat/older_minja.hpp"
#include "llm2hef/core/hef/hef_contract.hpp"
#include "llm2hef/core/hef/hef_file.hpp"
#include "llm2hef/core/io/contract_doc.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/core/io/near_miss.hpp"
#include "llm2hef/core/io/output_guard.hpp"
#include "llm2hef/core/io/regular_file.hpp"
#include "llm2hef/core/package/package.hpp"
#include "llm2hef/core/rules/render.hpp"
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

ExportFacts load_export(const fs::path& manifest, const std::optional<fs::path>& config,
                        const std::optional<fs::path>& plan) {
  ExportFacts f;
  f.manifest_path = manifest.string();
  f.manifest = read_manifest(manifest);
  const fs::path resources = manifest.parent_path() / "resources";
  const fs::path config_path = config ? *config : resources / "hailo-config.json";
  f.hailo_config = sdk::JsonFile::load(config_path).raw();
  f.hailo_config_path = config ? config_path.string() : "resources/hailo-config.json (beside " + f.manifest_path + ")";
  f.tokenizer = sdk::JsonFile::load(resources / "tokenizer.json", sdk::JsonLimits::tokenizer()).raw();
  // compile.py applies --plan, else OUT/quantization.json beside it: the same
  // file, judged by the same rule as inspect --plan.
  const fs::path beside = manifest.parent_path() / "quantization.json";
  if (plan || is_present_file(beside)) {
    f.plan = har::read_precision_plan(plan ? *plan : beside);
    har::check_plan_is_for(*f.plan, f.manifest.model.name, f.manifest.cache_size);
  }
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
  options.hailo_ollama = false;  // judged by refuse_what_hailo_ollama_cannot_render, as unsupported
  const rules::Report report = hef::check_hef_contract(*src, info, options);
  if (report.errors() > 0) {
    const std::string version = std::to_string(hailort[0]) + "." + std::to_string(hailort[1]);
    std::ostringstream msg;
    msg << hef_path.string() << ": fails `llm2hef hef check --manifest " << facts.manifest_path << " --hailort "
        << version << "` (" << report.errors() << " error(s)); not packaged:";
    for (const auto& f : report.findings)
      if (f.severity == rules::Severity::error) msg << "\n  " << rules::finding_tag(f) << " " << f.message;
    msg << "\nsections cited refer to " << contract_doc_path().string();
    throw Error(ExitCode::failure, msg.str());
  }
  for (const auto& f : report.findings)
    if (f.severity == rules::Severity::warning) notes.push_back("hef check warning [" + f.rule + "]: " + f.message);

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
    if (embedded != *exported) {
      const bool config = std::string(name) == "hailo-config.json";
      throw BadInput(
          hef_path.string() + ": its " + name + " differs from " +
          (config ? facts.hailo_config_path : "resources/" + std::string(name) + " beside " + facts.manifest_path) +
          "; the HEF was not compiled from this export" +
          (config ? " (or its config was replaced with `hef set-config`: pass that file with "
                    "--config NEW.json)"
                  : std::string()));
    }
  }
  return rules::report_json(report);
}

// hailo-ollama renders the manifest's chat template (the export's) with the
// older minja it vendors, on every request: what that minja lacks and export
// could not rewrite is refused as unsupported, naming each line and construct
// (hef check's rule chat-template-ollama, which the check above skips), or,
// with --force-template, packaged with a note for each.
void refuse_what_hailo_ollama_cannot_render(const ExportFacts& facts, bool force_template,
                                            std::vector<std::string>& notes) {
  const auto t = facts.hailo_config.find("chat_template");
  if (t == facts.hailo_config.end() || !t->is_string()) return;  // hef check's rule "hailo-config" refused it
  const std::string where = facts.hailo_config_path + ": chat_template";
  const std::vector<std::string> found =
      jinja::older_minja_summary(jinja::older_minja_findings(t->get_ref<const std::string&>(), where));
  if (found.empty()) return;
  if (force_template) {
    for (const std::string& f : found)
      notes.push_back(where + ", " + f + ": packaged anyway (--force-template); hailo-ollama's older minja lacks it");
    return;
  }
  std::string msg = where +
                    ": hailo-ollama v5.1.1 renders this template on every request with an older minja (google/minja "
                    "ea5fe1b) that lacks:";
  for (const std::string& f : found) msg += "\n  " + f;
  throw Unsupported(msg +
                    "\nso its requests would fail or render differently from Hugging Face; not packaged. Give export "
                    "a template without these (--chat-template FILE), or pass --force-template to package it anyway "
                    "(docs/chat-templates.md)");
}

// Hailo's Docker instructions for hailo-ollama (hailo_model_zoo_genai v5.1.1,
// docs/USAGE.rst 41-44) bind-mount only the host's models/blob, at
// /usr/share/hailo-ollama/models/blob; the server in the container reads its
// manifests from the image's own /usr/share/hailo-ollama/models/manifests,
// so a manifest written into the host's store is never listed there. Such a
// store shows it: a blob folder with no manifest of its own beside it, or
// blobs no manifest of it names (models pulled through the container, whose
// manifests stay in the image). A store a server reads directly holds the
// manifests it serves next to their blobs (a source install copies the
// repository's models/ folder, five manifests; USAGE.rst 61-69). Judged
// before this run writes anything; returns what was seen, or nothing.
std::optional<std::string> manifests_live_elsewhere(const fs::path& store) {
  std::error_code ec;
  const fs::path blob = store / "blob", manifests = store / "manifests";
  if (!fs::is_directory(blob, ec)) return std::nullopt;
  std::set<std::string> named;  // hef_h10h of every manifest in this store
  size_t manifest_files = 0;
  if (fs::is_directory(manifests, ec)) {
    for (auto it = fs::recursive_directory_iterator(manifests, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      ++manifest_files;
      try {
        // Only read to learn which blobs are named; a damaged manifest is
        // not this run's to judge.
        const json doc = json::parse(RegularFile(it->path()).read_all(1u << 20), nullptr, /*allow_exceptions=*/false);
        if (doc.is_object() && doc.contains("hef_h10h") && doc["hef_h10h"].is_string())
          named.insert(doc["hef_h10h"].get<std::string>());
      } catch (const Error&) {
      }
    }
  }
  if (manifest_files == 0)
    return store.string() + " has a blob folder but no manifest" +
           (fs::exists(manifests, ec) ? " under manifests/" : "s folder");
  constexpr std::string_view kBlobPrefix = "sha256_";
  for (auto it = fs::directory_iterator(blob, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() == kBlobPrefix.size() + 64 && name.compare(0, kBlobPrefix.size(), kBlobPrefix) == 0 &&
        !named.count(name.substr(kBlobPrefix.size())))
      return (blob / name).string() + " is named by no manifest of " + store.string();
  }
  return std::nullopt;
}

std::string docker_mount_warning(const std::string& seen, const fs::path& store, const ModelRef& model) {
  return seen +
         ": the layout of Hailo's Docker instructions for hailo-ollama, which mount only models/blob into "
         "the container (hailo_model_zoo_genai docs/USAGE.rst); the server there reads manifests from its image, so " +
         model.key() + " will not be listed. If hailo-ollama runs in Docker, also mount this model's manifests: -v " +
         // Docker takes a relative host path for a volume name: the mount needs it absolute.
         fs::absolute(store / "manifests" / model.name).lexically_normal().string() +
         ":/usr/share/hailo-ollama/models/manifests/" + model.name +
         " (docs/package.md, \"hailo-ollama in Docker\"). If it runs outside Docker, ignore this.";
}

}  // namespace

PackageResult package_model(const PackageOptions& o) {
  std::error_code ec;
  if (!fs::exists(o.hef, ec))
    throw BadInput(o.hef.string() + ": no such file (the HEF the DFC compiled)" + did_you_mean_suffix(o.hef));
  if (!fs::is_regular_file(o.hef, ec)) throw BadInput(o.hef.string() + ": not a regular file");
  if (!fs::exists(o.export_manifest, ec))
    throw BadInput(o.export_manifest.string() + ": no such file (the manifest.json `llm2hef export` wrote)" +
                   did_you_mean_suffix(o.export_manifest));

  // A common slip: the hailo-ollama folder instead of its models folder.
  if (!fs::exists(o.store / "manifests", ec) && fs::is_directory(o.store / "models" / "manifests", ec))
    throw UsageError("--store " + o.store.string() + " holds models/manifests: the store is the models folder, " +
                     (o.store / "models").string());

  PackageResult r;
  r.model = o.model;
  StoreWriter store(o.store);
  r.store = o.store;
  r.manifest = store.manifest_path(o.model);
  // The store manifest is this command's output: never one of its inputs, nor
  // inside the export's resources it reads (the same rule as every -o).
  check_output_is_not_input(r.manifest,
                            {{"the HEF (MODEL.hef)", o.hef, {}},
                             {"the export's manifest (--manifest)", o.export_manifest, {}},
                             {"the export's resources folder", o.export_manifest.parent_path() / "resources", {}}});
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

  const ExportFacts facts = load_export(o.export_manifest, o.config, o.plan);
  r.hef_check = require_checked_hef(o.hef, facts, o.hailort, r.notes);
  refuse_what_hailo_ollama_cannot_render(facts, o.force_template, r.notes);

  // Built before hashing so that a missing field is reported at once.
  r.ollama_manifest = make_ollama_manifest(facts, std::string(), r.notes);
  r.hef_bytes = fs::file_size(o.hef);
  r.sha256 = sha256_of_file(o.hef, o.progress);
  r.blob = store.blob_path(r.sha256);
  r.ollama_manifest["hef_h10h"] = r.sha256;

  if (const auto seen = manifests_live_elsewhere(o.store))
    r.warnings.push_back(docker_mount_warning(*seen, o.store, o.model));
  r.blob_reused = store.put_blob(o.hef, r.sha256, o.progress);
  store.put_manifest(o.model, core::json_text(r.ollama_manifest, 4) + "\n", o.force);
  store.commit();
  return r;
}

}  // namespace llm2hef::core::package
