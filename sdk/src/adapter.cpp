#include "llm2hef/sdk/adapter.hpp"

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

std::string ExportOptions::option(const AdapterInfo& info, const std::string& name) const {
  for (const auto& spec : info.options) {
    if (spec.name != name) continue;
    auto it = adapter_options.find(name);
    return it == adapter_options.end() ? spec.default_value : it->second;
  }
  throw InternalError("adapter '" + info.name + "' asked for undeclared option '" + name + "'");
}

}  // namespace llm2hef::sdk
