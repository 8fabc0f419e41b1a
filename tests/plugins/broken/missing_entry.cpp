// A valid shared library that exports something, but not llm2hef_adapter_entry.
extern "C" __attribute__((visibility("default"))) int some_other_plugin_entry() { return 42; }
