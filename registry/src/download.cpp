#include "llm2hef/registry/download.hpp"

#include <curl/curl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::registry {

namespace {

void global_init() {
  static const CURLcode status = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (status != CURLE_OK)
    throw InternalError(std::string("libcurl could not be initialised: ") + curl_easy_strerror(status));
}

struct Sink {
  std::string* text = nullptr;  // one of text / fd
  int fd = -1;
  std::uint64_t received = 0, max_bytes = 0;
  bool over_limit = false;
  std::string write_error;
};

std::size_t on_data(char* data, std::size_t size, std::size_t count, void* user) {
  auto& sink = *static_cast<Sink*>(user);
  const std::size_t n = size * count;
  if (sink.received + n > sink.max_bytes) {
    sink.over_limit = true;
    return 0;  // makes libcurl stop with CURLE_WRITE_ERROR
  }
  if (sink.text) {
    sink.text->append(data, n);
  } else {
    for (std::size_t done = 0; done < n;) {
      const ssize_t w = ::write(sink.fd, data + done, n - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        sink.write_error = std::strerror(errno);
        return 0;
      }
      done += static_cast<std::size_t>(w);
    }
  }
  sink.received += n;
  return n;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The local path a file:// URL names, percent-decoded, as libcurl reads it:
// "file:///p" and "file://localhost/p"; empty for another host (libcurl
// refuses those itself).
std::string file_url_path(const std::string& url) {
  std::string rest = url.substr(url.find("://") + 3);
  const auto slash = rest.find('/');
  if (slash == std::string::npos) return {};
  const std::string host = rest.substr(0, slash);
  if (!host.empty() && host != "localhost" && host != "127.0.0.1") return {};
  std::string path;
  for (std::size_t i = slash; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && hex_value(rest[i + 1]) >= 0 && hex_value(rest[i + 2]) >= 0) {
      path += static_cast<char>(hex_value(rest[i + 1]) * 16 + hex_value(rest[i + 2]));
      i += 2;
    } else {
      path += rest[i];
    }
  }
  return path;
}

// libcurl opens a file:// URL with a blocking open() and reads it to the end:
// a FIFO hangs it forever, /dev/zero never ends. stat() does neither.
void refuse_unless_regular_file(const std::string& url) {
  const std::string path = file_url_path(url);
  if (path.empty()) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // libcurl names the missing file
  if (!S_ISREG(st.st_mode))
    throw BadInput(url + ": " + path + " is not a regular file (" +
                   (S_ISFIFO(st.st_mode)                         ? "a FIFO"
                    : S_ISDIR(st.st_mode)                        ? "a folder"
                    : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                 : "a socket or other special file") +
                   "); not read");
}

using EasyHandle = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;

// A transfer of `url` with the options every download shares: the scheme
// checks, redirects within the scheme, the limits.
EasyHandle open_transfer(const std::string& url, const DownloadLimits& limits) {
  global_init();
  const std::string scheme = url_scheme(url);
  if (scheme != "http" && scheme != "https" && scheme != "file")
    throw BadInput(url + ": only http, https and file URLs are fetched" +
                   (scheme.empty() ? std::string() : " (this one is " + scheme + ")"));
  if (scheme == "file") refuse_unless_regular_file(url);
  EasyHandle curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) throw InternalError("libcurl: cannot create a transfer");
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https,file");
  // A redirect may not change the scheme: http -> file:// would read local
  // files, https -> http would drop the transport security.
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, scheme.c_str());
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, static_cast<long>(limits.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_TIMEOUT, static_cast<long>(limits.total_timeout.count()));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(limits.stall_timeout.count()));
  curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(limits.max_bytes));
  return curl;
}

// The message for a transfer that ended without a whole response.
[[noreturn]] void throw_transfer_error(CURL* h, const std::string& url, CURLcode rc, const char* error,
                                       std::uint64_t received) {
  const std::string scheme = url_scheme(url);
  const std::string what = error[0] ? error : curl_easy_strerror(rc);
  // A refused redirect ends with the transfer at the URL it was sent to.
  char* effective = nullptr;
  curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &effective);
  char* redirect = nullptr;
  curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &redirect);
  const std::string target = redirect ? redirect : effective ? effective : "";
  if (rc == CURLE_UNSUPPORTED_PROTOCOL && !target.empty() && target != url && url_scheme(target) != scheme)
    throw BadInput(url + ": redirected to " + target + ", another scheme than " + scheme + "; refused");
  if (rc == CURLE_PARTIAL_FILE)
    throw BadInput(url + ": truncated download: the transfer ended after " + std::to_string(received) +
                   " bytes, before the length the server announced (" + what + ")");
  throw BadInput(url + ": download failed: " + what);
}

void fetch(const std::string& url, Sink& sink, const DownloadLimits& limits) {
  EasyHandle curl = open_transfer(url, limits);
  sink.max_bytes = limits.max_bytes;
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "llm2hef-registry");
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);

  const CURLcode rc = curl_easy_perform(h);
  if (rc == CURLE_OK) return;
  if (sink.over_limit || rc == CURLE_FILESIZE_EXCEEDED)
    throw BadInput(url + ": larger than the limit of " + std::to_string(limits.max_bytes) + " bytes; download stopped");
  if (!sink.write_error.empty()) throw BadInput(url + ": cannot write the download: " + sink.write_error);
  throw_transfer_error(h, url, rc, error, sink.received);
}

// http_get's state, shared with libcurl's callbacks.
struct HttpTransfer {
  CURL* handle = nullptr;
  const HttpSink* sink = nullptr;
  HttpResponse response;
  std::uint64_t received = 0, max_bytes = 0;
  bool over_limit = false;
  std::string sink_error;
};

constexpr std::size_t kErrorBodyBytes = std::size_t{64} << 10;

std::size_t on_http_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<HttpTransfer*>(user);
  const std::size_t n = size * count;
  std::string line(data, n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  // Each response of a redirect chain starts with its status line: keep the last one's headers only.
  if (line.rfind("HTTP/", 0) == 0) {
    t.response.headers.clear();
    return n;
  }
  const auto colon = line.find(':');
  if (colon == std::string::npos || colon == 0) return n;
  std::string name = line.substr(0, colon);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::size_t start = colon + 1;
  while (start < line.size() && (line[start] == ' ' || line[start] == '\t')) ++start;
  t.response.headers[name] = line.substr(start);
  return n;
}

std::size_t on_http_data(char* data, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<HttpTransfer*>(user);
  const std::size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(t.handle, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 400) {
    const std::size_t room = kErrorBodyBytes - std::min(kErrorBodyBytes, t.response.error_body.size());
    t.response.error_body.append(data, std::min(room, n));
    return n;
  }
  if (t.received + n > t.max_bytes) {
    t.over_limit = true;
    return 0;
  }
  t.sink_error = (*t.sink)(status, data, n);
  if (!t.sink_error.empty()) return 0;
  t.received += n;
  return n;
}

}  // namespace

std::string url_scheme(const std::string& url) {
  const auto colon = url.find("://");
  if (colon == std::string::npos || colon == 0) return {};
  std::string scheme = url.substr(0, colon);
  for (char& c : scheme) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return {};
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return scheme;
}

std::string resolve_relative_url(const std::string& base, const std::string& relative, const std::string& field) {
  auto refuse = [&](const std::string& why) -> std::string { throw BadInput(field + ": '" + relative + "' " + why); };
  if (relative.empty()) refuse("is empty");
  if (relative.front() == '/') refuse("is an absolute path; give a URL or a path relative to the index");
  for (char c : relative)
    if (c == '\\' || c == '?' || c == '#' || c == '%' || static_cast<unsigned char>(c) <= ' ')
      refuse("has a character not allowed in a relative library path");
  std::size_t start = 0;
  while (start <= relative.size()) {
    std::size_t end = relative.find('/', start);
    if (end == std::string::npos) end = relative.size();
    const std::string segment = relative.substr(start, end - start);
    if (segment == "." || segment == "..") refuse("has a '" + segment + "' segment (path traversal)");
    if (segment.empty()) refuse("has an empty segment");
    start = end + 1;
  }
  const auto slash = base.rfind('/');
  if (slash == std::string::npos) throw InternalError("not a URL: " + base);
  return base.substr(0, slash + 1) + relative;
}

std::string percent_encode(std::string_view s, bool keep_slash) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');  // not locale's
    if (alnum || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

std::string file_url(const std::filesystem::path& absolute_path) {
  return "file://" + percent_encode(absolute_path.lexically_normal().string(), true);
}

std::string download_to_string(const std::string& url, const DownloadLimits& limits) {
  std::string text;
  Sink sink;
  sink.text = &text;
  fetch(url, sink, limits);
  return text;
}

std::uint64_t download_to_fd(const std::string& url, int fd, const DownloadLimits& limits) {
  Sink sink;
  sink.fd = fd;
  fetch(url, sink, limits);
  return sink.received;
}

HttpResponse http_get(const HttpRequest& request, const HttpSink& sink) {
  EasyHandle curl = open_transfer(request.url, request.limits);
  CURL* h = curl.get();
  HttpTransfer t;
  t.handle = h;
  t.sink = &sink;
  t.max_bytes = request.limits.max_bytes;
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(nullptr, &curl_slist_free_all);
  for (const std::string& line : request.headers) {
    for (char c : line)
      if (c == '\r' || c == '\n' || c == '\0') throw InternalError("an HTTP header with a line break or NUL");
    curl_slist* grown = curl_slist_append(headers.get(), line.c_str());
    if (!grown) throw InternalError("libcurl: out of memory for the request headers");
    headers.release();
    headers.reset(grown);
  }
  if (headers) curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  const std::string range = std::to_string(request.range_from) + "-";
  if (request.range_from > 0) curl_easy_setopt(h, CURLOPT_RANGE, range.c_str());
  // The size limit is the caller's, counted as the bytes arrive: a resumed
  // range's Content-Length is only what is left.
  curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(0));
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &on_http_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &on_http_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "llm2hef");
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  const CURLcode rc = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &t.response.status);
  if (rc == CURLE_OK) return std::move(t.response);
  if (t.over_limit)
    throw BadInput(request.url + ": more than the " + std::to_string(request.limits.max_bytes) +
                   " bytes expected; download stopped");
  if (!t.sink_error.empty()) throw BadInput(request.url + ": " + t.sink_error);
  throw_transfer_error(h, request.url, rc, error, t.received);
}

}  // namespace llm2hef::registry
