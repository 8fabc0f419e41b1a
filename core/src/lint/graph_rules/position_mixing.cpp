// Rule position-mixing: tokens may interact only inside the attention
// matmuls, otherwise the DFC cannot split the prefill and token-by-token
// scopes over the KV cache.
#include <algorithm>
#include <set>

#include "../lint_context.hpp"

namespace llm2hef::core::lint {

namespace {

const std::set<std::string> kReduceOps = {"ReduceMean",      "ReduceSum",      "ReduceMax", "ReduceMin",
                                          "ReduceProd",      "ReduceL1",       "ReduceL2",  "ReduceLogSum",
                                          "ReduceLogSumExp", "ReduceSumSquare"};
const std::set<std::string> kSoftmaxOps = {"Softmax", "LogSoftmax", "Hardmax"};
const std::set<std::string> kPoolOps = {"AveragePool", "MaxPool", "LpPool"};
const std::set<std::string> kGlobalPoolOps = {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"};

// One node's check, with the context's lookups under short names.
struct MixingCheck {
  const LintContext& c;
  rules::RuleOut& out;
  const int64_t seq_ = c.seq();
  const int64_t opset_ = c.opset();

  Shape shape(const std::string& name) const { return c.shape(name); }
  bool is_const(const std::string& name) const { return c.is_const(name); }
  std::optional<std::vector<int64_t>> const_ints(const std::string& name) const { return c.const_ints(name); }
  bool is_seq_axis(const Shape& s, int64_t axis) const { return c.is_seq_axis(s, axis); }

  void mixing(const onnx::NodeProto&, int, const std::string& what) {
    out.fail(what +
             "; tokens may interact only inside the attention matmuls (Q K^T, P V), otherwise the DFC "
             "cannot split prefill and token-by-token scopes over the KV cache (the graph contract, docs/lint.md)");
  }

  std::optional<std::vector<int64_t>> reduce_axes(const onnx::NodeProto& n, const Shape& s, bool& unresolved) const {
    unresolved = false;
    std::optional<std::vector<int64_t>> axes = attr_ints(n, "axes");
    if (!axes && n.input_size() > 1 && !n.input(1).empty()) {
      axes = const_ints(n.input(1));
      if (!axes) {
        unresolved = true;
        return std::nullopt;
      }
    }
    if (!axes || axes->empty()) {
      if (attr_int(n, "noop_with_empty_axes").value_or(0) == 1) return std::vector<int64_t>{};
      if (!s.known) {
        unresolved = true;
        return std::nullopt;
      }
      std::vector<int64_t> all;
      for (int64_t i = 0; i < s.rank(); ++i) all.push_back(i);
      return all;
    }
    return axes;
  }

  void check_position_mixing(const onnx::NodeProto& n, int index) {
    const std::string& op = n.op_type();
    if (n.input_size() == 0) return;
    if (op == "MatMul" && n.input_size() == 2) {
      check_matmul(n, index);
      return;
    }
    const std::string& x = n.input(0);
    if (x.empty() || is_const(x)) return;  // constant subgraphs mix nothing at run time
    const Shape s = shape(x);

    if (kReduceOps.count(op) || op == "ArgMax" || op == "ArgMin") {
      bool unresolved = false;
      std::optional<std::vector<int64_t>> axes;
      if (op == "ArgMax" || op == "ArgMin")
        axes = std::vector<int64_t>{attr_int(n, "axis").value_or(0)};
      else
        axes = reduce_axes(n, s, unresolved);
      if (unresolved) {
        if (seq_ > 1) mixing(n, index, op + " over axes lint cannot resolve (input " + shape_text(s) + ")");
        return;
      }
      for (int64_t a : *axes) {
        int64_t na = s.known ? normalize_axis(a, s.rank()) : a;
        if (is_seq_axis(s, na)) {
          mixing(n, index,
                 op + " over axis " + std::to_string(a) + " of " + shape_text(s) + " reduces across positions");
          return;
        }
      }
      return;
    }
    if (kSoftmaxOps.count(op)) {
      const int64_t axis = attr_int(n, "axis").value_or(opset_ >= 13 ? -1 : 1);
      if (!s.known) return;
      const int64_t na = normalize_axis(axis, s.rank());
      if (na != s.rank() - 1)
        mixing(n, index,
               op + " on axis " + std::to_string(axis) + " of " + shape_text(s) +
                   " must be on the last axis (the keys of the attention scores)");
      return;
    }
    if (op == "CumSum") {
      std::optional<std::vector<int64_t>> axis = n.input_size() > 1 ? const_ints(n.input(1)) : std::nullopt;
      if (!axis || axis->size() != 1 || !s.known) {
        mixing(n, index, "CumSum over an axis lint cannot resolve (input " + shape_text(s) + ")");
        return;
      }
      const int64_t na = normalize_axis((*axis)[0], s.rank());
      if (is_seq_axis(s, na))
        mixing(n, index,
               "CumSum over axis " + std::to_string((*axis)[0]) + " of " + shape_text(s) +
                   " is a cumulative sum across positions");
      return;
    }
    if (op == "LayerNormalization" || op == "LpNormalization" || op == "MeanVarianceNormalization") {
      if (!s.known) return;
      std::vector<int64_t> axes;
      if (op == "LayerNormalization") {
        for (int64_t a = normalize_axis(attr_int(n, "axis").value_or(-1), s.rank()); a < s.rank(); ++a)
          axes.push_back(a);
      } else if (op == "LpNormalization") {
        axes.push_back(normalize_axis(attr_int(n, "axis").value_or(-1), s.rank()));
      } else {
        for (int64_t a : attr_ints(n, "axes").value_or(std::vector<int64_t>{0, 2, 3}))
          axes.push_back(normalize_axis(a, s.rank()));
      }
      for (int64_t a : axes)
        if (is_seq_axis(s, a)) {
          mixing(n, index, op + " normalizes across axis " + std::to_string(a) + " of " + shape_text(s));
          return;
        }
      return;
    }
    if (op == "Conv" || op == "ConvTranspose" || kPoolOps.count(op) || kGlobalPoolOps.count(op)) {
      check_windowed(n, index, s);
      return;
    }
  }

  // Conv / pooling: a window or stride > 1 along a spatial axis of SEQ positions mixes positions.
  void check_windowed(const onnx::NodeProto& n, int index, const Shape& s) {
    const std::string& op = n.op_type();
    const int64_t spatial = s.known ? s.rank() - 2 : -1;
    auto along_seq = [&](int64_t j) {  // spatial axis j (0-based)
      if (!s.known) return true;       // cannot tell: assume the worst
      const int64_t d = s.dims[static_cast<size_t>(2 + j)];
      return d < 0 || (seq_ > 1 && d == seq_);
    };
    if (kGlobalPoolOps.count(op)) {
      for (int64_t j = 0; j < std::max<int64_t>(spatial, 0); ++j)
        if (along_seq(j)) {
          mixing(n, index, op + " over " + shape_text(s) + " pools across positions");
          return;
        }
      return;
    }
    std::vector<int64_t> kernel = attr_ints(n, "kernel_shape").value_or(std::vector<int64_t>{});
    if (kernel.empty() && (op == "Conv" || op == "ConvTranspose") && n.input_size() > 1) {
      Shape w = shape(n.input(1));
      if (w.known && w.rank() > 2) kernel.assign(w.dims.begin() + 2, w.dims.end());
    }
    std::vector<int64_t> strides = attr_ints(n, "strides").value_or(std::vector<int64_t>{});
    const size_t count = std::max(kernel.size(), strides.size());
    for (size_t j = 0; j < count; ++j) {
      const int64_t k = j < kernel.size() ? kernel[j] : 1;
      const int64_t st = j < strides.size() ? strides[j] : 1;
      if ((k != 1 || st != 1) && (spatial < 0 || static_cast<int64_t>(j) < spatial) &&
          along_seq(static_cast<int64_t>(j))) {
        mixing(n, index,
               op + " with kernel " + std::to_string(k) + ", stride " + std::to_string(st) + " over " + shape_text(s) +
                   " mixes neighbouring positions (a convolution over time)");
        return;
      }
    }
  }

  void check_matmul(const onnx::NodeProto& n, int index) {
    const std::string& a = n.input(0);
    const std::string& b = n.input(1);
    const bool ca = is_const(a), cb = is_const(b);
    if (ca && cb) return;
    const Shape sa = shape(a), sb = shape(b);
    if (!ca && cb) return;  // a linear layer: position-wise
    if (seq_ <= 1) return;
    if (ca && !cb) {
      // constant x activation contracts the activation's dim -2: across positions when that is the sequence axis
      if (sb.known && sb.rank() >= 2 && is_seq_axis(sb, sb.rank() - 2))
        mixing(n, index,
               "MatMul of the constant '" + a + "' with the activation " + shape_text(sb) +
                   " contracts over the sequence axis");
      return;
    }
    // Two activations: only Q K^T (second operand [.., d, SEQ]) and P V (second operand [.., SEQ, d]).
    if (!sb.known || sb.rank() < 2 || !sa.known) return;  // unknown shapes are reported as dynamic-shape
    const int64_t last = sb.dims[static_cast<size_t>(sb.rank() - 1)];
    const int64_t second = sb.dims[static_cast<size_t>(sb.rank() - 2)];
    if (last < 0 || second < 0) return;
    if (last == seq_ || second == seq_) return;
    mixing(n, index,
           "MatMul of two activations " + shape_text(sa) + " x " + shape_text(sb) +
               " is not an attention matmul (the second operand carries no SEQ=" + std::to_string(seq_) +
               " axis at -1 (Q K^T) or -2 (P V))");
  }
};

}  // namespace

void position_mixing(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  if (!default_domain(*item.node)) return;
  MixingCheck{c, out}.check_position_mixing(*item.node, item.index);
}

}  // namespace llm2hef::core::lint
