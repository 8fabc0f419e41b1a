// Another build of "fake_good" (version 2.0.0) in its own folder: tests that
// the earlier search root wins a name clash.
#include "fake_adapter.hpp"

namespace {
struct FakeGoodV2 : llm2hef_test::FakeAdapter {
  FakeGoodV2() : FakeAdapter(make_info()) {}
  static llm2hef::sdk::AdapterInfo make_info() {
    auto info = llm2hef_test::fake_info("fake_good", {"FakeForCausalLM"}, {"fake"});
    info.version = "2.0.0";
    return info;
  }
};
}  // namespace

LLM2HEF_DEFINE_ADAPTER(FakeGoodV2, "fake_good", "2.0.0")
