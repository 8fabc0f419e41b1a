#include "llm2hef/sdk/learned_positions.hpp"

#include <cmath>
#include <cstdio>
#include <future>
#include <numbers>

#include <Eigen/Dense>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::sdk {

namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Column layout of the square basis: cos for k = 0..K-1, then sin for
// k = 1..S. sin(0 p) is identically zero and, for even N, sin(pi p) is zero up
// to angle rounding, so neither carries information.
struct Basis {
  int64_t K, S;
};

Basis basis_for(int64_t n) { return {n / 2 + 1, (n - 1) / 2}; }

double max_abs_error(const Matrix& tables, const Matrix& coef, const Matrix& target) {
  Matrix recon = tables * coef;
  return (recon - target).cwiseAbs().maxCoeff();
}

}  // namespace

std::vector<float> fourier_theta(int64_t n) {
  const int64_t k = basis_for(n).K;
  std::vector<float> theta(static_cast<size_t>(k + k % 2), 0.0f);
  for (int64_t i = 0; i < k; ++i)
    theta[static_cast<size_t>(i)] =
        static_cast<float>(2.0 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(n));
  return theta;
}

FourierPositions fit_learned_positions(std::span<const float> wpe, int64_t n, int64_t h) {
  if (n < 2 || h < 1 || static_cast<int64_t>(wpe.size()) != n * h)
    throw InternalError("fit_learned_positions: bad sizes");
  const Basis b = basis_for(n);
  FourierPositions out;
  out.positions = n;
  out.width = h;
  out.frequencies = b.K;
  out.theta = fourier_theta(n);
  const int64_t t = static_cast<int64_t>(out.theta.size());

  // The tables exactly as the runtime produces them, one row per position.
  Matrix tables(n, n);
  std::vector<float> c(static_cast<size_t>(t)), s(static_cast<size_t>(t));
  for (int64_t p = 0; p < n; ++p) {
    runtime_pe_row(out.theta, p, c, s);
    for (int64_t k = 0; k < b.K; ++k) tables(p, k) = c[static_cast<size_t>(k)];
    for (int64_t k = 1; k <= b.S; ++k) tables(p, b.K + k - 1) = s[static_cast<size_t>(k)];
  }
  Matrix target(n, h);
  for (int64_t p = 0; p < n; ++p)
    for (int64_t j = 0; j < h; ++j) target(p, j) = wpe[static_cast<size_t>(p * h + j)];

  // Textbook DFT coefficients (exact angles), judged on the same tables: a
  // figure for the docs, computed on a second thread while this one solves.
  // At GPT-2 XL's 1024 positions x 1600 channels the fit took 1.3 s on one
  // core and 0.7-0.8 s on two (same results to the bit), time during which
  // the export's writer thread has nothing to write.
  auto dft_error = std::async(std::launch::async, [&] {
    Matrix dft(n, h);
    for (int64_t k = 0; k < b.K; ++k) {
      const bool edge = k == 0 || (n % 2 == 0 && k == n / 2);
      const double scale = (edge ? 1.0 : 2.0) / static_cast<double>(n);
      Eigen::RowVectorXd acc = Eigen::RowVectorXd::Zero(h);
      for (int64_t p = 0; p < n; ++p) acc += target.row(p) * std::cos(2.0 * std::numbers::pi * k * p / n);
      dft.row(k) = acc * scale;
    }
    for (int64_t k = 1; k <= b.S; ++k) {
      Eigen::RowVectorXd acc = Eigen::RowVectorXd::Zero(h);
      for (int64_t p = 0; p < n; ++p) acc += target.row(p) * std::sin(2.0 * std::numbers::pi * k * p / n);
      dft.row(b.K + k - 1) = acc * (2.0 / static_cast<double>(n));
    }
    dft = dft.cast<float>().cast<double>();  // rounded in place: one matrix fewer at the peak
    return max_abs_error(tables, dft, target);
  });

  // Scoped and rounded in place so that the LU factors and a rounded copy
  // are not held next to the other thread's matrices: the fit's peak is the
  // export's peak resident memory on GPT-2 XL.
  Matrix coef;
  {
    Eigen::PartialPivLU<Matrix> lu(tables);
    coef = lu.solve(target);
  }
  out.cos_coef.assign(static_cast<size_t>(t * h), 0.0f);
  out.sin_coef.assign(static_cast<size_t>(t * h), 0.0f);
  for (int64_t k = 0; k < b.K; ++k)
    for (int64_t j = 0; j < h; ++j) out.cos_coef[static_cast<size_t>(k * h + j)] = static_cast<float>(coef(k, j));
  for (int64_t k = 1; k <= b.S; ++k)
    for (int64_t j = 0; j < h; ++j)
      out.sin_coef[static_cast<size_t>(k * h + j)] = static_cast<float>(coef(b.K + k - 1, j));
  coef = coef.cast<float>().cast<double>();  // the float32 coefficients the graph holds
  out.max_abs_error = max_abs_error(tables, coef, target);

  out.dft_max_abs_error = dft_error.get();
  return out;
}

Value learned_positions(GraphBuilder& g, const Checkpoint& ckpt, const std::string& table, int64_t first_row,
                        const PeTables& pe, int64_t n, int64_t t, int64_t h) {
  auto s = g.scope("positions");
  std::vector<float> wpe(static_cast<size_t>(n * h));
  ckpt.read_rows(table, first_row, first_row + n, wpe);
  const FourierPositions fit = fit_learned_positions(wpe, n, h);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3e", fit.max_abs_error);
  g.annotate("llm2hef.positions.max_abs_error", buf);
  std::snprintf(buf, sizeof buf, "%.3e", fit.dft_max_abs_error);
  g.annotate("llm2hef.positions.dft_max_abs_error", buf);
  const int64_t half = t / 2;
  auto part = [&](const Value& tiled, const std::vector<float>& coef, int64_t begin, const std::string& name) {
    Value cols = g.slice(tiled, 2, begin, begin + half, name + "/Slice");
    std::span<const float> rows(coef.data() + begin * h, static_cast<size_t>(half * h));
    return g.matmul(cols, g.constant(name + "_coef", {half, h}, rows), name + "/MatMul");
  };
  // k_cos before q_cos: the order exports have always had.
  const Value k_cos = part(pe.k_cos, fit.cos_coef, half, "k_cos");
  const Value q_cos = part(pe.q_cos, fit.cos_coef, 0, "q_cos");
  Value sum = g.add(q_cos, k_cos, "cos/Add");
  const Value q_sin = part(pe.q_sin, fit.sin_coef, 0, "q_sin");
  sum = g.add(sum, q_sin, "sin_lo/Add");
  const Value k_sin = part(pe.k_sin, fit.sin_coef, half, "k_sin");
  return g.add(sum, k_sin, "sin_hi/Add");
}

}  // namespace llm2hef::sdk
