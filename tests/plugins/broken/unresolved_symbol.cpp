// Links (with --unresolved-symbols=ignore-all) against a function that exists
// nowhere. Loaded lazily it would abort on first call; with RTLD_NOW dlopen
// itself must fail.
#include "fake_adapter.hpp"

extern "C" __attribute__((visibility("default"))) int llm2hef_test_defined_nowhere(int);

namespace {
struct Unresolved : llm2hef_test::FakeAdapter {
  Unresolved() : FakeAdapter(llm2hef_test::fake_info("unresolved_symbol", {"UnresolvedForCausalLM"}, {})) {
    if (llm2hef_test_defined_nowhere(1) != 1) throw std::runtime_error("unreachable");
  }
};
}  // namespace

LLM2HEF_DEFINE_ADAPTER(Unresolved, "unresolved_symbol", "1.0.0")
