// A HAR's table of contents (hailo-contract.md section 4): which member is
// the main HN, which the weights, which the metadata, and which stage of the
// DFC flow the HAR is in. Built in one streaming pass that reads only the
// small members (HN, metadata) and skips over the rest.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm2hef/sdk/json_file.hpp"

#include "llm2hef/core/har/hn_model.hpp"
#include "llm2hef/core/har/tar_stream.hpp"
#include "llm2hef/sdk/hn_fixup.hpp"

namespace llm2hef::core::har {

enum class MemberRole { main_hn, variant_hn, weights, other_weights, metadata, other };
const char* role_name(MemberRole r);

struct HarMember {
  TarMember entry;
  MemberRole role = MemberRole::other;
};

struct HarIndex {
  std::string label;               // the HAR's path, for messages
  std::vector<HarMember> members;  // archive order
  std::string hn_member;           // `<name>.hn`, neither .fp.hn nor .native.hn
  std::optional<HnModel> hn;
  std::string weights_member;   // `<name>.npz` (parsed weights); "" when absent
  std::string metadata_member;  // `<name>.metadata.json`; "" when absent
  nlohmann::json metadata;      // null when absent
  std::string state;            // metadata `state`, "" when absent

  sdk::HarStage stage = sdk::HarStage::before_optimize;
  std::string stage_reason;                    // how the stage was decided, for the report
  std::string stage_name = "before_optimize";  // also "after_optimize", "compiled", "unknown"
  std::string refusal;                         // why `fix` must refuse this HAR ("" = it may fix it)
  uint64_t total_bytes = 0;                    // sum of member sizes
};

// Largest HN / metadata member read into memory (sdk::JsonLimits: the HN's
// DOM is several times its text, so the limit bounds memory too).
constexpr uint64_t kMaxHnBytes = sdk::JsonLimits::kHnBytes;
constexpr uint64_t kMaxMetadataBytes = 16ull << 20;

MemberRole classify_member(const std::string& name);

// Reads a HAR's table of contents. Throws BadInput for a malformed tar, a
// missing or ambiguous main HN, invalid HN/metadata JSON. A compiled HAR or
// an unknown state is read, with `refusal` saying why `fix` will not touch it.
HarIndex scan_har(const std::filesystem::path& path);
HarIndex scan_har(TarReader& reader);

// Which stage: the metadata `state` when present and known; without
// metadata, the HN itself (cache layers or __prefill/__tbt scopes appear
// only after optimize's set_kv_cache_global_params).
void decide_stage(HarIndex& index);

}  // namespace llm2hef::core::har
