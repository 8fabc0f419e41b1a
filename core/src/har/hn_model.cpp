#include "llm2hef/core/har/hn_model.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/core/runtime/hef_names.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <unordered_set>

#include <xxhash.h>

#include <memory>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::core::har {

using json = nlohmann::ordered_json;

std::string scope_of(const std::string& layer) {
  const size_t slash = layer.find('/');
  return slash == std::string::npos ? std::string() : layer.substr(0, slash);
}

std::string short_name(const std::string& layer) {
  const size_t slash = layer.find('/');
  return slash == std::string::npos ? layer : layer.substr(slash + 1);
}

HnModel HnModel::parse(std::string_view text, std::string label) {
  // Depth- and size-bounded, linear, in document order: the layers are
  // written back in the order the DFC wrote them.
  json doc = sdk::parse_ordered_json(text, label, sdk::JsonLimits::hn());
  return HnModel(std::move(doc), std::move(label));
}

HnModel::HnModel(json doc, std::string label) : doc_(std::move(doc)), label_(std::move(label)) { validate(); }

namespace {

void check_names(const std::string& label, const std::string& layer, const json& l, const char* field) {
  if (!l.contains(field)) return;
  const json& v = l.at(field);
  if (!v.is_array()) throw BadInput(label + ": layer '" + layer + "' field '" + field + "' is not a list");
  for (const auto& n : v)
    if (!n.is_string()) throw BadInput(label + ": layer '" + layer + "' field '" + field + "' holds a non-string");
}

void check_shapes(const std::string& label, const std::string& layer, const json& l, const char* field) {
  if (!l.contains(field)) return;
  const json& v = l.at(field);
  if (!v.is_array()) throw BadInput(label + ": layer '" + layer + "' field '" + field + "' is not a list of shapes");
  for (const auto& s : v) {
    if (!s.is_array()) throw BadInput(label + ": layer '" + layer + "' field '" + field + "' holds a non-list shape");
    for (const auto& d : s)
      if (!d.is_number_integer())
        throw BadInput(label + ": layer '" + layer + "' field '" + field + "' holds a non-integer dimension");
  }
}

std::vector<Shape> shapes(const json& l, const char* field) {
  std::vector<Shape> out;
  if (!l.contains(field)) return out;
  for (const auto& s : l.at(field)) out.push_back(s.get<Shape>());
  return out;
}

std::vector<std::string> names(const json& l, const char* field) {
  if (!l.contains(field)) return {};
  return l.at(field).get<std::vector<std::string>>();
}

}  // namespace

void HnModel::validate() const {
  if (!doc_.is_object()) throw BadInput(label_ + ": the HN is not a JSON object");
  if (!doc_.contains("layers") || !doc_.at("layers").is_object())
    throw BadInput(label_ + ": the HN has no 'layers' object");
  if (doc_.contains("name") && !doc_.at("name").is_string()) throw BadInput(label_ + ": 'name' is not a string");
  const json& layers = doc_.at("layers");
  for (const auto& [name, l] : layers.items()) {
    if (!l.is_object()) throw BadInput(label_ + ": layer '" + name + "' is not an object");
    if (!l.contains("type") || !l.at("type").is_string())
      throw BadInput(label_ + ": layer '" + name + "' has no string 'type'");
    check_names(label_, name, l, "input");
    check_names(label_, name, l, "output");
    check_shapes(label_, name, l, "input_shapes");
    check_shapes(label_, name, l, "output_shapes");
    if (l.contains("io_type") && !l.at("io_type").is_string())
      throw BadInput(label_ + ": layer '" + name + "' field 'io_type' is not a string");
  }
  // Edges: every name exists and each edge is recorded on both ends (the
  // fixups walk both directions, so a one-sided edge would be edited wrongly).
  // One pass collects the edges each end records, so the check is linear.
  std::unordered_set<std::string_view> names_seen;
  names_seen.reserve(layers.size());
  for (const auto& [name, l] : layers.items()) names_seen.insert(name);
  auto edge_key = [](std::string_view from, std::string_view to) {
    std::string k;
    k.reserve(from.size() + to.size() + 1);
    return k.append(from).append(1, '\0').append(to);
  };
  std::unordered_set<std::string> as_output, as_input;  // "from\0to" as each end records it
  for (const auto& [name, l] : layers.items()) {
    if (l.contains("output"))
      for (const auto& c : l.at("output")) as_output.insert(edge_key(name, c.get_ref<const std::string&>()));
    if (l.contains("input"))
      for (const auto& p : l.at("input")) as_input.insert(edge_key(p.get_ref<const std::string&>(), name));
  }
  for (const auto& [name, l] : layers.items()) {
    if (l.contains("input"))
      for (const auto& pj : l.at("input")) {
        const std::string& p = pj.get_ref<const std::string&>();
        if (!names_seen.count(p)) throw BadInput(label_ + ": layer '" + name + "' input '" + p + "' is not a layer");
        if (!as_output.count(edge_key(p, name)))
          throw BadInput(label_ + ": layer '" + name + "' reads '" + p + "', whose 'output' does not list it");
      }
    if (l.contains("output"))
      for (const auto& cj : l.at("output")) {
        const std::string& c = cj.get_ref<const std::string&>();
        if (!names_seen.count(c)) throw BadInput(label_ + ": layer '" + name + "' output '" + c + "' is not a layer");
        if (!as_input.count(edge_key(name, c)))
          throw BadInput(label_ + ": layer '" + name + "' feeds '" + c + "', whose 'input' does not list it");
      }
  }
  if (doc_.contains("net_params")) {
    const json& np = doc_.at("net_params");
    if (!np.is_object()) throw BadInput(label_ + ": 'net_params' is not an object");
    for (const char* f : {"output_layers_order", "net_scopes"}) {
      if (!np.contains(f)) continue;
      if (!np.at(f).is_array()) throw BadInput(label_ + ": net_params." + f + " is not a list");
      for (const auto& n : np.at(f))
        if (!n.is_string()) throw BadInput(label_ + ": net_params." + f + " holds a non-string");
    }
    if (np.contains("output_layers_order"))
      for (const auto& n : np.at("output_layers_order"))
        if (!names_seen.count(n.get_ref<const std::string&>()))
          throw BadInput(label_ + ": net_params.output_layers_order names '" + n.get<std::string>() +
                         "', which is not a layer");
  }
}

std::string HnModel::dump() const { return core::json_text(doc_, -1); }

namespace {

// Feeds the serializer's output to XXH3 in blocks instead of storing it.
class HashingOutput final : public nlohmann::detail::output_adapter_protocol<char> {
 public:
  HashingOutput() : state_(XXH3_createState(), &XXH3_freeState) {
    if (!state_ || XXH3_128bits_reset(state_.get()) != XXH_OK) throw InternalError("XXH3 state setup failed");
  }
  void write_character(char c) override {
    if (used_ == sizeof buf_) flush();
    buf_[used_++] = c;
  }
  void write_characters(const char* s, std::size_t n) override {
    if (n > sizeof buf_ - used_) flush();
    if (n >= sizeof buf_) {
      XXH3_128bits_update(state_.get(), s, n);
      return;
    }
    std::memcpy(buf_ + used_, s, n);
    used_ += n;
  }
  std::pair<uint64_t, uint64_t> digest() {
    flush();
    const XXH128_hash_t h = XXH3_128bits_digest(state_.get());
    return {h.high64, h.low64};
  }

 private:
  void flush() {
    XXH3_128bits_update(state_.get(), buf_, used_);
    used_ = 0;
  }
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state_;
  char buf_[1 << 16];
  std::size_t used_ = 0;
};

}  // namespace

std::pair<uint64_t, uint64_t> HnModel::digest() const {
  auto out = std::make_shared<HashingOutput>();
  nlohmann::detail::serializer<json> writer(out, ' ', nlohmann::detail::error_handler_t::strict);
  writer.dump(doc_, false, false, 0);
  return out->digest();
}

std::string HnModel::name() const { return doc_.value("name", std::string()); }

std::vector<std::string> HnModel::layer_names() const {
  std::vector<std::string> out;
  for (const auto& [name, l] : doc_.at("layers").items()) out.push_back(name);
  return out;
}

namespace {

// The layers as the vector of (name, layer) pairs an ordered_json object is
// (ordered_map hides the vector's operator[] behind its by-key one).
const json::object_t::Container& layer_vector(const json& doc) {
  return doc.at("layers").get_ref<const json::object_t&>();
}

}  // namespace

void HnModel::rebuild_index() const {
  index_.clear();
  const auto& layers = layer_vector(doc_);
  index_.reserve(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) index_.emplace(layers[i].first, i);
  index_stale_ = false;
}

const json* HnModel::find_layer(const std::string& name) const {
  const auto& layers = layer_vector(doc_);
  // The index is rebuilt when the document may have changed behind it
  // (doc() handed out, erase()) or when its size says so; a position that
  // no longer holds the name also forces a rebuild.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (index_stale_ || index_.size() != layers.size()) rebuild_index();
    const auto it = index_.find(name);
    if (it == index_.end()) return nullptr;
    if (it->second < layers.size() && layers[it->second].first == name) return &layers[it->second].second;
    index_stale_ = true;
  }
  return nullptr;
}

bool HnModel::has(const std::string& l) const { return find_layer(l) != nullptr; }

json& HnModel::layer(const std::string& name) {
  const json* l = find_layer(name);
  if (!l) throw InternalError(label_ + ": no layer '" + name + "'");
  return *const_cast<json*>(l);  // doc_ is ours and not const here
}

const json& HnModel::layer(const std::string& name) const {
  const json* l = find_layer(name);
  if (!l) throw InternalError(label_ + ": no layer '" + name + "'");
  return *l;
}

std::string HnModel::type(const std::string& l) const { return layer(l).at("type").get<std::string>(); }
std::vector<std::string> HnModel::inputs(const std::string& l) const { return names(layer(l), "input"); }
std::vector<std::string> HnModel::outputs(const std::string& l) const { return names(layer(l), "output"); }
std::vector<Shape> HnModel::input_shapes(const std::string& l) const { return shapes(layer(l), "input_shapes"); }
std::vector<Shape> HnModel::output_shapes(const std::string& l) const { return shapes(layer(l), "output_shapes"); }
bool HnModel::is_cache(const std::string& l) const { return layer(l).value("io_type", std::string()) == "cache"; }

std::vector<std::string> HnModel::scopes() const {
  std::vector<std::string> out;
  if (doc_.contains("net_params") && doc_.at("net_params").contains("net_scopes"))
    out = doc_.at("net_params").at("net_scopes").get<std::vector<std::string>>();
  std::unordered_set<std::string> seen(out.begin(), out.end());
  for (const auto& [n, l] : doc_.at("layers").items()) {
    std::string s = scope_of(n);
    if (!s.empty() && seen.insert(s).second) out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> HnModel::output_order() const {
  if (doc_.contains("net_params") && doc_.at("net_params").contains("output_layers_order"))
    return doc_.at("net_params").at("output_layers_order").get<std::vector<std::string>>();
  return {};
}

std::vector<std::string> HnModel::cache_layers() const {
  std::vector<std::string> out;
  for (const auto& [n, l] : doc_.at("layers").items())
    if (l.value("io_type", std::string()) == "cache") out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> HnModel::layers_of_type(const std::string& t) const {
  std::vector<std::string> out;
  for (const auto& [n, l] : doc_.at("layers").items())
    if (l.at("type").get_ref<const std::string&>() == t) out.push_back(n);
  return out;
}

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

// "<x>" of "<x><suffix>" with a non-empty <x>, else "".
std::string stem(const std::string& scope, std::string_view suffix) {
  if (scope.size() <= suffix.size() || !scope.ends_with(suffix)) return {};
  return scope.substr(0, scope.size() - suffix.size());
}

}  // namespace

KvScopes kv_scopes(const HnModel& hn) {
  KvScopes k;
  const std::vector<std::string> all = hn.scopes();
  std::vector<std::string> prefills, tbts, rest;
  for (const auto& s : all) {
    if (!stem(s, kPrefillGroupSuffix).empty())
      prefills.push_back(s);
    else if (!stem(s, kTbtGroupSuffix).empty())
      tbts.push_back(s);
    else
      rest.push_back(s);
  }
  k.has_kv_suffix = !prefills.empty() || !tbts.empty();
  const std::string want = "exactly one '<x>__prefill' and one '<x>__tbt' scope, next to at most the base '<x>'";
  if (prefills.size() != 1 || tbts.size() != 1) {
    k.problem = "scopes [" + joined(all) + "] hold " + std::to_string(prefills.size()) + " '__prefill' and " +
                std::to_string(tbts.size()) + " '__tbt' scope(s); " + want;
    return k;
  }
  const std::string x = stem(prefills[0], kPrefillGroupSuffix);
  if (stem(tbts[0], kTbtGroupSuffix) != x) {
    k.problem = "scopes '" + prefills[0] + "' and '" + tbts[0] + "' do not share one base name; " + want;
    return k;
  }
  for (const auto& s : rest) {
    if (s == x) {
      k.base = s;
      continue;
    }
    k.problem = "scope '" + s + "' is neither the base '" + x + "' nor one of its two groups; " + want;
    return k;
  }
  k.prefill = prefills[0];
  k.tbt = tbts[0];
  return k;
}

KvScopes require_kv_scopes(const HnModel& hn) {
  KvScopes k = kv_scopes(hn);
  if (!k.problem.empty())
    throw BadInput(hn.label() + ": " + k.problem +
                   " (set_kv_cache_global_params makes them; a third network group breaks genai, "
                   "hailo-contract.md sections 3, 8-9). Is this the quantized HAR?");
  return k;
}

void HnModel::replace_in_list(const std::string& l, const char* field, const std::string& from,
                              const std::vector<std::string>& to) {
  json& list = layer(l)[field];
  json out = json::array();
  for (const auto& n : list) {
    if (n.get<std::string>() == from) {
      for (const auto& t : to) out.push_back(t);
    } else {
      out.push_back(n);
    }
  }
  list = std::move(out);
}

void HnModel::erase(const std::string& l) {
  doc_["layers"].erase(l);
  index_stale_ = true;
}

std::string HnModel::fresh_name(const std::string& scope, const std::string& base) const {
  long long top = 0;
  const std::string prefix = scope + "/" + base;
  for (const auto& n : layer_names()) {
    if (n.rfind(prefix, 0) != 0) continue;
    const std::string tail = n.substr(prefix.size());
    if (tail.empty() || tail.size() > 12 || !std::all_of(tail.begin(), tail.end(), ::isdigit)) continue;
    top = std::max(top, std::stoll(tail));
  }
  return prefix + std::to_string(top + 1);
}

}  // namespace llm2hef::core::har
