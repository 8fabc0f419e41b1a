#include "llm2hef/plugins/probe.hpp"

#include "llm2hef/plugins/loader.hpp"
#include "llm2hef/plugins/throwaway_child.hpp"

namespace llm2hef::plugins {

std::string probe_in_child(const std::filesystem::path& path, std::chrono::milliseconds timeout) {
  // The report is sent only after the adapter was destroyed and the library
  // unloaded, so a destructor that ends the process is caught too.
  static const std::string kFinished = "F";
  const ChildOutcome o = run_in_child(
      [&]() -> std::string {
        try {
          LoadedAdapter loaded = load_adapter(path);
        } catch (...) {
          // Rejected cleanly: the host's own load gives the same reason.
        }
        return kFinished;
      },
      timeout, kFinished.size());
  if (!o.started) return "cannot isolate the load (" + o.failure + "); not loaded";
  if (o.timed_out || o.too_long)
    return "the library did not finish loading within " + std::to_string(timeout.count()) +
           " ms (its loading process was killed)";
  if (o.exited_cleanly && o.report == kFinished) return {};
  return o.how_it_ended;
}

}  // namespace llm2hef::plugins
