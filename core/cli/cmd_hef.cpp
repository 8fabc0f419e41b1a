// `llm2hef hef inspect|check|set-config`: read, check and patch compiled HEFs.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.hpp"
#include "llm2hef/core/hef/hef_contract.hpp"
#include "llm2hef/core/hef/hef_file.hpp"
#include "llm2hef/core/hef/hef_patch.hpp"
#include "llm2hef/core/hef/hef_report.hpp"
#include "llm2hef/core/io/contract_doc.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/core/io/output_guard.hpp"
#include "llm2hef/core/io/progress.hpp"
#include "llm2hef/core/io/regular_file.hpp"
#include "llm2hef/core/manifest/export_manifest.hpp"
#include "llm2hef/core/rules/render.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::cli {

namespace {

using nlohmann::json;
namespace hef = core::hef;

// Resources up to this size are hashed by default; larger ones (embeddings.bin
// is hundreds of MB) and the whole-file hash need --verify-all.
constexpr uint64_t kDefaultHashLimit = 64ull << 20;

constexpr const char* kHefHelp = R"(Usage: llm2hef hef COMMAND FILE ...

Compiled HEFs (what the DFC's compile step writes), after `compile.py`:
  inspect FILE [--json] [--verify-all]
  check FILE [--manifest OUT/manifest.json] [--hailort X.Y] [--genai-only] [--json] [--verify-all]
  set-config FILE NEW_CONFIG.json -o OUT [--force] [--genai-only] [--json]

`llm2hef hef COMMAND --help` for each. Format and rules: docs/hef.md.
)";

constexpr const char* kInspectHelp = R"(Usage: llm2hef hef inspect FILE [--json] [--verify-all] [--no-progress]

Shows a HEF: header (version 0-3), hardware arch, SDK version, extensions,
network groups (named as hailort reads them: network_group_metadata; field
10 is shown as information, hailort never reads it) with their contexts,
boundary inputs and outputs (shape HxWxF, format, data type, quantization),
cache edges, and the external resources with offsets, sizes and checksum status.

Only the header, the protobuf and small resources are read (pread), so a
multi-GB HEF inspects in milliseconds with flat memory.

Checksums: the proto XXH3 (v3) is always verified (a mismatch is an error:
the runtime refuses the file). Resources up to 64 MiB are hashed against
their stored XXH3; larger ones (embeddings.bin) and the header's whole-file
checksum (v1 CRC-32, v2/v3 XXH3) only with --verify-all, which reads the
whole file (seconds per GB). The v0 MD5 is not verified (DFC 5.x writes v3).

{options}

Exit status: 0 ok, 1 a checksum does not match, 2 usage, 3 not a HEF or
malformed (the message names the field).
)";

constexpr const char* kCheckHelp =
    R"(Usage: llm2hef hef check FILE [--manifest OUT/manifest.json] [--hailort X.Y] [--optimize-memory-on-device] [--genai-only] [--json] [--verify-all]

Judges a HEF by hailort v5.2.0's own rules (Hef::create, configure, the
genai server; hailo-contract.md sections 6, 8, 9, 10; docs/hef.md gives the
hailort file and line of each). Each finding names its rule and section
(a manifest finding that no section is about names its rule only). When it
passes, the next command is printed: `llm2hef package`.

  hef-version     header version 3 (genai hashes and splits only v3)
  proto-hash      v3 proto_xxh3_64bits set (genai loads from the first chunk)
  hw-arch         an arch hailort runs on the Hailo-10H (103, 104, 105, 4)
  extensions      only types hailort knows; PERIPH_CALCULATION_IN_HAILORT (26)
  strict-version  with STRICT_RUNTIME_VERSIONING (35): DFC major.minor equals
                  the device's HailoRT (--hailort, default 5.2)
  net-flow        with HAILO_NET_FLOW (13) each group has an ops[].core_op
  network-groups  exactly two groups, <x>__prefill and <x>__tbt, by the name
                  hailort reads (network_group_metadata; field 10 is info only)
  resources       embeddings.bin, rope_theta_data.bin, tokenizer.json,
                  hailo-config.json present
  checksums       resources (up to 64 MiB, all with --verify-all) match their
                  XXH3; the whole-file sum hailort checks (v1 CRC-32, v2 XXH3)
  resource-order  tokenizer.json and embeddings.bin last: a warning, an error
                  with --optimize-memory-on-device (only that mode needs it)
  hailo-config    every key with the JSON type the server reads it as;
                  eos_token_id; prefill_input_tokens_count (not _size)
  stop-tokens     (warning) stop_token_id present and containing eos_token_id
  chat-template   hailort's minja parses the chat template; what it cannot
                  evaluate is a warning (chat-template-render)
  chat-template-ollama
                  nothing in the chat template that hailo-ollama v5.1.1's
                  older minja lacks (slices with a step, str.startswith, ...;
                  docs/chat-templates.md); not with --genai-only
  tokenizer       tokenizer.json parses as a tokenizers file
  theta           float32 vector of even length T
  inputs          the six inputs (by hailo-config suffix) in both groups;
                  embeddings UINT16
  input-widths    mask = heads x kv_cache_size; pe_q = heads x T;
                  pe_k = kv_heads x T; prefill rows = prefill_input_tokens_count
                  (tbt rows != 1 is a warning)
  embeddings      embeddings.bin = vocab x hidden x 2 bytes
  token-ids       eos, stop and reasoning ids inside the vocabulary
  outputs         equal frame sizes summing to the vocabulary, in both groups
  manifest        (with --manifest) hidden, vocab, theta length, cache,
                  prefill, heads, lm_head shards, group names as exported

{options}

Sections cited are those of hailo-contract.md, installed with llm2hef
(<prefix>/share/doc/llm2hef/); the text output names its path once.

Exit status: 0 ok (warnings allowed), 1 errors found, 2 usage,
3 not a HEF, malformed, or an unreadable manifest.
)";

constexpr const char* kSetConfigHelp =
    R"(Usage: llm2hef hef set-config FILE NEW_CONFIG.json -o OUT [--force] [--genai-only] [--json] [--no-progress]

Writes OUT: FILE with its hailo-config.json replaced, without recompiling.
Package OUT with `llm2hef package OUT ... --config NEW_CONFIG.json`.
Refused, with nothing written, when NEW_CONFIG.json has a key of a JSON type
the genai server cannot read (or misreads), lacks eos_token_id or
prefill_input_tokens_count, or contradicts FILE (heads, cache size, input
widths, token ids against the vocabulary: the rules of `hef check`), or has a
chat template hailo-ollama's older minja cannot render (exit 4; not with
--genai-only).
Layout: bytes before tokenizer.json/embeddings.bin are copied unchanged;
then the resources that followed (moved), the new config, and tokenizer.json
and embeddings.bin last, as optimize_memory_on_device needs. Offsets, the
config's size and XXH3, the proto, its hash (always written), the padding,
the header sizes and the whole-file XXH3 are rewritten. OUT is written
atomically; FILE is never modified. Version 3 HEFs only. The whole file is
copied (seconds per GB); a progress bar only on a terminal.

{options}

Exit status: 0 written, 2 usage, 3 bad HEF or refused config, 4 a HEF version other
than 3, or a chat template hailo-ollama cannot render (without --genai-only).
)";

struct Opened {
  std::unique_ptr<hef::ByteSource> src;
  hef::HefInfo info;
};

Opened open_hef(const std::string& path) {
  Opened o;
  o.src = hef::open_file_source(path);
  o.info = hef::read_hef(*o.src);
  return o;
}

uint64_t hashed_bytes(const hef::HefInfo& info, uint64_t limit, bool whole) {
  uint64_t total = 0;
  for (const auto& r : info.resources)
    if (r.xxhash != 0 && r.size <= limit) total += r.size;
  if (whole) total += info.file_size;
  return total;
}

struct InspectArgs {
  std::string hef;
  bool json = false, verify_all = false, no_progress = false;
};

int inspect(const InspectArgs& a) {
  Opened h = open_hef(a.hef);
  const bool all = a.verify_all;
  const uint64_t limit = all ? UINT64_MAX : kDefaultHashLimit;
  // A bar only for work worth watching (the whole file, or big resources).
  const uint64_t to_hash = hashed_bytes(h.info, limit, all);
  core::Progress progress("verifying checksums", to_hash, !a.no_progress && to_hash > kDefaultHashLimit);
  const hef::ChecksumReport sums =
      hef::verify_checksums(*h.src, h.info, limit, all, [&](uint64_t n) { progress.update(n); });
  progress.finish();
  if (a.json)
    std::cout << core::json_text(hef::inspect_report_json(h.info, sums), 2) << "\n";
  else
    std::cout << hef::inspect_report_text(h.info, sums);
  return sums.any_mismatch() ? static_cast<int>(ExitCode::failure) : 0;
}

struct CheckArgs {
  std::string hef, manifest, hailort;
  bool json = false, verify_all = false, optimize_memory_on_device = false, genai_only = false;
};

int check(const CheckArgs& a, Invocation& inv) {
  hef::ContractOptions opt;
  if (inv.command().count("--manifest")) {
    // A missing or mistyped field is exit 3 (the typed reader).
    opt.manifest = core::read_manifest(a.manifest);
    opt.manifest_path = a.manifest;
  }
  if (a.verify_all) opt.checksum_limit = UINT64_MAX;
  if (inv.command().count("--hailort")) opt.hailort = hef::parse_hailort_version(a.hailort);
  opt.optimize_memory_on_device = a.optimize_memory_on_device;
  opt.hailo_ollama = !a.genai_only;
  Opened h = open_hef(a.hef);
  const core::rules::Report rep = hef::check_hef_contract(*h.src, h.info, opt);
  if (a.json) {
    std::cout << core::json_text(core::rules::report_json(rep), 2) << "\n";
  } else {
    std::cout << core::rules::report_text(rep);
    // What comes after a passed check: the store hailo-ollama serves from.
    if (rep.errors() == 0)
      std::cout << "next: llm2hef package " << a.hef << " --manifest "
                << (opt.manifest_path.empty() ? std::string("OUT/manifest.json") : opt.manifest_path)
                << " --model NAME[:TAG]   (on the device running hailo-ollama; docs/package.md)\n";
  }
  return rep.errors() > 0 ? static_cast<int>(ExitCode::failure) : 0;
}

struct SetConfigArgs {
  std::string hef, config, output;
  bool json = false, force = false, genai_only = false, no_progress = false;
};

int set_config(const SetConfigArgs& a) {
  const std::string& out = a.output;
  const std::string& cfg_path = a.config;
  core::check_file_output(out, a.force, {{"the HEF", a.hef, {}}, {"the new config (NEW_CONFIG.json)", cfg_path, {}}});
  // A regular file only (a FIFO would block), and no larger than the HEF's
  // own limit for a JSON resource.
  const std::string config_text = core::RegularFile(cfg_path).read_all(sdk::JsonLimits::kSmallFileBytes);
  core::Progress progress("writing " + out, 1, !a.no_progress);
  const hef::SetConfigResult r = hef::set_hailo_config(
      a.hef, config_text, out, a.force,
      [&](uint64_t done, uint64_t total) {
        progress.set_total(total);
        progress.update(done);
      },
      !a.genai_only);
  progress.finish();
  for (const auto& f : r.findings)
    std::cerr << core::rules::severity_name(f.severity) << " " << core::rules::finding_tag(f) << " " << f.message
              << "\n";
  if (!r.findings.empty()) std::cerr << "sections cited refer to " << core::contract_doc_path().string() << "\n";
  if (a.json) {
    json findings = json::array();
    for (const auto& f : r.findings) findings.push_back(core::rules::finding_json(f));
    const json doc{{"input", a.hef},
                   {"output", out},
                   {"old_size", r.old_size},
                   {"new_size", r.new_size},
                   {"config_offset", r.config_offset},
                   {"config_size", r.config_size},
                   {"config_xxh3", hef::hex64(r.config_xxh3)},
                   {"dead_bytes", r.dead_bytes},
                   {"dropped_bytes", r.dropped_bytes},
                   {"moved", r.moved},
                   {"findings", findings},
                   {"contract_doc", core::contract_doc_path().string()}};
    std::cout << core::json_text(doc, 2) << "\n";
  } else {
    std::cout << "wrote " << out << " (" << r.new_size << " bytes): hailo-config.json " << r.config_size
              << " bytes at offset " << r.config_offset << ", xxh3 " << hef::hex64(r.config_xxh3);
    if (!r.moved.empty()) {
      std::cout << "; moved (bytes unchanged):";
      for (const auto& m : r.moved) std::cout << " " << m;
    }
    if (r.dead_bytes > 0) std::cout << "; the previous " << r.dead_bytes << " bytes stay as dead space";
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

void add_hef_commands(CommandLine& cli) {
  CLI::App* group = cli.add_group(cli.root(), "hef", kHefHelp);

  auto inspect_args = std::make_shared<InspectArgs>();
  CLI::App* app =
      cli.add_command(*group, "inspect", kInspectHelp, [inspect_args](Invocation&) { return inspect(*inspect_args); });
  app->add_option("FILE", inspect_args->hef)->required();
  OptionRows& inspect_rows = cli.options(*app, 18);
  inspect_rows.add(app->add_flag("--json", inspect_args->json), "",
                   "machine-readable output on stdout; its \"ok\" is false when\n"
                   "a checksum does not match");
  inspect_rows.add(app->add_flag("--verify-all", inspect_args->verify_all), "",
                   "hash every resource and the whole file");
  inspect_rows.add(app->add_flag("--no-progress", inspect_args->no_progress), "",
                   "no progress bar (drawn only on a terminal anyway)");

  auto check_args = std::make_shared<CheckArgs>();
  app = cli.add_command(*group, "check", kCheckHelp, [check_args](Invocation& inv) { return check(*check_args, inv); });
  app->add_option("FILE", check_args->hef)->required();
  OptionRows& check_rows = cli.options(*app, 20);
  check_rows.add(app->add_option("--manifest", check_args->manifest), "FILE",
                 "the manifest.json `llm2hef export` wrote");
  check_rows.add(app->add_option("--hailort", check_args->hailort), "X.Y",
                 "the HailoRT version on the device (default 5.2, the\n"
                 "version hailo-contract.md documents)");
  check_rows.add(app->add_flag("--optimize-memory-on-device", check_args->optimize_memory_on_device), "",
                 "\n"
                 "the HEF will be loaded with LLMParams'\n"
                 "optimize_memory_on_device=True (tokenizer and embeddings\n"
                 "kept on the host); hailort's default, and hailo-ollama's,\n"
                 "is False");
  check_rows.add(app->add_flag("--genai-only", check_args->genai_only), "",
                 "the HEF is loaded through hailort's genai API only, never\n"
                 "served by hailo-ollama: rule chat-template-ollama does not\n"
                 "run");
  check_rows.add(app->add_flag("--json", check_args->json), "",
                 "{\"file\", \"ok\", \"errors\", \"warnings\", \"findings\": [{\"rule\",\n"
                 "\"section\", \"severity\" (error, warning, info), \"message\"}],\n"
                 "\"passed\" (rules that passed), \"derived\", \"contract_doc\"\n"
                 "(the hailo-contract.md the sections refer to)}; ok is\n"
                 "true when there is no error");
  check_rows.add(app->add_flag("--verify-all", check_args->verify_all), "", "hash every resource, however large");

  auto set_config_args = std::make_shared<SetConfigArgs>();
  app = cli.add_command(*group, "set-config", kSetConfigHelp,
                        [set_config_args](Invocation&) { return set_config(*set_config_args); });
  app->add_option("FILE", set_config_args->hef)->required();
  app->add_option("NEW_CONFIG.json", set_config_args->config)->required();
  OptionRows& set_config_rows = cli.options(*app, 20);
  set_config_rows.add(app->add_option("-o,--output", set_config_args->output)->required(), "OUT",
                      "the new HEF (must differ from FILE)");
  set_config_rows.add(app->add_flag("--force", set_config_args->force), "", "replace OUT if it exists");
  set_config_rows.add(app->add_flag("--genai-only", set_config_args->genai_only), "",
                      "OUT is loaded through hailort's genai API only, never\n"
                      "served by hailo-ollama (as `hef check --genai-only`)");
  set_config_rows.add(app->add_flag("--json", set_config_args->json), "", "a JSON summary on stdout");
  set_config_rows.add(app->add_flag("--no-progress", set_config_args->no_progress), "",
                      "no progress bar (drawn only on a terminal anyway)");
}

}  // namespace llm2hef::cli
