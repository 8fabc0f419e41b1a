// AdapterHost::discover(): search order, precedence, dedup and the records
// behind `llm2hef adapters --verbose`.
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "llm2hef/plugins/host.hpp"
#include "test_support.hpp"

namespace {

using namespace llm2hef::plugins;
using namespace llm2hef_test;

// No environment, install or build roots unless a test sets them.
SearchOptions only(std::vector<std::string> explicit_paths) {
  SearchOptions o;
  o.explicit_paths = std::move(explicit_paths);
  o.environment.reset();
  return o;
}

AdapterHost discovered(SearchOptions o) {
  AdapterHost host(std::move(o));
  host.discover();
  return host;
}

TEST(Host, TestFolderLoadsGoodAndRecordsEveryBrokenFile) {
  AdapterHost host = discovered(only({adapter_dir.string()}));

  EXPECT_EQ(host.names(), (std::vector<std::string>{"claim_a", "claim_b", "fake_good"}));

  // Every .so in the folder was considered, in name order.
  std::vector<std::string> files;
  for (const auto& c : host.considered()) files.push_back(c.file.filename().string());
  EXPECT_EQ(files, (std::vector<std::string>{"bad_fingerprint.so", "claim_a.so", "claim_b.so", "factory_null.so",
                                             "factory_throws.so", "fake_good.so", "info_throws.so", "missing_entry.so",
                                             "name_mismatch.so", "not_a_library.so", "null_descriptor.so",
                                             "unresolved_symbol.so", "wrong_abi.so"}));

  std::map<std::string, PluginLoadError::Reason> expected = {
      {"bad_fingerprint.so", PluginLoadError::Reason::fingerprint_mismatch},
      {"factory_null.so", PluginLoadError::Reason::factory_failed},
      {"factory_throws.so", PluginLoadError::Reason::factory_failed},
      {"info_throws.so", PluginLoadError::Reason::info_failed},
      {"missing_entry.so", PluginLoadError::Reason::missing_entry},
      {"name_mismatch.so", PluginLoadError::Reason::name_mismatch},
      {"not_a_library.so", PluginLoadError::Reason::not_elf},
      {"null_descriptor.so", PluginLoadError::Reason::entry_failed},
      {"unresolved_symbol.so", PluginLoadError::Reason::unresolved_symbol},
      {"wrong_abi.so", PluginLoadError::Reason::abi_mismatch},
  };
  for (const auto& c : host.considered()) {
    EXPECT_EQ(c.root, adapter_dir);
    EXPECT_EQ(c.root_kind, RootKind::explicit_path);
    auto it = expected.find(c.file.filename().string());
    if (it == expected.end()) {
      EXPECT_TRUE(c.loaded) << c.file << ": " << c.reason;
      EXPECT_TRUE(c.reason.empty());
      EXPECT_FALSE(c.error);
    } else {
      EXPECT_FALSE(c.loaded) << c.file;
      ASSERT_TRUE(c.error) << c.file;
      EXPECT_EQ(*c.error, it->second) << c.file << ": " << c.reason;
    }
  }
  EXPECT_EQ(record_for(host, adapter_dir / "factory_throws.so").reason, "factory threw: boom");
  EXPECT_EQ(record_for(host, adapter_dir / "not_a_library.so").reason, "not a shared library (no ELF header)");

  // The adapters that did load still work after all those failures.
  EXPECT_EQ(host.find("fake_good")->adapter().info().architectures, std::vector<std::string>{"FakeForCausalLM"});
}

TEST(Host, MissingFoldersAreRecordedNotFatal) {
  TempDir tmp;
  SearchOptions o = only({(tmp / "nope").string()});
  o.environment = (tmp / "also_nope").string();
  o.install_dir = tmp / "install";
  o.build_dir = tmp / "build";
  AdapterHost host = discovered(o);
  EXPECT_TRUE(host.adapters().empty());
  EXPECT_TRUE(host.considered().empty());
  ASSERT_EQ(host.roots().size(), 4u);
  std::vector<RootKind> kinds;
  for (const auto& r : host.roots()) {
    kinds.push_back(r.kind);
    EXPECT_EQ(r.state, SearchRoot::State::missing);
    EXPECT_EQ(r.note, "does not exist");
  }
  EXPECT_EQ(kinds, (std::vector<RootKind>{RootKind::explicit_path, RootKind::environment, RootKind::install,
                                          RootKind::build_tree}));
}

TEST(Host, ColonSeparatedValuesAndSingleFiles) {
  // One value, two entries (a file and a folder), with empty entries ignored.
  AdapterHost host = discovered(only({std::string(LLM2HEF_TEST_CLAIM_B) + "::" + adapter_dir_v2.string() + ":"}));
  EXPECT_EQ(host.names(), (std::vector<std::string>{"claim_b", "fake_good"}));
  ASSERT_EQ(host.roots().size(), 2u);
  EXPECT_EQ(host.roots()[0].state, SearchRoot::State::file);
  EXPECT_EQ(host.roots()[1].state, SearchRoot::State::folder);
  EXPECT_EQ(host.find("fake_good")->info().version, "2.0.0");
}

TEST(Host, SearchOrderAndKinds) {
  TempDir tmp;
  SearchOptions o = only({LLM2HEF_TEST_CLAIM_A});
  o.environment = LLM2HEF_TEST_CLAIM_B;
  o.install_dir = adapter_dir_v2;  // fake_good 2.0.0
  o.build_dir = adapter_dir;       // everything, including fake_good 1.0.0
  AdapterHost host = discovered(o);
  EXPECT_EQ(host.names(), (std::vector<std::string>{"claim_a", "claim_b", "fake_good"}));
  EXPECT_EQ(host.find("fake_good")->info().version, "2.0.0");
  EXPECT_EQ(record_for(host, fs::path(LLM2HEF_TEST_CLAIM_A)).root_kind, RootKind::explicit_path);
  EXPECT_EQ(record_for(host, fs::path(LLM2HEF_TEST_CLAIM_B)).root_kind, RootKind::environment);
  EXPECT_EQ(record_for(host, adapter_dir_v2 / "fake_good.so").root_kind, RootKind::install);

  // Files already loaded through an earlier root are not loaded again...
  // Records 0-2 come from the first three roots; the build tree's folder
  // listing starts at 3 with bad_fingerprint.so, then claim_a.so.
  const Considered& again = host.considered().at(4);
  EXPECT_EQ(again.file, adapter_dir / "claim_a.so");
  EXPECT_EQ(again.root_kind, RootKind::build_tree);
  EXPECT_FALSE(again.loaded);
  EXPECT_EQ(again.reason, "already loaded from " + std::string(LLM2HEF_TEST_CLAIM_A));
  // ...and a different file with a name already taken loses to the earlier root.
  const Considered& shadowed = record_for(host, adapter_dir / "fake_good.so");
  EXPECT_FALSE(shadowed.loaded);
  EXPECT_FALSE(shadowed.error);
  EXPECT_EQ(shadowed.reason, "adapter 'fake_good' already provided by " + (adapter_dir_v2 / "fake_good.so").string());
}

TEST(Host, EarlierRootWinsNameClashEitherWay) {
  AdapterHost v1_first = discovered(only({(adapter_dir / "fake_good.so").string(), adapter_dir_v2.string()}));
  EXPECT_EQ(v1_first.find("fake_good")->info().version, "1.0.0");
  EXPECT_EQ(v1_first.find("fake_good")->path(), adapter_dir / "fake_good.so");

  AdapterHost v2_first = discovered(only({adapter_dir_v2.string(), (adapter_dir / "fake_good.so").string()}));
  EXPECT_EQ(v2_first.find("fake_good")->info().version, "2.0.0");
}

TEST(Host, SameFileThroughSymlinkOrRepeatedRootIsLoadedOnce) {
  TempDir tmp;
  fs::create_symlink(LLM2HEF_TEST_FAKE_GOOD, tmp / "alias.so");
  fs::copy_file(LLM2HEF_TEST_NOT_A_LIBRARY, tmp / "junk.so");
  // Not considered: wrong suffix, versioned name, folder named like a library.
  std::ofstream(tmp / "README.txt") << "not an adapter";
  fs::copy_file(LLM2HEF_TEST_CLAIM_A, tmp / "libclaim.so.1");
  fs::create_directory(tmp / "folder.so");

  AdapterHost host = discovered(only({tmp.path().string(), LLM2HEF_TEST_FAKE_GOOD, tmp.path().string()}));
  EXPECT_EQ(host.names(), std::vector<std::string>{"fake_good"});
  ASSERT_EQ(host.considered().size(), 5u);
  const auto& c = host.considered();
  EXPECT_EQ(c[0].file, tmp / "alias.so");
  EXPECT_TRUE(c[0].loaded);
  EXPECT_EQ(c[1].file, tmp / "junk.so");
  EXPECT_EQ(c[1].error, PluginLoadError::Reason::not_elf);
  EXPECT_EQ(c[2].file, fs::path(LLM2HEF_TEST_FAKE_GOOD));
  EXPECT_EQ(c[2].reason, "already loaded from " + (tmp / "alias.so").string());
  EXPECT_EQ(c[3].reason, "already loaded from " + (tmp / "alias.so").string());
  EXPECT_EQ(c[4].reason, "already considered from " + (tmp / "junk.so").string());
  EXPECT_FALSE(c[4].error);
}

TEST(Host, EnvironmentIsReadByDefault) {
  ASSERT_EQ(::setenv("LLM2HEF_ADAPTER_PATH", (std::string(LLM2HEF_TEST_CLAIM_A) + ":" + LLM2HEF_TEST_CLAIM_B).c_str(),
                     1),
            0);
  SearchOptions o;
  ::unsetenv("LLM2HEF_ADAPTER_PATH");
  AdapterHost host = discovered(o);
  EXPECT_EQ(host.names(), (std::vector<std::string>{"claim_a", "claim_b"}));
  for (const auto& r : host.roots()) EXPECT_EQ(r.kind, RootKind::environment);

  EXPECT_FALSE(SearchOptions().environment);  // unset now
}

TEST(Host, RediscoverStartsOver) {
  AdapterHost host(only({adapter_dir_v2.string()}));
  EXPECT_TRUE(host.adapters().empty());  // nothing until discover()
  host.discover();
  host.discover();
  EXPECT_EQ(host.names(), std::vector<std::string>{"fake_good"});
  EXPECT_EQ(host.considered().size(), 1u);
  EXPECT_TRUE(host.considered()[0].loaded);
}

TEST(Host, DefaultHostFindsNothing) {
  AdapterHost host;
  host.discover();
  EXPECT_TRUE(host.adapters().empty());
  EXPECT_TRUE(host.roots().empty());
  EXPECT_EQ(host.find("fake_good"), nullptr);
}

TEST(Host, InstallFolderIsNextToTheExecutablePrefix) {
  EXPECT_EQ(install_adapter_dir("/opt/llm2hef/bin/llm2hef", "lib/llm2hef/adapters"),
            fs::path("/opt/llm2hef/lib/llm2hef/adapters"));
  EXPECT_EQ(install_adapter_dir("", "lib/llm2hef/adapters"), fs::path());
  EXPECT_EQ(executable_path().filename(), "llm2hef_plugin_tests");
}

}  // namespace
