#include "llm2hef/core/har/har_file.hpp"

#include <algorithm>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::core::har {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string base_name(const std::string& member) {
  const size_t slash = member.rfind('/');
  return slash == std::string::npos ? member : member.substr(slash + 1);
}

// DFC ClientRunner states (hailo-contract.md section 4 names the last three;
// hailo_model is the parser's own state, the slim variants drop weights).
const std::vector<std::string> kBeforeOptimize = {"hailo_model"};
const std::vector<std::string> kAfterOptimize = {"fp_optimized_model", "quantized_model", "quantized_slim_model"};
const std::vector<std::string> kCompiled = {"compiled_model", "compiled_slim_model"};

bool in(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

const char* role_name(MemberRole r) {
  switch (r) {
    case MemberRole::main_hn: return "hn";
    case MemberRole::variant_hn: return "hn-variant";
    case MemberRole::weights: return "weights";
    case MemberRole::other_weights: return "weights-other";
    case MemberRole::metadata: return "metadata";
    case MemberRole::other: return "other";
  }
  return "other";
}

MemberRole classify_member(const std::string& name) {
  const std::string b = base_name(name);
  if (ends_with(b, ".fp.hn") || ends_with(b, ".native.hn")) return MemberRole::variant_hn;
  if (ends_with(b, ".hn")) return MemberRole::main_hn;
  if (ends_with(b, ".metadata.json")) return MemberRole::metadata;
  if (ends_with(b, ".fpo.npz") || ends_with(b, ".q.npz") || ends_with(b, ".hdf5") || ends_with(b, ".h5"))
    return MemberRole::other_weights;
  if (ends_with(b, ".npz")) return MemberRole::weights;
  return MemberRole::other;
}

HarIndex scan_har(const std::filesystem::path& path) {
  auto reader = TarReader::open_file(path);
  return scan_har(*reader);
}

HarIndex scan_har(TarReader& reader) {
  HarIndex idx;
  idx.label = reader.label();
  std::string hn_text;
  while (auto m = reader.next()) {
    HarMember hm{*m, m->is_dir ? MemberRole::other : classify_member(m->name)};
    idx.total_bytes += m->size;
    auto claim = [&](std::string& slot, const char* what) {
      if (!slot.empty())
        throw BadInput(idx.label + ": two " + what + " members, '" + slot + "' and '" + m->name +
                       "'; which one is meant is ambiguous");
      slot = m->name;
    };
    switch (hm.role) {
      case MemberRole::main_hn:
        claim(idx.hn_member, "main HN (.hn)");
        // Refused by its declared size before a byte is read; read into a
        // buffer of exactly that size (appending would double it).
        if (m->size > kMaxHnBytes)
          throw BadInput(idx.label + ": member '" + m->name + "': " + sdk::JsonLimits::hn().too_big(m->size));
        hn_text = reader.read_all(kMaxHnBytes, m->size);
        break;
      case MemberRole::weights: claim(idx.weights_member, "weights (.npz)"); break;
      case MemberRole::metadata: {
        claim(idx.metadata_member, "metadata (.metadata.json)");
        const std::string text = reader.read_all(kMaxMetadataBytes);
        idx.metadata = sdk::parse_json(text, idx.label + ": member '" + m->name + "'");
        if (!idx.metadata.is_object()) throw BadInput(idx.label + ": member '" + m->name + "' is not a JSON object");
        if (idx.metadata.contains("state")) {
          if (!idx.metadata.at("state").is_string())
            throw BadInput(idx.label + ": member '" + m->name + "' field 'state' is not a string");
          idx.state = idx.metadata.at("state").get<std::string>();
        }
        break;
      }
      default: break;
    }
    idx.members.push_back(std::move(hm));
  }
  if (idx.hn_member.empty())
    throw BadInput(idx.label + ": no main HN member (a '<name>.hn' that is neither .fp.hn nor .native.hn); not a HAR?");
  idx.hn.emplace(HnModel::parse(hn_text, idx.label + ": " + idx.hn_member));
  std::string().swap(hn_text);  // the DOM holds it now
  decide_stage(idx);
  return idx;
}

void decide_stage(HarIndex& idx) {
  if (!idx.state.empty()) {
    if (in(kBeforeOptimize, idx.state)) {
      idx.stage = sdk::HarStage::before_optimize;
      idx.stage_name = "before_optimize";
      idx.stage_reason = "metadata state '" + idx.state + "' (parsed, not yet optimized)";
    } else if (in(kAfterOptimize, idx.state)) {
      idx.stage = sdk::HarStage::after_optimize;
      idx.stage_name = "after_optimize";
      idx.stage_reason = "metadata state '" + idx.state + "' (after the optimize model script)";
    } else if (in(kCompiled, idx.state)) {
      idx.stage_name = "compiled";
      idx.stage_reason = "metadata state '" + idx.state + "' (compiled)";
      idx.refusal = idx.label + ": metadata state '" + idx.state +
                    "': the HAR is already compiled; fix the quantized HAR and compile again";
    } else {
      idx.stage_name = "unknown";
      idx.stage_reason = "metadata state '" + idx.state + "' is not one llm2hef knows";
      idx.refusal = idx.label + ": metadata state '" + idx.state +
                    "' is not one llm2hef knows (hailo_model, fp_optimized_model, quantized_model); "
                    "refusing to guess which fixups apply";
    }
    return;
  }
  const HnModel& hn = *idx.hn;
  if (!hn.cache_layers().empty() || kv_scopes(hn).has_kv_suffix) {
    idx.stage = sdk::HarStage::after_optimize;
    idx.stage_name = "after_optimize";
    idx.stage_reason = "no metadata state; the HN has cache layers or __prefill/__tbt scopes (after optimize)";
  } else {
    idx.stage = sdk::HarStage::before_optimize;
    idx.stage_name = "before_optimize";
    idx.stage_reason = "no metadata state; the HN has no cache layers or __prefill/__tbt scopes (parsed)";
  }
}

}  // namespace llm2hef::core::har
