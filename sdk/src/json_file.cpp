#include "llm2hef/sdk/json_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

namespace {

// The whole of `path`, a regular file of at most limits.max_bytes.
std::string read_text(const std::filesystem::path& path, const JsonLimits& limits) {
  // A regular file only, checked on the opened descriptor: a FIFO would
  // block forever (O_NONBLOCK keeps even the open from waiting) and a
  // device such as /dev/zero would never end.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw BadInput(path.string() + ": cannot open for reading: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw BadInput(path.string() + ": not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > limits.max_bytes) {
    ::close(fd);
    throw BadInput(path.string() + ": " + limits.too_big(static_cast<uint64_t>(st.st_size)));
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::pread(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw BadInput(path.string() + ": read failed");
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return text;
}

}  // namespace

nlohmann::json read_json(const std::filesystem::path& path, const JsonLimits& limits) {
  return parse_json(read_text(path, limits), path.string(), limits);
}

nlohmann::json read_json_without(const std::filesystem::path& path, const JsonPaths& dropped,
                                 const JsonLimits& limits) {
  return parse_json_without(read_text(path, limits), path.string(), dropped, limits);
}

std::string JsonLimits::too_big(uint64_t bytes) const {
  return std::to_string(bytes) + " bytes of JSON exceed the limit of " + std::to_string(max_bytes) + " bytes (" +
         std::to_string(max_bytes >> 20) + " MiB) for a " + kind;
}

JsonFile JsonFile::load(const std::filesystem::path& path, const JsonLimits& limits) {
  nlohmann::json doc = read_json(path, limits);
  if (!doc.is_object()) throw BadInput(path.string() + ": expected a JSON object at the top level");
  return JsonFile(path.string(), std::move(doc));
}

std::string JsonFile::where(const std::string& key) const { return origin_ + ": field '" + key + "'"; }

bool JsonFile::has(const std::string& key) const {
  return doc_.is_object() && doc_.contains(key) && !doc_.at(key).is_null();
}

std::optional<int64_t> JsonFile::find_int(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const auto& v = doc_.at(key);
  // Beyond int64 (an unsigned 2^63.., a float such as 1e100) is not an
  // integer we can hold; casting such a float would be undefined behaviour.
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw BadInput(where(key) + ": " + v.dump() + " is too large");
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= -0x1p63 && d < 0x1p63 && d == std::trunc(d)) return static_cast<int64_t>(d);
  }
  throw BadInput(where(key) + ": expected an integer, got " + v.dump());
}

std::optional<double> JsonFile::find_number(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const auto& v = doc_.at(key);
  if (!v.is_number()) throw BadInput(where(key) + ": expected a number, got " + v.dump());
  return v.get<double>();
}

std::optional<std::string> JsonFile::find_string(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const auto& v = doc_.at(key);
  if (!v.is_string()) throw BadInput(where(key) + ": expected a string, got " + v.dump());
  return v.get<std::string>();
}

std::optional<bool> JsonFile::find_bool(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const auto& v = doc_.at(key);
  if (!v.is_boolean()) throw BadInput(where(key) + ": expected true or false, got " + v.dump());
  return v.get<bool>();
}

std::optional<std::vector<int64_t>> JsonFile::find_int_list(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const auto& v = doc_.at(key);
  if (v.is_number_integer()) return std::vector<int64_t>{v.get<int64_t>()};
  if (v.is_array()) {
    std::vector<int64_t> out;
    for (const auto& item : v) {
      if (!item.is_number_integer()) throw BadInput(where(key) + ": expected integers, got " + v.dump());
      out.push_back(item.get<int64_t>());
    }
    return out;
  }
  throw BadInput(where(key) + ": expected an integer or a list of integers, got " + v.dump());
}

int64_t JsonFile::find_size(const std::string& key, int64_t fallback, int64_t max) const {
  const int64_t v = find_int(key).value_or(fallback);
  if (v < 1 || v > max) throw BadInput(where(key) + ": " + std::to_string(v) + " is outside 1.." + std::to_string(max));
  return v;
}

int64_t JsonFile::get_size(const std::string& key, int64_t max) const {
  if (!has(key)) throw BadInput(where(key) + ": required but missing");
  return find_size(key, 0, max);
}

int64_t JsonFile::get_int(const std::string& key) const {
  auto v = find_int(key);
  if (!v) throw BadInput(where(key) + ": required but missing");
  return *v;
}

double JsonFile::get_number(const std::string& key) const {
  auto v = find_number(key);
  if (!v) throw BadInput(where(key) + ": required but missing");
  return *v;
}

std::string JsonFile::get_string(const std::string& key) const {
  auto v = find_string(key);
  if (!v) throw BadInput(where(key) + ": required but missing");
  return *v;
}

std::optional<int64_t> JsonFile::find_int_any(std::initializer_list<const char*> keys) const {
  for (const char* k : keys)
    if (auto v = find_int(k)) return v;
  return std::nullopt;
}

int64_t JsonFile::get_int_any(std::initializer_list<const char*> keys) const {
  if (auto v = find_int_any(keys)) return *v;
  std::string names;
  for (const char* k : keys) names += std::string(names.empty() ? "'" : " or '") + k + "'";
  throw BadInput(origin_ + ": field " + names + ": required but missing");
}

}  // namespace llm2hef::sdk
