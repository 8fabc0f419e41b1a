// The other adapter claiming ClashForCausalLM (and model_type "clash").
#include "fake_adapter.hpp"

namespace {
struct ClaimB : llm2hef_test::FakeAdapter {
  ClaimB() : FakeAdapter(llm2hef_test::fake_info("claim_b", {"ClashForCausalLM"}, {"clash"})) {}
};
}  // namespace

LLM2HEF_DEFINE_ADAPTER(ClaimB, "claim_b", "1.0.0")
