#include <cctype>

#include "llm2hef/core/dfc/model_scripts.hpp"
#include "llm2hef/core/runtime/hef_names.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core {

std::string dfc_scope_name(const std::string& model_name) {
  std::string s;
  for (char c : model_name) {
    const unsigned char u = static_cast<unsigned char>(c);
    s += std::isalnum(u) ? static_cast<char>(std::tolower(u)) : '_';
  }
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) s = "m_" + s;
  return s;
}

std::string optimize_script(const std::string& scope, const sdk::Plan& plan, int64_t calib_size) {
  const std::string n = std::to_string(plan.cache_size), p = std::to_string(plan.prefill);
  // LNM's measured-better default (hailo-contract.md section 7), but with
  // compression_level 0 as every public per-layer Hailo-10H LLM script has it
  // (Hailo's Qwen2-1.5B script, LNM's hailo-llm.alls): the level is the DFC's
  // own automatic choice of 4-bit weights, and here the lines choose them
  // (docs/compile.md, "optimize.alls: compression_level"). optimization_level
  // stays 0: higher levels silently re-enable adaround/finetune.
  std::string s;
  s += "# Model script for runner.optimize(), written by llm2hef.\n";
  s += "pre_quantization_optimization(ew_add_fusing, policy=disabled)\n";
  s += "set_kv_cache_global_params(" + p + ", " + n + ")\n";
  s += "model_optimization_config(globals, multiproc_policy=disabled)\n";
  // compile.py rewrites this line with the number of samples it really
  // builds, and adds use_saitama=True, device=cuda here and on the
  // bias_correction line when it runs on a GPU.
  s += "# compile.py sets calibset_size to the calibration samples it builds and, on a GPU, adds\n";
  s += "# use_saitama=True, device=cuda to this line and to the bias_correction line.\n";
  s += "model_optimization_config(calibration, batch_size=1, calibset_size=" + std::to_string(calib_size) + ")\n";
  s += "model_optimization_flavor(compression_level=0, optimization_level=0)\n";
  s += "post_quantization_optimization(bias_correction, policy=enabled)\n";
  s += "post_quantization_optimization(adaround, policy=disabled)\n";
  s += "post_quantization_optimization(finetune, policy=disabled)\n";
  // The embeddings input at 16 bits: the runtime copies uint16 rows into it (section 9).
  s += "quantization_param([" + scope + "/" + std::string(sdk::runtime_input(sdk::InputRole::embeddings).dfc_layer) +
       "], precision_mode=a16_w16)\n";
  s += "# compile.py appends `llm2hef har lines FIXED.har --for optimize`: quantization_param([...],\n";
  s += "# precision_mode=a8_w4) for the compressible convs, which are only known once the ONNX is parsed\n";
  s += "# (every conv but the constant 0/1 ones and those whose narrowest input is at most the pe width).\n";
  return s;
}

std::string compile_script(const std::string& scope) {
  std::string s;
  s += "# Model script for runner.compile(), written by llm2hef.\n";
  s += "performance_param(compiler_optimization_level=0)\n";
  s += "allocator_param(enable_auto_spatial_reshapes=False)\n";
  // The groups and cache edges exist only in the quantized HN, so they come
  // from it: compile.py appends `llm2hef har lines --for compile`.
  s += "# compile.py appends `llm2hef har lines QUANTIZED.har --for compile`: the network groups\n";
  const std::string prefill = scope + kPrefillGroupSuffix, tbt = scope + kTbtGroupSuffix;
  s += "# " + prefill + " = network_group([" + prefill + "]) and " + tbt + " = network_group([" + tbt + "])\n";
  s += "# as found in the quantized HN, and a format_conversion line for every cache layer of both groups.\n";
  return s;
}

}  // namespace llm2hef::core
