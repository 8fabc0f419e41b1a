#include "llm2hef/registry/claims_probe.hpp"

#include <nlohmann/json.hpp>

#include "llm2hef/plugins/loader.hpp"
#include "llm2hef/plugins/throwaway_child.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::registry {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxReport = 1 << 20;  // info() of a real adapter is a few hundred bytes

// In the child: the loader's verdict as JSON.
std::string load_and_report(const std::filesystem::path& library) {
  json report;
  try {
    plugins::LoadedAdapter loaded = plugins::load_adapter(library);
    const auto& info = loaded.info();
    report = {{"loaded", true},
              {"name", info.name},
              {"version", info.version},
              {"architectures", info.architectures},
              {"model_types", info.model_types}};
  } catch (const plugins::PluginLoadError& e) {
    report = {{"loaded", false}, {"error", e.detail()}};
  } catch (const std::exception& e) {
    report = {{"loaded", false}, {"error", std::string("unexpected error while loading: ") + e.what()}};
  }
  // Returned after the adapter was destroyed and unloaded: a destructor that
  // ends the process is caught too.
  return report.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

ProbedClaims probe_claims(const std::filesystem::path& library, std::chrono::milliseconds timeout) {
  const plugins::ChildOutcome o = plugins::run_in_child([&] { return load_and_report(library); }, timeout, kMaxReport);
  if (!o.started) throw InternalError("cannot start the loading process (" + o.failure + ")");
  ProbedClaims out;
  if (o.timed_out) {
    out.error = "the library did not finish loading within " + std::to_string(timeout.count()) +
                " ms (its loading process was killed)";
    return out;
  }
  if (o.too_long) {
    out.error = "the library reported more than " + std::to_string(kMaxReport) + " bytes of claims";
    return out;
  }
  if (!o.exited_cleanly || o.report.empty()) {
    out.error = o.how_it_ended;
    return out;
  }
  try {
    const json report = json::parse(o.report);
    out.loaded = report.at("loaded").get<bool>();
    if (!out.loaded) {
      out.error = report.at("error").get<std::string>();
      return out;
    }
    out.name = report.at("name").get<std::string>();
    out.version = report.at("version").get<std::string>();
    out.architectures = report.at("architectures").get<std::vector<std::string>>();
    out.model_types = report.at("model_types").get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    out.loaded = false;
    out.error = std::string("the library's loading process sent an unreadable report: ") + e.what();
  }
  return out;
}

}  // namespace llm2hef::registry
