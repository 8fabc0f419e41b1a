// load_adapter(): one test per check, each with the exact message users see.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "llm2hef/plugins/loader.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "test_support.hpp"

namespace {

using llm2hef::plugins::load_adapter;
using llm2hef::plugins::PluginLoadError;
using Reason = PluginLoadError::Reason;
using namespace llm2hef_test;

// Loads `path` expecting failure; returns the error for further checks.
PluginLoadError load_error(const fs::path& path) {
  try {
    load_adapter(path);
  } catch (const PluginLoadError& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << path << ": expected PluginLoadError, got another exception: " << e.what();
    throw;
  }
  ADD_FAILURE() << path << ": loaded, expected a PluginLoadError";
  return PluginLoadError(path, Reason::unreadable, "(loaded)");
}

void expect_error(const fs::path& path, Reason reason, const std::string& detail) {
  PluginLoadError e = load_error(path);
  EXPECT_EQ(e.reason(), reason) << e.what();
  EXPECT_EQ(e.detail(), detail);
  EXPECT_EQ(std::string(e.what()), path.string() + ": " + detail);
  EXPECT_EQ(e.path(), path);
}

TEST(Loader, GoodAdapterLoads) {
  auto a = load_adapter(LLM2HEF_TEST_FAKE_GOOD);
  EXPECT_EQ(a.name(), "fake_good");
  EXPECT_EQ(a.path(), fs::path(LLM2HEF_TEST_FAKE_GOOD));
  EXPECT_EQ(a.info().version, "1.0.0");
  EXPECT_EQ(a.info().architectures, std::vector<std::string>{"FakeForCausalLM"});
  EXPECT_EQ(a.info().model_types, std::vector<std::string>{"fake"});
  ASSERT_EQ(a.info().options.size(), 1u);
  EXPECT_EQ(a.info().options[0].name, "flavor");
  // The live object answers too, not only the cached info.
  EXPECT_EQ(a.adapter().info().name, "fake_good");
}

TEST(Loader, NotALibrary) {
  expect_error(LLM2HEF_TEST_NOT_A_LIBRARY, Reason::not_elf, "not a shared library (no ELF header)");
}

TEST(Loader, EmptyFileIsNotALibrary) {
  TempDir dir;
  std::ofstream(dir / "empty.so").flush();
  expect_error(dir / "empty.so", Reason::not_elf, "not a shared library (no ELF header)");
}

TEST(Loader, MissingFile) {
  TempDir dir;
  PluginLoadError e = load_error(dir / "nowhere.so");
  EXPECT_EQ(e.reason(), Reason::unreadable);
  EXPECT_EQ(e.detail().rfind("cannot be read: ", 0), 0u) << e.detail();
}

TEST(Loader, ElfHeaderCutShort) {
  TempDir dir;
  std::ofstream(dir / "short.so", std::ios::binary) << "\x7f"
                                                       "ELF"
                                                       "garbage";
  expect_error(dir / "short.so", Reason::not_elf, "not a shared library (ELF header cut short)");
}

TEST(Loader, TruncatedElfCannotBeLoaded) {
  // A real library's header and nothing after it: the precheck cannot
  // follow its section table and leaves the verdict to dlopen().
  TempDir dir;
  fs::copy_file(LLM2HEF_TEST_FAKE_GOOD, dir / "truncated.so");
  fs::resize_file(dir / "truncated.so", 64);
  PluginLoadError e = load_error(dir / "truncated.so");
  EXPECT_EQ(e.reason(), Reason::load_failed);
  EXPECT_EQ(e.detail().rfind("cannot be loaded: ", 0), 0u) << e.detail();
  EXPECT_GT(e.detail().size(), std::string("cannot be loaded: ").size()) << "dlerror text is missing";
}

TEST(Loader, UnresolvedSymbolFailsAtLoadTime) {
  const fs::path path = LLM2HEF_TEST_UNRESOLVED_SYMBOL;
  PluginLoadError e = load_error(path);
  EXPECT_EQ(e.reason(), Reason::unresolved_symbol);
  // "unresolved symbol: " + dlerror(), which names the file and the symbol.
  EXPECT_EQ(e.detail().rfind("unresolved symbol: ", 0), 0u) << e.detail();
  EXPECT_NE(e.detail().find("undefined symbol"), std::string::npos) << e.detail();
  EXPECT_NE(e.detail().find("llm2hef_test_defined_nowhere"), std::string::npos) << e.detail();
  EXPECT_EQ(std::string(e.what()), path.string() + ": " + e.detail());
}

TEST(Loader, MissingEntry) {
  expect_error(LLM2HEF_TEST_MISSING_ENTRY, Reason::missing_entry,
               "missing entry symbol 'llm2hef_adapter_entry' (not an llm2hef adapter; found without loading it)");
}

// A copy of fake_good.so with `bytes` written at `offset` of its ELF header.
fs::path patched_copy(const TempDir& dir, const std::string& name, std::streamoff offset, const std::string& bytes) {
  const fs::path out = dir / name;
  fs::copy_file(LLM2HEF_TEST_FAKE_GOOD, out);
  std::fstream f(out, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(offset);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return out;
}

// Offsets in the 64-bit ELF header: e_ident[EI_CLASS] 4, e_ident[EI_DATA] 5,
// e_type 16, e_machine 18, e_shoff 40 (little-endian fields).
TEST(Loader, OtherMachinesLibraryIsNamed) {
  TempDir dir;
#if defined(__x86_64__)
  const std::string other("\xb7\x00", 2), other_name = "arm64 (aarch64)", host = "x86-64";  // EM_AARCH64
#else
  const std::string other("\x3e\x00", 2), other_name = "x86-64", host = "arm64 (aarch64)";  // EM_X86_64
#endif
  expect_error(patched_copy(dir, "other.so", 18, other), Reason::wrong_platform,
               "built for " + other_name + "; this llm2hef runs on " + host +
                   " (rebuild the adapter for this machine)");
  expect_error(patched_copy(dir, "riscv.so", 18, std::string("\xf3\x00", 2)), Reason::wrong_platform,
               "built for RISC-V; this llm2hef runs on " + host + " (rebuild the adapter for this machine)");
  PluginLoadError e32 = load_error(patched_copy(dir, "elf32.so", 4, "\x01"));
  EXPECT_EQ(e32.reason(), Reason::wrong_platform);
  EXPECT_NE(e32.detail().find("a 32-bit ELF file"), std::string::npos) << e32.detail();
  PluginLoadError be = load_error(patched_copy(dir, "big.so", 5, "\x02"));
  EXPECT_EQ(be.reason(), Reason::wrong_platform);
  EXPECT_NE(be.detail().find("big-endian"), std::string::npos) << be.detail();
}

TEST(Loader, ElfThatIsNoSharedLibrary) {
  TempDir dir;
  expect_error(patched_copy(dir, "exe.so", 16, std::string("\x02\x00", 2)), Reason::not_elf,
               "an ELF executable, not a shared library");
  expect_error(patched_copy(dir, "obj.so", 16, std::string("\x01\x00", 2)), Reason::not_elf,
               "an ELF object file (.o), not a shared library");
}

TEST(Loader, UnreadableSectionHeadersLeaveTheDecisionToTheLoader) {
  // dlopen() never reads section headers: a library whose section table
  // points past its end still loads, so the precheck must not refuse it.
  TempDir dir;
  auto a = load_adapter(patched_copy(dir, "noshdr.so", 40, std::string("\xff\xff\xff\x7f\x00\x00\x00\x00", 8)));
  EXPECT_EQ(a.name(), "fake_good");
}

TEST(Loader, NullDescriptor) {
  expect_error(LLM2HEF_TEST_NULL_DESCRIPTOR, Reason::entry_failed, "entry point returned no descriptor");
}

TEST(Loader, WrongAbi) {
  expect_error(LLM2HEF_TEST_WRONG_ABI, Reason::abi_mismatch,
               "adapter ABI version 99, this llm2hef expects " + std::to_string(LLM2HEF_ADAPTER_ABI_VERSION));
}

TEST(Loader, BadFingerprint) {
  expect_error(LLM2HEF_TEST_BAD_FINGERPRINT, Reason::fingerprint_mismatch,
               std::string("build fingerprint mismatch: adapter 'gcc-1;cxx11abi-0;sdk-0.0.0', host '") +
                   LLM2HEF_BUILD_FINGERPRINT + "'");
}

TEST(Loader, FactoryThrows) {
  expect_error(LLM2HEF_TEST_FACTORY_THROWS, Reason::factory_failed, "factory threw: boom");
}

TEST(Loader, FactoryReturnsNull) {
  expect_error(LLM2HEF_TEST_FACTORY_NULL, Reason::factory_failed, "factory returned no adapter");
}

TEST(Loader, InfoThrows) { expect_error(LLM2HEF_TEST_INFO_THROWS, Reason::info_failed, "info() threw: no identity"); }

TEST(Loader, NameMismatch) {
  expect_error(LLM2HEF_TEST_NAME_MISMATCH, Reason::name_mismatch,
               "descriptor name 'name_mismatch' differs from info() name 'other_name'");
}

// After every kind of failure the host process is intact and a good adapter
// still loads and answers.
class AfterFailure : public testing::TestWithParam<const char*> {};

TEST_P(AfterFailure, GoodAdapterStillLoads) {
  EXPECT_THROW(load_adapter(GetParam()), PluginLoadError);
  auto good = load_adapter(LLM2HEF_TEST_FAKE_GOOD);
  EXPECT_EQ(good.adapter().info().name, "fake_good");
  // And the broken one fails the same way a second time.
  EXPECT_THROW(load_adapter(GetParam()), PluginLoadError);
}

INSTANTIATE_TEST_SUITE_P(Broken, AfterFailure,
                         testing::Values(LLM2HEF_TEST_NOT_A_LIBRARY, LLM2HEF_TEST_MISSING_ENTRY,
                                         LLM2HEF_TEST_NULL_DESCRIPTOR, LLM2HEF_TEST_WRONG_ABI,
                                         LLM2HEF_TEST_BAD_FINGERPRINT, LLM2HEF_TEST_FACTORY_THROWS,
                                         LLM2HEF_TEST_FACTORY_NULL, LLM2HEF_TEST_INFO_THROWS,
                                         LLM2HEF_TEST_NAME_MISMATCH, LLM2HEF_TEST_UNRESOLVED_SYMBOL),
                         [](const testing::TestParamInfo<const char*>& p) {
                           return fs::path(p.param).stem().string();  // test names need [A-Za-z0-9_]
                         });

TEST(Loader, SameFileTwiceSharesTheLibrary) {
  // dlopen reference-counts: dropping one copy must not unmap the other's code.
  auto first = std::make_unique<llm2hef::plugins::LoadedAdapter>(load_adapter(LLM2HEF_TEST_FAKE_GOOD));
  auto second = load_adapter(LLM2HEF_TEST_FAKE_GOOD);
  first.reset();
  EXPECT_EQ(second.adapter().info().name, "fake_good");
}

TEST(Loader, MoveAssignmentReleasesTheOldAdapterFirst) {
  auto a = load_adapter(LLM2HEF_TEST_CLAIM_A);
  auto b = load_adapter(LLM2HEF_TEST_CLAIM_B);
  a = std::move(b);  // claim_a's object goes back to claim_a.so before it is unloaded
  EXPECT_EQ(a.name(), "claim_b");
  EXPECT_EQ(a.adapter().info().name, "claim_b");
  auto c = std::move(a);
  EXPECT_EQ(c.adapter().info().name, "claim_b");
}

}  // namespace
