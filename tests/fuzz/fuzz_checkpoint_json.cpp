// libFuzzer target for what `export` reads from a checkpoint's JSON and
// template files, in memory: config.json through the SDK's JsonFile and the
// Llama-family config validation (RoPE included) and plan, then
// generation_config.json, tokenizer_config.json, tokenizer.json (fix_tokenizer)
// and chat_template.jinja into hailo-config.json, as the export pipeline does.
//
// The input is up to five documents separated by kSeparator, in this order:
// config.json, generation_config.json, tokenizer_config.json, tokenizer.json,
// chat_template.jinja; an empty part is a file the checkpoint does not have.
// Any input must either be refused with BadInput / Unsupported, or produce
// a tokenizer.json and hailo-config.json that serialize. Anything else
// (another exception such as raw nlohmann text, a sanitizer report) is a bug.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llm2hef/core/checkpoint/checkpoint_dir.hpp"
#include "llm2hef/core/export/make_hailo_config.hpp"
#include "llm2hef/core/export/tokenizer_resource.hpp"
#include "llm2hef/families/llama_family.hpp"
#include "llm2hef/sdk/errors.hpp"

using namespace llm2hef;

namespace {

constexpr std::string_view kSeparator = "\n@@@@\n";
constexpr size_t kParts = 5;

std::array<std::string_view, kParts> split(std::string_view in) {
  std::array<std::string_view, kParts> parts{};
  for (size_t i = 0; i < kParts; ++i) {
    const size_t at = i + 1 < kParts ? in.find(kSeparator) : std::string_view::npos;
    parts[i] = in.substr(0, at);
    if (at == std::string_view::npos) break;
    in.remove_prefix(at + kSeparator.size());
  }
  return parts;
}

// A checkpoint without weight files: every tensor the Llama family asks for
// exists with the [vocab, hidden] shape the config gives (the only shape it
// checks), so the config validation and the plan run to the end. No folder
// exists at dir(), so find_chat_template falls back to tokenizer_config.json.
class FuzzCheckpoint final : public sdk::Checkpoint {
 public:
  FuzzCheckpoint(sdk::JsonFile config, sdk::JsonFile gen, sdk::JsonFile tok_config, bool has_tokenizer)
      : config_(std::move(config)), gen_(std::move(gen)), tok_config_(std::move(tok_config)) {
    if (has_tokenizer) tokenizer_ = dir_ / "tokenizer.json";
  }
  const std::filesystem::path& dir() const override { return dir_; }
  const sdk::JsonFile& config() const override { return config_; }
  const sdk::JsonFile& generation_config() const override { return gen_; }
  const sdk::JsonFile& tokenizer_config() const override { return tok_config_; }
  std::filesystem::path tokenizer_json() const override { return tokenizer_; }
  bool has(std::string_view) const override { return true; }
  const sdk::TensorInfo& info(std::string_view tensor) const override {
    info_.name = std::string(tensor);
    info_.file = dir_ / "model.safetensors";
    info_.shape = {config_.find_int("vocab_size").value_or(1), config_.find_int("hidden_size").value_or(1)};
    return info_;
  }
  std::vector<std::string> tensor_names() const override { return {}; }
  void read_rows(std::string_view, int64_t, int64_t, std::span<float>) const override { __builtin_trap(); }

 private:
  std::filesystem::path dir_ = "/nonexistent/llm2hef-fuzz-checkpoint";
  sdk::JsonFile config_, gen_, tok_config_;
  std::filesystem::path tokenizer_;
  mutable sdk::TensorInfo info_;
};

// What sdk::JsonFile::load does after reading the file.
sdk::JsonFile json_file(std::string_view text, const std::string& name) {
  nlohmann::json doc = sdk::parse_json(text, name);
  if (!doc.is_object()) throw BadInput(name + ": expected a JSON object at the top level");
  return sdk::JsonFile(name, std::move(doc));
}

sdk::JsonFile optional_json(std::string_view text, const std::string& name) {
  return text.empty() ? sdk::JsonFile() : json_file(text, name);
}

// The Llama family's description on the SDK's one adapter, as the llama adapter has it.
class LlamaFamily final : public sdk::DecoderAdapter {
 public:
  sdk::AdapterInfo info() const override {
    return {"fuzz_llama_family", "0.0.0", "", {}, {}, {}, families::llama_family_applied_keys()};
  }

 protected:
  sdk::DecoderModel describe(const sdk::Checkpoint& ckpt, const sdk::DescribeOptions&) const override {
    return families::describe_llama_family(ckpt);
  }
};

// The plan the export would use: the Llama family's when the config passes
// its checks, otherwise a small stand-in, so the tokenizer and hailo-config
// code still runs on inputs whose config is refused.
sdk::Plan plan_for(const sdk::Checkpoint& ckpt) {
  sdk::ExportOptions options;
  options.cache_size = 64;
  options.prefill = 16;
  try {
    return LlamaFamily().plan(ckpt, options);
  } catch (const BadInput&) {
  } catch (const Unsupported&) {
  }
  sdk::Plan p;
  p.dims.vocab = 1000;
  p.cache_size = options.cache_size;
  p.prefill = options.prefill;
  p.pe_q_tiles = p.pe_k_tiles = 1;
  return p;
}

void run(std::string_view input) {
  const auto part = split(input);
  FuzzCheckpoint ckpt(json_file(part[0], "config.json"), optional_json(part[1], "generation_config.json"),
                      optional_json(part[2], "tokenizer_config.json"), !part[3].empty());
  const sdk::Plan plan = plan_for(ckpt);
  std::vector<std::string> changes;
  std::optional<std::string> bos;
  if (!part[3].empty()) {
    const sdk::JsonFile tok = json_file(part[3], "tokenizer.json");
    const core::TokenizerFix fix = core::fix_tokenizer(tok.raw(), tok.origin(), plan.dims.vocab);
    bos = fix.bos;
    (void)fix.tokenizer.dump();
    (void)core::make_hailo_config(ckpt, plan, fix, changes).dump(2);
  }
  if (!part[4].empty()) {
    core::ChatTemplate found;
    found.text = core::checked_template_text(std::string(part[4]), "chat_template.jinja");
    found.source = found.origin = "chat_template.jinja";
    const std::string tmpl = core::chat_template_for_runtime(found, ckpt.tokenizer_config(), bos, changes);
    (void)nlohmann::json(tmpl).dump();  // goes into hailo-config.json
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    run({reinterpret_cast<const char*>(data), size});
  } catch (const BadInput&) {
  } catch (const Unsupported&) {
  }
  return 0;
}
