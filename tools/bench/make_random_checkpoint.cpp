// make_random_checkpoint: a GPT-2-layout Hugging Face checkpoint folder with
// random weights, for memory and time benchmarks of `llm2hef export` at real
// model sizes without downloading a model.
//
// The safetensors file is streamed to disk in fixed-size chunks, so writing
// gpt2-xl (6.2 GB) needs a few MB of memory. Values are deterministic for a
// given seed and tensor name, independent of the order tensors are written.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numbers>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kUsage = R"(Usage: make_random_checkpoint -o DIR [options]

Writes a Hugging Face checkpoint folder with random weights, in the tensor
names and config.json of the preset's family: config.json,
generation_config.json, model.safetensors, and a tokenizer (copied with
--tokenizer-from, else a synthetic byte-level one).

Options:
  -o, --output DIR        folder to create (written atomically)
  --preset NAME           gpt2-xl (default; 1.56B params, 6.2 GB in F32), gpt2 (124M), tiny,
                          qwen2.5-0.5b (Qwen2 layout, 494M), llama-3.2-1b (Llama layout, 1.24B)
  --n-embd N, --n-layer N, --n-head N, --n-positions N, --vocab N
                          override one dimension of the preset
  --dtype F32|BF16        weight dtype (default F32; the Qwen and Llama models ship BF16)
  --seed N                random seed (default 0)
  --tokenizer-from DIR    copy tokenizer.json and tokenizer_config.json from DIR
  --force                 replace DIR if it exists
)";

enum class Family { gpt2, qwen2, llama };

struct Dims {
  Family family;
  int64_t embd, layers, heads, positions, vocab;
  // Llama-layout families only (GPT-2 has kv = heads and a 4x MLP).
  int64_t kv_heads = 0, intermediate = 0;
};

// Published shapes: openai-community/gpt2(-xl), Qwen/Qwen2.5-0.5B and
// meta-llama/Llama-3.2-1B config.json (both of the latter tie the head to
// the embedding, so there is no lm_head tensor).
std::optional<Dims> preset(const std::string& name) {
  if (name == "gpt2-xl") return Dims{Family::gpt2, 1600, 48, 25, 1024, 50257};
  if (name == "gpt2") return Dims{Family::gpt2, 768, 12, 12, 1024, 50257};
  if (name == "tiny") return Dims{Family::gpt2, 64, 2, 4, 128, 512};
  if (name == "qwen2.5-0.5b") return Dims{Family::qwen2, 896, 24, 14, 32768, 151936, 2, 4864};
  if (name == "llama-3.2-1b") return Dims{Family::llama, 2048, 16, 32, 131072, 128256, 8, 8192};
  return std::nullopt;
}

enum class Init { normal, ones_ish };

struct Spec {
  std::string name;
  std::vector<int64_t> shape;
  Init init;
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

std::vector<Spec> gpt2_tensors(const Dims& d) {
  const int64_t E = d.embd;
  std::vector<Spec> t = {{"wte.weight", {d.vocab, E}, Init::normal}, {"wpe.weight", {d.positions, E}, Init::normal}};
  for (int64_t i = 0; i < d.layers; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    // Conv1D weights are stored [in, out], as in the original checkpoints.
    t.push_back({p + "ln_1.weight", {E}, Init::ones_ish});
    t.push_back({p + "ln_1.bias", {E}, Init::normal});
    t.push_back({p + "attn.c_attn.weight", {E, 3 * E}, Init::normal});
    t.push_back({p + "attn.c_attn.bias", {3 * E}, Init::normal});
    t.push_back({p + "attn.c_proj.weight", {E, E}, Init::normal});
    t.push_back({p + "attn.c_proj.bias", {E}, Init::normal});
    t.push_back({p + "ln_2.weight", {E}, Init::ones_ish});
    t.push_back({p + "ln_2.bias", {E}, Init::normal});
    t.push_back({p + "mlp.c_fc.weight", {E, 4 * E}, Init::normal});
    t.push_back({p + "mlp.c_fc.bias", {4 * E}, Init::normal});
    t.push_back({p + "mlp.c_proj.weight", {4 * E, E}, Init::normal});
    t.push_back({p + "mlp.c_proj.bias", {E}, Init::normal});
  }
  t.push_back({"ln_f.weight", {E}, Init::ones_ish});
  t.push_back({"ln_f.bias", {E}, Init::normal});
  return t;
}

// Llama-layout names (LlamaForCausalLM, Qwen2ForCausalLM); Linear weights are
// [out, in]; Qwen2 adds q/k/v biases.
std::vector<Spec> llama_tensors(const Dims& d) {
  const int64_t E = d.embd, head_dim = d.embd / d.heads, kv = d.kv_heads * head_dim;
  std::vector<Spec> t = {{"model.embed_tokens.weight", {d.vocab, E}, Init::normal}};
  for (int64_t i = 0; i < d.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    t.push_back({p + "input_layernorm.weight", {E}, Init::ones_ish});
    t.push_back({p + "self_attn.q_proj.weight", {E, E}, Init::normal});
    t.push_back({p + "self_attn.k_proj.weight", {kv, E}, Init::normal});
    t.push_back({p + "self_attn.v_proj.weight", {kv, E}, Init::normal});
    if (d.family == Family::qwen2) {
      t.push_back({p + "self_attn.q_proj.bias", {E}, Init::normal});
      t.push_back({p + "self_attn.k_proj.bias", {kv}, Init::normal});
      t.push_back({p + "self_attn.v_proj.bias", {kv}, Init::normal});
    }
    t.push_back({p + "self_attn.o_proj.weight", {E, E}, Init::normal});
    t.push_back({p + "post_attention_layernorm.weight", {E}, Init::ones_ish});
    t.push_back({p + "mlp.gate_proj.weight", {d.intermediate, E}, Init::normal});
    t.push_back({p + "mlp.up_proj.weight", {d.intermediate, E}, Init::normal});
    t.push_back({p + "mlp.down_proj.weight", {E, d.intermediate}, Init::normal});
  }
  t.push_back({"model.norm.weight", {E}, Init::ones_ish});
  return t;
}

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// xoshiro256** with Box-Muller: fast enough that writing 1.5B values is
// bound by the disk, and identical on every platform (std::normal_distribution
// is not specified bit for bit).
class Normal {
 public:
  Normal(uint64_t seed, const std::string& stream) {
    uint64_t s = seed;
    for (unsigned char c : stream) s = (s ^ c) * 0x100000001b3ull;  // FNV-style mix of the tensor name
    for (auto& x : state_) x = splitmix64(s);
  }
  float next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    // u1 in (0, 1] so that log(u1) is finite.
    const double u1 = (static_cast<double>(bits() >> 11) + 1.0) * 0x1p-53;
    const double u2 = static_cast<double>(bits() >> 11) * 0x1p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = static_cast<float>(r * std::sin(2.0 * std::numbers::pi * u2));
    has_spare_ = true;
    return static_cast<float>(r * std::cos(2.0 * std::numbers::pi * u2));
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t bits() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }
  uint64_t state_[4];
  float spare_ = 0;
  bool has_spare_ = false;
};

// Round to nearest even; the values written are finite.
uint16_t to_bf16(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  b += 0x7fffu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}

// GPT-2's byte-to-character table: printable Latin-1 bytes stand for
// themselves, the rest are shifted to U+0100 and up.
std::vector<std::string> byte_level_alphabet() {
  auto utf8 = [](uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xc0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    }
    return s;
  };
  std::vector<std::string> out(256);
  uint32_t shifted = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    out[b] = utf8(printable ? b : 256 + shifted++);
  }
  return out;
}

// A byte-level BPE tokenizer with no merges: every byte is a token, the
// remaining ids are unreachable filler, the last id is <|endoftext|>. Enough
// for the exporter to validate ids and copy it; not a useful tokenizer.
json synthetic_tokenizer(int64_t vocab) {
  json v = json::object();
  const auto alphabet = byte_level_alphabet();
  for (size_t i = 0; i < alphabet.size(); ++i) v[alphabet[i]] = static_cast<int64_t>(i);
  for (int64_t i = 256; i < vocab - 1; ++i) v["<|filler_" + std::to_string(i) + "|>"] = i;
  v["<|endoftext|>"] = vocab - 1;
  const json byte_level = {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", true},
                           {"use_regex", true}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens",
           {{{"id", vocab - 1},
             {"content", "<|endoftext|>"},
             {"single_word", false},
             {"lstrip", false},
             {"rstrip", false},
             {"normalized", true},
             {"special", true}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level},
          {"post_processor", byte_level},
          {"decoder", byte_level},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"vocab", v},
            {"merges", json::array()}}}};
}

void write_json(const fs::path& p, const json& j) {
  std::ofstream out(p);
  out << j.dump(2) << "\n";
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

json gpt2_config(const Dims& d, const std::string& dtype) {
  return {{"activation_function", "gelu_new"},
          {"architectures", {"GPT2LMHeadModel"}},
          {"attn_pdrop", 0.1},
          {"bos_token_id", d.vocab - 1},
          {"embd_pdrop", 0.1},
          {"eos_token_id", d.vocab - 1},
          {"initializer_range", 0.02},
          {"layer_norm_epsilon", 1e-05},
          {"model_type", "gpt2"},
          {"n_ctx", d.positions},
          {"n_embd", d.embd},
          {"n_head", d.heads},
          {"n_inner", nullptr},
          {"n_layer", d.layers},
          {"n_positions", d.positions},
          {"resid_pdrop", 0.1},
          {"scale_attn_weights", true},
          {"summary_activation", nullptr},
          {"summary_first_dropout", 0.1},
          {"summary_proj_to_labels", true},
          {"summary_type", "cls_index"},
          {"summary_use_proj", true},
          {"torch_dtype", dtype == "BF16" ? "bfloat16" : "float32"},
          {"use_cache", true},
          {"vocab_size", d.vocab}};
}

// The published config.json of the preset's model, with the dimensions
// given. Llama 3.2 keeps its llama3 RoPE scaling; Qwen2.5 its sliding-window
// keys (off).
json llama_config(const Dims& d, const std::string& dtype) {
  const std::string torch_dtype = dtype == "BF16" ? "bfloat16" : "float32";
  const int64_t eos = d.vocab - 1;
  if (d.family == Family::qwen2)
    return {{"architectures", {"Qwen2ForCausalLM"}},
            {"attention_dropout", 0.0},
            {"bos_token_id", eos},
            {"eos_token_id", eos},
            {"hidden_act", "silu"},
            {"hidden_size", d.embd},
            {"initializer_range", 0.02},
            {"intermediate_size", d.intermediate},
            {"max_position_embeddings", d.positions},
            {"max_window_layers", d.layers},
            {"model_type", "qwen2"},
            {"num_attention_heads", d.heads},
            {"num_hidden_layers", d.layers},
            {"num_key_value_heads", d.kv_heads},
            {"rms_norm_eps", 1e-06},
            {"rope_theta", 1000000.0},
            {"sliding_window", d.positions},
            {"tie_word_embeddings", true},
            {"torch_dtype", torch_dtype},
            {"use_cache", true},
            {"use_sliding_window", false},
            {"vocab_size", d.vocab}};
  return {{"architectures", {"LlamaForCausalLM"}},
          {"attention_bias", false},
          {"attention_dropout", 0.0},
          {"bos_token_id", eos},
          {"eos_token_id", eos},
          {"head_dim", d.embd / d.heads},
          {"hidden_act", "silu"},
          {"hidden_size", d.embd},
          {"initializer_range", 0.02},
          {"intermediate_size", d.intermediate},
          {"max_position_embeddings", d.positions},
          {"mlp_bias", false},
          {"model_type", "llama"},
          {"num_attention_heads", d.heads},
          {"num_hidden_layers", d.layers},
          {"num_key_value_heads", d.kv_heads},
          {"pretraining_tp", 1},
          {"rms_norm_eps", 1e-05},
          {"rope_scaling",
           {{"factor", 32.0},
            {"high_freq_factor", 4.0},
            {"low_freq_factor", 1.0},
            {"original_max_position_embeddings", 8192},
            {"rope_type", "llama3"}}},
          {"rope_theta", 500000.0},
          {"tie_word_embeddings", true},
          {"torch_dtype", torch_dtype},
          {"use_cache", true},
          {"vocab_size", d.vocab}};
}

// Header first (every offset is known from the shapes), then each tensor in
// chunks: memory stays at one chunk whatever the model size.
uint64_t write_safetensors(const fs::path& path, const std::vector<Spec>& tensors, const std::string& dtype,
                           uint64_t seed) {
  const uint64_t esize = dtype == "BF16" ? 2 : 4;
  json header = {{"__metadata__", {{"format", "pt"}}}};
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    const uint64_t n = static_cast<uint64_t>(t.numel()) * esize;
    header[t.name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // align the data section as the reference writer does

  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot create " + path.string() + ": " + std::strerror(errno));
  auto put = [&](const void* p, size_t n) {
    if (std::fwrite(p, 1, n, f) != n) {
      std::fclose(f);
      throw std::runtime_error("write failed on " + path.string() + ": " + std::strerror(errno));
    }
  };
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  put(len, 8);
  put(text.data(), text.size());

  constexpr size_t kChunk = 1 << 20;
  std::vector<float> buf(kChunk);
  std::vector<uint16_t> half(kChunk);
  for (const auto& t : tensors) {
    Normal rng(seed, t.name);
    const float mean = t.init == Init::ones_ish ? 1.0f : 0.0f;
    for (int64_t left = t.numel(); left > 0;) {
      const size_t n = static_cast<size_t>(std::min<int64_t>(left, kChunk));
      for (size_t i = 0; i < n; ++i) buf[i] = mean + 0.02f * rng.next();
      if (esize == 2) {
        for (size_t i = 0; i < n; ++i) half[i] = to_bf16(buf[i]);
        put(half.data(), n * 2);
      } else {
        put(buf.data(), n * 4);
      }
      left -= static_cast<int64_t>(n);
    }
  }
  if (std::fclose(f) != 0) throw std::runtime_error("write failed on " + path.string());
  return 8 + text.size() + offset;
}

int64_t parse_int(const std::string& flag, const std::string& v) {
  size_t used = 0;
  int64_t x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
  }
  if (used != v.size() || x <= 0) throw std::invalid_argument(flag + " needs a positive integer, got '" + v + "'");
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    std::string preset_name = "gpt2-xl", dtype = "F32";
    fs::path out, tokenizer_from;
    uint64_t seed = 0;
    bool force = false;
    std::optional<int64_t> over[5];  // embd, layers, heads, positions, vocab
    const char* over_flags[5] = {"--n-embd", "--n-layer", "--n-head", "--n-positions", "--vocab"};
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
        return args[++i];
      };
      bool matched = false;
      for (int k = 0; k < 5; ++k)
        if (a == over_flags[k]) {
          over[k] = parse_int(a, value());
          matched = true;
        }
      if (matched) continue;
      if (a == "-h" || a == "--help") {
        std::cout << kUsage;
        return 0;
      } else if (a == "-o" || a == "--output") {
        out = value();
      } else if (a == "--preset") {
        preset_name = value();
      } else if (a == "--dtype") {
        dtype = value();
      } else if (a == "--seed") {
        seed = static_cast<uint64_t>(parse_int(a, value()));
      } else if (a == "--tokenizer-from") {
        tokenizer_from = value();
      } else if (a == "--force") {
        force = true;
      } else {
        throw std::invalid_argument("unknown argument '" + a + "'");
      }
    }
    if (out.empty()) throw std::invalid_argument("-o DIR is required");
    auto dims = preset(preset_name);
    if (!dims)
      throw std::invalid_argument("unknown preset '" + preset_name +
                                  "' (gpt2-xl, gpt2, tiny, qwen2.5-0.5b, llama-3.2-1b)");
    if (dtype != "F32" && dtype != "BF16") throw std::invalid_argument("--dtype must be F32 or BF16");
    int64_t* fields[5] = {&dims->embd, &dims->layers, &dims->heads, &dims->positions, &dims->vocab};
    for (int k = 0; k < 5; ++k)
      if (over[k]) *fields[k] = *over[k];
    if (dims->embd % dims->heads != 0) throw std::invalid_argument("n_embd must be a multiple of n_head");
    if (dims->family != Family::gpt2 && dims->heads % dims->kv_heads != 0)
      throw std::invalid_argument("n_head must be a multiple of the preset's " + std::to_string(dims->kv_heads) +
                                  " key/value heads");
    if (dims->vocab < 257) throw std::invalid_argument("--vocab must be at least 257 (256 bytes + <|endoftext|>)");
    if (!tokenizer_from.empty() && !fs::is_regular_file(tokenizer_from / "tokenizer.json"))
      throw std::invalid_argument((tokenizer_from / "tokenizer.json").string() + " does not exist");
    if (fs::exists(out) && !force) throw std::invalid_argument(out.string() + " exists (use --force to replace it)");

    // Build next to the target and rename at the end: an interrupted run
    // never leaves a folder that looks like a finished checkpoint.
    const fs::path staging =
        out.parent_path() / ("." + out.filename().string() + ".partial-" + std::to_string(::getpid()));
    fs::remove_all(staging);
    fs::create_directories(staging);
    try {
      const bool gpt2 = dims->family == Family::gpt2;
      const auto tensors = gpt2 ? gpt2_tensors(*dims) : llama_tensors(*dims);
      uint64_t params = 0;
      for (const auto& t : tensors) params += static_cast<uint64_t>(t.numel());
      std::cerr << "writing " << preset_name << " (" << params << " parameters, " << dtype << ") to " << out.string()
                << "\n";
      write_json(staging / "config.json", gpt2 ? gpt2_config(*dims, dtype) : llama_config(*dims, dtype));
      write_json(staging / "generation_config.json",
                 {{"_from_model_config", true}, {"bos_token_id", dims->vocab - 1}, {"eos_token_id", dims->vocab - 1}});
      if (!tokenizer_from.empty()) {
        fs::copy_file(tokenizer_from / "tokenizer.json", staging / "tokenizer.json");
        if (fs::is_regular_file(tokenizer_from / "tokenizer_config.json"))
          fs::copy_file(tokenizer_from / "tokenizer_config.json", staging / "tokenizer_config.json");
      } else {
        write_json(staging / "tokenizer.json", synthetic_tokenizer(dims->vocab));
        write_json(staging / "tokenizer_config.json", {{"bos_token", "<|endoftext|>"},
                                                       {"eos_token", "<|endoftext|>"},
                                                       {"unk_token", "<|endoftext|>"},
                                                       {"model_max_length", dims->positions},
                                                       {"tokenizer_class", "GPT2Tokenizer"}});
      }
      const uint64_t bytes = write_safetensors(staging / "model.safetensors", tensors, dtype, seed);
      if (fs::exists(out)) fs::remove_all(out);
      fs::rename(staging, out);
      std::cout << out.string() << ": " << params << " parameters, model.safetensors " << bytes << " bytes\n";
    } catch (...) {
      std::error_code ec;
      fs::remove_all(staging, ec);
      throw;
    }
    return 0;
  } catch (const std::invalid_argument& e) {
    std::cerr << "make_random_checkpoint: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "make_random_checkpoint: error: " << e.what() << "\n";
    return 1;
  }
}
