// The descriptor and info() disagree about the adapter's name.
#include "fake_adapter.hpp"

namespace {
struct NameMismatch : llm2hef_test::FakeAdapter {
  NameMismatch() : FakeAdapter(llm2hef_test::fake_info("other_name", {"MismatchForCausalLM"}, {})) {}
};
}  // namespace

LLM2HEF_DEFINE_ADAPTER(NameMismatch, "name_mismatch", "1.0.0")
