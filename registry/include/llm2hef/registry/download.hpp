// Fetching index files and adapter libraries with libcurl (Debian
// libcurl4-openssl-dev): http, https and file URLs only, a redirect only to
// the scheme the URL started with (so an http URL cannot be turned into a
// file:// read, nor https into plain http), timeouts, and a size limit
// enforced while the bytes arrive, not only from Content-Length.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

namespace llm2hef::registry {

struct DownloadLimits {
  std::uint64_t max_bytes = 0;  // required: the most that may arrive
  std::chrono::seconds connect_timeout = std::chrono::seconds(15);
  std::chrono::seconds total_timeout = std::chrono::seconds(300);
  // Abort when fewer than 1 byte/s arrive for this long (a stalled server).
  std::chrono::seconds stall_timeout = std::chrono::seconds(30);
};

// The scheme of a URL ("http", "https", "file"), lowercase; empty when the
// text has none.
std::string url_scheme(const std::string& url);

// `relative` (a path like "hello/libhello.so") resolved against the URL of
// the document that named it; BadInput when `relative` is absolute, has a
// "." or ".." segment, a backslash, '?' or '#'.
std::string resolve_relative_url(const std::string& base, const std::string& relative, const std::string& field);

// file:// URL of an absolute local path (percent-encoded).
std::string file_url(const std::filesystem::path& absolute_path);

// Downloads `url` into memory. BadInput naming the URL on any failure (not
// found, refused redirect, truncated transfer, time-out, over the limit).
std::string download_to_string(const std::string& url, const DownloadLimits& limits);

// Downloads `url` into the open file descriptor `fd` (from offset 0); returns
// the byte count. Failures as above.
std::uint64_t download_to_fd(const std::string& url, int fd, const DownloadLimits& limits);

}  // namespace llm2hef::registry
