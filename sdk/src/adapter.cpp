#include "llm2hef/sdk/adapter.hpp"

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

std::string adapter_option(const AdapterInfo& info, const std::map<std::string, std::string>& given,
                           const std::string& name) {
  for (const auto& spec : info.options) {
    if (spec.name != name) continue;
    auto it = given.find(name);
    return it == given.end() ? spec.default_value : it->second;
  }
  throw InternalError("adapter '" + info.name + "' asked for undeclared option '" + name + "'");
}

std::string ExportOptions::option(const AdapterInfo& info, const std::string& name) const {
  return adapter_option(info, adapter_options, name);
}

}  // namespace llm2hef::sdk
