// One of two adapters claiming ClashForCausalLM (and model_type "clash").
#include "fake_adapter.hpp"

namespace {
struct ClaimA : llm2hef_test::FakeAdapter {
  ClaimA() : FakeAdapter(llm2hef_test::fake_info("claim_a", {"ClashForCausalLM", "OnlyAForCausalLM"}, {"clash"})) {}
};
}  // namespace

LLM2HEF_DEFINE_ADAPTER(ClaimA, "claim_a", "1.0.0")
