#include "llm2hef/registry/json_schema.hpp"

#include <cstdint>
#include <regex>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace llm2hef::registry {

namespace {

using nlohmann::json;

const std::set<std::string>& supported_keywords() {
  static const std::set<std::string> k = {"$schema", "$id",      "title",       "description", "type",
                                          "const",   "enum",     "required",    "properties",  "additionalProperties",
                                          "items",   "minItems", "uniqueItems", "minLength",   "maxLength",
                                          "pattern", "minimum"};
  return k;
}

// Every keyword's value has the type validate_at reads it as, so a schema
// that is accepted here never makes validation throw nlohmann's own errors.
void check_schema(const json& s, const std::string& at) {
  if (!s.is_object()) throw std::invalid_argument("schema at " + at + " is not an object");
  auto expect = [&](const std::string& key, bool ok, const char* what) {
    if (!ok) throw std::invalid_argument("schema at " + at + ": '" + key + "' must be " + what);
  };
  for (const auto& [key, value] : s.items()) {
    if (!supported_keywords().count(key))
      throw std::invalid_argument("schema at " + at + " uses unsupported keyword '" + key + "'");
    if (key == "properties") {
      expect(key, value.is_object(), "an object");
      for (const auto& [name, sub] : value.items()) check_schema(sub, at + "/properties/" + name);
    } else if (key == "items") {
      check_schema(value, at + "/items");
    } else if (key == "additionalProperties" && !value.is_boolean()) {
      throw std::invalid_argument("schema at " + at + ": only boolean additionalProperties is supported");
    } else if (key == "type") {
      static const std::set<std::string> types = {"object", "array", "string", "integer", "number", "boolean", "null"};
      expect(key, value.is_string() && types.count(value.get<std::string>()), "one type name");
    } else if (key == "enum") {
      expect(key, value.is_array(), "an array");
    } else if (key == "required") {
      expect(key, value.is_array(), "an array of strings");
      for (const auto& name : value) expect(key, name.is_string(), "an array of strings");
    } else if (key == "minItems" || key == "minLength" || key == "maxLength") {
      expect(key, value.is_number_unsigned() || (value.is_number_integer() && value.get<std::int64_t>() >= 0),
             "a non-negative integer");
    } else if (key == "uniqueItems") {
      expect(key, value.is_boolean(), "a boolean");
    } else if (key == "minimum") {
      expect(key, value.is_number(), "a number");
    } else if (key == "pattern") {
      expect(key, value.is_string(), "a string");
      try {
        (void)std::regex(value.get<std::string>(), std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        throw std::invalid_argument("schema at " + at + ": 'pattern' is not a regular expression: " + e.what());
      }
    } else if (key == "$schema" || key == "$id" || key == "title" || key == "description") {
      expect(key, value.is_string(), "a string");
    }
  }
}

std::string child(const std::string& parent, const std::string& name) {
  return parent.empty() ? name : parent + "." + name;
}

bool has_type(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  return false;
}

// Hash and equality for uniqueItems. Equality is the schema's (and
// nlohmann's): 1 and 1.0 are the same item, so every number hashes as a
// double; containers combine their elements' hashes.
std::size_t hash_value(const json& v) {
  constexpr std::size_t kMix = 0x9e3779b97f4a7c15ULL;
  auto combine = [](std::size_t seed, std::size_t h) { return seed ^ (h + kMix + (seed << 6) + (seed >> 2)); };
  std::size_t seed =
      static_cast<std::size_t>(v.type() == json::value_t::number_unsigned || v.type() == json::value_t::number_integer
                                   ? json::value_t::number_float
                                   : v.type());
  if (v.is_number()) return combine(seed, std::hash<double>{}(v.get<double>()));
  if (v.is_string()) return combine(seed, std::hash<std::string>{}(v.get_ref<const std::string&>()));
  if (v.is_boolean()) return combine(seed, v.get<bool>() ? 1 : 0);
  if (v.is_array())
    for (const auto& e : v) seed = combine(seed, hash_value(e));
  if (v.is_object())  // nlohmann keeps keys sorted, so equal objects iterate alike
    for (const auto& [key, value] : v.items())
      seed = combine(combine(seed, std::hash<std::string>{}(key)), hash_value(value));
  return seed;
}

struct JsonValueHash {
  std::size_t operator()(const json* v) const { return hash_value(*v); }
};
struct JsonValueEqual {
  bool operator()(const json* a, const json* b) const { return *a == *b; }
};

// A value quoted in a message: long ones are cut, so one bad item cannot
// make a megabyte of output.
std::string shortened(const std::string& text) {
  constexpr std::size_t kMaxQuoted = 200;
  return text.size() <= kMaxQuoted ? text
                                   : text.substr(0, kMaxQuoted) + "... (" + std::to_string(text.size()) + " bytes)";
}

// A pattern is compiled once, not once per string of a 40,000-item list.
const std::regex& compiled(const std::string& pattern) {
  thread_local std::unordered_map<std::string, std::regex> cache;
  auto it = cache.find(pattern);
  if (it == cache.end()) it = cache.emplace(pattern, std::regex(pattern, std::regex::ECMAScript)).first;
  return it->second;
}

// JSON Schema counts characters (code points), not bytes.
std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

void validate_at(const json& s, const json& v, const std::string& field, std::vector<SchemaViolation>& out) {
  auto fail = [&](std::string message) { out.push_back({field, std::move(message)}); };
  if (s.contains("type")) {
    const std::string type = s["type"].get<std::string>();
    if (!has_type(v, type)) {
      fail("expected " + std::string(type == "integer" || type == "array" || type == "object" ? "an " : "a ") + type +
           ", got " + v.dump());
      return;  // the other keywords would only repeat the same complaint
    }
  }
  if (s.contains("const") && v != s["const"]) fail("must be " + s["const"].dump() + ", got " + v.dump());
  if (s.contains("enum")) {
    bool found = false;
    for (const auto& e : s["enum"]) found = found || e == v;
    if (!found) fail("must be one of " + s["enum"].dump() + ", got " + v.dump());
  }
  if (v.is_string()) {
    const std::string text = v.get<std::string>();
    if (s.contains("minLength") && code_points(text) < s["minLength"].get<std::size_t>())
      fail(s["minLength"].get<std::size_t>() == 1 ? "must not be empty"
                                                  : "shorter than " + s["minLength"].dump() + " characters");
    if (s.contains("maxLength") && code_points(text) > s["maxLength"].get<std::size_t>())
      fail("longer than " + s["maxLength"].dump() + " characters");
    // std::regex recurses per character: a 30,000-character field overflowed
    // the stack. No manifest field is anywhere near this long.
    constexpr std::size_t kMaxPatternInput = 4096;
    if (s.contains("pattern") && text.size() > kMaxPatternInput)
      fail("longer than " + std::to_string(kMaxPatternInput) + " bytes; not matched against " +
           s["pattern"].get<std::string>());
    else if (s.contains("pattern") && !std::regex_search(text, compiled(s["pattern"].get<std::string>())))
      fail(v.dump() + " does not match " + s["pattern"].get<std::string>());
  }
  if (v.is_number() && s.contains("minimum") && v.get<double>() < s["minimum"].get<double>())
    fail("must be >= " + s["minimum"].dump() + ", got " + v.dump());
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>())
      fail("needs at least " + s["minItems"].dump() + " item(s)");
    if (s.value("uniqueItems", false)) {
      // One pass with a hash set: comparing every pair took 3.5 GB and 22 s
      // for a 24 KB list, one message per pair. The first repeat is enough
      // for the publisher to act on.
      std::unordered_map<const json*, std::size_t, JsonValueHash, JsonValueEqual> first_index;
      first_index.reserve(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) {
        const auto [it, inserted] = first_index.emplace(&v[i], i);
        if (inserted) continue;
        fail("item " + std::to_string(i) + " repeats item " + std::to_string(it->second) + " (" +
             shortened(v[i].dump()) + "); items must be unique");
        break;
      }
    }
    if (s.contains("items"))
      for (std::size_t i = 0; i < v.size(); ++i)
        validate_at(s["items"], v[i], field + "[" + std::to_string(i) + "]", out);
  }
  if (v.is_object()) {
    if (s.contains("required"))
      for (const auto& name : s["required"])
        if (!v.contains(name.get<std::string>())) out.push_back({child(field, name.get<std::string>()), "is required"});
    const json properties = s.value("properties", json::object());
    for (const auto& [name, value] : v.items()) {
      if (properties.contains(name))
        validate_at(properties[name], value, child(field, name), out);
      else if (!s.value("additionalProperties", true))
        out.push_back({child(field, name), "is not a known field"});
    }
  }
}

}  // namespace

JsonSchema::JsonSchema(json schema) : schema_(std::move(schema)) { check_schema(schema_, "#"); }

std::vector<SchemaViolation> JsonSchema::validate(const json& instance) const {
  std::vector<SchemaViolation> out;
  validate_at(schema_, instance, "", out);
  return out;
}

std::string describe(const std::vector<SchemaViolation>& violations) {
  std::string out;
  for (const auto& v : violations) {
    if (!out.empty()) out += "; ";
    out += (v.field.empty() ? std::string("document") : "field '" + v.field + "'") + ": " + v.message;
  }
  return out;
}

}  // namespace llm2hef::registry
