#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <set>

#include "llm2hef/core/export.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace {

std::vector<int64_t> static_shape(const onnx::ValueInfoProto& vi, const std::string& what) {
  std::vector<int64_t> shape;
  for (const auto& d : vi.type().tensor_type().shape().dim()) {
    if (!d.has_dim_value()) throw InternalError("graph contract (section 2, static shapes): " + what + " has a dynamic dimension");
    shape.push_back(d.dim_value());
  }
  return shape;
}

}  // namespace

void check_graph_contract(const std::filesystem::path& model_path, const ExportManifest& manifest) {
  try {
    onnx::checker::check_model(model_path.string());
  } catch (const std::exception& e) {
    throw InternalError(model_path.string() + ": onnx checker: " + e.what());
  }
  onnx::ModelProto model;
  std::ifstream in(model_path, std::ios::binary);
  if (!model.ParseFromIstream(&in)) throw InternalError(model_path.string() + ": cannot re-read the model");
  const auto& g = model.graph();
  const auto& expected = manifest.inputs;
  if (static_cast<size_t>(g.input_size()) != expected.size())
    throw InternalError("graph contract (section 2): " + std::to_string(g.input_size()) + " inputs, expected " + std::to_string(expected.size()));
  std::set<std::string> consumed;
  for (const auto& n : g.node())
    for (const auto& i : n.input()) consumed.insert(i);
  for (int i = 0; i < g.input_size(); ++i) {
    const std::string& want = expected[static_cast<size_t>(i)].name;
    if (g.input(i).name() != want)
      throw InternalError("graph contract (section 2): input " + std::to_string(i + 1) + " is '" + g.input(i).name() +
                          "', expected '" + want + "'");
    if (static_shape(g.input(i), want) != expected[static_cast<size_t>(i)].shape)
      throw InternalError("graph contract (section 2): input '" + want + "' has the wrong shape");
    if (!consumed.count(want)) throw InternalError("graph contract (section 2): input '" + want + "' is never consumed");
  }
  const ManifestOutput& logits = manifest.outputs.at(0);
  if (g.output_size() != 1 || g.output(0).name() != logits.name)
    throw InternalError("graph contract (section 2): expected one output '" + logits.name + "'");
  const auto out_shape = static_shape(g.output(0), logits.name);
  if (out_shape != logits.shape)
    throw InternalError("graph contract (section 2): logits must be [1, 1, vocab] (last position only)");
}

}  // namespace llm2hef::core
