// A do-nothing adapter the test plugins share: only its identity matters to
// the plugin host; plan() and build_graph() are never called by these tests.
#pragma once

#include <utility>

#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef_test {

class FakeAdapter : public llm2hef::sdk::Adapter {
 public:
  explicit FakeAdapter(llm2hef::sdk::AdapterInfo info) : info_(std::move(info)) {}

  llm2hef::sdk::AdapterInfo info() const override { return info_; }
  llm2hef::sdk::Plan plan(const llm2hef::sdk::Checkpoint&, const llm2hef::sdk::ExportOptions&) const override {
    throw llm2hef::Unsupported("test adapter '" + info_.name + "' cannot plan");
  }
  void build_graph(const llm2hef::sdk::Checkpoint&, const llm2hef::sdk::Plan&,
                   llm2hef::sdk::GraphBuilder&) const override {
    throw llm2hef::Unsupported("test adapter '" + info_.name + "' cannot build graphs");
  }

 private:
  llm2hef::sdk::AdapterInfo info_;
};

// AdapterInfo with just the identity fields set.
inline llm2hef::sdk::AdapterInfo fake_info(std::string name, std::vector<std::string> architectures,
                                           std::vector<std::string> model_types) {
  llm2hef::sdk::AdapterInfo info;
  info.name = std::move(name);
  info.version = "1.0.0";
  info.description = "test adapter " + info.name;
  info.architectures = std::move(architectures);
  info.model_types = std::move(model_types);
  return info;
}

}  // namespace llm2hef_test
