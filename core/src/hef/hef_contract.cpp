#include "llm2hef/core/hef/hef_contract.hpp"

#include <map>
#include <set>
#include <sstream>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::hef {

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
const std::vector<std::pair<std::string, std::string>> kDefaultSuffixes = {
    {"embeddings", "input_layer1"}, {"attention_mask", "input_layer2"}, {"pe_q_cos", "input_layer3"},
    {"pe_q_sin", "input_layer4"},   {"pe_k_cos", "input_layer5"},       {"pe_k_sin", "input_layer6"}};

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

size_t ContractReport::warnings() const { return findings.size() - errors(); }

std::vector<ContractFinding> check_hailo_config_text(const std::string& text, const std::string& where) {
  std::vector<ContractFinding> out;
  auto err = [&](const std::string& m) { out.push_back({"hailo-config", "6", Severity::error, where + ": " + m}); };
  json cfg;
  try {
    cfg = json::parse(text);
  } catch (const json::exception& e) {
    err(std::string("not valid JSON: ") + e.what());
    return out;
  }
  if (!cfg.is_object()) {
    err("the top level is not a JSON object");
    return out;
  }
  if (!int_at(cfg, "eos_token_id"))
    err("eos_token_id is missing or not an integer; the runtime refuses the model without it");
  if (cfg.contains("stop_token_id") && !cfg["stop_token_id"].is_array() && !cfg["stop_token_id"].is_number_integer())
    err("stop_token_id must be an integer list");
  const json pp = cfg.value("pre_process_params", json::object());
  if (cfg.contains("pre_process_params") && !cfg["pre_process_params"].is_object()) {
    err("pre_process_params is not an object");
  } else {
    if (pp.contains("prefill_input_tokens_size"))
      err("pre_process_params.prefill_input_tokens_size is ignored by the runtime; the key is prefill_input_tokens_count");
    if (!pp.contains("prefill_input_tokens_count"))
      err("pre_process_params.prefill_input_tokens_count is missing (the runtime would silently use 96)");
    for (const char* k : {"kv_cache_size", "num_attention_heads", "num_key_value_heads", "prefill_input_tokens_count"})
      if (pp.contains(k) && !(int_at(pp, k) && *int_at(pp, k) > 0))
        err(std::string("pre_process_params.") + k + " must be a positive integer");
  }
  if (cfg.contains("input_layers_names_suffixes")) {
    const json& s = cfg["input_layers_names_suffixes"];
    if (!s.is_object()) {
      err("input_layers_names_suffixes is not an object");
    } else {
      for (const auto& [role, value] : s.items())
        if (!value.is_string()) err("input_layers_names_suffixes." + role + " is not a string");
    }
  }
  if (cfg.contains("default_generation_params") && !cfg["default_generation_params"].is_object())
    err("default_generation_params is not an object");
  return out;
}

ContractReport check_hef_contract(const ByteSource& src, const HefInfo& info, const ContractOptions& opt) {
  ContractReport rep;
  rep.file = info.file;
  Checker c(rep);
  json& d = rep.derived;

  // Target: Hailo-10H HEFs carry HAILO1XH (103); 5 is the deprecated HAILO10H id (section 10).
  c.ran("hw-arch");
  if (!info.hw_arch)
    c.warn("hw-arch", "10", "the proto header has no hw_arch");
  else if (*info.hw_arch == 5)
    c.warn("hw-arch", "10", "hw_arch 5 is the deprecated HAILO10H id; current DFCs write 103 (HAILO1XH)");
  else if (*info.hw_arch != 103)
    c.error("hw-arch", "10", "compiled for " + hw_arch_name(*info.hw_arch) +
                                 ", not for the Hailo-10H (hw_arch 103, HAILO1XH)");

  // Network groups (sections 8 and 9).
  c.ran("network-groups");
  const NetworkGroup* prefill = info.group_with_suffix("__prefill");
  const NetworkGroup* tbt = info.group_with_suffix("__tbt");
  if (info.network_groups.size() != 2)
    c.error("network-groups", "8, 9",
            "the HEF has " + std::to_string(info.network_groups.size()) +
                " network groups; genai needs exactly two, <x>__prefill and <x>__tbt (a third group breaks genai "
                "and hailo-ollama)");
  if (!prefill) c.error("network-groups", "9", "no network group name ends in __prefill");
  if (!tbt) c.error("network-groups", "9", "no network group name ends in __tbt");
  if (prefill && tbt && prefill->name.substr(0, prefill->name.size() - 9) != tbt->name.substr(0, tbt->name.size() - 5))
    c.warn("network-groups", "9",
           "the groups '" + prefill->name + "' and '" + tbt->name + "' do not share one prefix");

  // Resources (section 6) and their checksums (section 10).
  c.ran("resources");
  std::map<std::string, const Resource*> res;
  for (const char* name : {kEmbeddings, kTheta, kTokenizer, kHailoConfig}) {
    res[name] = info.resource(name);
    if (!res[name]) c.error("resources", "6", "resource " + std::string(name) + " is missing");
  }
  c.ran("checksums");
  for (const auto& r : info.resources) {
    if (r.xxhash == 0 || r.size > opt.checksum_limit) continue;
    if (xxh3_of_range(src, r.file_offset, r.size) != r.xxhash)
      c.error("checksums", "10", "resource '" + r.name + "' checksum does not match its stored XXH3 (the runtime refuses it)");
  }

  // hailo-config.json.
  c.ran("hailo-config");
  json cfg = json::object();
  if (res[kHailoConfig]) {
    const std::string text = read_resource(src, *res[kHailoConfig], kMaxJsonResource);
    for (auto& f : check_hailo_config_text(text, kHailoConfig)) c.error(f.rule, f.section, f.message);
    try {
      cfg = json::parse(text);
      if (!cfg.is_object()) cfg = json::object();
    } catch (const json::exception&) {
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
      const json tok = json::parse(text);
      if (!tok.is_object() || !tok.contains("model"))
        c.error("tokenizer", "6", "tokenizer.json is JSON but not a Hugging Face tokenizers file (no \"model\")");
    } catch (const json::exception& e) {
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
      if (role == "embeddings") {
        if (in->data_bytes != 2)
          c.error("inputs", "9", in->name + " is " + data_type_name(in->data_bytes) +
                                     "; the runtime copies uint16 embedding rows into it, so it must be UINT16");
        if (hidden < 0) hidden = f;
        want(hidden, "the embeddings width of the other group");
      } else if (role == "attention_mask") {
        want(heads * cache, "num_attention_heads " + std::to_string(heads) + origin("num_attention_heads") +
                                   " x kv_cache_size " + std::to_string(cache) + origin("kv_cache_size"));
      } else if (role == "pe_q_cos" || role == "pe_q_sin") {
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

std::string contract_text(const ContractReport& r) {
  std::ostringstream o;
  o << r.file << "\n";
  for (const auto& f : r.findings)
    o << "  " << (f.severity == Severity::error ? "error" : "warning") << " [" << f.rule << ", section " << f.section
      << "] " << f.message << "\n";
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
                        {"severity", f.severity == Severity::error ? "error" : "warning"},
                        {"message", f.message}});
  return {{"file", r.file},    {"pass", r.errors() == 0}, {"errors", r.errors()}, {"warnings", r.warnings()},
          {"findings", findings}, {"passed", r.passed},     {"derived", r.derived}};
}

}  // namespace llm2hef::core::hef
