// Isolation: a library that ends its process while loading (exit(0) or
// abort() in a constructor, a factory that never returns) is loaded first in a
// child process, reported by file name and skipped; the host keeps working.
#include <signal.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "llm2hef/plugins/host.hpp"
#include "llm2hef/plugins/probe.hpp"
#include "test_support.hpp"

namespace {

using namespace llm2hef::plugins;
using namespace llm2hef_test;
using namespace std::chrono_literals;

const fs::path fatal_dir{LLM2HEF_TEST_ADAPTER_DIR_FATAL};
const fs::path exits{LLM2HEF_TEST_CONSTRUCTOR_EXITS};
const fs::path aborts{LLM2HEF_TEST_CONSTRUCTOR_ABORTS};
const fs::path hangs{LLM2HEF_TEST_FACTORY_HANGS};
const fs::path fake_good{LLM2HEF_TEST_FAKE_GOOD};

AdapterHost discovered(std::vector<std::string> paths, std::chrono::milliseconds timeout = 10s) {
  AdapterHost host(SearchOptions{.explicit_paths = std::move(paths),
                                 .environment = std::nullopt,
                                 .install_dir = {},
                                 .build_dir = {},
                                 .user_dir = {},
                                 .allow_unsafe = false,
                                 .isolate_loading = true,
                                 .probe_timeout = timeout});
  host.discover();
  return host;
}

void expect_killed(const AdapterHost& host, const fs::path& file, const std::string& reason) {
  const Considered& c = record_for(host, file);
  EXPECT_FALSE(c.loaded);
  EXPECT_FALSE(c.unsafe);
  ASSERT_TRUE(c.error.has_value());
  EXPECT_EQ(*c.error, PluginLoadError::Reason::killed_process);
  EXPECT_EQ(c.reason, reason);
}

std::string signal_reason(int sig) {
  return "the library killed its process while loading (signal " + std::to_string(sig) + ", " + ::strsignal(sig) + ")";
}

TEST(Isolation, ConstructorCallingExitIsSkippedByName) {
  AdapterHost host = discovered({exits.string(), fake_good.string()});
  expect_killed(host, exits, "the library ended its process while loading (exit status 0)");
  EXPECT_EQ(host.names(), std::vector<std::string>{"fake_good"});
}

TEST(Isolation, ConstructorCallingAbortIsSkippedByName) {
  AdapterHost host = discovered({aborts.string(), fake_good.string()});
  expect_killed(host, aborts, signal_reason(SIGABRT));
  EXPECT_EQ(host.names(), std::vector<std::string>{"fake_good"});
}

TEST(Isolation, LibraryWithoutEntryIsRefusedWithoutRunningIt) {
  // Its constructor calls _exit(3): had it been probed in a child, the record
  // would say "killed_process"; the precheck reads its symbol table instead.
  AdapterHost host = discovered({LLM2HEF_TEST_NO_ENTRY_EXITS, fake_good.string()});
  const Considered& c = record_for(host, LLM2HEF_TEST_NO_ENTRY_EXITS);
  EXPECT_FALSE(c.loaded);
  ASSERT_TRUE(c.error.has_value());
  EXPECT_EQ(*c.error, PluginLoadError::Reason::missing_entry) << c.reason;
  EXPECT_EQ(c.reason,
            "missing entry symbol 'llm2hef_adapter_entry' (not an llm2hef adapter; found without loading it)");
  EXPECT_EQ(host.names(), std::vector<std::string>{"fake_good"});
}

TEST(Isolation, FolderScanSkipsEveryFatalLibrary) {
  AdapterHost host = discovered({fatal_dir.string(), fake_good.string()});
  std::vector<std::string> files;
  for (const auto& c : host.considered()) files.push_back(c.file.filename().string());
  EXPECT_EQ(files, (std::vector<std::string>{"constructor_aborts.so", "constructor_exits.so", "fake_good.so"}));
  expect_killed(host, fatal_dir / "constructor_aborts.so", signal_reason(SIGABRT));
  expect_killed(host, fatal_dir / "constructor_exits.so",
                "the library ended its process while loading (exit status 0)");
  EXPECT_EQ(host.names(), std::vector<std::string>{"fake_good"});
  // discover() runs again in the same process: the probes left nothing behind.
  host.discover();
  EXPECT_EQ(host.names(), std::vector<std::string>{"fake_good"});
}

TEST(Isolation, HangingFactoryIsKilledAfterTheTimeout) {
  // Alone: with so short a timeout a busy machine could make fake_good's
  // probe miss it too.
  const auto start = std::chrono::steady_clock::now();
  AdapterHost host = discovered({hangs.string()}, 300ms);
  const auto took = std::chrono::steady_clock::now() - start;
  expect_killed(host, hangs, "the library did not finish loading within 300 ms (its loading process was killed)");
  EXPECT_TRUE(host.names().empty());
  EXPECT_LT(took, 5s);
  EXPECT_EQ(discovered({fake_good.string()}).names(), std::vector<std::string>{"fake_good"});
}

TEST(Isolation, ProbeAcceptsGoodAndCleanlyRejectedLibraries) {
  // Empty: the child finished; the host's own load then gives the reason.
  EXPECT_EQ(probe_in_child(fake_good), "");
  EXPECT_EQ(probe_in_child(fs::path{LLM2HEF_TEST_FACTORY_THROWS}), "");
  EXPECT_EQ(probe_in_child(fs::path{LLM2HEF_TEST_NOT_A_LIBRARY}), "");
  EXPECT_EQ(probe_in_child(exits), "the library ended its process while loading (exit status 0)");
  EXPECT_EQ(probe_in_child(aborts), signal_reason(SIGABRT));
}

TEST(Isolation, OtherBrokenFilesKeepTheirOwnReason) {
  AdapterHost host = discovered({LLM2HEF_TEST_FACTORY_THROWS});
  const Considered& c = host.considered().at(0);
  ASSERT_TRUE(c.error.has_value());
  EXPECT_EQ(*c.error, PluginLoadError::Reason::factory_failed);
  EXPECT_EQ(c.reason, "factory threw: boom");
}

}  // namespace
