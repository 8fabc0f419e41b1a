#include "llm2hef/core/hef/hef_contract.hpp"

#include "hailo_config_rules.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "llm2hef/core/runtime/hailo_config.hpp"
#include "llm2hef/core/runtime/hef_names.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core::hef {
// The rules and the hailort v5.2.0 code each one follows are listed in
// docs/hef.md; every message names the hailort behaviour and its source.

using nlohmann::json;
using rules::Rule;
using rules::RuleOut;
using rules::Severity;

namespace {

// The default suffixes are the runtime contract's DFC layer names (section 9).
const std::vector<std::pair<std::string, std::string>> kDefaultSuffixes = [] {
  std::vector<std::pair<std::string, std::string>> suffixes;
  for (const sdk::RuntimeInput& input : sdk::kRuntimeInputs) suffixes.emplace_back(input.role, input.dfc_layer);
  return suffixes;
}();

// The contract's entry for a role of the suffix table (its roles are the table's).
const sdk::RuntimeInput& contract_of(const std::string& role) { return *sdk::find_runtime_input(role); }
bool is_embeddings(const std::string& role) { return contract_of(role).shape == sdk::InputShape::embeddings; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string shape_text(const EdgeLayer& e) {
  return std::to_string(e.height) + "x" + std::to_string(e.width) + "x" + std::to_string(e.features);
}

// ---- what several rules read, derived once ----------------------------------

struct HefFacts {
  HefFacts(const ByteSource& s, const HefInfo& i, const ContractOptions& o)
      : src(s), info(i), opt(o), header(i.header) {}
  const ByteSource& src;
  const HefInfo& info;
  const ContractOptions& opt;
  const HefHeader& header;
  const NetworkGroup* prefill = nullptr;
  const NetworkGroup* tbt = nullptr;
  std::map<std::string, const Resource*> res;  // the four genai resources, null when missing
  ConfigText config;
  HailoPreProcessParams pp;  // hailo-config's pre_process_params, empty when it has none
  // hailo-config's values, or the runtime's defaults where it leaves them out.
  int64_t cache = 0, heads = 0, kv_heads = 0, prefill_rows = 0;
  std::vector<std::pair<std::string, std::string>> suffixes;  // role -> input layer suffix
  int64_t theta_len = -1;  // -1: rope_theta_data.bin is missing or not a float32 vector
  int64_t hidden = -1;     // width of the first embeddings input found (prefill group first)
  int64_t vocab = -1;      // rows of embeddings.bin, when they divide evenly

  std::vector<const NetworkGroup*> kv_groups() const {
    std::vector<const NetworkGroup*> out;
    for (const NetworkGroup* g : {prefill, tbt})
      if (g) out.push_back(g);
    return out;
  }
  // " (runtime default)" where hailo-config leaves a value out: messages say where a number came from.
  static std::string origin(const std::optional<int64_t>& value) {
    return value ? std::string() : " (runtime default)";
  }
};

const EdgeLayer* input_with_suffix(const NetworkGroup& g, const std::string& suffix) {
  const EdgeLayer* in = nullptr;
  for (const auto& e : g.inputs)
    if (ends_with(e.name, suffix)) in = &e;
  return in;
}

HefFacts derive_facts(const ByteSource& src, const HefInfo& info, const ContractOptions& opt) {
  HefFacts f(src, info, opt);
  f.prefill = info.group_with_suffix(kPrefillGroupSuffix);
  f.tbt = info.group_with_suffix(kTbtGroupSuffix);
  for (const char* name : {kResourceEmbeddings, kResourceTheta, kResourceTokenizer, kResourceHailoConfig})
    f.res[name] = info.resource(name);

  std::optional<std::string> config_text = opt.config_override;
  if (!config_text && f.res[kResourceHailoConfig])
    config_text = read_resource(src, *f.res[kResourceHailoConfig], sdk::JsonLimits::kSmallFileBytes);
  f.config = parse_config_text(config_text ? &*config_text : nullptr,
                               opt.config_override ? "new hailo-config.json" : kResourceHailoConfig);
  f.config.served_by_hailo_ollama = opt.hailo_ollama;
  const HailoConfig& cfg = f.config.config;
  if (cfg.pre_process_params) f.pp = *cfg.pre_process_params;
  f.cache = f.pp.kv_cache_size.value_or(kRuntimeDefaultCacheSize);
  f.heads = f.pp.num_attention_heads.value_or(kRuntimeDefaultAttentionHeads);
  f.kv_heads = f.pp.num_key_value_heads.value_or(kRuntimeDefaultKeyValueHeads);
  f.prefill_rows = f.pp.prefill_input_tokens_count.value_or(kRuntimeDefaultPrefillTokens);

  f.suffixes = kDefaultSuffixes;
  if (cfg.input_layers_names_suffixes)
    for (auto& [role, suffix] : f.suffixes)
      if (const std::string* given = cfg.input_layers_names_suffixes->find(role)) suffix = *given;

  if (const Resource* theta = f.res[kResourceTheta]; theta && theta->size > 0 && theta->size % 4 == 0)
    f.theta_len = static_cast<int64_t>(theta->size / 4);
  for (const auto& [role, suffix] : f.suffixes)
    if (is_embeddings(role))
      for (const NetworkGroup* g : f.kv_groups())
        if (const EdgeLayer* in = input_with_suffix(*g, suffix); in && f.hidden < 0) f.hidden = in->features;
  if (const Resource* emb = f.res[kResourceEmbeddings]; emb && f.hidden > 0) {
    const uint64_t row = static_cast<uint64_t>(f.hidden) * 2;
    if (emb->size > 0 && emb->size % row == 0) f.vocab = static_cast<int64_t>(emb->size / row);
  }
  return f;
}

json derived_values(const HefFacts& f) {
  json d = json::object();
  json names = json::array();
  for (const auto& g : f.info.network_groups) names.push_back(g.name);
  d["network_groups"] = names;
  d["hailort"] = std::to_string(f.opt.hailort[0]) + "." + std::to_string(f.opt.hailort[1]);
  d["kv_cache_size"] = f.cache;
  d["num_attention_heads"] = f.heads;
  d["num_key_value_heads"] = f.kv_heads;
  d["prefill_input_tokens_count"] = f.prefill_rows;
  d["theta_length"] = f.theta_len >= 0 ? json(f.theta_len) : json(nullptr);
  d["hidden"] = f.hidden >= 0 ? json(f.hidden) : json(nullptr);
  d["vocab"] = f.vocab >= 0 ? json(f.vocab) : json(nullptr);
  d["output_shards"] = f.prefill ? json(f.prefill->outputs.size()) : json(nullptr);
  return d;
}

// ---- what genai needs of the file ---------------------------------------------

bool header_v3(const HefFacts& f) { return f.header.version == 3; }

void check_hef_version(const HefFacts& f, RuleOut& out) {
  if (f.header.version != 3)
    out.fail("header version " + std::to_string(f.header.version) +
             ": genai loads version 3 only; the client hashes the HEF (Hef::hash, hef.cpp 4266-4268) and splits "
             "it for transfer (Hef::Impl::parse_hef_for_transfer, hef.cpp 4295-4297), both refusing older "
             "headers (DFC 5.x writes version 3)");
}

void check_proto_hash(const HefFacts& f, RuleOut& out) {
  if (f.header.proto_xxh3 == 0)
    out.fail(
        "proto_xxh3_64bits is 0: the genai server runs Hef::create as soon as the header+proto+padding chunk "
        "arrives (llm_server.cpp 472-475), and without a proto hash Hef::create checks the whole-file XXH3 "
        "and the file size (hef.cpp 598-604), which a partly received buffer cannot pass; `llm2hef hef "
        "set-config` writes one");
}

// ---- target device and extensions ----------------------------------------------

void check_hw_arch(const HefFacts& f, RuleOut& out) {
  const auto& arch = f.info.hw_arch;
  if (!arch) {
    out.fail(
        "the proto header has no hw_arch: hailort reads 0 (HAILO8), which runs on the Hailo-8 only "
        "(DeviceBase::hef_arch_to_device_compatible_archs, device_internal.cpp 736-762)");
  } else if (!hw_arch_runs_on_hailo10h(*arch)) {
    const std::string devices = hw_arch_devices(*arch);
    out.fail("hw_arch " + std::to_string(*arch) + " (" + hw_arch_name(*arch) + ") " +
             (devices.empty() ? std::string("maps to no device") : "runs on " + devices + " only") +
             " (DeviceBase::hef_arch_to_device_compatible_archs, device_internal.cpp 736-762); a Hailo-10H "
             "HEF has 103 (HAILO1XH)");
  }
}

void check_extensions(const HefFacts& f, RuleOut& out) {
  for (const auto& e : f.info.extensions)
    if (!extension_supported_by_hailort(e.type)) {
      const std::string known = extension_type_name(e.type);
      out.fail("extension type " + std::to_string(e.type) + " ('" + e.name + "'" +
               (known.empty() ? std::string() : ", " + known) +
               ") is not in hailort's SUPPORTED_EXTENSIONS (hef_internal.hpp 202-237): Hef::create refuses "
               "\"non-compatible HEF with the following unsupported extensions\" (hef.cpp 445-456)");
    }
  if (f.info.format_version.value_or(0) == 0)
    out.fail(
        "the proto header's version (field 4) is 0: hailort then ignores `extensions` and reads the deprecated "
        "included_features (hef.cpp 1925-1952), so PERIPH_CALCULATION_IN_HAILORT is off and Hef::create "
        "refuses the HEF as outdated (hef.cpp 458-459)");
  else if (!f.info.has_extension(kExtPeriphCalculationInHailort))
    out.fail(
        "extension PERIPH_CALCULATION_IN_HAILORT (26) is missing: Hef::create refuses the HEF (\"this HEF is "
        "outdated and no longer supported\", hef.cpp 458-459)");
}

void check_strict_version(const HefFacts& f, RuleOut& out) {
  if (!f.info.has_extension(kExtStrictRuntimeVersioning)) return;
  const auto& sdk_version = f.info.sdk_version;
  const uint32_t major = sdk_version ? (*sdk_version)[0] : 0;
  const uint32_t minor = sdk_version ? (*sdk_version)[1] : 0;
  const auto& rt = f.opt.hailort;
  if (major != rt[0] || minor != rt[1])
    out.fail("the HEF carries STRICT_RUNTIME_VERSIONING (35) and was written by DFC " + std::to_string(major) + "." +
             std::to_string(minor) + (sdk_version ? "" : " (no sdk_version in the header)") + "; HailoRT " +
             std::to_string(rt[0]) + "." + std::to_string(rt[1]) +
             " refuses to configure it (major.minor must be equal, Hef::Impl::validate_hef_version, hef.cpp "
             "3588-3602) unless HAILO_IGNORE_STRICT_VERSION is set on the device; --hailort X.Y names the "
             "device's HailoRT version");
}

void check_net_flow(const HefFacts& f, RuleOut& out) {
  const bool net_flow = f.info.has_extension(kExtHailoNetFlow);
  for (const auto& g : f.info.network_groups) {
    if (net_flow && !g.core_op_in_ops)
      out.fail("network group '" + g.name +
               "' has no ops[].core_op although the HEF carries HAILO_NET_FLOW (13): "
               "hailort takes the core op from ops[] without checking that one exists (only a debug assert, hef.cpp "
               "945-953), so a release build reads past the list");
    if (!net_flow && g.top_level_contexts == 0 && g.core_op_in_ops)
      out.fail("network group '" + g.name +
               "' keeps its contexts under ops[].core_op, but without HAILO_NET_FLOW "
               "(13) hailort reads the group's own contexts, which are empty (hef.cpp 945-1016)");
  }
}

// ---- network groups as hailort names them ----------------------------------------

void check_group_names(const HefFacts& f, RuleOut& out) {
  for (const auto& g : f.info.network_groups) {
    if (g.name.empty())
      out.fail("network group [" + std::to_string(g.index) + "] has no " + g.name_source +
               ": that is the only name hailort reads (hef.cpp 3498-3504, 3835-3847)" +
               (g.field10_name.empty() ? std::string()
                                       : "; field 10 network_group_name '" + g.field10_name + "' is never read"));
    else if (!g.field10_name.empty() && g.field10_name != g.name)
      out.note("network group '" + g.name + "' also carries '" + g.field10_name +
               "' in field 10 network_group_name, which hailort v5.2.0 never reads; it is judged by '" + g.name + "'");
  }
}

void check_group_count(const HefFacts& f, RuleOut& out) {
  if (f.info.network_groups.size() != 2)
    out.fail("the HEF has " + std::to_string(f.info.network_groups.size()) +
             " network groups; the genai server picks groups by name suffix, \"prefill\" and \"tbt\" only with "
             "exactly two (llm_server.cpp 46-68): it needs <x>__prefill and <x>__tbt");
}

void check_kv_groups(const HefFacts& f, RuleOut& out) {
  if (!f.prefill)
    out.fail(
        "no network group name ends in __prefill: the server fails with \"Model doesnt have NG with "
        "name-suffix\" (llm_inference_manager.cpp 22-31)");
  if (!f.tbt) out.fail("no network group name ends in __tbt (the token-by-token group)");
  if (f.prefill && f.tbt &&
      f.prefill->name.substr(0, f.prefill->name.size() - std::string_view(kPrefillGroupSuffix).size()) !=
          f.tbt->name.substr(0, f.tbt->name.size() - std::string_view(kTbtGroupSuffix).size()))
    out.warn("the groups '" + f.prefill->name + "' and '" + f.tbt->name + "' do not share one prefix");
}

// ---- resources and checksums ------------------------------------------------------

void check_resources(const HefFacts& f, RuleOut& out) {
  for (const char* name : {kResourceEmbeddings, kResourceTheta, kResourceTokenizer, kResourceHailoConfig})
    if (!f.res.at(name))
      out.fail("resource " + std::string(name) +
               " is missing: the genai server's get_external_resources returns "
               "HAILO_NOT_FOUND (hef.cpp 4023-4047)");
}

void check_checksums(const HefFacts& f, RuleOut& out) {
  for (const auto& r : f.info.resources) {
    if (r.xxhash == 0 || r.size > f.opt.checksum_limit) continue;
    if (xxh3_of_range(f.src, r.file_offset, r.size) != r.xxhash)
      out.fail("resource '" + r.name + "': its bytes do not match the stored XXH3; hailort refuses it (\"Resource '" +
               r.name + "' checksum does not match\", hef.cpp 4036-4040)");
  }
  // The whole-file sum hailort verifies at load: v0 MD5, v1 CRC-32, v2 and
  // v3-without-proto-hash XXH3 (hef.cpp 556-606).
  const HefHeader& h = f.header;
  if (h.version == 0) {
    out.note("the v0 header's MD5 is not verified by llm2hef (DFC 5.x writes version 3 only)");
  } else if (h.version < 3 || h.proto_xxh3 == 0) {
    if (f.info.file_size > f.opt.checksum_limit) {
      out.note("the whole-file checksum hailort verifies at load was not computed (use --verify-all)");
    } else {
      const ChecksumReport sums = verify_checksums(f.src, f.info, 0, true);
      if (sums.file == ChecksumStatus::mismatch)
        out.fail(std::string("the header's whole-file ") + (h.version == 1 ? "CRC-32" : "XXH3") +
                 " does not match the bytes after the header: Hef::create refuses the file (\"HEF " +
                 (h.version == 1 ? "crc" : "xxhash") + " does not match\", hef.cpp 402-443)");
    }
  }
}

// optimize_memory_on_device: the client keeps tokenizer.json and
// embeddings.bin, the server allocates file size minus their sizes and writes
// every other chunk at its absolute offset without a bounds check. With the
// flag false (LLMParams' default, and what hailo-ollama uses) nothing is kept
// on the host, the buffer is the whole file and every chunk fits: the order
// then costs nothing, so it is an error only when the user says the flag
// will be set.
void check_resource_order(const HefFacts& f, RuleOut& out) {
  const HefHeader& h = f.header;
  uint64_t local = 0;
  for (const char* name : {kResourceTokenizer, kResourceEmbeddings})
    if (const Resource* r = f.res.at(name)) local += r->size;
  const uint64_t buffer = f.info.file_size - std::min(local, f.info.file_size);
  std::vector<std::pair<std::string, uint64_t>> chunks = {{"header+proto+padding", h.zero_point()},
                                                          {"CCWs", h.zero_point() + (h.ccws_size - h.padding_size)}};
  for (const auto& r : f.info.resources)
    if (r.name != kResourceTokenizer && r.name != kResourceEmbeddings)
      chunks.push_back({r.name, r.file_offset + r.size});
  for (const auto& [name, end] : chunks) {
    if (end <= buffer) continue;
    const std::string message =
        "with optimize_memory_on_device=True the server allocates the file size minus tokenizer.json and "
        "embeddings.bin (" +
        std::to_string(buffer) +
        " bytes, hef.cpp 4359-4360) and writes each chunk at "
        "its absolute offset without a bounds check (genai/utils.hpp 219-224): '" +
        name + "' ends at byte " + std::to_string(end) +
        ", past that buffer; tokenizer.json and embeddings.bin must be the last "
        "bytes of the file";
    if (f.opt.optimize_memory_on_device)
      out.fail(message);
    else
      out.warn(message +
               ". Harmless with the default optimize_memory_on_device=False (llm.hpp 42; "
               "hailo-ollama's value-initialized LLMParams, generation_context.cpp 124), which sends the whole "
               "file; an error with --optimize-memory-on-device; `llm2hef hef set-config` with the same "
               "hailo-config.json writes a copy in that order");
  }
}

// ---- the genai resources' contents ------------------------------------------------

void check_tokenizer(const HefFacts& f, RuleOut& out) {
  const Resource* r = f.res.at(kResourceTokenizer);
  if (!r) return;
  const std::string text = read_resource(f.src, *r, sdk::JsonLimits::kTokenizerBytes);
  try {
    // Only whether it parses and has "model" matters here: no member is built.
    const json tok = sdk::parse_json_without(text, kResourceTokenizer, {{"*"}}, sdk::JsonLimits::tokenizer());
    if (!tok.is_object() || !tok.contains("model"))
      out.fail("tokenizer.json is JSON but not a Hugging Face tokenizers file (no \"model\")");
  } catch (const BadInput& e) {
    out.fail(std::string("tokenizer.json does not parse: ") + e.what());
  }
}

void check_theta_size(const HefFacts& f, RuleOut& out) {
  const Resource* r = f.res.at(kResourceTheta);
  if (r && f.theta_len < 0)
    out.fail("rope_theta_data.bin is " + std::to_string(r->size) + " bytes; expected a non-empty float32 vector");
}

void check_theta_halves(const HefFacts& f, RuleOut& out) {
  if (f.theta_len > 0 && f.theta_len % 2 != 0)
    out.fail("theta length " + std::to_string(f.theta_len) +
             " is odd; the runtime fills two halves of T/2 columns, so the last is never written");
}

// ---- the six inputs of both groups, found by suffix ------------------------------

void check_inputs(const HefFacts& f, RuleOut& out) {
  for (const NetworkGroup* g : f.kv_groups())
    for (const auto& [role, suffix] : f.suffixes) {
      const EdgeLayer* in = input_with_suffix(*g, suffix);
      if (!in)
        out.fail(g->name + ": no input named *" + suffix + " (role " + role + ")");
      else if (is_embeddings(role) && in->data_bytes != 2)
        out.fail(in->name + " is " + data_type_name(in->data_bytes) +
                 "; the runtime copies uint16 embedding rows into it, so it must be UINT16");
    }
}

// The width one role's input must have, with the reason; 0 when it cannot be told.
std::pair<int64_t, std::string> expected_width(const HefFacts& f, const std::string& role) {
  const sdk::RuntimeInput& contract = contract_of(role);
  if (contract.shape == sdk::InputShape::embeddings) return {f.hidden, "the embeddings width of the other group"};
  if (contract.shape == sdk::InputShape::mask)
    return {f.heads * f.cache, "num_attention_heads " + std::to_string(f.heads) + f.origin(f.pp.num_attention_heads) +
                                   " x kv_cache_size " + std::to_string(f.cache) + f.origin(f.pp.kv_cache_size)};
  if (f.theta_len <= 0) return {0, ""};
  if (contract.tiling == sdk::PeTiling::q_heads)
    return {f.heads * f.theta_len, "num_attention_heads " + std::to_string(f.heads) +
                                       f.origin(f.pp.num_attention_heads) + " x theta length " +
                                       std::to_string(f.theta_len)};
  return {f.kv_heads * f.theta_len, "num_key_value_heads " + std::to_string(f.kv_heads) +
                                        f.origin(f.pp.num_key_value_heads) + " x theta length " +
                                        std::to_string(f.theta_len)};
}

void check_input_widths(const HefFacts& f, RuleOut& out) {
  for (const NetworkGroup* g : f.kv_groups())
    for (const auto& [role, suffix] : f.suffixes) {
      const EdgeLayer* in = input_with_suffix(*g, suffix);
      if (!in) continue;  // reported by "inputs"
      const auto [width, why] = expected_width(f, role);
      if (width > 0 && in->features != width)
        out.fail(in->name + " (" + role + ") is " + std::to_string(in->features) + " features wide; expected " +
                 std::to_string(width) + " = " + why);
      // Rows per run: the prefill chunk, or one token.
      if (g == f.prefill && static_cast<int64_t>(in->width) != f.prefill_rows)
        out.fail(in->name + " carries " + std::to_string(in->width) + " rows (" + shape_text(*in) +
                 "); prefill_input_tokens_count is " + std::to_string(f.prefill_rows) +
                 f.origin(f.pp.prefill_input_tokens_count));
      if (g == f.tbt && in->width != 1)
        out.warn(in->name + " carries " + std::to_string(in->width) + " rows (" + shape_text(*in) +
                 "); token-by-token runs feed one");
    }
}

// ---- vocabulary: embeddings.bin, token ids, logits ---------------------------------

void check_embeddings(const HefFacts& f, RuleOut& out) {
  const Resource* r = f.res.at(kResourceEmbeddings);
  if (r && f.hidden > 0 && f.vocab < 0)
    out.fail("embeddings.bin is " + std::to_string(r->size) + " bytes, not a multiple of hidden " +
             std::to_string(f.hidden) + " x 2 bytes (uint16 rows)");
}

// Sampling picks ids below vocab, so a larger stop id never matches, and
// eos_token_id seeds the recovery tokens (llm_server.cpp 494).
void check_token_ids(const HefFacts& f, RuleOut& out) {
  if (f.vocab <= 0) return;
  // An id of the wrong JSON type, or beyond int64_t, is not typed (reported by hailo-config).
  auto in_vocab = [&](const std::string& key, int64_t id) {
    if (id < 0 || id >= f.vocab)
      out.fail(key + " " + std::to_string(id) + " is outside the vocabulary of embeddings.bin (" +
               std::to_string(f.vocab) + " rows): the server samples ids below " + std::to_string(f.vocab) +
               ", so it never matches" +
               (key == hailo_config_key::kEosTokenId
                    ? "; as the recovery token (llm_server.cpp 494) its embedding row does not exist"
                    : ""));
  };
  const HailoConfig& cfg = f.config.config;
  const std::pair<const char*, const std::optional<int64_t>&> ids[] =
      {{hailo_config_key::kEosTokenId, cfg.eos_token_id},
       {hailo_config_key::kBeginOfReasoningTokenId, cfg.begin_of_reasoning_token_id},
       {hailo_config_key::kEndOfReasoningTokenId, cfg.end_of_reasoning_token_id}};
  for (const auto& [key, id] : ids)
    if (id) in_vocab(key, *id);
  if (cfg.stop_token_id)
    for (size_t i = 0; i < cfg.stop_token_id->size(); ++i)
      in_vocab(std::string(hailo_config_key::kStopTokenId) + "[" + std::to_string(i) + "]", (*cfg.stop_token_id)[i]);
}

// Logits shards of equal size...
void check_output_frames(const HefFacts& f, RuleOut& out) {
  for (const NetworkGroup* g : f.kv_groups()) {
    if (g->outputs.empty()) {
      out.fail(g->name + " has no outputs");
      continue;
    }
    const EdgeLayer& first = g->outputs.front();
    for (const auto& o : g->outputs)
      if (o.frame_elements() != first.frame_elements())
        out.fail(g->name + ": output " + o.name + " has " + std::to_string(o.frame_elements()) + " values per frame, " +
                 first.name + " has " + std::to_string(first.frame_elements()) +
                 "; the runtime requires equal frame sizes");
  }
}

// ... summing to the vocabulary.
void check_output_total(const HefFacts& f, RuleOut& out) {
  if (f.vocab <= 0) return;
  for (const NetworkGroup* g : f.kv_groups()) {
    if (g->outputs.empty()) continue;  // reported above
    uint64_t total = 0;
    for (const auto& o : g->outputs) total += o.frame_elements();
    if (total != static_cast<uint64_t>(f.vocab))
      out.fail(g->name + ": outputs sum to " + std::to_string(total) + " logits; embeddings.bin has " +
               std::to_string(f.vocab) + " rows (the vocabulary)");
  }
}

// ---- with --manifest: agreement with what llm2hef exported ------------------------

bool has_manifest(const HefFacts& f) { return f.opt.manifest.has_value(); }

std::string manifest_label(const HefFacts& f) {
  return f.opt.manifest_path.empty() ? "manifest.json" : f.opt.manifest_path;
}

// `what` must equal `expected` (skipped when the HEF did not tell, actual < 0).
void agree(const HefFacts& f, RuleOut& out, const std::string& what, int64_t actual, int64_t expected) {
  if (actual >= 0 && actual != expected)
    out.fail(what + ": the HEF has " + std::to_string(actual) + ", " + manifest_label(f) + " says " +
             std::to_string(expected));
}

void check_manifest_numbers(const HefFacts& f, RuleOut& out) {
  const ExportManifest& m = *f.opt.manifest;
  agree(f, out, "dims.hidden", f.hidden, m.dims.hidden);
  agree(f, out, "dims.vocab", f.vocab, m.dims.vocab);
  agree(f, out, "theta_length", f.theta_len, m.theta_length);
  agree(f, out, "cache_size (hailo-config kv_cache_size)", f.cache, m.cache_size);
  agree(f, out, "prefill (hailo-config prefill_input_tokens_count)", f.prefill_rows, m.prefill);
  agree(f, out, "pe_tiles.q (hailo-config num_attention_heads)", f.heads, m.pe_q_tiles);
  agree(f, out, "pe_tiles.k (hailo-config num_key_value_heads)", f.kv_heads, m.pe_k_tiles);
}

// lm_head_shards: the exported logits widths, one per output.
void check_manifest_shards(const HefFacts& f, RuleOut& out) {
  const std::multiset<uint64_t> want(f.opt.manifest->lm_head_shards.begin(), f.opt.manifest->lm_head_shards.end());
  for (const NetworkGroup* g : f.kv_groups()) {
    std::multiset<uint64_t> have;
    for (const auto& o : g->outputs) have.insert(o.frame_elements());
    if (want != have) {
      std::string w, h;
      for (auto x : want) w += (w.empty() ? "" : ", ") + std::to_string(x);
      for (auto x : have) h += (h.empty() ? "" : ", ") + std::to_string(x);
      out.fail(g->name + ": logits outputs [" + h + "]; " + manifest_label(f) + " lm_head_shards [" + w + "]");
    }
  }
}

void check_manifest_groups(const HefFacts& f, RuleOut& out) {
  const std::vector<std::string>& groups = f.opt.manifest->dfc.network_groups;
  if (groups.empty()) return;
  const std::set<std::string> want(groups.begin(), groups.end());
  std::set<std::string> have;
  for (const auto& g : f.info.network_groups) have.insert(g.name);
  if (want != have) {
    std::string w, h;
    for (const auto& s : want) w += (w.empty() ? "" : ", ") + s;
    for (const auto& s : have) h += (h.empty() ? "" : ", ") + s;
    out.fail("network groups: the HEF has [" + h + "], " + manifest_label(f) + " says [" + w + "]");
  }
}

void check_manifest_has_groups(const HefFacts& f, RuleOut& out) {
  if (f.opt.manifest->dfc.network_groups.empty()) out.fail(manifest_label(f) + ": dfc.network_groups is empty");
}

// ---- the tables, in report order --------------------------------------------------
// Sections are hailo-contract.md's; docs/hef.md lists each rule with its hailort source.

// Before hailo-config.json's own rules (hailo_config_rules.cpp).
const std::vector<Rule<HefFacts>> kFileRules = {
    {"hef-version", "9", Severity::error, check_hef_version},
    {"proto-hash", "9", Severity::error, check_proto_hash, header_v3},
    {"hw-arch", "10", Severity::error, check_hw_arch},
    {"extensions", "10", Severity::error, check_extensions},
    {"strict-version", "10", Severity::error, check_strict_version},
    {"net-flow", "10", Severity::error, check_net_flow},
    {"network-groups", "9", Severity::error, check_group_names},
    {"network-groups", "8, 9", Severity::error, check_group_count},
    {"network-groups", "9", Severity::error, check_kv_groups},
    {"resources", "6", Severity::error, check_resources},
    {"checksums", "10", Severity::error, check_checksums},
    {"resource-order", "9", Severity::error, check_resource_order, header_v3},
};

// After them.
const std::vector<Rule<HefFacts>> kContentRules = {
    {"tokenizer", "6", Severity::error, check_tokenizer},
    {"theta", "6", Severity::error, check_theta_size},
    {"theta", "9", Severity::error, check_theta_halves},
    {"inputs", "9", Severity::error, check_inputs},
    {"input-widths", "9", Severity::error, check_input_widths},
    {"embeddings", "6", Severity::error, check_embeddings},
    {"token-ids", "6", Severity::error, check_token_ids},
    {"outputs", "9", Severity::error, check_output_frames},
    {"outputs", "6, 9", Severity::error, check_output_total},
    // "": agreement with our own export, not a Hailo rule (printed without a section).
    {"manifest", "", Severity::error, check_manifest_numbers, has_manifest},
    {"manifest", "5", Severity::error, check_manifest_shards, has_manifest},
    {"manifest", "8", Severity::error, check_manifest_groups, has_manifest},
    {"manifest", "", Severity::error, check_manifest_has_groups, has_manifest},
};

}  // namespace

// Their errors depend on hailo-config.json's values: of its own table, the
// rules that refuse it (not the warnings), and of the HEF's, those that
// judge the HEF by what the config says (heads, input suffixes, token ids).
const std::vector<std::string>& config_dependent_rules() {
  static const std::vector<std::string> rules = {"hailo-config", "chat-template", "inputs", "input-widths",
                                                 "token-ids"};
  return rules;
}

std::array<uint32_t, 2> parse_hailort_version(const std::string& text) {
  std::array<uint32_t, 3> v{};
  size_t part = 0, digits = 0;
  for (char ch : text) {
    if (ch == '.' && digits > 0 && part < 2) {
      ++part;
      digits = 0;
    } else if (ch >= '0' && ch <= '9' && digits < 6) {
      v[part] = v[part] * 10 + static_cast<uint32_t>(ch - '0');
      ++digits;
    } else {
      part = 99;
      break;
    }
  }
  if (part < 1 || part > 2 || digits == 0)
    throw UsageError("--hailort '" + text + "': expected the HailoRT version on the device as X.Y (e.g. 5.2)");
  return {v[0], v[1]};
}

rules::Report check_hef_contract(const ByteSource& src, const HefInfo& info, const ContractOptions& opt) {
  rules::Report rep;
  rep.file = info.file;
  const HefFacts facts = derive_facts(src, info, opt);
  rules::RuleRunner runner(rep.findings);
  runner.run(kFileRules, facts);
  runner.run(hailo_config_rule_table(), facts.config);
  runner.run(kContentRules, facts);
  rep.passed = runner.passed();
  rep.derived = derived_values(facts);
  return rep;
}

rules::Report check_hef_file(const std::string& path, const ContractOptions& options) {
  try {
    const auto src = open_file_source(path);
    const HefInfo info = read_hef(*src);
    return check_hef_contract(*src, info, options);
  } catch (const BadInput& e) {
    rules::Report rep;
    rep.file = path;
    rep.findings.push_back({"format", "10", Severity::error, e.what()});
    rep.passed.emplace();
    rep.derived = json::object();
    return rep;
  }
}

}  // namespace llm2hef::core::hef
