#include "llm2hef/core/hef/hef_contract.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core::hef {
// The rules and the hailort v5.2.0 code each one follows are listed in
// docs/hef.md; every message names the hailort behaviour and its source.

using nlohmann::json;

namespace {

// Resource names as the runtime spells them (RT genai constants, section 6).
constexpr const char* kEmbeddings = "embeddings.bin";
constexpr const char* kTheta = "rope_theta_data.bin";
constexpr const char* kTokenizer = "tokenizer.json";
constexpr const char* kHailoConfig = "hailo-config.json";
constexpr uint64_t kMaxJsonResource = 256ull << 20;

// The runtime's defaults when hailo-config leaves a value out (section 6).
constexpr int64_t kDefaultCache = 2048, kDefaultHeads = 12, kDefaultKvHeads = 2, kDefaultPrefill = 96;
// The default suffixes are the runtime contract's DFC layer names (section 9).
const std::vector<std::pair<std::string, std::string>> kDefaultSuffixes = [] {
  std::vector<std::pair<std::string, std::string>> suffixes;
  for (const sdk::RuntimeInput& input : sdk::kRuntimeInputs) suffixes.emplace_back(input.role, input.dfc_layer);
  return suffixes;
}();

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class Checker {
 public:
  explicit Checker(ContractReport& r) : r_(r) {}
  void error(const std::string& rule, const std::string& section, const std::string& msg) {
    r_.findings.push_back({rule, section, Severity::error, msg});
    failed_.insert(rule);
  }
  void warn(const std::string& rule, const std::string& section, const std::string& msg) {
    r_.findings.push_back({rule, section, Severity::warning, msg});
    failed_.insert(rule);
  }
  void info(const std::string& rule, const std::string& section, const std::string& msg) {
    r_.findings.push_back({rule, section, Severity::info, msg});
  }
  void add(const ContractFinding& f) {
    if (f.severity == Severity::error) error(f.rule, f.section, f.message);
    else if (f.severity == Severity::warning) warn(f.rule, f.section, f.message);
    else info(f.rule, f.section, f.message);
  }
  void ran(const std::string& rule) {
    if (!ran_.count(rule)) order_.push_back(rule);
    ran_.insert(rule);
  }
  void finish() {
    for (const auto& rule : order_)
      if (!failed_.count(rule)) r_.passed.push_back(rule);
  }

 private:
  ContractReport& r_;
  std::set<std::string> failed_, ran_;
  std::vector<std::string> order_;
};

std::optional<int64_t> int_at(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key)) return std::nullopt;
  const json& v = obj[key];
  if (v.is_number_integer() || v.is_number_unsigned()) return v.get<int64_t>();
  return std::nullopt;
}

std::string shape_text(const EdgeLayer& e) {
  return std::to_string(e.height) + "x" + std::to_string(e.width) + "x" + std::to_string(e.features);
}

}  // namespace

size_t ContractReport::errors() const {
  size_t n = 0;
  for (const auto& f : findings) n += f.severity == Severity::error;
  return n;
}

size_t ContractReport::warnings() const {
  size_t n = 0;
  for (const auto& f : findings) n += f.severity == Severity::warning;
  return n;
}

size_t ContractReport::errors_in(const std::vector<std::string>& rules) const {
  size_t n = 0;
  for (const auto& f : findings)
    n += f.severity == Severity::error && std::find(rules.begin(), rules.end(), f.rule) != rules.end();
  return n;
}

const std::vector<std::string>& config_dependent_rules() {
  static const std::vector<std::string> rules = {"hailo-config", "inputs", "input-widths", "token-ids"};
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

ContractReport check_hef_contract(const ByteSource& src, const HefInfo& info, const ContractOptions& opt) {
  ContractReport rep;
  rep.file = info.file;
  Checker c(rep);
  json& d = rep.derived;

  const HefHeader& h = info.header;

  // --- what genai needs of the file (section 9) ---
  c.ran("hef-version");
  if (h.version != 3)
    c.error("hef-version", "9",
            "header version " + std::to_string(h.version) +
                ": genai loads version 3 only; the client hashes the HEF (Hef::hash, hef.cpp 4266-4268) and splits "
                "it for transfer (Hef::Impl::parse_hef_for_transfer, hef.cpp 4295-4297), both refusing older "
                "headers (DFC 5.x writes version 3)");
  if (h.version == 3) {
    c.ran("proto-hash");
    if (h.proto_xxh3 == 0)
      c.error("proto-hash", "9",
              "proto_xxh3_64bits is 0: the genai server runs Hef::create as soon as the header+proto+padding chunk "
              "arrives (llm_server.cpp 472-475), and without a proto hash Hef::create checks the whole-file XXH3 "
              "and the file size (hef.cpp 598-604), which a partly received buffer cannot pass; `llm2hef hef "
              "set-config` writes one");
  }

  // --- target device (section 10) ---
  c.ran("hw-arch");
  if (!info.hw_arch) {
    c.error("hw-arch", "10",
            "the proto header has no hw_arch: hailort reads 0 (HAILO8), which runs on the Hailo-8 only "
            "(DeviceBase::hef_arch_to_device_compatible_archs, device_internal.cpp 736-762)");
  } else if (!hw_arch_runs_on_hailo10h(*info.hw_arch)) {
    const std::string devices = hw_arch_devices(*info.hw_arch);
    c.error("hw-arch", "10",
            "hw_arch " + std::to_string(*info.hw_arch) + " (" + hw_arch_name(*info.hw_arch) + ") " +
                (devices.empty() ? std::string("maps to no device") : "runs on " + devices + " only") +
                " (DeviceBase::hef_arch_to_device_compatible_archs, device_internal.cpp 736-762); a Hailo-10H "
                "HEF has 103 (HAILO1XH)");
  }

  // --- extensions (section 10) ---
  c.ran("extensions");
  for (const auto& e : info.extensions)
    if (!extension_supported_by_hailort(e.type)) {
      const std::string known = extension_type_name(e.type);
      c.error("extensions", "10",
              "extension type " + std::to_string(e.type) + " ('" + e.name + "'" +
                  (known.empty() ? std::string() : ", " + known) +
                  ") is not in hailort's SUPPORTED_EXTENSIONS (hef_internal.hpp 202-237): Hef::create refuses "
                  "\"non-compatible HEF with the following unsupported extensions\" (hef.cpp 445-456)");
    }
  if (info.format_version.value_or(0) == 0)
    c.error("extensions", "10",
            "the proto header's version (field 4) is 0: hailort then ignores `extensions` and reads the deprecated "
            "included_features (hef.cpp 1925-1952), so PERIPH_CALCULATION_IN_HAILORT is off and Hef::create "
            "refuses the HEF as outdated (hef.cpp 458-459)");
  else if (!info.has_extension(kExtPeriphCalculationInHailort))
    c.error("extensions", "10",
            "extension PERIPH_CALCULATION_IN_HAILORT (26) is missing: Hef::create refuses the HEF (\"this HEF is "
            "outdated and no longer supported\", hef.cpp 458-459)");

  c.ran("strict-version");
  if (info.has_extension(kExtStrictRuntimeVersioning)) {
    const uint32_t major = info.sdk_version ? (*info.sdk_version)[0] : 0;
    const uint32_t minor = info.sdk_version ? (*info.sdk_version)[1] : 0;
    if (major != opt.hailort[0] || minor != opt.hailort[1])
      c.error("strict-version", "10",
              "the HEF carries STRICT_RUNTIME_VERSIONING (35) and was written by DFC " + std::to_string(major) + "." +
                  std::to_string(minor) + (info.sdk_version ? "" : " (no sdk_version in the header)") +
                  "; HailoRT " + std::to_string(opt.hailort[0]) + "." + std::to_string(opt.hailort[1]) +
                  " refuses to configure it (major.minor must be equal, Hef::Impl::validate_hef_version, hef.cpp "
                  "3588-3602) unless HAILO_IGNORE_STRICT_VERSION is set on the device; --hailort X.Y names the "
                  "device's HailoRT version");
  }

  c.ran("net-flow");
  const bool net_flow = info.has_extension(kExtHailoNetFlow);
  for (const auto& g : info.network_groups) {
    if (net_flow && !g.core_op_in_ops)
      c.error("net-flow", "10",
              "network group '" + g.name + "' has no ops[].core_op although the HEF carries HAILO_NET_FLOW (13): "
              "hailort takes the core op from ops[] without checking that one exists (only a debug assert, hef.cpp "
              "945-953), so a release build reads past the list");
    if (!net_flow && g.top_level_contexts == 0 && g.core_op_in_ops)
      c.error("net-flow", "10",
              "network group '" + g.name + "' keeps its contexts under ops[].core_op, but without HAILO_NET_FLOW (13) "
              "hailort reads the group's own contexts, which are empty (hef.cpp 945-1016)");
  }

  // --- network groups as hailort names them (sections 8, 9) ---
  c.ran("network-groups");
  for (const auto& g : info.network_groups) {
    if (g.name.empty())
      c.error("network-groups", "9",
              "network group [" + std::to_string(g.index) + "] has no " + g.name_source +
                  ": that is the only name hailort reads (hef.cpp 3498-3504, 3835-3847)" +
                  (g.field10_name.empty() ? std::string()
                                          : "; field 10 network_group_name '" + g.field10_name + "' is never read"));
    else if (!g.field10_name.empty() && g.field10_name != g.name)
      c.info("network-groups", "9",
             "network group '" + g.name + "' also carries '" + g.field10_name +
                 "' in field 10 network_group_name, which hailort v5.2.0 never reads; it is judged by '" + g.name +
                 "'");
  }
  const NetworkGroup* prefill = info.group_with_suffix("__prefill");
  const NetworkGroup* tbt = info.group_with_suffix("__tbt");
  if (info.network_groups.size() != 2)
    c.error("network-groups", "8, 9",
            "the HEF has " + std::to_string(info.network_groups.size()) +
                " network groups; the genai server picks groups by name suffix, \"prefill\" and \"tbt\" only with "
                "exactly two (llm_server.cpp 46-68): it needs <x>__prefill and <x>__tbt");
  if (!prefill)
    c.error("network-groups", "9",
            "no network group name ends in __prefill: the server fails with \"Model doesnt have NG with "
            "name-suffix\" (llm_inference_manager.cpp 22-31)");
  if (!tbt) c.error("network-groups", "9", "no network group name ends in __tbt (the token-by-token group)");
  if (prefill && tbt && prefill->name.substr(0, prefill->name.size() - 9) != tbt->name.substr(0, tbt->name.size() - 5))
    c.warn("network-groups", "9",
           "the groups '" + prefill->name + "' and '" + tbt->name + "' do not share one prefix");
  json names = json::array();
  for (const auto& g : info.network_groups) names.push_back(g.name);
  d["network_groups"] = names;
  d["hailort"] = std::to_string(opt.hailort[0]) + "." + std::to_string(opt.hailort[1]);

  // --- resources (section 6) and checksums (section 10) ---
  c.ran("resources");
  std::map<std::string, const Resource*> res;
  for (const char* name : {kEmbeddings, kTheta, kTokenizer, kHailoConfig}) {
    res[name] = info.resource(name);
    if (!res[name])
      c.error("resources", "6",
              "resource " + std::string(name) + " is missing: the genai server's get_external_resources returns "
              "HAILO_NOT_FOUND (hef.cpp 4023-4047)");
  }
  c.ran("checksums");
  for (const auto& r : info.resources) {
    if (r.xxhash == 0 || r.size > opt.checksum_limit) continue;
    if (xxh3_of_range(src, r.file_offset, r.size) != r.xxhash)
      c.error("checksums", "10",
              "resource '" + r.name + "': its bytes do not match the stored XXH3; hailort refuses it (\"Resource '" +
                  r.name + "' checksum does not match\", hef.cpp 4036-4040)");
  }
  // The whole-file sum hailort verifies at load: v0 MD5, v1 CRC-32, v2 and
  // v3-without-proto-hash XXH3 (hef.cpp 556-606).
  if (h.version == 0) {
    c.info("checksums", "10", "the v0 header's MD5 is not verified by llm2hef (DFC 5.x writes version 3 only)");
  } else if (h.version < 3 || h.proto_xxh3 == 0) {
    if (info.file_size > opt.checksum_limit) {
      c.info("checksums", "10", "the whole-file checksum hailort verifies at load was not computed (use --verify-all)");
    } else {
      const ChecksumReport sums = verify_checksums(src, info, 0, true);
      if (sums.file == ChecksumStatus::mismatch)
        c.error("checksums", "10",
                std::string("the header's whole-file ") + (h.version == 1 ? "CRC-32" : "XXH3") +
                    " does not match the bytes after the header: Hef::create refuses the file (\"HEF " +
                    (h.version == 1 ? "crc" : "xxhash") + " does not match\", hef.cpp 402-443)");
    }
  }

  // optimize_memory_on_device (section 9): the client keeps tokenizer.json and
  // embeddings.bin, the server allocates file size minus their sizes and writes
  // every other chunk at its absolute offset without a bounds check.
  if (h.version == 3) {
    c.ran("resource-order");
    uint64_t local = 0;
    for (const char* name : {kTokenizer, kEmbeddings})
      if (res[name]) local += res[name]->size;
    const uint64_t buffer = info.file_size - std::min(local, info.file_size);
    std::vector<std::pair<std::string, uint64_t>> chunks = {
        {"header+proto+padding", h.zero_point()}, {"CCWs", h.zero_point() + (h.ccws_size - h.padding_size)}};
    for (const auto& r : info.resources)
      if (r.name != kTokenizer && r.name != kEmbeddings) chunks.push_back({r.name, r.file_offset + r.size});
    for (const auto& [name, end] : chunks)
      if (end > buffer)
        c.error("resource-order", "9",
                "with optimize_memory_on_device=True the server allocates the file size minus tokenizer.json and "
                "embeddings.bin (" + std::to_string(buffer) + " bytes, hef.cpp 4359-4360) and writes each chunk at "
                "its absolute offset without a bounds check (genai/utils.hpp 219-224): '" + name + "' ends at byte " +
                    std::to_string(end) + ", past that buffer; tokenizer.json and embeddings.bin must be the last "
                    "bytes of the file");
  }

  // hailo-config.json.
  c.ran("hailo-config");
  json cfg = json::object();
  c.ran("stop-tokens");
  std::optional<std::string> config_text = opt.config_override;
  if (!config_text && res[kHailoConfig]) config_text = read_resource(src, *res[kHailoConfig], kMaxJsonResource);
  if (config_text) {
    const std::string& text = *config_text;
    for (const auto& f : check_hailo_config_text(text, opt.config_override ? "new hailo-config.json" : kHailoConfig))
      c.add(f);
    try {
      cfg = sdk::parse_json(text, kHailoConfig);
      if (!cfg.is_object()) cfg = json::object();
    } catch (const BadInput&) {  // already reported by check_hailo_config_text
      cfg = json::object();
    }
  }
  const json pp = cfg.contains("pre_process_params") && cfg["pre_process_params"].is_object()
                      ? cfg["pre_process_params"]
                      : json::object();
  // Where hailo-config leaves a value out, the runtime's default applies: say so in messages.
  auto origin = [&](const char* key) { return int_at(pp, key) ? std::string() : std::string(" (runtime default)"); };
  const int64_t cache = int_at(pp, "kv_cache_size").value_or(kDefaultCache);
  const int64_t heads = int_at(pp, "num_attention_heads").value_or(kDefaultHeads);
  const int64_t kv_heads = int_at(pp, "num_key_value_heads").value_or(kDefaultKvHeads);
  const int64_t prefill_rows = int_at(pp, "prefill_input_tokens_count").value_or(kDefaultPrefill);
  d["kv_cache_size"] = cache;
  d["num_attention_heads"] = heads;
  d["num_key_value_heads"] = kv_heads;
  d["prefill_input_tokens_count"] = prefill_rows;

  // tokenizer.json.
  c.ran("tokenizer");
  if (res[kTokenizer]) {
    const std::string text = read_resource(src, *res[kTokenizer], kMaxJsonResource);
    try {
      const json tok = sdk::parse_json(text, kTokenizer);
      if (!tok.is_object() || !tok.contains("model"))
        c.error("tokenizer", "6", "tokenizer.json is JSON but not a Hugging Face tokenizers file (no \"model\")");
    } catch (const BadInput& e) {
      c.error("tokenizer", "6", std::string("tokenizer.json does not parse: ") + e.what());
    }
  }

  // Theta: float32 vector, even length (section 9).
  c.ran("theta");
  int64_t theta_len = -1;
  if (res[kTheta]) {
    const uint64_t n = res[kTheta]->size;
    if (n == 0 || n % 4 != 0) {
      c.error("theta", "6", "rope_theta_data.bin is " + std::to_string(n) + " bytes; expected a non-empty float32 vector");
    } else {
      theta_len = static_cast<int64_t>(n / 4);
      if (theta_len % 2 != 0)
        c.error("theta", "9", "theta length " + std::to_string(theta_len) +
                                  " is odd; the runtime fills two halves of T/2 columns, so the last is never written");
    }
  }
  d["theta_length"] = theta_len >= 0 ? json(theta_len) : json(nullptr);

  // Inputs of both groups, found by suffix (section 9).
  std::vector<std::pair<std::string, std::string>> suffixes = kDefaultSuffixes;
  if (cfg.contains("input_layers_names_suffixes") && cfg["input_layers_names_suffixes"].is_object())
    for (auto& [role, suffix] : suffixes)
      if (cfg["input_layers_names_suffixes"].contains(role) && cfg["input_layers_names_suffixes"][role].is_string())
        suffix = cfg["input_layers_names_suffixes"][role].get<std::string>();

  int64_t hidden = -1;
  c.ran("inputs");
  c.ran("input-widths");
  for (const NetworkGroup* g : {prefill, tbt}) {
    if (!g) continue;
    for (const auto& entry : suffixes) {
      const std::string& role = entry.first;  // named, not bound: lambdas below capture it
      const std::string& suffix = entry.second;
      const EdgeLayer* in = nullptr;
      for (const auto& e : g->inputs)
        if (ends_with(e.name, suffix)) in = &e;
      if (!in) {
        c.error("inputs", "9", g->name + ": no input named *" + suffix + " (role " + role + ")");
        continue;
      }
      const int64_t f = in->features;
      auto want = [&](int64_t expected, const std::string& why) {
        if (expected > 0 && f != expected)
          c.error("input-widths", "9",
                  in->name + " (" + role + ") is " + std::to_string(f) + " features wide; expected " +
                      std::to_string(expected) + " = " + why);
      };
      const sdk::RuntimeInput& contract = *sdk::find_runtime_input(role);  // the roles are the table's
      if (contract.shape == sdk::InputShape::embeddings) {
        if (in->data_bytes != 2)
          c.error("inputs", "9", in->name + " is " + data_type_name(in->data_bytes) +
                                     "; the runtime copies uint16 embedding rows into it, so it must be UINT16");
        if (hidden < 0) hidden = f;
        want(hidden, "the embeddings width of the other group");
      } else if (contract.shape == sdk::InputShape::mask) {
        want(heads * cache, "num_attention_heads " + std::to_string(heads) + origin("num_attention_heads") +
                                   " x kv_cache_size " + std::to_string(cache) + origin("kv_cache_size"));
      } else if (contract.tiling == sdk::PeTiling::q_heads) {
        if (theta_len > 0)
          want(heads * theta_len, "num_attention_heads " + std::to_string(heads) + origin("num_attention_heads") +
                                      " x theta length " + std::to_string(theta_len));
      } else if (theta_len > 0) {
        want(kv_heads * theta_len,
             "num_key_value_heads " + std::to_string(kv_heads) + origin("num_key_value_heads") + " x theta length " +
                 std::to_string(theta_len));
      }
      // Rows per run: the prefill chunk, or one token.
      if (g == prefill && static_cast<int64_t>(in->width) != prefill_rows)
        c.error("input-widths", "9", in->name + " carries " + std::to_string(in->width) +
                                         " rows (" + shape_text(*in) + "); prefill_input_tokens_count is " +
                                         std::to_string(prefill_rows) + origin("prefill_input_tokens_count"));
      if (g == tbt && in->width != 1)
        c.warn("input-widths", "9", in->name + " carries " + std::to_string(in->width) +
                                        " rows (" + shape_text(*in) + "); token-by-token runs feed one");
    }
  }
  d["hidden"] = hidden >= 0 ? json(hidden) : json(nullptr);

  // Embeddings size and vocabulary (section 6).
  c.ran("embeddings");
  int64_t vocab = -1;
  if (res[kEmbeddings] && hidden > 0) {
    const uint64_t n = res[kEmbeddings]->size;
    const uint64_t row = static_cast<uint64_t>(hidden) * 2;
    if (n == 0 || n % row != 0)
      c.error("embeddings", "6", "embeddings.bin is " + std::to_string(n) + " bytes, not a multiple of hidden " +
                                     std::to_string(hidden) + " x 2 bytes (uint16 rows)");
    else
      vocab = static_cast<int64_t>(n / row);
  }
  d["vocab"] = vocab >= 0 ? json(vocab) : json(nullptr);

  // Token ids of hailo-config against the vocabulary (section 6): sampling
  // picks ids below vocab, so a larger stop id never matches, and
  // eos_token_id seeds the recovery tokens (llm_server.cpp 494).
  c.ran("token-ids");
  if (vocab > 0) {
    auto in_vocab = [&](const std::string& key, const json& v) {
      if (!(v.is_number_integer() || v.is_number_unsigned())) return;  // a type error, reported by hailo-config
      const int64_t id = v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX ? INT64_MAX : v.get<int64_t>();
      if (id < 0 || id >= vocab)
        c.error("token-ids", "6",
                key + " " + std::to_string(id) + " is outside the vocabulary of embeddings.bin (" +
                    std::to_string(vocab) + " rows): the server samples ids below " + std::to_string(vocab) +
                    ", so it never matches" + (key == "eos_token_id" ? "; as the recovery token (llm_server.cpp 494) "
                                                                        "its embedding row does not exist"
                                                                      : ""));
    };
    for (const char* key : {"eos_token_id", "begin_of_reasoning_token_id", "end_of_reasoning_token_id"})
      if (cfg.contains(key)) in_vocab(key, cfg[key]);
    if (cfg.contains("stop_token_id") && cfg["stop_token_id"].is_array())
      for (size_t i = 0; i < cfg["stop_token_id"].size(); ++i)
        in_vocab("stop_token_id[" + std::to_string(i) + "]", cfg["stop_token_id"][i]);
  }

  // Outputs: logits shards of equal size summing to the vocabulary (sections 5.3, 9).
  c.ran("outputs");
  std::map<std::string, uint64_t> totals;
  for (const NetworkGroup* g : {prefill, tbt}) {
    if (!g) continue;
    if (g->outputs.empty()) {
      c.error("outputs", "9", g->name + " has no outputs");
      continue;
    }
    uint64_t total = 0;
    for (const auto& o : g->outputs) {
      total += o.frame_elements();
      if (o.frame_elements() != g->outputs.front().frame_elements())
        c.error("outputs", "9", g->name + ": output " + o.name + " has " + std::to_string(o.frame_elements()) +
                                    " values per frame, " + g->outputs.front().name + " has " +
                                    std::to_string(g->outputs.front().frame_elements()) +
                                    "; the runtime requires equal frame sizes");
    }
    totals[g->name] = total;
    if (vocab > 0 && total != static_cast<uint64_t>(vocab))
      c.error("outputs", "6, 9", g->name + ": outputs sum to " + std::to_string(total) +
                                     " logits; embeddings.bin has " + std::to_string(vocab) + " rows (the vocabulary)");
  }
  d["output_shards"] = prefill ? json(prefill->outputs.size()) : json(nullptr);

  // With the manifest: agreement with what llm2hef exported.
  if (opt.manifest) {
    c.ran("manifest");
    const json& m = *opt.manifest;
    const std::string where = opt.manifest_path.empty() ? "manifest.json" : opt.manifest_path;
    auto agree = [&](const std::string& what, int64_t actual, const json& expected) {
      if (actual < 0) return;
      if (!expected.is_number_integer()) {
        c.error("manifest", "-", where + ": " + what + " is missing or not an integer");
      } else if (expected.get<int64_t>() != actual) {
        c.error("manifest", "-", what + ": the HEF has " + std::to_string(actual) + ", " + where + " says " +
                                     std::to_string(expected.get<int64_t>()));
      }
    };
    const json dims = m.value("dims", json::object());
    agree("dims.hidden", hidden, dims.value("hidden", json()));
    agree("dims.vocab", vocab, dims.value("vocab", json()));
    agree("theta_length", theta_len, m.value("theta_length", json()));
    agree("cache_size (hailo-config kv_cache_size)", cache, m.value("cache_size", json()));
    agree("prefill (hailo-config prefill_input_tokens_count)", prefill_rows, m.value("prefill", json()));
    const json tiles = m.value("pe_tiles", json::object());
    agree("pe_tiles.q (hailo-config num_attention_heads)", heads, tiles.value("q", json()));
    agree("pe_tiles.k (hailo-config num_key_value_heads)", kv_heads, tiles.value("k", json()));
    // lm_head_shards: the exported logits widths, one per output (a bare count is accepted too).
    const json shards = m.value("lm_head_shards", json());
    for (const NetworkGroup* g : {prefill, tbt}) {
      if (!g) continue;
      if (shards.is_array()) {
        std::multiset<uint64_t> want, have;
        for (const auto& w : shards)
          if (w.is_number_integer()) want.insert(w.get<uint64_t>());
        for (const auto& o : g->outputs) have.insert(o.frame_elements());
        if (want != have) {
          std::string w, h;
          for (auto x : want) w += (w.empty() ? "" : ", ") + std::to_string(x);
          for (auto x : have) h += (h.empty() ? "" : ", ") + std::to_string(x);
          c.error("manifest", "5", g->name + ": logits outputs [" + h + "]; " + where + " lm_head_shards [" + w + "]");
        }
      } else {
        agree(g->name + ": lm_head_shards (outputs)", static_cast<int64_t>(g->outputs.size()), shards);
      }
    }
    const json groups = m.contains("dfc") && m["dfc"].is_object() ? m["dfc"].value("network_groups", json()) : json();
    if (groups.is_array()) {
      std::set<std::string> want, have;
      for (const auto& gname : groups)
        if (gname.is_string()) want.insert(gname.get<std::string>());
      for (const auto& g : info.network_groups) have.insert(g.name);
      if (want != have) {
        std::string w, h;
        for (const auto& s : want) w += (w.empty() ? "" : ", ") + s;
        for (const auto& s : have) h += (h.empty() ? "" : ", ") + s;
        c.error("manifest", "8", "network groups: the HEF has [" + h + "], " + where + " says [" + w + "]");
      }
    } else {
      c.error("manifest", "-", where + ": dfc.network_groups is missing");
    }
  }
  c.finish();
  return rep;
}

ContractReport check_hef_file(const std::string& path, const ContractOptions& options) {
  try {
    const auto src = open_file_source(path);
    const HefInfo info = read_hef(*src);
    return check_hef_contract(*src, info, options);
  } catch (const BadInput& e) {
    ContractReport rep;
    rep.file = path;
    rep.findings.push_back({"format", "10", Severity::error, e.what()});
    return rep;
  }
}

namespace {
const char* severity_name(Severity s) {
  switch (s) {
    case Severity::error: return "error";
    case Severity::warning: return "warning";
    case Severity::info: return "info";
  }
  return "?";
}
}  // namespace

std::string contract_text(const ContractReport& r) {
  std::ostringstream o;
  o << r.file << "\n";
  for (const auto& f : r.findings)
    o << "  " << severity_name(f.severity) << " [" << f.rule << ", section " << f.section << "] " << f.message
      << "\n";
  if (!r.passed.empty()) {
    o << "  passed:";
    for (const auto& p : r.passed) o << " " << p;
    o << "\n";
  }
  o << (r.errors() == 0 ? "PASS" : "FAIL") << ": " << r.errors() << " error(s), " << r.warnings() << " warning(s)\n";
  return o.str();
}

json contract_json(const ContractReport& r) {
  json findings = json::array();
  for (const auto& f : r.findings)
    findings.push_back({{"rule", f.rule},
                        {"section", f.section},
                        {"severity", severity_name(f.severity)},
                        {"message", f.message}});
  return {{"file", r.file},    {"pass", r.errors() == 0}, {"errors", r.errors()}, {"warnings", r.warnings()},
          {"findings", findings}, {"passed", r.passed},     {"derived", r.derived}};
}

}  // namespace llm2hef::core::hef
