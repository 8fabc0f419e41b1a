// The checks `export` ran on its own graph before lint took them over
// (onnx's checker; the six inputs in the manifest's order, shapes, each
// consumed; static shapes; one output 'logits' [1, 1, vocab]): each is still
// caught, by a named lint rule, when lint is given the manifest, and
// check_graph_contract (export's call) refuses the graph naming that rule.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include "llm2hef/core/export/export_pipeline.hpp"
#include "llm2hef/core/lint/lint.hpp"
#include "llm2hef/core/rules/render.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "temp_dir.hpp"

using namespace llm2hef;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kSeq = 4, kWidth = 8, kVocab = 8;
const std::vector<std::string> kNames = {"inputs_embeds", "attention_mask", "pe_q_cos",
                                         "pe_q_sin",      "pe_k_cos",       "pe_k_sin"};

void set_shape(onnx::ValueInfoProto& vi, const std::vector<int64_t>& dims) {
  vi.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = vi.mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->clear_dim();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d < 0)
      dim->set_dim_param("n");
    else
      dim->set_dim_value(d);
  }
}

void add_ints(onnx::GraphProto& g, const std::string& name, int64_t value) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(1);
  t->add_int64_data(value);
}

// Six [1, SEQ, W] inputs summed, then the last position: a graph that passes
// every rule, with the manifest that describes it.
onnx::ModelProto valid_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto& g = *m.mutable_graph();
  g.set_name("g");
  for (const auto& name : kNames) {
    auto* in = g.add_input();
    in->set_name(name);
    set_shape(*in, {1, kSeq, kWidth});
  }
  std::string acc = kNames[0];
  for (size_t i = 1; i < kNames.size(); ++i) {
    auto* add = g.add_node();
    add->set_op_type("Add");
    add->set_name("add" + std::to_string(i));
    add->add_input(acc);
    add->add_input(kNames[i]);
    acc = "sum" + std::to_string(i);
    add->add_output(acc);
  }
  add_ints(g, "start", kSeq - 1);
  add_ints(g, "end", kSeq);
  add_ints(g, "axis", 1);
  auto* slice = g.add_node();
  slice->set_op_type("Slice");
  slice->set_name("last");
  for (const char* in : {acc.c_str(), "start", "end", "axis"}) slice->add_input(in);
  slice->add_output("logits");
  set_shape(*g.add_output(), {1, 1, kVocab});
  g.mutable_output(0)->set_name("logits");
  return m;
}

core::ExportManifest manifest() {
  core::ExportManifest m;
  for (const auto& name : kNames) {
    core::ManifestInput input;
    input.name = name;
    input.shape = {1, kSeq, kWidth};
    m.inputs.push_back(input);
  }
  m.dims.vocab = kVocab;
  return m;
}

class ExportContract : public ::testing::Test {
 protected:
  fs::path save(const onnx::ModelProto& m) {
    const fs::path p = dir_ / "model.onnx";
    std::ofstream out(p, std::ios::binary);
    m.SerializeToOstream(&out);
    return p;
  }

  // Error rules lint reports on `m` with the manifest.
  std::vector<std::string> error_rules(const onnx::ModelProto& m, const core::ExportManifest& man = manifest()) {
    const core::rules::Report r = core::lint_exported_onnx(save(m), man);
    std::vector<std::string> rules;
    for (const auto& f : r.findings)
      if (f.severity == core::rules::Severity::error) rules.push_back(f.rule);
    return rules;
  }

  // `mutate` breaks one former graph_contract check; lint must name `rule`,
  // and export's check must refuse the graph (InternalError) naming it.
  void expect_caught(const std::function<void(onnx::ModelProto&)>& mutate, const std::string& rule) {
    onnx::ModelProto m = valid_model();
    mutate(m);
    const auto rules = error_rules(m);
    EXPECT_NE(std::find(rules.begin(), rules.end(), rule), rules.end()) << "lint did not report " << rule;
    try {
      core::check_graph_contract(save(m), manifest());
      ADD_FAILURE() << "check_graph_contract accepted a graph breaking " << rule;
    } catch (const InternalError& e) {
      const std::string what = e.what();  // the tag is "[rule]" or "[rule, section N]"
      EXPECT_TRUE(what.find("[" + rule + "]") != std::string::npos ||
                  what.find("[" + rule + ", section ") != std::string::npos)
          << what;
    }
  }

  llm2hef::testing::TempDir dir_;
};

TEST_F(ExportContract, ValidGraphPassesEveryRule) {
  const core::rules::Report r = core::lint_exported_onnx(save(valid_model()), manifest());
  EXPECT_TRUE(r.findings.empty()) << core::rules::report_text(r);
  EXPECT_NO_THROW(core::check_graph_contract(save(valid_model()), manifest()));
}

TEST_F(ExportContract, ManifestRulesRunOnlyWithAManifest) {
  onnx::ModelProto m = valid_model();
  m.mutable_graph()->mutable_input(0)->set_name("renamed");  // breaks the manifest's order only
  m.mutable_graph()->mutable_node(0)->set_input(0, "renamed");
  const core::rules::Report plain = core::lint_onnx_file(save(m));
  EXPECT_EQ(plain.errors(), 0u) << core::rules::report_text(plain);
  EXPECT_EQ(error_rules(m), std::vector<std::string>{"manifest-inputs"});
}

TEST_F(ExportContract, OnnxCheckerFailureIsCaught) {
  // An op the default domain does not define: onnx's checker refuses it.
  expect_caught([](onnx::ModelProto& m) { m.mutable_graph()->mutable_node(0)->set_op_type("NoSuchOp"); },
                "onnx-checker");
}

TEST_F(ExportContract, InputCountIsCaught) {
  expect_caught(
      [](onnx::ModelProto& m) {
        auto* in = m.mutable_graph()->add_input();
        in->set_name("extra");
        set_shape(*in, {1, kSeq, kWidth});
      },
      "manifest-inputs");
}

TEST_F(ExportContract, InputOrderIsCaught) {
  expect_caught([](onnx::ModelProto& m) { m.mutable_graph()->mutable_input()->SwapElements(1, 2); }, "manifest-inputs");
}

TEST_F(ExportContract, InputShapeIsCaught) {
  expect_caught(
      [](onnx::ModelProto& m) {
        set_shape(*m.mutable_graph()->mutable_input(2), {1, kSeq, kWidth / 2});
      },
      "manifest-inputs");
}

TEST_F(ExportContract, DynamicInputIsCaught) {
  expect_caught(
      [](onnx::ModelProto& m) {
        set_shape(*m.mutable_graph()->mutable_input(3), {1, -1, kWidth});
      },
      "dynamic-shape");
}

TEST_F(ExportContract, UnconsumedInputIsCaught) {
  expect_caught(
      [](onnx::ModelProto& m) {
        // add5 reads inputs_embeds instead of pe_k_sin: pe_k_sin is never consumed.
        m.mutable_graph()->mutable_node(4)->set_input(1, "inputs_embeds");
      },
      "unconsumed-input");
}

TEST_F(ExportContract, OutputNameIsCaught) {
  expect_caught(
      [](onnx::ModelProto& m) {
        m.mutable_graph()->mutable_output(0)->set_name("scores");
        m.mutable_graph()->mutable_node(5)->set_output(0, "scores");
      },
      "manifest-output");
}

TEST_F(ExportContract, SecondOutputIsCaught) {
  expect_caught(
      [](onnx::ModelProto& m) {
        auto* extra = m.mutable_graph()->add_output();
        extra->set_name("sum1");
        set_shape(*extra, {1, kSeq, kWidth});
      },
      "manifest-output");
}

TEST_F(ExportContract, OutputVocabularyIsCaught) {
  expect_caught(
      [](onnx::ModelProto& m) {
        set_shape(*m.mutable_graph()->mutable_output(0), {1, 1, kVocab + 1});
      },
      "manifest-output");
}

TEST_F(ExportContract, AllPositionLogitsAreCaught) {
  expect_caught(
      [](onnx::ModelProto& m) {
        // The full-sequence sum becomes the output; the Slice of its last position feeds nothing.
        m.mutable_graph()->mutable_node(4)->set_output(0, "logits");
        m.mutable_graph()->mutable_node(5)->set_input(0, "logits");
        m.mutable_graph()->mutable_node(5)->set_output(0, "last");
        set_shape(*m.mutable_graph()->mutable_output(0), {1, kSeq, kVocab});
      },
      "output-not-last-position");
}

TEST_F(ExportContract, DynamicOutputIsCaught) {
  expect_caught(
      [](onnx::ModelProto& m) {
        // The last position through a Slice whose end is a graph input: not a constant, so its length is unknown.
        set_shape(*m.mutable_graph()->mutable_output(0), {1, -1, kVocab});
        auto* end = m.mutable_graph()->add_input();
        end->set_name("end_in");
        end->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
        end->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1);
        m.mutable_graph()->mutable_node(5)->set_input(2, "end_in");
      },
      "dynamic-shape");
}

}  // namespace
