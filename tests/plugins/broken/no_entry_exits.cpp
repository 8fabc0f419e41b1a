// No adapter entry point, and a constructor that ends whatever process loads
// it: the host must refuse it from its symbol table alone, without loading
// it even in a child (tests/plugins/test_isolation.cpp).
#include <unistd.h>

namespace {
[[gnu::constructor]] void exit_on_load() { ::_exit(3); }
}  // namespace

extern "C" __attribute__((visibility("default"))) int not_the_adapter_entry() { return 7; }
