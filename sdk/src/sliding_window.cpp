#include "llm2hef/sdk/sliding_window.hpp"

#include <algorithm>

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

SlidingWindow read_sliding_window(const JsonFile& c, int64_t count) {
  SlidingWindow w;
  w.where = c.where("sliding_window");
  w.layers.assign(static_cast<size_t>(count), false);
  const std::optional<int64_t> window = c.find_int("sliding_window");
  if (!window) return w;
  if (*window < 1) throw BadInput(c.where("sliding_window") + ": " + std::to_string(*window) + " must be positive (or null)");
  if (c.find_bool("use_sliding_window") == false) return w;
  w.window = *window;
  const auto& raw = c.raw();
  if (raw.contains("layer_types") && !raw["layer_types"].is_null()) {
    const auto& t = raw["layer_types"];
    if (!t.is_array() || static_cast<int64_t>(t.size()) != count)
      throw BadInput(c.where("layer_types") + ": expected a list of " + std::to_string(count) + " layer types");
    for (size_t i = 0; i < t.size(); ++i) {
      if (!t[i].is_string()) throw BadInput(c.where("layer_types") + ": entry " + std::to_string(i) + " is not a string");
      w.layers[i] = t[i].get<std::string>() == "sliding_attention";
    }
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
                    "applied; the largest exact cache is " + window + " (pass --cache " + window + " or less" +
                    (alternative.empty() ? "" : ", or " + alternative) + ")");
}

}  // namespace llm2hef::sdk
