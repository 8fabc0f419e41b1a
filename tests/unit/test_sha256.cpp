// SHA-256 against the FIPS 180-4 / NIST CAVP example vectors, including
// block-boundary lengths and split updates.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "llm2hef/registry/sha256.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "temp_dir.hpp"

using llm2hef::registry::Sha256;
using llm2hef::registry::sha256_file_hex;
using llm2hef::registry::sha256_hex;

TEST(Sha256, FipsVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(
                "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                "mnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, OneMillionA) {
  Sha256 h;
  const std::string chunk(1000, 'a');
  for (int i = 0; i < 1000; ++i) h.update(chunk);
  EXPECT_EQ(h.finish_hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, SplitUpdatesEqualOneUpdate) {
  // Lengths around the 55/56/64-byte padding boundaries, fed in awkward pieces.
  for (std::size_t n : {0u, 1u, 55u, 56u, 57u, 63u, 64u, 65u, 127u, 128u, 1000u}) {
    std::string text;
    for (std::size_t i = 0; i < n; ++i) text.push_back(static_cast<char>('a' + i * 7 % 26));
    Sha256 pieces;
    for (std::size_t i = 0; i < n; i += 13) pieces.update(std::string_view(text).substr(i, 13));
    EXPECT_EQ(pieces.finish_hex(), sha256_hex(text)) << n;
  }
  EXPECT_EQ(sha256_hex(std::string(56, 'a')), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(sha256_hex(std::string(64, 'a')), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST(Sha256, File) {
  const llm2hef::testing::TempDir dir;
  const auto path = dir / "abc.bin";
  {
    std::ofstream out(path, std::ios::binary);
    out << "abc";
  }
  EXPECT_EQ(sha256_file_hex(path), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::filesystem::remove(path);
  EXPECT_THROW(sha256_file_hex(path), llm2hef::BadInput);
}
