#include "llm2hef/sdk/json_file.hpp"

#include <fstream>
#include <sstream>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

nlohmann::json read_json(const std::filesystem::path& path, const JsonLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadInput(path.string() + ": cannot open for reading");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_json(buffer.view(), path.string(), limits);
}

JsonFile JsonFile::load(const std::filesystem::path& path) {
  nlohmann::json doc = read_json(path);
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
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
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
  if (v < 1 || v > max)
    throw BadInput(where(key) + ": " + std::to_string(v) + " is outside 1.." + std::to_string(max));
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
