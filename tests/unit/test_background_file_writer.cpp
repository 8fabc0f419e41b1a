// BackgroundFileWriter writes on its own thread (issue 15 item 3): whatever the
// order and size of the writes, the file must hold exactly what a plain
// sequence of pwrites would, and a write error must reach the caller.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "llm2hef/sdk/background_file_writer.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using llm2hef::sdk::BackgroundFileWriter;
using llm2hef::testing::TempDir;

namespace {

std::vector<char> read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

// Appends and out-of-order writes into reserved regions, small and larger
// than a batch, checked against the same writes applied to a buffer.
TEST(BackgroundFileWriter, ScatteredWritesAcrossManyBatchesLandWhereTheyBelong) {
  TempDir dir;
  const fs::path path = dir.path() / "model.onnx.data";
  std::mt19937 rng(7);
  std::vector<char> expected;
  {
    BackgroundFileWriter file(path);
    for (int region = 0; region < 12; ++region) {
      // A region of 1 KB .. 3 batches, written in shuffled pieces.
      const size_t length = std::uniform_int_distribution<size_t>(1024, 3 * BackgroundFileWriter::kBatchBytes)(rng);
      const uint64_t base = file.size();
      std::vector<char> bytes(length);
      for (char& c : bytes) c = static_cast<char>(rng());
      std::vector<std::pair<size_t, size_t>> pieces;  // begin, length
      for (size_t at = 0; at < length;) {
        const size_t n = std::min(length - at, std::uniform_int_distribution<size_t>(1, length / 3 + 1)(rng));
        pieces.emplace_back(at, n);
        at += n;
      }
      if (region % 2 == 1) std::shuffle(pieces.begin(), pieces.end(), rng);
      for (const auto& [begin, n] : pieces) file.write_at(base + begin, std::span<const char>(bytes.data() + begin, n));
      EXPECT_EQ(file.size(), base + length);
      expected.insert(expected.end(), bytes.begin(), bytes.end());
      const char pad[3] = {0, 0, 0};
      file.append(std::span<const char>(pad, static_cast<size_t>(region % 4 == 0 ? 3 : 0)));
      if (region % 4 == 0) expected.insert(expected.end(), 3, 0);
    }
    file.close();
  }
  const std::vector<char> got = read_all(path);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected);
}

// /dev/full accepts the open and fails every write with ENOSPC: the failure
// happens on the writer thread and must come back to the caller as BadInput
// naming the file, no later than close().
TEST(BackgroundFileWriter, AWriteErrorOnTheWriterThreadReachesTheCaller) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  BackgroundFileWriter file("/dev/full");
  const std::vector<char> bytes(BackgroundFileWriter::kBatchBytes / 2, 'x');
  try {
    for (int i = 0; i < 16; ++i) file.append(bytes);
    file.close();
    FAIL() << "writing to /dev/full succeeded";
  } catch (const llm2hef::BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("write failed"), std::string::npos) << e.what();
  }
}

// An export abandoned midway destroys the file without close(): the writer
// thread must stop (no hang, no crash under the sanitizers).
TEST(BackgroundFileWriter, DestroyedWithoutCloseStopsTheWriter) {
  TempDir dir;
  {
    BackgroundFileWriter file(dir.path() / "abandoned.data");
    const std::vector<char> bytes(BackgroundFileWriter::kBatchBytes + 5, 'y');
    file.append(bytes);
    file.append(bytes);
  }
  EXPECT_TRUE(fs::exists(dir.path() / "abandoned.data"));
}
