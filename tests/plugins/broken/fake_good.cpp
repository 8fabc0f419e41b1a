// A well-formed adapter: architecture FakeForCausalLM, model_type "fake", one option.
#include "fake_adapter.hpp"

namespace {
struct FakeGood : llm2hef_test::FakeAdapter {
  FakeGood() : FakeAdapter(make_info()) {}
  static llm2hef::sdk::AdapterInfo make_info() {
    auto info = llm2hef_test::fake_info("fake_good", {"FakeForCausalLM"}, {"fake"});
    info.description = "a well-formed test adapter";
    info.options.push_back({"flavor", {"plain", "spicy"}, "plain", "which flavor to fake"});
    return info;
  }
};
}  // namespace

LLM2HEF_DEFINE_ADAPTER(FakeGood, "fake_good", "1.0.0")
