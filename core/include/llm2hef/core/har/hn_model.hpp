// The HN: the DFC's JSON description of a parsed network (hailo-contract.md
// section 4). A thin, validated view over the JSON document, so a fixup can
// ask graph questions (producers, consumers, shapes, scopes, cache layers)
// and edit the document in place without losing fields it does not know.
// Layer order is preserved (ordered_json): the DFC wrote it, we keep it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace llm2hef::core::har {

using Shape = std::vector<int64_t>;

class HnModel {
 public:
  // Parses and validates (see validate()); `label` names the HN in errors.
  static HnModel parse(std::string_view text, std::string label);
  explicit HnModel(nlohmann::ordered_json doc, std::string label);

  // Throws BadInput naming the layer and field when the document is not a
  // usable HN: `layers` must be an object of objects with a string `type`;
  // `input`/`output` lists of names of existing layers, each edge recorded
  // on both ends; shapes lists of integer lists.
  void validate() const;

  // The mutable document: a caller may add, remove or rename layers through
  // it, so the name index is rebuilt at the next lookup.
  nlohmann::ordered_json& doc() {
    index_stale_ = true;
    return doc_;
  }
  const nlohmann::ordered_json& doc() const { return doc_; }
  const std::string& label() const { return label_; }
  std::string dump() const;
  // A 128-bit digest of dump()'s text, computed without building the text:
  // enough to tell whether an edit changed the document, without keeping a
  // second copy of a DOM that can be hundreds of MB.
  std::pair<uint64_t, uint64_t> digest() const;

  std::string name() const;                      // top-level `name`
  std::vector<std::string> layer_names() const;  // document order
  bool has(const std::string& layer) const;
  nlohmann::ordered_json& layer(const std::string& name);
  const nlohmann::ordered_json& layer(const std::string& name) const;
  std::string type(const std::string& layer) const;
  std::vector<std::string> inputs(const std::string& layer) const;   // producers
  std::vector<std::string> outputs(const std::string& layer) const;  // consumers
  std::vector<Shape> input_shapes(const std::string& layer) const;
  std::vector<Shape> output_shapes(const std::string& layer) const;
  bool is_cache(const std::string& layer) const;  // io_type == "cache"

  // net_params.net_scopes, then any other layer-name prefix (in document
  // order), so a scope the DFC named in layers but not in net_scopes is seen.
  std::vector<std::string> scopes() const;
  std::vector<std::string> output_order() const;  // net_params.output_layers_order
  std::vector<std::string> cache_layers() const;  // sorted by name
  std::vector<std::string> layers_of_type(const std::string& type) const;

  // Edits that keep both ends of every edge consistent.
  void replace_in_list(const std::string& layer, const char* field, const std::string& from,
                       const std::vector<std::string>& to);
  void erase(const std::string& layer);
  // A name `<scope>/<base><N>` not used yet, N one above the largest in use.
  std::string fresh_name(const std::string& scope, const std::string& base) const;

 private:
  // ordered_json keeps layers in a vector and finds a key by a linear scan,
  // so every by-name lookup goes through a hash index of positions instead
  // (a lookup per edge made a 64,000-layer HN quadratic: 68 s).
  const nlohmann::ordered_json* find_layer(const std::string& name) const;
  void rebuild_index() const;

  nlohmann::ordered_json doc_;
  std::string label_;
  mutable std::unordered_map<std::string, size_t> index_;
  mutable bool index_stale_ = true;
};

// The scopes of an HN after optimize (hailo-contract.md section 3):
// set_kv_cache_global_params adds `<x>__prefill` and `<x>__tbt` next to the
// base `<x>`, and the quantized HN keeps all three (with the same layer names
// in each). Only the two suffixed scopes become network groups; the base
// scope is accepted and ignored.
struct KvScopes {
  std::string base;            // "<x>" when the HN has it, else ""
  std::string prefill;         // "<x>__prefill", "" when there is not exactly one
  std::string tbt;             // "<x>__tbt", "" when there is not exactly one
  std::string problem;         // why these are not one base (optional) + one of each suffix; "" when they are
  bool has_kv_suffix = false;  // some scope ends in __prefill or __tbt
  bool is_group(const std::string& scope) const { return problem.empty() && (scope == prefill || scope == tbt); }
};
KvScopes kv_scopes(const HnModel& hn);
// kv_scopes(), throwing BadInput (naming the HN and the scopes) on a problem.
KvScopes require_kv_scopes(const HnModel& hn);

// "scope/layer" -> "scope" ("" when there is no '/').
std::string scope_of(const std::string& layer);
std::string short_name(const std::string& layer);

}  // namespace llm2hef::core::har
