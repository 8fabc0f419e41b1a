// Outputs whose -o parent is missing: the folders made for them are removed
// again when the output is not committed (a failed run), only while empty,
// and kept once it is; and where findings say hailo-contract.md lives.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "llm2hef/core/io/atomic_output.hpp"
#include "llm2hef/core/io/contract_doc.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using llm2hef::core::AtomicDir;
using llm2hef::core::AtomicFile;

namespace {

class OutputParents : public ::testing::Test {
 protected:
  bool empty_root() const { return fs::is_empty(root_); }
  llm2hef::testing::TempDir tmp_;
  const fs::path root_ = tmp_.path();
};

TEST_F(OutputParents, UncommittedFolderOutputRemovesTheParentsItMade) {
  {
    AtomicDir out(root_ / "a" / "b" / "out", false, false);
    EXPECT_TRUE(fs::is_directory(root_ / "a" / "b"));
    std::ofstream(out.path() / "model.onnx") << "x";
  }
  EXPECT_TRUE(empty_root());
}

TEST_F(OutputParents, UncommittedFileOutputRemovesTheParentsItMade) {
  {
    AtomicFile out(root_ / "a" / "b" / "x.npz", false);
    out.write_at(0, "x", 1);
  }
  EXPECT_TRUE(empty_root());
}

TEST_F(OutputParents, CommittedOutputsKeepTheirParents) {
  {
    AtomicDir out(root_ / "d" / "out", false, false);
    out.commit();
  }
  {
    AtomicFile out(root_ / "f" / "x.npz", false);
    out.write_at(0, "x", 1);
    out.commit();
  }
  EXPECT_TRUE(fs::is_directory(root_ / "d" / "out"));
  EXPECT_TRUE(fs::is_regular_file(root_ / "f" / "x.npz"));
}

TEST_F(OutputParents, AParentThatGainedAnotherFileIsKept) {
  {
    AtomicDir out(root_ / "a" / "b" / "out", false, false);
    std::ofstream(root_ / "a" / "someone-elses") << "keep";
  }
  EXPECT_TRUE(fs::is_regular_file(root_ / "a" / "someone-elses"));
  EXPECT_FALSE(fs::exists(root_ / "a" / "b"));
}

TEST_F(OutputParents, AParentThatExistedIsKept) {
  fs::create_directories(root_ / "there");
  { AtomicDir out(root_ / "there" / "out", false, false); }
  EXPECT_TRUE(fs::is_directory(root_ / "there"));
  EXPECT_TRUE(fs::is_empty(root_ / "there"));
}

// --- contract_doc_path ---------------------------------------------------

TEST_F(OutputParents, TheContractIsFoundBesideAnInstalledBinary) {
  const fs::path doc = root_ / "share" / "doc" / "llm2hef" / "hailo-contract.md";
  fs::create_directories(doc.parent_path());
  std::ofstream(doc) << "## 1. x\n";
  EXPECT_EQ(llm2hef::core::contract_doc_path_for(root_ / "bin" / "llm2hef"), doc);
}

TEST_F(OutputParents, WithoutAnInstalledCopyTheSourceTreeDocIsCited) {
  const fs::path source = fs::path(LLM2HEF_SOURCE_DIR) / "docs" / "hailo-contract.md";
  ASSERT_TRUE(fs::is_regular_file(source));
  EXPECT_EQ(llm2hef::core::contract_doc_path_for(root_ / "bin" / "llm2hef"), source.lexically_normal());
  EXPECT_EQ(llm2hef::core::contract_doc_path_for({}), source.lexically_normal());
  EXPECT_TRUE(fs::is_regular_file(llm2hef::core::contract_doc_path()));
}

}  // namespace
