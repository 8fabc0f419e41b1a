// The adapter is made, but describing itself throws.
#include <stdexcept>

#include "fake_adapter.hpp"

namespace {
struct InfoThrows : llm2hef_test::FakeAdapter {
  InfoThrows() : FakeAdapter(llm2hef_test::fake_info("info_throws", {}, {})) {}
  llm2hef::sdk::AdapterInfo info() const override { throw std::runtime_error("no identity"); }
};
}  // namespace

LLM2HEF_DEFINE_ADAPTER(InfoThrows, "info_throws", "1.0.0")
