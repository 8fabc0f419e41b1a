// `llm2hef package`: a checked HEF into hailo-ollama's model store.
#include <iostream>

#include "commands.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/core/io/progress.hpp"
#include "llm2hef/core/package/package.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::cli {

namespace {

constexpr const char* kHelp =
    R"(Usage: llm2hef package MODEL.hef --manifest OUT/manifest.json --model NAME[:TAG] [--config NEW.json] [--plan FILE] [--store DIR] [--hailort X.Y] [--force] [--force-template] [--json]

Puts a compiled HEF into the model store hailo-ollama (Hailo's Ollama-compatible
server) reads at startup:
  DIR/blob/sha256_<hex>                      the HEF, named by its SHA-256
  DIR/manifests/NAME/TAG/manifest.json       hef_h10h, template_params,
                                             generation_params, details
The chat template, stop tokens and sampling defaults come from the export's
resources/hailo-config.json and tokenizer.json, which the HEF must carry
unchanged; details.parameter_size from the export's parameter count and
details.quantization_level from the precision plan compile.py applied
(--plan, else OUT/quantization.json when present; "A8W4" without one).

Refused, leaving the store as it was: a missing HEF; a HEF that fails
`llm2hef hef check --manifest OUT/manifest.json --hailort X.Y` (hailo-ollama
loads with optimize_memory_on_device off, so resource-order is a warning);
an existing NAME:TAG (unless
--force); a chat template using what hailo-ollama v5.1.1's older minja
lacks (slices with a step, str.startswith, ...; `llm2hef export` rewrites
what has an exact equivalent) unless --force-template; a different file already at the blob's name (blobs are never
overwritten; an identical one is reused after its hash is verified).

Options:
{options}
hailo-ollama reads manifests only when it starts: restart it afterwards.
A store laid out for hailo-ollama in Docker (a blob folder with no manifest
of its own, or blobs no manifest names) gets a warning: Hailo's Docker
instructions mount only models/blob, so the container never sees the
manifest; mount it too (docs/package.md).

Exit status: 0 packaged, 1 the HEF fails hef check, 2 usage (including an
existing NAME:TAG without --force), 3 bad input (missing or unreadable files,
a HEF whose hailo-config.json or tokenizer.json differs from the export's, a
damaged store), 4 a chat template hailo-ollama's older minja cannot render
(without --force-template).
)";

struct PackageArgs {
  std::string hef, manifest, model, store, hailort, config, plan;
  bool json = false, force = false, force_template = false, no_progress = false;
};

int run_package(const PackageArgs& o, Invocation& inv) {
  core::package::PackageOptions po;
  po.hef = o.hef;
  po.export_manifest = o.manifest;
  po.model = core::package::parse_model_ref(o.model);
  if (inv.command().count("--config")) po.config = std::filesystem::path(o.config);
  if (inv.command().count("--plan")) po.plan = std::filesystem::path(o.plan);
  po.store = inv.command().count("--store") ? std::filesystem::path(o.store) : core::package::default_store();
  if (inv.command().count("--hailort")) po.hailort = core::hef::parse_hailort_version(o.hailort);
  po.force = o.force;
  po.force_template = o.force_template;
  po.progress = !o.no_progress && !inv.globals().quiet && core::Progress::stderr_is_terminal();

  const core::package::PackageResult r = core::package::package_model(po);
  if (!inv.globals().quiet)
    for (const auto& note : r.notes) std::cerr << "note: " << note << "\n";
  for (const auto& warning : r.warnings) std::cerr << "warning: " << warning << "\n";
  if (o.json) {
    nlohmann::ordered_json out;
    out["ok"] = true;  // a refusal is the error object, "ok": false
    out["model"] = r.model.key();
    out["store"] = r.store.string();
    out["manifest"] = r.manifest.string();
    out["blob"] = r.blob.string();
    out["sha256"] = r.sha256;
    out["hef_bytes"] = r.hef_bytes;
    out["blob_reused"] = r.blob_reused;
    out["replaced_hef_h10h"] = r.replaced_hef ? nlohmann::ordered_json(*r.replaced_hef) : nullptr;
    out["notes"] = r.notes;
    out["warnings"] = r.warnings;
    out["hef_check"] = r.hef_check;
    out["written"] = r.ollama_manifest;
    std::cout << core::json_text(out, 2) << "\n";
  } else {
    std::cout << "packaged " << r.model.key() << " into " << r.store.string() << "\n"
              << "  blob      " << r.blob.string() << (r.blob_reused ? " (already there, hash verified)" : "") << "\n"
              << "  manifest  " << r.manifest.string() << "\n";
    if (r.replaced_hef)
      std::cout << "  replaced a manifest for blob sha256_" << *r.replaced_hef << " (that blob was kept)\n";
    std::cout << "next: restart hailo-ollama (it reads manifests at startup), then ask for model \"" << r.model.key()
              << "\"\n";
  }
  return 0;
}

}  // namespace

void add_package_command(CommandLine& cli) {
  auto o = std::make_shared<PackageArgs>();
  CLI::App* app = cli.add_command(cli.root(), "package", kHelp, [o](Invocation& inv) { return run_package(*o, inv); });
  app->add_option("MODEL.hef", o->hef)->required();
  OptionRows& rows = cli.options(*app, 20);
  rows.add(app->add_option("--manifest", o->manifest)->required(), "FILE",
           "the manifest.json `llm2hef export` wrote (required)");
  rows.add(app->add_option("--model", o->model)->required(), "NAME[:TAG]",
           "the name clients ask for; TAG defaults to \"latest\"\n"
           "(hailo-ollama matches NAME:TAG exactly: ask for NAME:latest)");
  rows.add(app->add_option("--config", o->config), "NEW.json",
           "the hailo-config.json given to `hef set-config` for this HEF,\n"
           "in place of the export's resources/hailo-config.json (the\n"
           "HEF must carry it unchanged)");
  rows.add(app->add_option("--plan", o->plan), "FILE",
           "the quantization.json the HEF was compiled with (compile.py\n"
           "--plan); refused when made for another model or cache");
  rows.add(app->add_option("--store", o->store), "DIR",
           "the server's models folder (default: the one hailo-ollama\n"
           "uses, $XDG_DATA_HOME or ~/.local/share, then $XDG_DATA_DIRS\n"
           "or /usr/share:/usr/local/share, each + /hailo-ollama/models,\n"
           "the first whose hailo-ollama folder exists)");
  rows.add(app->add_option("--hailort", o->hailort), "X.Y",
           "the HailoRT version on the device that runs hailo-ollama\n"
           "(default 5.2, the version hailo-contract.md documents); a\n"
           "HEF with STRICT_RUNTIME_VERSIONING loads only on the\n"
           "HailoRT major.minor of the DFC that wrote it");
  rows.add(app->add_flag("--force", o->force), "", "replace an existing NAME:TAG manifest (its blob is kept)");
  rows.add(app->add_flag("--force-template", o->force_template), "",
           "package a chat template that uses what hailo-ollama's\n"
           "older minja lacks (each use is listed as a note); the\n"
           "requests that reach it fail or render differently");
  rows.add(app->add_flag("--json", o->json), "",
           "print what was written as JSON (\"ok\": true; on failure\n"
           "the error object, \"ok\": false)");
  rows.add(app->add_flag("--no-progress", o->no_progress), "", "never draw the progress bar");
}

}  // namespace llm2hef::cli
