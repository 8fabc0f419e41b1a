// The id git gives a file's content: SHA-1 of "blob <size>\0" and the bytes.
// The Hugging Face Hub lists it ("blobId") for the files it keeps in git
// rather than LFS, and huggingface_hub names their cache blobs after it, so
// a download of such a file can be checked against it (core/hub). SHA-1 is
// Nettle's, as SHA-256 is (sha256.hpp); it checks integrity here, not
// authenticity: the listing comes over the same connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

struct sha1_ctx;  // Nettle's state, kept out of this header

namespace llm2hef::registry {

class GitBlobId {
 public:
  // `size`: the content's length, which git hashes before the content.
  explicit GitBlobId(std::uint64_t size);
  ~GitBlobId();
  GitBlobId(GitBlobId&&) noexcept;
  GitBlobId& operator=(GitBlobId&&) noexcept;
  GitBlobId(const GitBlobId&) = delete;
  GitBlobId& operator=(const GitBlobId&) = delete;

  void update(const void* data, std::size_t size);
  // 40 lowercase hex digits; the object must not be updated afterwards.
  std::string finish_hex();

 private:
  std::unique_ptr<sha1_ctx> state_;
};

}  // namespace llm2hef::registry
