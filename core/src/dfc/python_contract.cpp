#include "llm2hef/core/dfc/python_contract.hpp"

#include <cctype>
#include <stdexcept>

#include "llm2hef/core/dfc/python_literal.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core {

namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// "{k: v, ...}" over the pe tables.
template <typename Value>
std::string pe_dict(Value value) {
  std::string out;
  for (const sdk::RuntimeInput& input : sdk::kRuntimeInputs) {
    if (input.tiling == sdk::PeTiling::none) continue;
    out += (out.empty() ? "{" : ", ") + python_literal(input.role) + ": " + value(input);
  }
  return out + "}";
}

}  // namespace

std::string python_runtime_contract() {
  std::string roles, names;
  for (const sdk::RuntimeInput& input : sdk::kRuntimeInputs) {
    roles += (roles.empty() ? "" : ", ") + python_literal(input.role);
    names += (names.empty() ? "" : ", ") + upper(input.role);
  }
  return "# The runtime inputs in the order the runtime and the DFC number them (llm2hef's runtime contract).\n"
         "ROLES = (" +
         roles + ")\n" + names +
         " = ROLES\n"
         "PE_TILING = " +
         pe_dict([](const sdk::RuntimeInput& i) {
           return python_literal(i.tiling == sdk::PeTiling::q_heads ? "q" : "k");
         }) +
         "  # which heads the runtime tiles each pe table by\n"
         "PE_COSINE = " +
         pe_dict([](const sdk::RuntimeInput& i) { return std::string(i.cosine ? "True" : "False"); }) + "\n";
}

std::string with_python_runtime_contract(std::string script) {
  // The template's block runs from its "begin" line through its "end" line;
  // the stand-ins between them keep the .py.in valid Python for ruff.
  const std::string begin = "# @RUNTIME_CONTRACT@ begin";
  const std::string end = "# @RUNTIME_CONTRACT@ end\n";
  const size_t at = script.find(begin);
  const size_t end_at = at == std::string::npos ? at : script.find(end, at);
  if (end_at == std::string::npos) throw std::logic_error("generated script without its runtime-contract block");
  return script.replace(at, end_at + end.size() - at, python_runtime_contract());
}

}  // namespace llm2hef::core
