// A library constructor that calls exit(0) as soon as the file is dlopen-ed:
// without isolation llm2hef would end with status 0 and say nothing.
#include <cstdlib>

#include "fake_adapter.hpp"

namespace {
[[gnu::constructor]] void exit_on_load() { std::exit(0); }

struct ConstructorExits : llm2hef_test::FakeAdapter {
  ConstructorExits() : FakeAdapter(llm2hef_test::fake_info("constructor_exits", {"ExitForCausalLM"}, {})) {}
};
}  // namespace

LLM2HEF_DEFINE_ADAPTER(ConstructorExits, "constructor_exits", "1.0.0")
