// A library constructor that calls abort() as soon as the file is dlopen-ed:
// without isolation llm2hef would die by SIGABRT without naming the file.
#include <cstdlib>

#include "fake_adapter.hpp"

namespace {
[[gnu::constructor]] void abort_on_load() { std::abort(); }

struct ConstructorAborts : llm2hef_test::FakeAdapter {
  ConstructorAborts() : FakeAdapter(llm2hef_test::fake_info("constructor_aborts", {"AbortForCausalLM"}, {})) {}
};
}  // namespace

LLM2HEF_DEFINE_ADAPTER(ConstructorAborts, "constructor_aborts", "1.0.0")
