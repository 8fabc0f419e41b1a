// create() throws: the host reports what() and keeps going.
#include <stdexcept>

#include "fake_adapter.hpp"

namespace {
struct FactoryThrows : llm2hef_test::FakeAdapter {
  FactoryThrows() : FakeAdapter(llm2hef_test::fake_info("factory_throws", {"ThrowForCausalLM"}, {})) {
    throw std::runtime_error("boom");
  }
};
}  // namespace

LLM2HEF_DEFINE_ADAPTER(FactoryThrows, "factory_throws", "1.0.0")
