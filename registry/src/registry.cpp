#include "llm2hef/registry/registry.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::registry {

namespace {

using plugins::LoadedAdapter;

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string origin_of(const sdk::JsonFile& config) { return config.origin().empty() ? "config.json" : config.origin(); }

std::vector<std::string> read_architectures(const sdk::JsonFile& config) {
  if (!config.has("architectures")) return {};
  const auto& v = config.raw().at("architectures");
  std::vector<std::string> out;
  if (v.is_array() && std::all_of(v.begin(), v.end(), [](const auto& e) { return e.is_string(); })) {
    for (const auto& e : v) out.push_back(e.template get<std::string>());
    return out;
  }
  throw BadInput(config.where("architectures") + ": expected a list of strings, got " + v.dump());
}

struct Candidate {
  const LoadedAdapter* adapter;
  std::string value;  // what it matched on
};

// Adapters claiming any of `values` through `claimed` (architectures or
// model_types), each once, ordered by the rule in registry.hpp: the position
// of the value in `values` first, then discovery order.
template <typename Claims>
std::vector<Candidate> candidates(const plugins::AdapterHost& host, const std::vector<std::string>& values,
                                  Claims claimed) {
  std::vector<Candidate> out;
  for (const auto& v : values)
    for (const auto& a : host.adapters()) {
      const bool already = std::any_of(out.begin(), out.end(), [&](const Candidate& c) { return c.adapter == &a; });
      if (!already && contains(claimed(a.info()), v)) out.push_back({&a, v});
    }
  return out;
}

Resolution choose(const sdk::JsonFile& config, MatchKind how, const std::vector<Candidate>& found) {
  Resolution r{found[0].adapter, how, found[0].value, {}, {}};
  if (found.size() == 1) return r;
  std::vector<std::string> others;
  for (std::size_t i = 1; i < found.size(); ++i) {
    r.passed_over.push_back(found[i].adapter);
    others.push_back(found[i].adapter->name() + " (" + found[i].adapter->path().string() + ", claims " +
                     in_quotes(found[i].value) + ")");
  }
  const char* what = how == MatchKind::model_type ? "model_type" : "architecture";
  r.warning = origin_of(config) + ": " + std::string(what) + " " + in_quotes(found[0].value) +
              " is claimed by more than one adapter; using " + found[0].adapter->name() + " (" +
              found[0].adapter->path().string() + "), found first in the search order, over " + join(others, ", ") +
              "; pass --adapter NAME to choose another";
  return r;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Why no adapter can take a whole kind of model, whatever --adapter says:
// mixtures of experts (a router choosing among expert MLPs in each layer) and
// state-space models (no attention, no KV cache) are not transformer decoders
// with one dense MLP per layer, the only graph llm2hef writes.
std::optional<std::string> kind_refusal(const sdk::JsonFile& config, const std::vector<std::string>& architectures,
                                        const std::optional<std::string>& model_type) {
  std::vector<std::string> names;
  for (const auto& a : architectures) names.push_back(lower(a));
  if (model_type) names.push_back(lower(*model_type));
  const auto named = [&](std::initializer_list<const char*> words) -> std::optional<std::string> {
    for (const auto& n : names)
      for (const char* w : words)
        if (n.find(w) != std::string::npos) return n;
    return std::nullopt;
  };
  const auto key_over_one = [&](std::initializer_list<const char*> keys) -> std::optional<std::string> {
    for (const char* k : keys) {
      if (!config.has(k)) continue;
      const auto& v = config.raw().at(k);
      if (v.is_number_integer() && v.get<int64_t>() > 1) return std::string(k) + " = " + v.dump();
    }
    return std::nullopt;
  };
  const char* no_force = "; no --adapter can export it";
  if (auto key = key_over_one({"num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"}))
    return "mixture of experts: not supported (" + *key +
           "): each layer routes tokens among expert MLPs, and "
           "llm2hef writes one dense MLP per layer" +
           no_force;
  if (auto name = named({"moe", "mixtral"}))
    return "mixture of experts: not supported ('" + *name +
           "'): each layer routes tokens among expert MLPs, "
           "and llm2hef writes one dense MLP per layer" +
           no_force;
  std::optional<std::string> ssm = named({"mamba", "rwkv", "ssm", "hyena"});
  if (!ssm)
    for (const char* k : {"ssm_cfg", "ssm_state_size", "d_state", "state_size"})
      if (config.has(k)) ssm = std::string(k);
  if (ssm)
    return "state-space model, not a transformer decoder ('" + *ssm +
           "'): it has no attention and no KV cache, "
           "which is what the Hailo genai runtime runs" +
           no_force;
  return std::nullopt;
}

std::string available_hint(const plugins::AdapterHost& host) {
  if (host.adapters().empty())
    return "no adapters were found (run 'llm2hef adapters --verbose' to see where llm2hef looked, "
           "or add a folder with --adapter-path)";
  return "available adapters: " + join(host.names(), ", ");
}

}  // namespace

const char* to_string(MatchKind kind) {
  switch (kind) {
    case MatchKind::override_name: return "--adapter";
    case MatchKind::architecture: return "architectures";
    case MatchKind::model_type: return "model_type";
  }
  return "unknown";
}

Resolution resolve(const sdk::JsonFile& config, const plugins::AdapterHost& host,
                   std::optional<std::string> adapter_override) {
  if (adapter_override) {
    // The user's explicit choice bypasses matching: it is how conflicts are
    // settled and how an adapter is tried on a lookalike architecture.
    if (const LoadedAdapter* a = host.find(*adapter_override)) {
      // Not for a kind no adapter builds: the adapter would fail later on a
      // tensor it expects (an expert's MLP is not a dense one).
      const auto architectures = read_architectures(config);
      const bool claimed = std::any_of(architectures.begin(), architectures.end(), [&](const std::string& arch) {
        return contains(a->info().architectures, arch);
      });
      if (!claimed)
        if (auto why = kind_refusal(config, architectures, config.find_string("model_type")))
          throw Unsupported(origin_of(config) + ": --adapter " + *adapter_override +
                            " cannot export this model: " + *why);
      return {a, MatchKind::override_name, *adapter_override, {}, {}};
    }
    throw UsageError("unknown adapter " + in_quotes(*adapter_override) + " (--adapter); " + available_hint(host));
  }

  const std::vector<std::string> architectures = read_architectures(config);
  const std::optional<std::string> model_type = config.find_string("model_type");

  auto by_arch = candidates(
      host, architectures, [](const sdk::AdapterInfo& i) -> auto& { return i.architectures; });
  if (!by_arch.empty()) return choose(config, MatchKind::architecture, by_arch);

  if (model_type) {
    auto by_type = candidates(
        host, {*model_type}, [](const sdk::AdapterInfo& i) -> auto& { return i.model_types; });
    if (!by_type.empty()) return choose(config, MatchKind::model_type, by_type);
  }

  std::vector<std::string> found_arch;
  for (const auto& a : architectures) found_arch.push_back(in_quotes(a));
  std::string found = "architectures [" + join(found_arch, ", ") + "], model_type " +
                      (model_type ? in_quotes(*model_type) : std::string("(none)"));

  if (auto why = kind_refusal(config, architectures, model_type))
    throw Unsupported(origin_of(config) + ": no adapter supports this model (" + found + "): " + *why);

  std::vector<std::string> supported;
  for (const auto& a : host.adapters())
    for (const auto& arch : a.info().architectures) supported.push_back(arch + " (" + a.name() + ")");
  std::string hint = host.adapters().empty()
                         ? available_hint(host)
                         : "supported architectures: " + join(supported, ", ") + "; pass --adapter NAME to force one";
  throw Unsupported(origin_of(config) + ": no adapter supports this model (" + found + "); " + hint);
}

nlohmann::json resolution_json(const Resolution& r) {
  nlohmann::json passed_over = nlohmann::json::array();
  for (const auto* a : r.passed_over) passed_over.push_back({{"name", a->name()}, {"file", a->path().string()}});
  nlohmann::json out = {{"name", r.adapter->name()},
                        {"version", r.adapter->info().version},
                        {"file", r.adapter->path().string()},
                        {"matched_by", to_string(r.how)},
                        {"matched", r.matched},
                        {"passed_over", passed_over}};
  if (!r.warning.empty()) out["warning"] = r.warning;
  return out;
}

std::vector<ArchitectureConflict> architecture_conflicts(const plugins::AdapterHost& host) {
  std::map<std::string, std::vector<const LoadedAdapter*>> claims;  // sorted by architecture
  for (const auto& a : host.adapters())
    for (const auto& arch : a.info().architectures) {
      auto& who = claims[arch];
      // An adapter listing one architecture twice does not conflict with itself.
      if (std::find(who.begin(), who.end(), &a) == who.end()) who.push_back(&a);
    }
  std::vector<ArchitectureConflict> out;
  for (auto& [arch, who] : claims)
    if (who.size() > 1) out.push_back({arch, std::move(who)});
  return out;
}

}  // namespace llm2hef::registry
