// Fetching index files and adapter libraries with libcurl (Debian
// libcurl4-openssl-dev): http, https and file URLs only, a redirect only to
// the scheme the URL started with (so an http URL cannot be turned into a
// file:// read, nor https into plain http), timeouts, and a size limit
// enforced while the bytes arrive, not only from Content-Length.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace llm2hef::registry {

struct DownloadLimits {
  std::uint64_t max_bytes = 0;  // required: the most that may arrive
  std::chrono::seconds connect_timeout = std::chrono::seconds(15);
  std::chrono::seconds total_timeout = std::chrono::seconds(300);  // 0: none (a multi-GB download)
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

// `s` percent-encoded for a URL path: every byte but the unreserved ones
// (letters, digits, "-._~") as %XX, and '/' kept when `keep_slash`.
std::string percent_encode(std::string_view s, bool keep_slash);

// file:// URL of an absolute local path (percent-encoded).
std::string file_url(const std::filesystem::path& absolute_path);

// Downloads `url` into memory. BadInput naming the URL on any failure (not
// found, refused redirect, truncated transfer, time-out, over the limit).
std::string download_to_string(const std::string& url, const DownloadLimits& limits);

// Downloads `url` into the open file descriptor `fd` (from offset 0); returns
// the byte count. Failures as above.
std::uint64_t download_to_fd(const std::string& url, int fd, const DownloadLimits& limits);

// One HTTP(S) GET with what a download from a model hub needs beyond the two
// functions above: request headers, a resumed range, and the final
// response's status and headers. Redirects are followed within the URL's
// scheme; libcurl sends the request's headers to the redirect target only
// when it is the same host and port, so a token never reaches a CDN.
struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::uint64_t range_from = 0;      // > 0: ask for the bytes from this offset on (Range)
  DownloadLimits limits;
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // the final response's, names lowercase
  std::string error_body;                      // the first 64 KiB of a body with status >= 400
};

// The body of a response with status < 400 goes to `sink` (status, bytes);
// the sink returns an error text to stop the transfer, or "" to go on.
// Returns the response, whatever its status; throws BadInput naming the URL
// when no response came (no connection, time-out, refused redirect, a
// truncated body, more bytes than limits.max_bytes) or the sink stopped it.
using HttpSink = std::function<std::string(long status, const char* data, std::size_t size)>;
HttpResponse http_get(const HttpRequest& request, const HttpSink& sink);

}  // namespace llm2hef::registry
