// What `inspect` warns a newcomer about beyond fits / does not fit: the
// hidden sizes where the chip's fidelity is known to drop, calibration runs
// that need more RAM than the usual DFC machines have, and a model that fits
// the 8 GB device only tightly. Each rule is stated here once; inspect.cpp
// reports it (JSON "advice", text "warning:" lines).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core {

// hailo-contract.md section 12 (LNM findings 14 and 16): on real hardware,
// checkpoints with hidden >= 576 lost fidelity (prefill cosine 0.858 on
// Qwen2.5-0.5B); root cause unknown.
inline constexpr int64_t kFidelityLossHidden = 576;

// The RAM of the machines the DFC usually runs on: LNM runs it on 32 GB hosts
// (hailo-contract.md section 7); 64 GB is the next common size.
inline constexpr double kDfcMachineRamBytes[] = {32.0 * 1024 * 1024 * 1024, 64.0 * 1024 * 1024 * 1024};

// The largest model Hailo ships for the Hailo-10H (hailo-contract.md section
// 11: Llama3.2-3B-Instruct, context 2048, A8W4) under inspect's own memory
// estimate: its published config (3,212,749,824 parameters, tied embedding,
// vocab 128256 x hidden 3072, 28 layers of 24 heads x 128) gives 4-bit
// weights 1.50 GiB + K/V 0.33 GiB + embeddings.bin 0.73 GiB. Past it a model
// is "tight": larger than anything proven on the device, whose 8 GB also
// hold hailort_server and the device's own system (section 9).
double largest_shipped_model_bytes();

// A warning when `hidden` is in the range of section 12; nullopt otherwise.
std::optional<std::string> fidelity_warning(int64_t hidden);

// The peak RAM of `llm2hef calibrate` on an export of these sizes, as
// calibrate.py's estimate_peak() computes it before it runs (the same
// factors: interpreter 400 MiB, fp32 weights 2.4 times while the proxy runs,
// one prompt's inputs twice plus the feeder's 512 MiB, five times the
// largest activation). `graph_weights` is the weights in the graph (the
// lm_head in, the embedding table out).
double calibrate_peak_bytes(const sdk::ModelDims& dims, const sdk::RuntimeSizes& sizes, double graph_weights);

// A warning when calibrate's peak or compile.py's optimize (`samples`
// calibration samples) needs more than a 32 GB machine, saying which cache
// (and, for compile.py, which --calib-size) fits 32 and 64 GB; nullopt when both fit 32 GB.
std::optional<std::string> calibration_memory_warning(const sdk::ModelDims& dims, const sdk::RuntimeSizes& sizes,
                                                      double graph_weights, int64_t samples);

}  // namespace llm2hef::core
