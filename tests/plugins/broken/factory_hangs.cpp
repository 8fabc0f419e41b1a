// create() never returns: the host's child process is killed after the probe
// timeout and the file skipped.
#include <unistd.h>

#include "fake_adapter.hpp"

namespace {
struct FactoryHangs : llm2hef_test::FakeAdapter {
  FactoryHangs() : FakeAdapter(llm2hef_test::fake_info("factory_hangs", {"HangForCausalLM"}, {})) {
    for (;;) ::pause();
  }
};
}  // namespace

LLM2HEF_DEFINE_ADAPTER(FactoryHangs, "factory_hangs", "1.0.0")
