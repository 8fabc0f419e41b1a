#include "llm2hef/sdk/sliding_window.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

bool SlidingWindow::any() const { return window > 0 && std::find(layers.begin(), layers.end(), true) != layers.end(); }

std::string SlidingWindow::layer_list() const {
  if (std::all_of(layers.begin(), layers.end(), [](bool b) { return b; }))
    return "all " + std::to_string(layers.size()) + " layers";
  std::string s;
  for (size_t i = 0; i < layers.size(); ++i)
    if (layers[i]) s += (s.empty() ? "" : ",") + std::to_string(i);
  return "layers " + s;
}

namespace {

// layer_types as transformers' layer_type_validation accepts it for these
// families (one entry per layer), limited to the two kinds a causal decoder
// of the Llama family has; null or absent is an empty list.
std::vector<std::string> read_layer_types(const JsonFile& c, int64_t count) {
  const auto& raw = c.raw();
  if (!raw.contains("layer_types") || raw["layer_types"].is_null()) return {};
  const auto& t = raw["layer_types"];
  if (!t.is_array() || static_cast<int64_t>(t.size()) != count)
    throw BadInput(c.where("layer_types") + ": expected a list of " + std::to_string(count) +
                   " layer types (one per layer), got " +
                   (t.is_array() ? "a list of " + std::to_string(t.size()) : std::string(t.type_name())));
  std::vector<std::string> kinds;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t[i].is_string())
      throw BadInput(c.where("layer_types") + ": entry " + std::to_string(i) + " is " + t[i].dump() + ", not a string");
    const std::string kind = t[i].get<std::string>();
    if (kind != "full_attention" && kind != "sliding_attention")
      throw Unsupported(c.where("layer_types") + ": layer " + std::to_string(i) + " is '" + kind +
                        "' (only full_attention and sliding_attention are supported)");
    kinds.push_back(kind);
  }
  return kinds;
}

}  // namespace

SlidingWindow read_sliding_window(const JsonFile& c, int64_t count) {
  SlidingWindow w;
  w.where = c.where("sliding_window");
  w.layers.assign(static_cast<size_t>(count), false);
  const std::vector<std::string> kinds = read_layer_types(c, count);
  const std::optional<int64_t> window = c.find_int("sliding_window");
  if (!window) return w;
  if (*window < 1)
    throw BadInput(c.where("sliding_window") + ": " + std::to_string(*window) + " must be positive (or null)");
  if (c.find_bool("use_sliding_window") == false) return w;
  w.window = *window;
  if (!kinds.empty()) {
    for (size_t i = 0; i < kinds.size(); ++i) w.layers[i] = kinds[i] == "sliding_attention";
    return w;
  }
  if (const std::optional<int64_t> first = c.find_int("max_window_layers")) {
    for (int64_t i = std::max<int64_t>(*first, 0); i < count; ++i) w.layers[static_cast<size_t>(i)] = true;
    return w;
  }
  w.layers.assign(static_cast<size_t>(count), true);
  return w;
}

void apply_sliding_window(Plan& p, const ExportOptions& opt, const SlidingWindow& w, const std::string& alternative) {
  if (!w.any()) return;
  const std::string n = std::to_string(opt.cache_size), window = std::to_string(w.window);
  if (opt.cache_size <= w.window) {
    p.notes.push_back("--cache " + n + " <= sliding_window " + window + " (" + w.layer_list() +
                      "): every layer attends to the whole cache, which is exactly its window here; every layer is "
                      "global and exact");
    p.rewrites.push_back("sliding window " + window + " dropped: it cannot bite within a cache of " + n);
    return;
  }
  throw Unsupported(w.where + ": " + window + " (" + w.layer_list() + ") is smaller than --cache " + n +
                    ": the Hailo runtime builds one mask for every layer and has no window, so the window cannot be "
                    "applied; the largest exact cache is " +
                    window + " (pass --cache " + window + " or less" +
                    (alternative.empty() ? "" : ", or " + alternative) + ")");
}

}  // namespace llm2hef::sdk
