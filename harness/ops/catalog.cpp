#include "harness/ops/catalog.hpp"

#include <fmt/format.h>
#include <mpfr.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <type_traits>

#include "harness/metrics/metrics.hpp"
#include "harness/ops/convolution.hpp"
#include "reference/exact/accumulator.hpp"
#include "reference/exact/dot.hpp"
#include "reference/mp/asymptotic.hpp"
#include "reference/mp/attention_backward.hpp"
#include "reference/mp/multiprecision.hpp"
#include "reference/mp/ops.hpp"

namespace ampbench::ops {
namespace {

using backends::cpu::Arithmetic;
using backends::cpu::Summation;
using reference::Real;

constexpr double kLayerNormEps = 1e-5;  // torch.nn.LayerNorm's default
constexpr double kRmsNormEps = 1e-6;
constexpr double kBatchNormEps = 1e-5;  // torch.nn.BatchNorm's default

constexpr OpInfo kCatalog[] = {
    {Op::gemm, "gemm", "matmul", "MxNxK", "256x256x256",
     "A B (+ C), A M x K, B K x N, C M x N (row-major)", "recursive summation (gamma)"},
    {Op::bmm, "bmm", "matmul", "BxMxNxK", "8x128x128x128",
     "a batch of B products A_b B_b, A_b M x K, B_b K x N", "recursive summation (gamma)"},
    {Op::dot, "dot", "matmul", "N", "4096", "a . b", "recursive summation (gamma)"},
    {Op::sum, "sum", "reduction", "N", "65536", "sum of x", "recursive summation (gamma)"},
    {Op::mean, "mean", "reduction", "N", "65536", "sum of x / N", "recursive summation (gamma)"},
    {Op::l2_norm, "l2_norm", "reduction", "N", "65536", "sqrt(sum of x^2)", "none"},
    {Op::softmax, "softmax", "softmax", "RxC", "64x1024", "exp(x - max) / sum, per row", "none"},
    {Op::log_softmax, "log_softmax", "softmax", "RxC", "64x1024", "(x - max) - log sum, per row",
     "none"},
    {Op::logsumexp, "logsumexp", "softmax", "RxC", "64x1024", "max + log sum exp(x - max), per row",
     "none"},
    {Op::layer_norm, "layer_norm", "normalization", "RxC", "64x1024",
     "(x - mean) / sqrt(var + 1e-5) * gamma + beta, per row", "none"},
    {Op::rms_norm, "rms_norm", "normalization", "RxC", "64x1024",
     "x / sqrt(mean(x^2) + 1e-6) * gamma, per row", "none"},
    {Op::relu, "relu", "activation", "RxC", "64x1024", "max(x + bias, 0)", "none"},
    {Op::gelu, "gelu", "activation", "RxC", "64x1024", "v/2 (1 + erf(v / sqrt 2)), v = x + bias",
     "none"},
    {Op::gelu_tanh, "gelu_tanh", "activation", "RxC", "64x1024",
     "v/2 (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), v = x + bias", "none"},
    {Op::silu, "silu", "activation", "RxC", "64x1024", "v / (1 + exp(-v)), v = x + bias", "none"},
    {Op::cross_entropy, "cross_entropy", "loss", "RxC", "64x1000",
     "mean over R rows of -log softmax(logits)[target], C classes", "none"},
    {Op::add, "add", "elementwise", "RxC", "64x1024", "x + y", "one rounding (u)"},
    {Op::mul, "mul", "elementwise", "RxC", "64x1024", "x * y", "one rounding (u)"},
    {Op::batch_norm, "batch_norm", "normalization", "NxC", "256x256",
     "training mode: (x - batch mean) / sqrt(batch var + 1e-5) * gamma + beta, per channel",
     "none"},
    {Op::attention, "attention", "attention", "LxSxD", "128x128x64",
     "softmax(Q K^T / sqrt D) V, one head: Q L x D, K and V S x D", "none"},
    {Op::gemm_backward_a, "gemm_backward_a", "matmul", "MxNxK", "256x256x256",
     "dA = dY B^T for the forward A B (dY M x N, B K x N)", "recursive summation (gamma)", "gemm"},
    {Op::gemm_backward_b, "gemm_backward_b", "matmul", "MxNxK", "256x256x256",
     "dB = A^T dY for the forward A B (A M x K, dY M x N)", "recursive summation (gamma)", "gemm"},
    {Op::softmax_backward, "softmax_backward", "softmax", "RxC", "64x1024",
     "dx = y (dy - sum dy y), y = softmax(x), per row", "none", "softmax"},
    {Op::log_softmax_backward, "log_softmax_backward", "softmax", "RxC", "64x1024",
     "dx = dy - softmax(x) sum dy, per row", "none", "log_softmax"},
    {Op::cross_entropy_backward, "cross_entropy_backward", "loss", "RxC", "64x1000",
     "d mean loss / d logits = (softmax(x) - onehot(target)) / R", "none", "cross_entropy"},
    {Op::relu_backward, "relu_backward", "activation", "RxC", "64x1024",
     "dx = x <= 0 ? 0 : dy (threshold_backward)", "none", "relu"},
    {Op::gelu_backward, "gelu_backward", "activation", "RxC", "64x1024",
     "dx = dy * (Phi(x) + x phi(x))", "none", "gelu"},
    {Op::layer_norm_backward_gamma, "layer_norm_backward_gamma", "normalization", "RxC", "64x1024",
     "dgamma = sum over the rows of dy * xhat, xhat = (x - mean) rstd per row", "none",
     "layer_norm"},
    {Op::layer_norm_backward_beta, "layer_norm_backward_beta", "normalization", "RxC", "64x1024",
     "dbeta = sum over the rows of dy", "recursive summation (gamma)", "layer_norm"},
    {Op::layer_norm_backward, "layer_norm_backward", "normalization", "RxC", "64x1024",
     "dx = rstd (g - mean g - xhat mean(g xhat)), g = dy gamma, per row", "none", "layer_norm"},
    {Op::silu_backward, "silu_backward", "activation", "RxC", "64x1024",
     "dx = dy * s (1 + x (1 - s)), s = 1 / (1 + exp(-x))", "none", "silu"},
    {Op::conv2d, "conv2d", "convolution", "NxCxHxW:KxRxS", "4x32x16x16:32x3x3,pad=1",
     "y = x * w (cross-correlation, NCHW), x N x C x H x W, w K x C/groups x R x S; options "
     ",stride= ,pad= ,dilation= (A or HxW) ,groups=",
     "recursive summation (gamma)"},
    {Op::conv2d_backward_data, "conv2d_backward_data", "convolution", "NxCxHxW:KxRxS",
     "4x32x16x16:32x3x3,pad=1", "dx from dy (N x K x OH x OW) and w, for the forward conv2d",
     "recursive summation (gamma)", "conv2d"},
    {Op::conv2d_backward_filter, "conv2d_backward_filter", "convolution", "NxCxHxW:KxRxS",
     "4x32x16x16:32x3x3,pad=1", "dw from x and dy (N x K x OH x OW), for the forward conv2d",
     "recursive summation (gamma)", "conv2d"},
    {Op::gelu_tanh_backward, "gelu_tanh_backward", "activation", "RxC", "64x1024",
     "dx = dy * ((1 + t)/2 + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 0.044715 x^2)), t = tanh(...)", "none",
     "gelu_tanh"},
    {Op::fma, "fma", "elementwise", "RxC", "64x1024", "x * y + z, rounded once to compute",
     "one rounding per format (u)"},
    {Op::cast, "cast", "elementwise", "RxC", "64x1024",
     "x (fp32) rounded to the format the policy's gemm reads, as autocast, TF32 or .half() convert",
     "one rounding (u)"},
    {Op::attention_backward_q, "attention_backward_q", "attention", "LxSxD", "64x64x32",
     "dQ = dS K / sqrt D, dS = P * (dO V^T - rowsum(dO * O)), P = softmax(Q K^T / sqrt D), for "
     "the forward attention (dO L x D)",
     "none", "attention"},
    {Op::attention_backward_k, "attention_backward_k", "attention", "LxSxD", "64x64x32",
     "dK = dS^T Q / sqrt D, dS = P * (dO V^T - rowsum(dO * O)), for the forward attention", "none",
     "attention"},
    {Op::attention_backward_v, "attention_backward_v", "attention", "LxSxD", "64x64x32",
     "dV = P^T dO, P = softmax(Q K^T / sqrt D), for the forward attention", "none", "attention"},
    {Op::linear, "linear", "matmul", "MxNxK", "256x256x256",
     "x W + bias (addmm; nn.Linear's x W^T with W stored transposed), x M x K, W K x N, bias N in "
     "the output's type",
     "recursive summation (gamma)", "linear"},
    {Op::linear_backward_bias, "linear_backward_bias", "matmul", "RxC", "256x256",
     "dbias = sum over the rows of dy (dy R x C in the output's type), for the forward linear",
     "recursive summation (gamma)", "linear"},
    {Op::mean_pool, "mean_pool", "reduction", "RxC", "64x1024",
     "the mean of each row (global average pooling of N*C rows of H*W values)",
     "recursive summation (gamma)", "mean"},
    {Op::mean_pool_backward, "mean_pool_backward", "reduction", "RxC", "64x1024",
     "dx = dy[row] / C over each row (dy R), for the forward mean_pool", "one rounding (u)",
     "mean"},
    {Op::batch_norm_backward, "batch_norm_backward", "normalization", "NxC", "256x256",
     "dx = gamma rstd (dy - mean dy - xhat mean(dy xhat)), per channel, for the training-mode "
     "batch_norm",
     "none", "batch_norm"},
    {Op::batch_norm_backward_gamma, "batch_norm_backward_gamma", "normalization", "NxC", "256x256",
     "dgamma = sum over the batch of dy * xhat, xhat = (x - batch mean) rstd per channel", "none",
     "batch_norm"},
    {Op::batch_norm_backward_beta, "batch_norm_backward_beta", "normalization", "NxC", "256x256",
     "dbeta = sum over the batch of dy, per channel", "recursive summation (gamma)", "batch_norm"},
};

std::size_t checked_product(const std::vector<std::size_t>& sizes, std::string_view what) {
  std::size_t n = 1;
  for (const auto s : sizes) {
    if (s != 0 && n > kMaxElements / s) {
      throw OpError(fmt::format("{}: more than {} elements (2^27): too large for the audit", what,
                                kMaxElements));
    }
    n *= s;
  }
  if (n > kMaxElements) {
    throw OpError(fmt::format("{}: {} elements, more than the audit's limit of {} (2^27)", what, n,
                              kMaxElements));
  }
  return n;
}

const std::vector<double>& values(const Inputs& in, std::size_t i) {
  return in.values.at(i);
}

const OpInfo& gemm_info() {
  return *find_op("gemm");
}

bool is_attention_backward(const OpInfo& op) {
  return op.op == Op::attention_backward_q || op.op == Op::attention_backward_k ||
         op.op == Op::attention_backward_v;
}

// The activation of an activation op or of its backward, in the CPU backend's and in the
// reference's terms.
backends::cpu::Activation cpu_activation(const OpInfo& op) {
  using A = backends::cpu::Activation;
  switch (op.op) {
    case Op::relu:
    case Op::relu_backward: return A::relu;
    case Op::gelu:
    case Op::gelu_backward: return A::gelu;
    case Op::gelu_tanh:
    case Op::gelu_tanh_backward: return A::gelu_tanh;
    case Op::silu:
    case Op::silu_backward: return A::silu;
    default: throw OpError(fmt::format("{} is not an activation", op.name));
  }
}
reference::ops::Activation reference_activation(const OpInfo& op) {
  using A = reference::ops::Activation;
  switch (cpu_activation(op)) {
    case backends::cpu::Activation::relu: return A::relu;
    case backends::cpu::Activation::gelu: return A::gelu;
    case backends::cpu::Activation::gelu_tanh: return A::gelu_tanh;
    case backends::cpu::Activation::silu: return A::silu;
  }
  return A::silu;
}

// The ops that are one gemm on rearranged operands (as_forward_gemm).
bool is_lowered_to_gemm(const OpInfo& op) {
  return op.op == Op::gemm_backward_a || op.op == Op::gemm_backward_b || op.op == Op::linear ||
         op.op == Op::linear_backward_bias;
}

bool is_convolution(const OpInfo& op) {
  return op.op == Op::conv2d || op.op == Op::conv2d_backward_data ||
         op.op == Op::conv2d_backward_filter;
}

convolution::Pass pass_of(const OpInfo& op) {
  return op.op == Op::conv2d                 ? convolution::Pass::forward
         : op.op == Op::conv2d_backward_data ? convolution::Pass::backward_data
                                             : convolution::Pass::backward_filter;
}

// The parts of a bmm (its batches) or of a convolution (its groups, lowered).
bool is_gemm_set(const OpInfo& op) {
  return op.op == Op::bmm || is_convolution(op);
}
std::vector<GemmPart> parts_of(const OpInfo& op, const Shape& shape, const Inputs& in) {
  if (is_convolution(op)) {
    return convolution::lower(pass_of(op), convolution::geometry(shape), in);
  }
  const auto& s = shape.sizes;  // B, M, N, K
  const std::size_t outputs = s[1] * s[2];
  std::vector<GemmPart> parts(s[0]);
  for (std::size_t b = 0; b < s[0]; ++b) {
    GemmPart& part = parts[b];
    part.shape = Shape{{s[1], s[2], s[3]}};
    for (const std::size_t size : {s[1] * s[3], s[3] * s[2]}) {
      const auto first =
          in.values.at(part.inputs.values.size()).begin() + static_cast<std::ptrdiff_t>(b * size);
      part.inputs.values.emplace_back(first, first + static_cast<std::ptrdiff_t>(size));
      part.inputs.indices.emplace_back();
    }
    part.place.resize(outputs);
    for (std::size_t l = 0; l < outputs; ++l) part.place[l] = b * outputs + l;
  }
  return parts;
}

// Positions of the op's output held by one part: the part, the positions in its product
// (increasing), and their indices in the list asked for.
struct PartPositions {
  std::size_t part = 0;
  std::vector<std::size_t> local;
  std::vector<std::size_t> indices;
};
std::vector<PartPositions> by_part(const std::vector<GemmPart>& parts,
                                   std::span<const std::size_t> positions) {
  std::size_t outputs = 0;
  for (const auto& p : parts) outputs += p.place.size();
  std::vector<std::pair<std::size_t, std::size_t>> where(outputs);  // (part, local)
  for (std::size_t g = 0; g < parts.size(); ++g) {
    for (std::size_t l = 0; l < parts[g].place.size(); ++l) where[parts[g].place[l]] = {g, l};
  }
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> pairs(parts.size());
  for (std::size_t e = 0; e < positions.size(); ++e) {
    const auto [g, l] = where.at(positions[e]);
    pairs[g].push_back({l, e});
  }
  std::vector<PartPositions> held;
  for (std::size_t g = 0; g < parts.size(); ++g) {
    if (pairs[g].empty()) continue;
    std::sort(pairs[g].begin(), pairs[g].end());
    PartPositions at{g, {}, {}};
    for (const auto& [l, e] : pairs[g]) {
      at.local.push_back(l);
      at.indices.push_back(e);
    }
    held.push_back(std::move(at));
  }
  return held;
}

// The whole op, part by part: run(part) gives each part's CpuRun, placed in the op's output.
template <class Run>
CpuRun run_parts(const OpInfo& op, const Shape& shape, const Inputs& in, Run run) {
  CpuRun all;
  all.output.resize(element_count(output_shape(op, shape)));
  for (const auto& part : parts_of(op, shape, in)) {
    const CpuRun r = run(part);
    for (std::size_t l = 0; l < r.output.size(); ++l) all.output[part.place[l]] = r.output[l];
    all.events += r.events;
  }
  return all;
}

std::vector<double> transposed(const std::vector<double>& x, std::size_t rows, std::size_t cols) {
  std::vector<double> t(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = x[r * cols + c];
  }
  return t;
}

// An op as the gemm it is: dA = dY B^T is an M x K product summing over N, dB = A^T dY a K x N
// product summing over M; linear is x W with its bias as every row of C (added last, in the
// accumulation format, as cpu::gemm adds a bias); linear's bias gradient is the 1 x C product of
// a row of ones with dy, as the trainer forms it. Outputs are laid out as the op's.
GemmPart as_forward_gemm(const OpInfo& op, const Shape& shape, const Inputs& in) {
  const auto& s = shape.sizes;  // M, N, K of the forward product (R, C for the bias gradient)
  GemmPart g;
  if (op.op == Op::linear) {
    g.shape = shape;
    std::vector<double> c(s[0] * s[1]);
    for (std::size_t i = 0; i < s[0]; ++i) {
      std::copy(in.values.at(2).begin(), in.values.at(2).end(),
                c.begin() + static_cast<std::ptrdiff_t>(i * s[1]));
    }
    g.inputs.values = {in.values.at(0), in.values.at(1), std::move(c)};
    g.inputs.indices = {{}, {}, {}};
    return g;
  }
  if (op.op == Op::linear_backward_bias) {
    g.shape = Shape{{1, s[1], s[0]}};
    g.inputs.values = {std::vector<double>(s[0], 1.0), in.values.at(0)};
  } else if (op.op == Op::gemm_backward_a) {
    g.shape = Shape{{s[0], s[2], s[1]}};
    g.inputs.values = {in.values.at(0), transposed(in.values.at(1), s[2], s[1])};
  } else {
    g.shape = Shape{{s[2], s[1], s[0]}};
    g.inputs.values = {transposed(in.values.at(0), s[0], s[2]), in.values.at(1)};
  }
  g.inputs.indices = {{}, {}};
  return g;
}

// One gradient of a pass that computes several (attention's, batch norm's backward): its values and
// output roundings, and every intermediate rounding of the pass.
CpuRun one_gradient(std::vector<double>& values, const numeric::EventCounts& output,
                    const backends::cpu::Events& all) {
  CpuRun run;
  run.output = std::move(values);
  run.events.intermediate = all.intermediate;
  run.events.output = output;
  return run;
}

// An optional operand: empty when absent (or not given at all).
std::span<const double> optional_values(const Inputs& in, std::size_t i) {
  return i < in.values.size() ? std::span<const double>(in.values[i]) : std::span<const double>();
}

// Ziv's strategy per output element for a row-wise op: the row is evaluated once per working
// precision and kept at every precision evaluated (in a row where some outputs need a second
// round, the others do not evaluate it again), each element rounded when its error interval
// allows. Rows of Real restore MPFR's inexact flag for the kept evaluations, which the Ziv loop
// reads to tell exact results; rows of Asymptotic (the softmax family: exponentials beyond MPFR's
// range stay as terms of known sign, reference/mp/asymptotic.hpp) carry their own exactness.
template <typename Value>
class RowReferenceOf {
 public:
  using Evaluate = std::function<std::vector<Value>()>;
  explicit RowReferenceOf(Evaluate evaluate) : evaluate_(std::move(evaluate)) {}

  reference::ReferenceValue element(std::size_t j, const numeric::Format& f, numeric::Rounding mode,
                                    std::uint64_t error_bound, std::uint32_t random) {
    reference::ZivPolicy policy;
    policy.error_bound = error_bound;
    const auto value = [&] { return row(reference::working_precision_bits()).at(j); };
    if constexpr (kAsymptotic) {
      return reference::correctly_rounded_asymptotic(f, mode, value, policy, random);
    } else {
      return reference::correctly_rounded(f, mode, value, policy, random);
    }
  }

 private:
  static constexpr bool kAsymptotic = std::is_same_v<Value, reference::Asymptotic>;
  struct Row {
    std::vector<Value> values;
    bool inexact = true;  // Real: MPFR's inexact flag after the evaluation
  };

  const std::vector<Value>& row(int bits) {
    auto found = rows_.find(bits);
    if (found == rows_.end()) {
      Row r;
      if constexpr (!kAsymptotic) mpfr_clear_inexflag();
      r.values = evaluate_();
      if constexpr (!kAsymptotic) r.inexact = mpfr_inexflag_p() != 0;
      found = rows_.emplace(bits, std::move(r)).first;
    } else if constexpr (!kAsymptotic) {
      if (found->second.inexact) mpfr_set_inexflag();
    }
    return found->second.values;
  }

  Evaluate evaluate_;
  std::map<int, Row> rows_;  // by working precision
};
using RowReference = RowReferenceOf<Real>;
using AsymptoticRowReference = RowReferenceOf<reference::Asymptotic>;

std::vector<reference::Asymptotic> to_asymptotic(std::span<const double> x) {
  return std::vector<reference::Asymptotic>(x.begin(), x.end());
}

std::vector<Real> to_reals(std::span<const double> x) {
  std::vector<Real> r;
  r.reserve(x.size());
  for (const double v : x) r.push_back(reference::to_real(v));
  return r;
}

// The value of an exact sum as a Real holding every bit.
Real to_real(const reference::ExactValue& v) {
  Real r;
  if (v.kind() != reference::ExactKind::finite) {
    return Real(v.kind() == reference::ExactKind::nan ? std::numeric_limits<double>::quiet_NaN()
                : v.kind() == reference::ExactKind::positive_infinity
                    ? std::numeric_limits<double>::infinity()
                    : -std::numeric_limits<double>::infinity());
  }
  if (v.is_zero()) return Real(v.negative() ? -0.0 : 0.0);
  const auto& limbs = v.magnitude();
  mpz_t n;
  mpz_init(n);
  mpz_import(n, limbs.size(), -1, sizeof limbs[0], 0, 0, limbs.data());
  const auto bits = static_cast<mpfr_prec_t>(mpz_sizeinbase(n, 2));
  mpfr_set_prec(r.backend().data(), std::max<mpfr_prec_t>(bits, MPFR_PREC_MIN));
  mpfr_set_z_2exp(r.backend().data(), n, v.exponent(), MPFR_RNDN);  // exact: enough bits
  mpz_clear(n);
  if (v.negative()) r = -r;
  return r;
}

std::uint32_t draw(numeric::Rounding mode, std::uint64_t seed, std::size_t position) {
  return numeric::is_stochastic(mode) ? numeric::stochastic_draw(seed, position) : 0u;
}

// Extra working bits for a result whose formula cancels by `condition` (|terms| / |result|,
// estimated in binary64; a zero result counts as 2^1000), capped at 2048: the reference is then
// evaluated that much wider, and its bound stays a few units of 2^-P.
int extra_bits(double condition) {
  if (!(condition < 0x1p1000)) return 2048;
  return std::min(2048, std::max(0, static_cast<int>(std::ceil(std::log2(condition)))) + 8);
}

double ratio(double terms, double result) {
  return result == 0 ? (terms == 0 ? 1.0 : 0x1p1000) : terms / std::fabs(result);
}

// References of the backward row ops: each row in multiprecision (reference/mp/ops.hpp), wider by
// the cancellation its formula suffers, estimated per row in binary64:
//   softmax: dy_j - sum dy y; log_softmax: dy_j - y_j sum dy; cross-entropy: y_t - 1;
//   gelu: Phi(x) + x phi(x); gelu_tanh: (1 + t)/2 + x/2 (1 - t^2) u'(x); silu: 1 + x (1 - s).
Reference row_backward_reference(const OpInfo& op, const Shape& shape, const Inputs& in,
                                 const numeric::Format& output, numeric::Rounding mode,
                                 Reference result, std::uint64_t seed) {
  const std::size_t rows = shape.sizes[0];
  const std::size_t cols = shape.sizes[1];
  const std::span<const double> x = in.values.at(0);
  const bool has_dy = op.op != Op::cross_entropy_backward;
  const std::size_t n = result.positions.size();
  std::size_t e = 0;
  while (e < n) {
    const std::size_t row = result.positions[e] / cols;
    const auto xr = x.subspan(row * cols, cols);
    const auto dyr = has_dy ? std::span<const double>(in.values.at(1)).subspan(row * cols, cols)
                            : std::span<const double>();
    // The softmax of the row and the conditioning, in binary64.
    const double top = *std::max_element(xr.begin(), xr.end());
    std::vector<double> y(cols);
    double total = 0, spread = 0, largest = 0;
    for (std::size_t c = 0; c < cols; ++c) {
      total += (y[c] = std::exp(xr[c] - top));
      spread = std::max(spread, top - xr[c]);
      largest = std::max(largest, std::fabs(xr[c]));
    }
    for (auto& v : y) v /= total;
    double condition = 1, inner = 0, dy_sum = 0;
    for (std::size_t c = 0; c < cols && has_dy; ++c) {
      inner += dyr[c] * y[c];
      dy_sum += dyr[c];
    }
    for (std::size_t c = 0; c < cols; ++c) {
      const double v = xr[c];
      switch (op.op) {
        case Op::softmax_backward:
          condition =
              std::max(condition, ratio(std::fabs(dyr[c]) + std::fabs(inner), dyr[c] - inner));
          break;
        case Op::log_softmax_backward:
          condition = std::max(condition, ratio(std::fabs(dyr[c]) + std::fabs(y[c] * dy_sum),
                                                dyr[c] - y[c] * dy_sum));
          break;
        case Op::cross_entropy_backward:
          condition = std::max(condition, ratio(1.0, y[c] - 1.0));
          break;
        case Op::gelu_backward: {
          const double cdf = 0.5 * std::erfc(-v / std::sqrt(2.0));
          const double pdf = std::exp(-0.5 * v * v) / std::sqrt(2.0 * std::numbers::pi);
          condition = std::max(condition, ratio(cdf + std::fabs(v) * pdf, cdf + v * pdf));
          break;
        }
        case Op::gelu_tanh_backward: {
          const double t = std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v));
          const double right =
              0.5 * v * (1 - t * t) * std::sqrt(2 / std::numbers::pi) * (1 + 3 * 0.044715 * v * v);
          condition =
              std::max(condition, ratio(0.5 * (1 + t) + std::fabs(right), 0.5 * (1 + t) + right));
          break;
        }
        case Op::silu_backward: {
          const double sig = 1.0 / (1.0 + std::exp(-v));
          condition =
              std::max(condition, ratio(1.0 + std::fabs(v) * (1.0 - sig), 1.0 + v * (1.0 - sig)));
          break;
        }
        default: break;
      }
    }
    if (op.op == Op::layer_norm_backward) {
      // g - mean(g) - xhat mean(g xhat): the three terms against the result.
      const double n_cols = static_cast<double>(cols);
      double mu = 0, variance = 0;
      for (const double v : xr) mu += v / n_cols;
      for (const double v : xr) variance += (v - mu) * (v - mu) / n_cols;
      const double rstd = 1.0 / std::sqrt(variance + kLayerNormEps);
      std::vector<double> g(cols), xhat(cols);
      double g_mean = 0, gx_mean = 0;
      for (std::size_t c = 0; c < cols; ++c) {
        xhat[c] = (xr[c] - mu) * rstd;
        g[c] = dyr[c] * in.values.at(2)[c];
        g_mean += g[c] / n_cols;
        gx_mean += g[c] * xhat[c] / n_cols;
      }
      for (std::size_t c = 0; c < cols; ++c) {
        condition = std::max(
            condition, ratio(std::fabs(g[c]) + std::fabs(g_mean) + std::fabs(xhat[c] * gx_mean),
                             g[c] - g_mean - xhat[c] * gx_mean));
      }
    }
    const int extra = extra_bits(condition);
    const std::int64_t target = op.op == Op::cross_entropy_backward ? in.indices.at(1).at(row) : 0;
    // The softmax family evaluates in Asymptotic (exponentials beyond MPFR's range), the others in
    // Real.
    AsymptoticRowReference softmax_family([&, xr, dyr, extra, target] {
      const reference::WorkingPrecision wider(reference::working_precision_bits() + extra);
      const auto ax = to_asymptotic(xr);
      const auto ady = to_asymptotic(dyr);
      switch (op.op) {
        case Op::softmax_backward:
          return reference::ops::softmax_backward<reference::Asymptotic>(ax, ady, 1, cols);
        case Op::log_softmax_backward:
          return reference::ops::log_softmax_backward<reference::Asymptotic>(ax, ady, 1, cols);
        default: {  // cross_entropy_backward
          const std::vector<std::int64_t> t{target};
          auto g = reference::ops::cross_entropy_backward<reference::Asymptotic>(ax, 1, cols, t);
          for (auto& v : g) v /= static_cast<double>(rows);  // the mean is over all rows
          return g;
        }
      }
    });
    RowReference others([&, xr, dyr, extra] {
      const reference::WorkingPrecision wider(reference::working_precision_bits() + extra);
      const auto rx = to_reals(xr);
      const auto rdy = to_reals(dyr);
      if (op.op == Op::layer_norm_backward) {
        return reference::ops::layer_norm_backward<Real>(
                   rx, rdy, 1, cols, reference::to_real(kLayerNormEps), to_reals(in.values.at(2)))
            .dx;
      }
      return reference::ops::elementwise_backward<Real>(reference_activation(op), rx, rdy);
    });
    const bool in_family = op.op == Op::softmax_backward || op.op == Op::log_softmax_backward ||
                           op.op == Op::cross_entropy_backward;
    const std::uint64_t bound = static_cast<std::uint64_t>(
        std::min(64.0 + 8.0 * static_cast<double>(cols) + 8.0 * spread + 8.0 * largest * largest,
                 static_cast<double>(1u << 31)));
    for (; e < n && result.positions[e] / cols == row; ++e) {
      const std::size_t p = result.positions[e];
      const auto v =
          in_family ? softmax_family.element(p % cols, output, mode, bound, draw(mode, seed, p))
                    : others.element(p % cols, output, mode, bound, draw(mode, seed, p));
      result.rounded[e] = v.rounded.value;
      result.nearest[e] = v.value;
    }
  }
  return result;
}

// References of batch norm's dx and dgamma (reference/mp/ops.hpp), channel by channel: each output
// depends on its channel's batch statistics and sums. Conditioning, estimated in binary64 from
// the same formulas: dx_i = gamma rstd (dy_i - mean dy - xhat_i mean(dy xhat)) against
// |dy_i| + |mean dy| + |xhat_i mean(dy xhat)|, dgamma = sum dy xhat against sum |dy xhat|; the
// channel is evaluated wider by that ratio (extra_bits). The Ziv bound is that of the sums and
// statistics, about N units of 2^-P, as for the forward batch_norm.
Reference batch_norm_backward_reference(const OpInfo& op, const Shape& shape, const Inputs& in,
                                        const numeric::Format& output, numeric::Rounding mode,
                                        Reference result, std::uint64_t seed) {
  const std::size_t rows = shape.sizes[0];
  const std::size_t cols = shape.sizes[1];
  const bool dx = op.op == Op::batch_norm_backward;
  std::map<std::size_t, std::vector<std::size_t>> by_column;
  for (std::size_t e = 0; e < result.positions.size(); ++e) {
    by_column[dx ? result.positions[e] % cols : result.positions[e]].push_back(e);
  }
  std::vector<double> x(rows), dy(rows), xhat(rows);
  for (const auto& [column, elements] : by_column) {
    for (std::size_t r = 0; r < rows; ++r) {
      x[r] = values(in, 0)[r * cols + column];
      dy[r] = values(in, 1)[r * cols + column];
    }
    const double n = static_cast<double>(rows);
    double mu = 0, variance = 0;
    for (const double v : x) mu += v / n;
    for (const double v : x) variance += (v - mu) * (v - mu) / n;
    const double rstd = 1.0 / std::sqrt(variance + kBatchNormEps);
    double dy_mean = 0, dy_xhat_mean = 0, magnitude = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      xhat[r] = (x[r] - mu) * rstd;
      dy_mean += dy[r] / n;
      dy_xhat_mean += dy[r] * xhat[r] / n;
      magnitude += std::fabs(dy[r] * xhat[r]);
    }
    double condition = 1;
    if (dx) {
      for (const std::size_t e : elements) {
        const std::size_t r = result.positions[e] / cols;
        condition = std::max(condition, ratio(std::fabs(dy[r]) + std::fabs(dy_mean) +
                                                  std::fabs(xhat[r] * dy_xhat_mean),
                                              dy[r] - dy_mean - xhat[r] * dy_xhat_mean));
      }
    } else {
      condition = ratio(magnitude, dy_xhat_mean * n);
    }
    const int extra = extra_bits(condition);
    const bool constant = std::all_of(x.begin(), x.end(), [&](double v) { return v == x.front(); });
    RowReference evaluate([&, column = column, extra, constant] {
      const reference::WorkingPrecision wider(reference::working_precision_bits() + extra);
      const std::vector<Real> gamma =
          dx ? std::vector<Real>{reference::to_real(values(in, 2)[column])} : std::vector<Real>{};
      auto g = reference::ops::batch_norm_backward<Real>(to_reals(x), to_reals(dy), rows, 1, 1,
                                                         reference::to_real(kBatchNormEps), gamma);
      // A constant channel: every xhat is exactly 0, and so is dgamma, whatever the rounding of
      // 1 / sqrt(eps) that the zeros multiply.
      if (!dx && constant) mpfr_clear_inexflag();
      return dx ? std::move(g.dx) : std::move(g.dgamma);
    });
    for (const std::size_t e : elements) {
      const std::size_t p = result.positions[e];
      const auto v =
          evaluate.element(dx ? p / cols : 0, output, mode, 64 + 8 * rows, draw(mode, seed, p));
      result.rounded[e] = v.rounded.value;
      result.nearest[e] = v.value;
    }
  }
  return result;
}

// References of the attention gradients (reference/mp/attention_backward.hpp), each output rounded
// by Ziv's strategy. A row of dQ needs its query's rows of P and dS only and is evaluated row by
// row; every element of dK and dV sums over all queries, so those are evaluated whole.
//
// Conditioning, estimated in binary64 from the same formulas: a_i = max_j sum_t |dO_it V_jt|
// bounds |dP_ij| and |D_i|, so the error of dS_ij = P_ij (dP_ij - D_i) is a few units of 2^-P
// times P_ij a_i however much dP_ij - D_i cancels, and the outputs sum those terms. Each output is
// set against the sum of its terms' magnitudes:
//   dQ_it: (1/sqrt d) sum_j P_ij a_i |K_jt|,  dK_jt: (1/sqrt d) sum_i P_ij a_i |Q_it|,
//   dV_jt: sum_i P_ij |dO_it|,
// and the evaluation is wider by that ratio (extra_bits). A ratio beyond 2^40 is past what
// binary64 can measure (its own result is then mostly rounding error): those take the full 2048
// bits. The Ziv bound covers the roundings along the way: sums of L, S and d terms, and exp
// turning the absolute error of a score (up to d sum_t |q_t k_t| / sqrt d units) into a relative
// one.
Reference attention_backward_reference(const OpInfo& op, const Shape& shape, const Inputs& in,
                                       const numeric::Format& output, numeric::Rounding mode,
                                       Reference result, std::uint64_t seed) {
  const std::size_t queries = shape.sizes[0];
  const std::size_t keys = shape.sizes[1];
  const std::size_t d = shape.sizes[2];
  const std::span<const double> q = values(in, 0);
  const std::span<const double> k = values(in, 1);
  const std::span<const double> v = values(in, 2);
  const std::span<const double> d_out = values(in, 3);
  const double scale = 1 / std::sqrt(static_cast<double>(d));

  std::vector<double> scores(queries * keys), dp_bound(queries, 0.0);
  double score_scale = 0;
  for (std::size_t i = 0; i < queries; ++i) {
    for (std::size_t j = 0; j < keys; ++j) {
      double dot = 0, magnitude = 0, dp_magnitude = 0;
      for (std::size_t t = 0; t < d; ++t) {
        dot += q[i * d + t] * k[j * d + t];
        magnitude += std::fabs(q[i * d + t] * k[j * d + t]);
        dp_magnitude += std::fabs(d_out[i * d + t] * v[j * d + t]);
      }
      scores[i * keys + j] = dot * scale;
      score_scale = std::max(score_scale, magnitude * scale);
      dp_bound[i] = std::max(dp_bound[i], dp_magnitude);
    }
  }
  const std::vector<double> p =
      reference::ops::softmax<double>(std::span<const double>(scores), queries, keys);
  const auto estimate =
      reference::ops::attention_backward<double>(q, k, v, d_out, queries, keys, d, d);
  const std::vector<double>& estimated = op.op == Op::attention_backward_q   ? estimate.dq
                                         : op.op == Op::attention_backward_k ? estimate.dk
                                                                             : estimate.dv;
  const auto extra_bits_at = [&](std::size_t position) {
    const std::size_t row = position / d;  // a query for dQ, a key for dK and dV
    const std::size_t t = position % d;
    double terms = 0;
    if (op.op == Op::attention_backward_q) {
      for (std::size_t j = 0; j < keys; ++j) {
        terms += p[row * keys + j] * dp_bound[row] * std::fabs(k[j * d + t]);
      }
      terms *= scale;
    } else {
      for (std::size_t i = 0; i < queries; ++i) {
        terms += p[i * keys + row] * (op.op == Op::attention_backward_k
                                          ? dp_bound[i] * std::fabs(q[i * d + t]) * scale
                                          : std::fabs(d_out[i * d + t]));
      }
    }
    const double condition = ratio(terms, estimated[position]);
    return condition > 0x1p40 ? 2048 : extra_bits(condition);
  };
  const std::uint64_t bound =
      static_cast<std::uint64_t>(std::min(64.0 + 8.0 * static_cast<double>(queries + keys + d) +
                                              8.0 * static_cast<double>(d) * score_scale,
                                          static_cast<double>(1u << 31)));
  const auto evaluate_at = [&](std::span<const double> q_rows, std::span<const double> d_out_rows,
                               std::size_t rows, int extra) {
    return AsymptoticRowReference([&, q_rows, d_out_rows, rows, extra] {
      const reference::WorkingPrecision wider(reference::working_precision_bits() + extra);
      auto g = reference::ops::attention_backward<reference::Asymptotic>(
          to_asymptotic(q_rows), to_asymptotic(k), to_asymptotic(v), to_asymptotic(d_out_rows),
          rows, keys, d, d);
      return op.op == Op::attention_backward_q   ? std::move(g.dq)
             : op.op == Op::attention_backward_k ? std::move(g.dk)
                                                 : std::move(g.dv);
    });
  };
  const std::size_t n = result.positions.size();
  const auto round_at = [&](AsymptoticRowReference& evaluate, std::size_t e, std::size_t element) {
    const std::size_t position = result.positions[e];
    const auto r = evaluate.element(element, output, mode, bound, draw(mode, seed, position));
    result.rounded[e] = r.rounded.value;
    result.nearest[e] = r.value;
  };
  if (op.op == Op::attention_backward_q) {
    std::size_t e = 0;
    while (e < n) {
      const std::size_t row = result.positions[e] / d;
      std::size_t end = e;
      int extra = 0;
      for (; end < n && result.positions[end] / d == row; ++end) {
        extra = std::max(extra, extra_bits_at(result.positions[end]));
      }
      AsymptoticRowReference evaluate =
          evaluate_at(q.subspan(row * d, d), d_out.subspan(row * d, d), 1, extra);
      for (; e < end; ++e) round_at(evaluate, e, result.positions[e] % d);
    }
    return result;
  }
  int extra = 0;
  for (const std::size_t position : result.positions) {
    extra = std::max(extra, extra_bits_at(position));
  }
  AsymptoticRowReference evaluate = evaluate_at(q, d_out, queries, extra);
  for (std::size_t e = 0; e < n; ++e) round_at(evaluate, e, result.positions[e]);
  return result;
}

}  // namespace

std::span<const OpInfo> catalog() {
  return kCatalog;
}

const OpInfo* find_op(std::string_view name) {
  for (const auto& op : kCatalog) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

std::string op_names() {
  std::string names;
  for (const auto& op : kCatalog) names += fmt::format("{}{}", names.empty() ? "" : ", ", op.name);
  return names;
}

Shape parse_shape(const OpInfo& op, std::string_view text) {
  if (is_convolution(op)) {
    Shape shape = convolution::parse(op.name, text);
    for (const auto& operand : operands(op, shape)) {
      checked_product(operand.shape,
                      fmt::format("{} shape '{}': operand {}", op.name, text, operand.name));
    }
    checked_product(output_shape(op, shape), fmt::format("{} shape '{}': output", op.name, text));
    checked_product({convolution::lowered_elements(pass_of(op), convolution::geometry(shape))},
                    fmt::format("{} shape '{}': the lowered (im2col) operand", op.name, text));
    return shape;
  }
  Shape shape;
  std::string_view rest = text;
  while (true) {
    const auto x = rest.find('x');
    const std::string_view part = rest.substr(0, x);
    std::size_t size = 0;
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), size);
    if (part.empty() || error != std::errc() || end != part.data() + part.size() || size == 0) {
      throw OpError(fmt::format("{} shape '{}': '{}' is not a positive size (expected {})", op.name,
                                text, part, op.shape_syntax));
    }
    shape.sizes.push_back(size);
    if (x == std::string_view::npos) break;
    rest = rest.substr(x + 1);
  }
  const std::size_t expected = (op.shape_syntax.size() + 1) / 2;  // "MxNxK" has 3 sizes
  if (shape.sizes.size() != expected) {
    throw OpError(fmt::format("{} shape '{}': expected {} ({} sizes), got {}", op.name, text,
                              op.shape_syntax, expected, shape.sizes.size()));
  }
  if (op.op == Op::batch_norm && shape.sizes[0] < 2) {
    // Training statistics of one value per channel: the variance is 0/0 for the unbiased estimate
    // and PyTorch refuses it ("Expected more than 1 value per channel when training").
    throw OpError(
        fmt::format("{} shape '{}': batch norm in training needs more than 1 value per "
                    "channel (N >= 2)",
                    op.name, text));
  }
  for (const auto& operand : operands(op, shape)) {
    checked_product(operand.shape,
                    fmt::format("{} shape '{}': operand {}", op.name, text, operand.name));
  }
  checked_product(output_shape(op, shape), fmt::format("{} shape '{}': output", op.name, text));
  return shape;
}

std::string to_string(const Shape& shape) {
  if (shape.sizes.size() == convolution::kShapeSizes) return convolution::to_string(shape);
  std::string s;
  for (const auto n : shape.sizes) s += fmt::format("{}{}", s.empty() ? "" : "x", n);
  return s;
}

std::size_t element_count(const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (const auto s : shape) n *= s;
  return n;
}

namespace {

Operand parameter(std::string name, std::vector<std::size_t> shape,
                  HeldIn held_in = HeldIn::input) {
  Operand o{std::move(name), std::move(shape)};
  o.role = Role::parameter;
  o.held_in = held_in;
  return o;
}

}  // namespace

std::vector<Operand> operands(const OpInfo& op, const Shape& shape) {
  const auto& s = shape.sizes;
  switch (op.op) {
    case Op::gemm:
      return {{"a", {s[0], s[2]}},
              {"b", {s[2], s[1]}},
              {"c", {s[0], s[1]}, false, 0, true, Role::data, HeldIn::accumulation}};
    case Op::bmm: return {{"a", {s[0], s[1], s[3]}}, {"b", {s[0], s[3], s[2]}}};
    case Op::dot: return {{"a", {s[0]}}, {"b", {s[0]}}};
    case Op::sum:
    case Op::mean:
    case Op::l2_norm: return {{"x", {s[0]}}};
    case Op::softmax:
    case Op::log_softmax:
    case Op::logsumexp: return {{"x", {s[0], s[1]}}};
    case Op::layer_norm:
    case Op::batch_norm:
      return {{"x", {s[0], s[1]}}, parameter("gamma", {s[1]}), parameter("beta", {s[1]})};
    case Op::rms_norm: return {{"x", {s[0], s[1]}}, parameter("gamma", {s[1]})};
    case Op::relu:
    case Op::gelu:
    case Op::gelu_tanh:
    case Op::silu: return {{"x", {s[0], s[1]}}, parameter("bias", {s[1]})};
    case Op::cross_entropy: return {{"logits", {s[0], s[1]}}, {"targets", {s[0]}, true, s[1]}};
    case Op::add:
    case Op::mul: return {{"x", {s[0], s[1]}}, {"y", {s[0], s[1]}}};
    case Op::attention: return {{"q", {s[0], s[2]}}, {"k", {s[1], s[2]}}, {"v", {s[1], s[2]}}};
    case Op::attention_backward_q:
    case Op::attention_backward_k:
    case Op::attention_backward_v:
      return {
          {"q", {s[0], s[2]}}, {"k", {s[1], s[2]}}, {"v", {s[1], s[2]}}, {"d_out", {s[0], s[2]}}};
    case Op::gemm_backward_a: return {{"dy", {s[0], s[1]}}, {"b", {s[2], s[1]}}};
    case Op::gemm_backward_b: return {{"a", {s[0], s[2]}}, {"dy", {s[0], s[1]}}};
    case Op::softmax_backward:
    case Op::log_softmax_backward:
    case Op::relu_backward:
    case Op::gelu_backward:
    case Op::gelu_tanh_backward:
    case Op::silu_backward: return {{"x", {s[0], s[1]}}, {"dy", {s[0], s[1]}}};
    case Op::layer_norm_backward:
    case Op::batch_norm_backward:
      return {{"x", {s[0], s[1]}}, {"dy", {s[0], s[1]}}, parameter("gamma", {s[1]})};
    case Op::layer_norm_backward_gamma:
    case Op::layer_norm_backward_beta:
    case Op::batch_norm_backward_gamma:
    case Op::batch_norm_backward_beta: return {{"x", {s[0], s[1]}}, {"dy", {s[0], s[1]}}};
    case Op::linear:
      return {{"x", {s[0], s[2]}}, {"w", {s[2], s[1]}}, parameter("bias", {s[1]}, HeldIn::output)};
    case Op::linear_backward_bias: {
      Operand dy{"dy", {s[0], s[1]}};
      dy.held_in = HeldIn::output;
      return {dy};
    }
    case Op::mean_pool: return {{"x", {s[0], s[1]}}};
    case Op::mean_pool_backward: return {{"x", {s[0], s[1]}}, {"dy", {s[0]}}};
    case Op::cross_entropy_backward:
      return {{"logits", {s[0], s[1]}}, {"targets", {s[0]}, true, s[1]}};
    case Op::conv2d:
    case Op::conv2d_backward_data:
    case Op::conv2d_backward_filter:
      return convolution::operands(pass_of(op), convolution::geometry(shape));
    case Op::fma: return {{"x", {s[0], s[1]}}, {"y", {s[0], s[1]}}, {"z", {s[0], s[1]}}};
    case Op::cast: return {{"x", {s[0], s[1]}}};
  }
  throw OpError("unknown op");
}

std::vector<std::size_t> output_shape(const OpInfo& op, const Shape& shape) {
  const auto& s = shape.sizes;
  switch (op.op) {
    case Op::gemm: return {s[0], s[1]};
    case Op::bmm: return {s[0], s[1], s[2]};
    case Op::dot:
    case Op::sum:
    case Op::mean:
    case Op::l2_norm:
    case Op::cross_entropy: return {1};
    case Op::logsumexp: return {s[0]};
    case Op::attention:
    case Op::attention_backward_q: return {s[0], s[2]};
    case Op::attention_backward_k:
    case Op::attention_backward_v: return {s[1], s[2]};
    case Op::gemm_backward_a: return {s[0], s[2]};
    case Op::gemm_backward_b: return {s[2], s[1]};
    case Op::layer_norm_backward_gamma:
    case Op::layer_norm_backward_beta:
    case Op::batch_norm_backward_gamma:
    case Op::batch_norm_backward_beta:
    case Op::linear_backward_bias: return {s[1]};
    case Op::mean_pool: return {s[0]};
    case Op::conv2d:
    case Op::conv2d_backward_data:
    case Op::conv2d_backward_filter:
      return convolution::output_shape(pass_of(op), convolution::geometry(shape));
    default: return {s[0], s[1]};
  }
}

Shape shape_from_operands(const OpInfo& op, const std::vector<std::vector<std::size_t>>& shapes) {
  const std::size_t sizes = (op.shape_syntax.size() + 1) / 2;
  const auto first = shapes.empty() ? std::vector<std::size_t>{} : shapes.front();
  Shape shape;
  if (op.op == Op::gemm || op.op == Op::linear) {
    if (shapes.size() >= 2 && first.size() == 2 && shapes[1].size() == 2) {
      shape.sizes = {first[0], shapes[1][1], first[1]};
    }
  } else if (op.op == Op::bmm) {
    if (shapes.size() >= 2 && first.size() == 3 && shapes[1].size() == 3) {
      shape.sizes = {first[0], first[1], shapes[1][2], first[2]};
    }
  } else if (op.op == Op::attention || is_attention_backward(op)) {
    if (shapes.size() >= 2 && first.size() == 2 && shapes[1].size() == 2) {
      shape.sizes = {first[0], shapes[1][0], first[1]};
    }
  } else if (op.op == Op::gemm_backward_a) {  // dy M x N, b K x N
    if (shapes.size() >= 2 && first.size() == 2 && shapes[1].size() == 2) {
      shape.sizes = {first[0], first[1], shapes[1][0]};
    }
  } else if (op.op == Op::gemm_backward_b) {  // a M x K, dy M x N
    if (shapes.size() >= 2 && first.size() == 2 && shapes[1].size() == 2) {
      shape.sizes = {first[0], shapes[1][1], first[1]};
    }
  } else if (is_convolution(op)) {
    // Stride 1, no padding, no dilation (the operands cannot tell them); groups from the channels
    // of x and w.
    if (shapes.size() == 2 && first.size() == 4 && shapes[1].size() == 4) {
      const auto& second = shapes[1];
      convolution::Geometry g;
      if (op.op == Op::conv2d || op.op == Op::conv2d_backward_filter) {
        g.batch = first[0];
        g.channels = first[1];
        g.height = first[2];
        g.width = first[3];
      }
      if (op.op == Op::conv2d) {  // x N C H W, w O C/g R S
        g.filters = second[0];
        g.kernel_h = second[2];
        g.kernel_w = second[3];
        g.groups = second[1] > 0 && g.channels % second[1] == 0 ? g.channels / second[1] : 1;
      } else if (op.op == Op::conv2d_backward_data) {  // dy N O OH OW, w O C/g R S
        g.batch = first[0];
        g.filters = first[1];
        g.kernel_h = second[2];
        g.kernel_w = second[3];
        g.channels = second[1];
        g.height = first[2] + g.kernel_h - 1;
        g.width = first[3] + g.kernel_w - 1;
      } else {  // x N C H W, dy N O OH OW
        g.filters = second[1];
        g.kernel_h = g.height >= second[2] ? g.height - second[2] + 1 : 0;
        g.kernel_w = g.width >= second[3] ? g.width - second[3] + 1 : 0;
      }
      if (g.kernel_h > 0 && g.kernel_w > 0 && g.filters % g.groups == 0) {
        shape = convolution::to_shape(g);
      }
    }
  } else if (sizes == 1) {
    if (first.size() == 1) shape.sizes = {first[0]};
  } else if (first.size() == 2) {
    shape.sizes = {first[0], first[1]};
  }
  std::vector<Operand> expected;  // the required operands
  if (!shape.sizes.empty()) {
    for (auto& o : operands(op, shape)) {
      if (!o.optional) expected.push_back(std::move(o));
    }
  }
  const auto names = [&] {
    std::string list;
    const Shape ones =
        is_convolution(op) ? convolution::to_shape({}) : Shape{std::vector<std::size_t>(sizes, 1)};
    for (const auto& o : operands(op, ones)) {
      list += fmt::format("{}{}", list.empty() ? "" : ", ", o.name);
    }
    return list;
  };
  if (shape.sizes.empty() || shapes.size() != expected.size()) {
    throw OpError(fmt::format("{} takes operands {} ({}: {})", op.name, names(), op.shape_syntax,
                              op.summary));
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (shapes[i] != expected[i].shape) {
      std::string want, got;
      for (const auto n : expected[i].shape)
        want += fmt::format("{}{}", want.empty() ? "" : "x", n);
      for (const auto n : shapes[i]) got += fmt::format("{}{}", got.empty() ? "" : "x", n);
      throw OpError(fmt::format("{}: operand {} has shape {}, expected {} (from {})", op.name,
                                expected[i].name, got.empty() ? "scalar" : got, want,
                                expected.front().name));
    }
  }
  return parse_shape(op, to_string(shape));  // the size limits
}

std::string_view reference_kind(const OpInfo& op) {
  switch (op.op) {
    case Op::gemm:
    case Op::bmm:
    case Op::gemm_backward_a:
    case Op::gemm_backward_b:
    case Op::linear:
    case Op::linear_backward_bias:
    case Op::dot:
    case Op::sum: return "exact";
    case Op::mean:
    case Op::l2_norm:
    case Op::mean_pool:
    case Op::mean_pool_backward: return "exact sum, one correctly rounded step";
    case Op::add:
    case Op::mul:
    case Op::fma:
    case Op::cast:
    case Op::conv2d:
    case Op::conv2d_backward_data:
    case Op::conv2d_backward_filter:
    case Op::layer_norm_backward_beta:
    case Op::batch_norm_backward_beta: return "exact";
    default: return "multiprecision (Ziv)";
  }
}

CpuRun run_cpu(const OpInfo& op, const Shape& shape, const Arithmetic& arithmetic,
               Summation summation, const Inputs& in) {
  namespace cpu = backends::cpu;
  const auto& s = shape.sizes;
  CpuRun run;
  auto& e = run.events;
  if (is_lowered_to_gemm(op)) {
    const GemmPart g = as_forward_gemm(op, shape, in);
    return run_cpu(gemm_info(), g.shape, arithmetic, summation, g.inputs);
  }
  if (is_gemm_set(op)) {
    return run_parts(op, shape, in, [&](const GemmPart& part) {
      return run_cpu(gemm_info(), part.shape, arithmetic, summation, part.inputs);
    });
  }
  switch (op.op) {
    case Op::gemm:
      run.output = cpu::gemm(arithmetic, summation, s[0], s[1], s[2], values(in, 0), values(in, 1),
                             optional_values(in, 2), {}, e);
      break;
    case Op::dot:
      run.output =
          cpu::gemm(arithmetic, summation, 1, 1, s[0], values(in, 0), values(in, 1), {}, {}, e);
      break;
    case Op::sum: run.output = {cpu::sum(arithmetic, summation, values(in, 0), e)}; break;
    case Op::mean: run.output = {cpu::mean(arithmetic, summation, values(in, 0), e)}; break;
    case Op::l2_norm: run.output = {cpu::l2_norm(arithmetic, summation, values(in, 0), e)}; break;
    case Op::softmax: run.output = cpu::softmax(arithmetic, values(in, 0), s[0], s[1], e); break;
    case Op::log_softmax:
      run.output = cpu::log_softmax(arithmetic, values(in, 0), s[0], s[1], e);
      break;
    case Op::logsumexp:
      run.output = cpu::logsumexp(arithmetic, values(in, 0), s[0], s[1], e);
      break;
    case Op::layer_norm:
      run.output = cpu::layer_norm(arithmetic, values(in, 0), s[0], s[1], kLayerNormEps,
                                   values(in, 1), values(in, 2), e);
      break;
    case Op::rms_norm:
      run.output =
          cpu::rms_norm(arithmetic, values(in, 0), s[0], s[1], kRmsNormEps, values(in, 1), e);
      break;
    case Op::relu:
    case Op::gelu:
    case Op::gelu_tanh:
    case Op::silu: {
      run.output = cpu::bias_activation(arithmetic, cpu_activation(op), values(in, 0), s[0], s[1],
                                        values(in, 1), e);
      break;
    }
    case Op::cross_entropy:
      run.output = {
          cpu::cross_entropy(arithmetic, values(in, 0), in.indices.at(1), s[0], s[1], 0.0, e)};
      break;
    case Op::add:
    case Op::mul:
      run.output =
          cpu::elementwise(arithmetic, op.op == Op::add ? cpu::Binary::add : cpu::Binary::mul,
                           values(in, 0), values(in, 1), e);
      break;
    case Op::batch_norm:
      run.output = cpu::batch_norm(arithmetic, values(in, 0), s[0], s[1], kBatchNormEps,
                                   values(in, 1), values(in, 2), e);
      break;
    case Op::attention:
      run.output = cpu::attention(arithmetic, values(in, 0), values(in, 1), values(in, 2), s[0],
                                  s[1], s[2], e);
      break;
    case Op::attention_backward_q:
    case Op::attention_backward_k:
    case Op::attention_backward_v: {
      cpu::Events all;
      auto g = cpu::attention_backward(arithmetic, values(in, 0), values(in, 1), values(in, 2),
                                       values(in, 3), s[0], s[1], s[2], all);
      return op.op == Op::attention_backward_q   ? one_gradient(g.dq, g.dq_output, all)
             : op.op == Op::attention_backward_k ? one_gradient(g.dk, g.dk_output, all)
                                                 : one_gradient(g.dv, g.dv_output, all);
    }
    case Op::softmax_backward:
      run.output = cpu::softmax_backward(arithmetic, values(in, 0), values(in, 1), s[0], s[1], e);
      break;
    case Op::log_softmax_backward:
      run.output =
          cpu::log_softmax_backward(arithmetic, values(in, 0), values(in, 1), s[0], s[1], e);
      break;
    case Op::cross_entropy_backward:
      run.output =
          cpu::cross_entropy_backward(arithmetic, values(in, 0), in.indices.at(1), s[0], s[1], e);
      break;
    case Op::relu_backward:
    case Op::gelu_backward:
    case Op::gelu_tanh_backward:
    case Op::silu_backward: {
      run.output =
          cpu::activation_backward(arithmetic, cpu_activation(op), values(in, 0), values(in, 1), e);
      break;
    }
    case Op::layer_norm_backward:
      run.output = cpu::layer_norm_backward(arithmetic, values(in, 0), values(in, 1), s[0], s[1],
                                            kLayerNormEps, values(in, 2), e);
      break;
    case Op::layer_norm_backward_gamma:
    case Op::layer_norm_backward_beta: {
      auto g = cpu::layer_norm_parameter_backward(arithmetic, values(in, 0), values(in, 1), s[0],
                                                  s[1], kLayerNormEps, e);
      run.output = std::move(op.op == Op::layer_norm_backward_gamma ? g.dgamma : g.dbeta);
      break;
    }
    case Op::fma:
      run.output = cpu::fma(arithmetic, values(in, 0), values(in, 1), values(in, 2), e);
      break;
    case Op::cast: run.output = cpu::cast(arithmetic, values(in, 0), e); break;
    case Op::mean_pool:
      run.output = cpu::mean_rows(arithmetic, values(in, 0), s[0], s[1], e);
      break;
    case Op::mean_pool_backward:
      run.output = cpu::mean_rows_backward(arithmetic, values(in, 1), s[1], e);
      break;
    case Op::batch_norm_backward:
    case Op::batch_norm_backward_gamma:
    case Op::batch_norm_backward_beta: {
      cpu::Events all;
      auto g = cpu::batch_norm_backward(
          arithmetic, values(in, 0), values(in, 1), s[0], s[1], kBatchNormEps,
          op.op == Op::batch_norm_backward ? std::span<const double>(values(in, 2))
                                           : std::span<const double>(),
          all);
      return op.op == Op::batch_norm_backward         ? one_gradient(g.dx, g.dx_output, all)
             : op.op == Op::batch_norm_backward_gamma ? one_gradient(g.dgamma, g.dgamma_output, all)
                                                      : one_gradient(g.dbeta, g.dbeta_output, all);
    }
    case Op::bmm:
    case Op::gemm_backward_a:
    case Op::gemm_backward_b:
    case Op::conv2d:
    case Op::conv2d_backward_data:
    case Op::conv2d_backward_filter:
    case Op::linear:
    case Op::linear_backward_bias: break;  // as gemm, above
  }
  return run;
}

CpuRun run_cpu_at(const OpInfo& op, const Shape& shape, const Arithmetic& arithmetic,
                  Summation summation, const Inputs& in, std::span<const std::size_t> positions) {
  const auto& s = shape.sizes;
  if (is_lowered_to_gemm(op)) {
    const GemmPart g = as_forward_gemm(op, shape, in);
    return run_cpu_at(gemm_info(), g.shape, arithmetic, summation, g.inputs, positions);
  }
  if (is_gemm_set(op)) {
    const auto parts = parts_of(op, shape, in);
    CpuRun run;
    run.output.resize(positions.size());
    for (const auto& at : by_part(parts, positions)) {
      const GemmPart& part = parts[at.part];
      const CpuRun r =
          run_cpu_at(gemm_info(), part.shape, arithmetic, summation, part.inputs, at.local);
      for (std::size_t i = 0; i < at.indices.size(); ++i) run.output[at.indices[i]] = r.output[i];
      run.events += r.events;
    }
    return run;
  }
  const auto out = output_shape(op, shape);
  // One output; outputs that depend on a whole column (batch statistics); or on the batch size
  // (the mean's 1/R in the cross-entropy gradient); or on every query (the attention gradients,
  // which one pass computes together); or on every row (layer norm's parameter gradients, sums
  // over the rows): the full run.
  if ((out.size() == 1 && out[0] == 1) || op.op == Op::batch_norm ||
      op.op == Op::cross_entropy_backward || is_attention_backward(op) ||
      op.op == Op::layer_norm_backward_gamma || op.op == Op::layer_norm_backward_beta ||
      op.op == Op::batch_norm_backward || op.op == Op::batch_norm_backward_gamma ||
      op.op == Op::batch_norm_backward_beta || op.op == Op::mean_pool_backward) {
    CpuRun full = run_cpu(op, shape, arithmetic, summation, in);
    if (full.output.size() == 1) return full;
    CpuRun picked{{}, full.events};
    for (const auto p : positions) picked.output.push_back(full.output.at(p));
    return picked;
  }
  CpuRun run;
  run.output.reserve(positions.size());
  const std::size_t per_row = out.size() == 2 ? out[1] : 1;
  std::size_t e = 0;
  while (e < positions.size()) {
    const std::size_t row = positions[e] / per_row;
    std::size_t end = e;
    while (end < positions.size() && positions[end] / per_row == row) ++end;
    if (op.op == Op::gemm) {
      // One row of A against the columns this row needs.
      const std::size_t k = s[2];
      const std::size_t n = s[1];
      const std::size_t columns = end - e;
      const auto c_in = optional_values(in, 2);
      std::vector<double> b(k * columns), c_sub;
      for (std::size_t c = 0; c < columns; ++c) {
        const std::size_t j = positions[e + c] % n;
        for (std::size_t l = 0; l < k; ++l) b[l * columns + c] = values(in, 1)[l * n + j];
        if (!c_in.empty()) c_sub.push_back(c_in[row * n + j]);
      }
      const auto a_row = std::span<const double>(values(in, 0)).subspan(row * k, k);
      const auto c_row = backends::cpu::gemm(arithmetic, summation, 1, columns, k, a_row, b, c_sub,
                                             {}, run.events);
      run.output.insert(run.output.end(), c_row.begin(), c_row.end());
    } else {
      // One row of the op's data operands (x, and y for add and mul; the query for attention),
      // the other operands (per-column parameters, keys and values) whole.
      Inputs one = in;
      const std::size_t width = op.op == Op::attention ? s[2] : s[1];
      const bool three_data = op.op == Op::fma;
      const bool two_data = op.op == Op::add || op.op == Op::mul || op.op == Op::softmax_backward ||
                            op.op == Op::log_softmax_backward || op.op == Op::relu_backward ||
                            op.op == Op::gelu_backward || op.op == Op::gelu_tanh_backward ||
                            op.op == Op::silu_backward || op.op == Op::layer_norm_backward;
      const std::size_t sliced = three_data ? 3 : two_data ? 2 : 1;
      for (std::size_t k = 0; k < sliced; ++k) {
        const auto first = values(in, k).begin() + static_cast<std::ptrdiff_t>(row * width);
        one.values[k].assign(first, first + static_cast<std::ptrdiff_t>(width));
      }
      const Shape row_shape = op.op == Op::attention ? Shape{{1, s[1], s[2]}} : Shape{{1, s[1]}};
      const CpuRun r = run_cpu(op, row_shape, arithmetic, summation, one);
      run.events += r.events;
      for (std::size_t i = e; i < end; ++i)
        run.output.push_back(r.output.at(positions[i] % per_row));
    }
    e = end;
  }
  return run;
}

bool runs_on_mma(const OpInfo& op) {
  return op.op == Op::gemm || op.op == Op::bmm || op.op == Op::dot ||
         (is_lowered_to_gemm(op) && op.op != Op::linear_backward_bias) || is_convolution(op);
}

std::optional<std::string> why_no_mma(const OpInfo& op) {
  if (runs_on_mma(op)) return std::nullopt;
  std::string with;
  for (const auto& other : kCatalog) {
    if (runs_on_mma(other)) with += fmt::format("{}{}", with.empty() ? "" : ", ", other.name);
  }
  return fmt::format("{} has no Tensor Core model (the ops with one: {})", op.name, with);
}

CpuRun run_cpu_mma(const OpInfo& op, const Shape& shape, const numeric::MmaModel& model,
                   const numeric::Format& output, numeric::Rounding mode, const Inputs& in) {
  if (const auto problem = why_no_mma(op)) throw OpError(*problem);
  const auto& s = shape.sizes;
  CpuRun run;
  if (is_lowered_to_gemm(op)) {
    const GemmPart g = as_forward_gemm(op, shape, in);
    return run_cpu_mma(gemm_info(), g.shape, model, output, mode, g.inputs);
  }
  if (is_gemm_set(op)) {
    return run_parts(op, shape, in, [&](const GemmPart& part) {
      return run_cpu_mma(gemm_info(), part.shape, model, output, mode, part.inputs);
    });
  }
  if (op.op == Op::gemm) {
    run.output = backends::cpu::gemm_mma(model, output, mode, s[0], s[1], s[2], values(in, 0),
                                         values(in, 1), optional_values(in, 2), run.events);
  } else {
    run.output = backends::cpu::gemm_mma(model, output, mode, 1, 1, s[0], values(in, 0),
                                         values(in, 1), {}, run.events);
  }
  return run;
}

namespace {

Reference reference_at(const OpInfo& op, const Shape& shape, const Inputs& in,
                       const numeric::Format& output, numeric::Rounding mode,
                       std::vector<std::size_t> positions, std::uint64_t seed);

}  // namespace

Reference reference(const OpInfo& op, const Shape& shape, const Inputs& in,
                    const numeric::Format& output, numeric::Rounding mode, std::size_t samples,
                    std::uint64_t seed) {
  const std::size_t count = element_count(output_shape(op, shape));
  return reference_at(op, shape, in, output, mode,
                      reference::sample_positions(count, samples == 0 ? count : samples, seed),
                      seed);
}

namespace {

Reference reference_at(const OpInfo& op, const Shape& shape, const Inputs& in,
                       const numeric::Format& output, numeric::Rounding mode,
                       std::vector<std::size_t> positions, std::uint64_t seed) {
  const auto& s = shape.sizes;
  Reference result;
  result.positions = std::move(positions);
  const std::size_t n = result.positions.size();
  result.rounded.resize(n);
  result.nearest.resize(n);
  const auto store = [&](std::size_t e, const numeric::Rounded& r, double nearest) {
    result.rounded[e] = r.value;
    result.nearest[e] = nearest;
  };

  if (is_lowered_to_gemm(op)) {
    const GemmPart g = as_forward_gemm(op, shape, in);
    return reference_at(gemm_info(), g.shape, g.inputs, output, mode, std::move(result.positions),
                        seed);
  }
  if (is_gemm_set(op)) {
    const auto parts = parts_of(op, shape, in);
    for (const auto& at : by_part(parts, result.positions)) {
      const GemmPart& part = parts[at.part];
      const Reference r =
          reference_at(gemm_info(), part.shape, part.inputs, output, mode, at.local, seed);
      for (std::size_t i = 0; i < at.indices.size(); ++i) {
        result.rounded[at.indices[i]] = r.rounded[i];
        result.nearest[at.indices[i]] = r.nearest[i];
      }
    }
    return result;
  }
  switch (op.op) {
    case Op::gemm: {
      numeric::RoundingOptions options;
      options.format = output;
      options.mode = mode;
      options.seed = seed;
      const reference::GemmOperands operands{s[0],          s[1],          s[2],
                                             values(in, 0), values(in, 1), optional_values(in, 2)};
      auto g = reference::exact_gemm(numeric::formats::fp64, operands, options, result.positions);
      result.rounded = std::move(g.rounded);
      result.nearest = std::move(g.nearest);
      return result;
    }
    case Op::dot:
    case Op::sum: {
      const reference::ExactValue v =
          op.op == Op::dot
              ? reference::exact_dot(numeric::formats::fp64, values(in, 0), values(in, 1))
              : reference::exact_sum(values(in, 0));
      store(0, v.round(output, mode, draw(mode, seed, 0)), v.to_double());
      return result;
    }
    case Op::mean:
    case Op::l2_norm: {
      reference::ExactAccumulator acc;
      for (const double x : values(in, 0)) {
        if (op.op == Op::mean) {
          acc.add(x);
        } else {
          acc.add_product(x, x);
        }
      }
      const reference::ExactValue total = acc.value();
      const double items = static_cast<double>(s[0]);
      // One correctly rounded operation on an exact value: relative error 2^-P.
      reference::ZivPolicy policy;
      policy.error_bound = 2;
      const auto r = reference::correctly_rounded(
          output, mode,
          [&] {
            const Real t = to_real(total);
            return op.op == Op::mean ? Real(t / items) : reference::math::sqrt(t);
          },
          policy, draw(mode, seed, 0));
      store(0, r.rounded, r.value);
      return result;
    }
    case Op::mean_pool:
    case Op::mean_pool_backward: {
      // The mean of each row (an exact sum, divided once), or dy of a row divided once by the
      // row's length: one correctly rounded operation on an exact value.
      const std::size_t cols = s[1];
      reference::ZivPolicy policy;
      policy.error_bound = 2;
      for (std::size_t e = 0; e < n; ++e) {
        const std::size_t p = result.positions[e];
        reference::ExactAccumulator acc;
        if (op.op == Op::mean_pool) {
          for (std::size_t c = 0; c < cols; ++c) acc.add(values(in, 0)[p * cols + c]);
        } else {
          acc.add(values(in, 1)[p / cols]);
        }
        const reference::ExactValue total = acc.value();
        const auto r = reference::correctly_rounded(
            output, mode,
            [&] {
              const Real t = to_real(total);  // at the working precision, as the quotient
              return Real(t / static_cast<double>(cols));
            },
            policy, draw(mode, seed, p));
        store(e, r.rounded, r.value);
      }
      return result;
    }
    default: break;
  }

  if (op.op == Op::add || op.op == Op::mul || op.op == Op::fma || op.op == Op::cast) {
    reference::ExactAccumulator acc;
    for (std::size_t e = 0; e < n; ++e) {
      const std::size_t p = result.positions[e];
      acc.clear();
      if (op.op == Op::add) {
        acc.add(values(in, 0)[p]);
        acc.add(values(in, 1)[p]);
      } else if (op.op == Op::cast) {
        acc.add(values(in, 0)[p]);
      } else {
        acc.add_product(values(in, 0)[p], values(in, 1)[p]);
        if (op.op == Op::fma) acc.add(values(in, 2)[p]);
      }
      const reference::ExactValue v = acc.value();
      store(e, v.round(output, mode, draw(mode, seed, p)), v.to_double());
    }
    return result;
  }
  if (op.op == Op::layer_norm_backward_beta || op.op == Op::batch_norm_backward_beta) {
    // Column sums of dy: exact.
    const std::size_t rows = s[0], cols = s[1];
    for (std::size_t e = 0; e < n; ++e) {
      const std::size_t c = result.positions[e];
      reference::ExactAccumulator acc;
      for (std::size_t r = 0; r < rows; ++r) acc.add(values(in, 1)[r * cols + c]);
      const reference::ExactValue v = acc.value();
      store(e, v.round(output, mode, draw(mode, seed, c)), v.to_double());
    }
    return result;
  }
  if (op.op == Op::layer_norm_backward_gamma) {
    // dgamma_c = sum over rows of dy xhat: every column in one multiprecision evaluation, wider by
    // the cancellation of the column sums (sum |dy xhat| / |sum dy xhat|, estimated in binary64);
    // each xhat carries the error of its row's mean and variance, about `cols` units of 2^-P.
    const std::size_t rows = s[0], cols = s[1];
    std::vector<double> terms(cols, 0.0), sums(cols, 0.0);
    for (std::size_t r = 0; r < rows; ++r) {
      const auto row = values(in, 0).data() + r * cols;
      double mu = 0, variance = 0;
      for (std::size_t c = 0; c < cols; ++c) mu += row[c] / static_cast<double>(cols);
      for (std::size_t c = 0; c < cols; ++c) {
        variance += (row[c] - mu) * (row[c] - mu) / static_cast<double>(cols);
      }
      const double rstd = 1.0 / std::sqrt(variance + kLayerNormEps);
      for (std::size_t c = 0; c < cols; ++c) {
        const double product = values(in, 1)[r * cols + c] * (row[c] - mu) * rstd;
        terms[c] += std::fabs(product);
        sums[c] += product;
      }
    }
    double condition = 1;
    for (const auto p : result.positions) condition = std::max(condition, ratio(terms[p], sums[p]));
    const int extra = extra_bits(condition);
    RowReference evaluate([&, extra] {
      const reference::WorkingPrecision wider(reference::working_precision_bits() + extra);
      return reference::ops::layer_norm_backward<Real>(to_reals(values(in, 0)),
                                                       to_reals(values(in, 1)), rows, cols,
                                                       reference::to_real(kLayerNormEps))
          .dgamma;
    });
    const auto bound = static_cast<std::uint64_t>(
        std::min(64.0 + 8.0 * static_cast<double>(rows + cols), static_cast<double>(1u << 31)));
    for (std::size_t e = 0; e < n; ++e) {
      const std::size_t c = result.positions[e];
      const auto v = evaluate.element(c, output, mode, bound, draw(mode, seed, c));
      store(e, v.rounded, v.value);
    }
    return result;
  }
  if (op.op == Op::batch_norm_backward || op.op == Op::batch_norm_backward_gamma) {
    return batch_norm_backward_reference(op, shape, in, output, mode, std::move(result), seed);
  }
  if (op.op == Op::batch_norm) {
    // Column by column: each output depends on its channel's batch statistics. The formula
    // (reference/mp/ops.hpp) takes deviations from a corrected mean, so the bound is that of the
    // sums: about N units of 2^-P.
    const std::size_t rows = s[0];
    const std::size_t cols = s[1];
    std::map<std::size_t, std::vector<std::size_t>> by_column;
    for (std::size_t e = 0; e < n; ++e) by_column[result.positions[e] % cols].push_back(e);
    for (const auto& [column, elements] : by_column) {
      RowReference evaluate([&, column = column] {
        std::vector<double> x(rows);
        for (std::size_t r = 0; r < rows; ++r) x[r] = values(in, 0)[r * cols + column];
        const auto rx = to_reals(x);
        const std::vector<Real> gamma{reference::to_real(values(in, 1)[column])};
        const std::vector<Real> beta{reference::to_real(values(in, 2)[column])};
        auto y = reference::ops::batch_norm_training<Real>(
                     rx, rows, 1, 1, reference::to_real(kBatchNormEps), gamma, beta)
                     .y;
        // A constant channel: every deviation is exactly 0 and every output exactly beta,
        // whatever the rounding of 1 / sqrt(eps) that the zero multiplies.
        if (std::all_of(x.begin(), x.end(), [&](double v) { return v == x.front(); })) {
          mpfr_clear_inexflag();
        }
        return y;
      });
      for (const std::size_t e : elements) {
        const std::size_t p = result.positions[e];
        const auto v = evaluate.element(p / cols, output, mode, 64 + 8 * rows, draw(mode, seed, p));
        store(e, v.rounded, v.value);
      }
    }
    return result;
  }
  if (op.op == Op::attention) {
    const std::size_t keys = s[1];
    const std::size_t d = s[2];
    std::size_t e = 0;
    while (e < n) {
      const std::size_t row = result.positions[e] / d;
      const auto q_row = std::span<const double>(values(in, 0)).subspan(row * d, d);
      // Conditioning, estimated in binary64: exp turns the absolute error of a score (at most
      // sum |q k| / sqrt d units of 2^-P) into a relative one, and o = sum p v cancels by the
      // factor sum p |v| / |o|. The row is evaluated with that many more bits (capped at 2048),
      // so that the bound stays a few units of 2^-P.
      std::vector<double> score(keys), weight(keys);
      double score_scale = 0;
      for (std::size_t j = 0; j < keys; ++j) {
        double dot = 0, magnitude = 0;
        for (std::size_t t = 0; t < d; ++t) {
          dot += q_row[t] * values(in, 1)[j * d + t];
          magnitude += std::fabs(q_row[t] * values(in, 1)[j * d + t]);
        }
        score[j] = dot / std::sqrt(static_cast<double>(d));
        score_scale = std::max(score_scale, magnitude / std::sqrt(static_cast<double>(d)));
      }
      const double top = *std::max_element(score.begin(), score.end());
      double total = 0;
      for (std::size_t j = 0; j < keys; ++j) total += (weight[j] = std::exp(score[j] - top));
      double condition = 1;
      for (std::size_t t = 0; t < d; ++t) {
        double o = 0, magnitude = 0;
        for (std::size_t j = 0; j < keys; ++j) {
          o += weight[j] / total * values(in, 2)[j * d + t];
          magnitude += weight[j] / total * std::fabs(values(in, 2)[j * d + t]);
        }
        condition = std::max(condition, o == 0 ? 0x1p1000 : magnitude / std::fabs(o));
      }
      const int extra = extra_bits(condition);
      AsymptoticRowReference evaluate([&, q_row, extra] {
        const reference::WorkingPrecision wider(reference::working_precision_bits() + extra);
        return reference::ops::attention<reference::Asymptotic>(
            to_asymptotic(q_row), to_asymptotic(values(in, 1)), to_asymptotic(values(in, 2)), 1,
            keys, d, d);
      });
      const std::uint64_t bound = static_cast<std::uint64_t>(
          std::min(64.0 + 8.0 * static_cast<double>(keys) + 8.0 * score_scale,
                   static_cast<double>(1u << 31)));
      for (; e < n && result.positions[e] / d == row; ++e) {
        const std::size_t p = result.positions[e];
        const auto v = evaluate.element(p % d, output, mode, bound, draw(mode, seed, p));
        store(e, v.rounded, v.value);
      }
    }
    return result;
  }

  if (is_attention_backward(op)) {
    return attention_backward_reference(op, shape, in, output, mode, std::move(result), seed);
  }
  if (op.op == Op::softmax_backward || op.op == Op::log_softmax_backward ||
      op.op == Op::cross_entropy_backward || op.op == Op::relu_backward ||
      op.op == Op::gelu_backward || op.op == Op::gelu_tanh_backward || op.op == Op::silu_backward ||
      op.op == Op::layer_norm_backward) {
    return row_backward_reference(op, shape, in, output, mode, std::move(result), seed);
  }

  // Row-wise ops in multiprecision. Error bounds (relative, in units of 2^-P) from the formulas in
  // reference/mp/ops.hpp, which avoid cancellation: a sum of `cols` same-signed terms contributes
  // cols, each elementary function a few units; exp(z) amplifies the error of z by |z|.
  const std::size_t rows = s[0];
  const std::size_t cols = s[1];
  const std::span<const double> x = values(in, 0);
  const auto row_bound = [&](std::size_t r) {
    double spread = 0;
    const auto first = x.begin() + static_cast<std::ptrdiff_t>(r * cols);
    const double top = *std::max_element(first, first + static_cast<std::ptrdiff_t>(cols));
    for (std::size_t c = 0; c < cols; ++c)
      spread = std::max(spread, std::fabs(x[r * cols + c] - top));
    return static_cast<std::uint64_t>(
        std::min(64.0 + 8.0 * static_cast<double>(cols) + 8.0 * spread,
                 static_cast<double>(std::uint64_t{1} << 31)));
  };

  if (op.op == Op::cross_entropy) {
    const auto& targets = in.indices.at(1);
    AsymptoticRowReference loss([&] {
      return std::vector<reference::Asymptotic>{
          reference::ops::cross_entropy<reference::Asymptotic>(to_asymptotic(x), rows, cols,
                                                               targets, reference::Asymptotic(0))};
    });
    std::uint64_t bound = 64 + 8 * rows;
    for (std::size_t r = 0; r < rows; ++r) bound = std::max(bound, row_bound(r) + 8 * rows);
    const auto v = loss.element(0, output, mode, std::min<std::uint64_t>(bound, 1u << 31),
                                draw(mode, seed, 0));
    store(0, v.rounded, v.value);
    return result;
  }

  const std::size_t per_row = op.op == Op::logsumexp ? 1 : cols;
  std::size_t e = 0;
  while (e < n) {
    const std::size_t row = result.positions[e] / per_row;
    const auto row_values = x.subspan(row * cols, cols);
    AsymptoticRowReference softmax_family([&, row_values] {
      const std::vector<reference::Asymptotic> ax = to_asymptotic(row_values);
      const std::span<const reference::Asymptotic> sx(ax);
      switch (op.op) {
        case Op::softmax: return reference::ops::softmax<reference::Asymptotic>(sx, 1, cols);
        case Op::log_softmax:
          return reference::ops::log_softmax<reference::Asymptotic>(sx, 1, cols);
        default: return reference::ops::logsumexp<reference::Asymptotic>(sx, 1, cols);
      }
    });
    // A constant row (a single column, or --dist constant): every deviation from the mean is
    // exactly 0, and layer_norm's output exactly beta (0 without it), whatever the rounding of
    // 1 / sqrt(eps) that the zero multiplies.
    const bool constant_row = std::all_of(row_values.begin(), row_values.end(),
                                          [&](double v) { return v == row_values.front(); });
    RowReference others([&, row_values, constant_row] {
      const std::vector<Real> rx = to_reals(row_values);
      const std::span<const Real> sx(rx);
      switch (op.op) {
        case Op::layer_norm: {
          const auto gamma = to_reals(values(in, 1));
          const auto beta = to_reals(values(in, 2));
          auto y = reference::ops::layer_norm<Real>(sx, 1, cols, reference::to_real(kLayerNormEps),
                                                    gamma, beta);
          if (constant_row) mpfr_clear_inexflag();  // the row's values are exact
          return y;
        }
        case Op::rms_norm: {
          const auto gamma = to_reals(values(in, 1));
          return reference::ops::rms_norm<Real>(sx, 1, cols, reference::to_real(kRmsNormEps),
                                                gamma);
        }
        default: {
          const auto bias = to_reals(values(in, 1));
          const auto f = reference_activation(op);
          std::vector<Real> y;
          y.reserve(cols);
          for (std::size_t c = 0; c < cols; ++c) {
            y.push_back(reference::ops::activate<Real>(f, rx[c] + bias[c]));
          }
          return y;
        }
      }
    });
    const bool in_family =
        op.op == Op::softmax || op.op == Op::log_softmax || op.op == Op::logsumexp;
    // Activations: exp(-v) and erfc(-v / sqrt 2) amplify the error of v by about v^2.
    std::uint64_t bound = row_bound(row);
    if (op.op == Op::relu || op.op == Op::gelu || op.op == Op::gelu_tanh || op.op == Op::silu) {
      double largest = 0;
      for (const double v : row_values) largest = std::max(largest, std::fabs(v));
      bound = static_cast<std::uint64_t>(
          std::min(64.0 + 8.0 * largest * largest + 64.0, static_cast<double>(1u << 31)));
    }
    for (; e < n && result.positions[e] / per_row == row; ++e) {
      const std::size_t p = result.positions[e];
      const std::size_t j = p - row * per_row;
      const auto v = in_family ? softmax_family.element(j, output, mode, bound, draw(mode, seed, p))
                               : others.element(j, output, mode, bound, draw(mode, seed, p));
      store(e, v.rounded, v.value);
    }
  }
  return result;
}

}  // namespace

namespace {

std::vector<double> raw_error_bounds(const OpInfo& op, const Shape& shape,
                                     const Arithmetic& arithmetic, Summation summation,
                                     const Inputs& in, std::span<const std::size_t> positions);

}  // namespace

std::vector<double> error_bounds(const OpInfo& op, const Shape& shape, const Arithmetic& arithmetic,
                                 Summation summation, const Inputs& in,
                                 std::span<const std::size_t> positions) {
  // An infinite or NaN input (log-uniform and near-overflow inputs reach them) makes a term NaN
  // (inf * 0): the output is then inf or NaN, which the mismatch classes judge; no bound applies.
  auto bounds = raw_error_bounds(op, shape, arithmetic, summation, in, positions);
  for (double& b : bounds) {
    if (std::isnan(b)) b = std::numeric_limits<double>::infinity();
  }
  return bounds;
}

namespace {

std::vector<double> raw_error_bounds(const OpInfo& op, const Shape& shape,
                                     const Arithmetic& arithmetic, Summation summation,
                                     const Inputs& in, std::span<const std::size_t> positions) {
  if (is_lowered_to_gemm(op)) {
    const GemmPart g = as_forward_gemm(op, shape, in);
    return error_bounds(gemm_info(), g.shape, arithmetic, summation, g.inputs, positions);
  }
  if (is_gemm_set(op)) {
    const auto parts = parts_of(op, shape, in);
    std::vector<double> bounds(positions.size());
    for (const auto& at : by_part(parts, positions)) {
      const GemmPart& part = parts[at.part];
      const auto r =
          error_bounds(gemm_info(), part.shape, arithmetic, summation, part.inputs, at.local);
      for (std::size_t i = 0; i < at.indices.size(); ++i) bounds[at.indices[i]] = r[i];
    }
    return bounds;
  }
  const double u_compute = metrics::unit_roundoff(arithmetic.compute, arithmetic.mode);
  const double u_accumulate = metrics::unit_roundoff(arithmetic.accumulate, arithmetic.mode);
  const double u_output = metrics::unit_roundoff(arithmetic.output, arithmetic.mode);
  // Relative bounds hold only above the subnormal range: each rounding of a product, a sum or the
  // output may also lose up to half the spacing of the subnormals (all of it in the directed
  // modes), 2^(emin - p) of its format (Higham, Section 2.1, and the underflow term of eq. (3.4)).
  const auto underflow = [&](const numeric::Format& f) {
    const bool nearest = arithmetic.mode == numeric::Rounding::nearest_even ||
                         arithmetic.mode == numeric::Rounding::nearest_away;
    const int spacing = f.subnormals ? f.emin - f.precision + 1 : f.emin;
    return std::ldexp(1.0, nearest ? spacing - 1 : spacing);
  };
  if (op.op == Op::add || op.op == Op::mul || op.op == Op::fma || op.op == Op::cast ||
      op.op == Op::mean_pool_backward) {
    // One rounding to compute (none for a cast), then one to output: |r - v| <= (u_c |v| + e_c)
    // (1 + u_o) + u_o |v| + e_o, with v the exact result, known in binary64 to a relative 2^-52
    // (exactly for mul and cast; add, fma and the quotient dy / C of mean_pool_backward round
    // once; binary64's rounding of the quotient before the compute format's is innocuous, as
    // 53 >= 2p + 2).
    const double coefficient =
        metrics::with_final_rounding(op.op == Op::cast ? 0.0 : u_compute, u_output);
    const double absolute =
        (op.op == Op::cast ? 0.0 : underflow(arithmetic.compute) * (1 + u_output)) +
        underflow(arithmetic.output);
    std::vector<double> bounds;
    bounds.reserve(positions.size());
    for (const auto p : positions) {
      if (op.op == Op::mean_pool_backward) {
        const double v = values(in, 1)[p / shape.sizes[1]] / static_cast<double>(shape.sizes[1]);
        bounds.push_back(coefficient * std::fabs(v) * (1 + 0x1p-52) + absolute);
        continue;
      }
      const double x = values(in, 0)[p];
      const double v = op.op == Op::cast  ? x
                       : op.op == Op::add ? x + values(in, 1)[p]
                       : op.op == Op::mul ? x * values(in, 1)[p]
                                          : std::fma(x, values(in, 1)[p], values(in, 2)[p]);
      bounds.push_back(coefficient * std::fabs(v) * (1 + 0x1p-52) + absolute);
    }
    return bounds;
  }
  if (op.op == Op::layer_norm_backward_beta || op.op == Op::batch_norm_backward_beta) {
    // Column sums of dy: R - 1 additions rounded to accumulate, one rounding to output.
    const std::size_t rows = shape.sizes[0], cols = shape.sizes[1];
    const double coefficient = metrics::with_final_rounding(
        std::pow(1 + u_accumulate, static_cast<double>(rows > 0 ? rows - 1 : 0)) - 1, u_output);
    const double absolute =
        static_cast<double>(rows > 0 ? rows - 1 : 0) * underflow(arithmetic.accumulate) +
        underflow(arithmetic.output);
    std::vector<double> bounds;
    for (const auto c : positions) {
      double magnitude = 0;
      for (std::size_t r = 0; r < rows; ++r) magnitude += std::fabs(values(in, 1)[r * cols + c]);
      bounds.push_back(coefficient * magnitude * (1 + static_cast<double>(rows + 2) * 0x1p-53) +
                       absolute);
    }
    return bounds;
  }
  if (op.op != Op::gemm && op.op != Op::dot && op.op != Op::sum && op.op != Op::mean &&
      op.op != Op::mean_pool) {
    return {};
  }
  const auto& s = shape.sizes;
  const bool pooled = op.op == Op::mean_pool;  // a mean per row, always summed in order
  const std::size_t k = op.op == Op::gemm ? s[2] : pooled ? s[1] : s[0];
  // Each product rounded once (u_compute; sums have no products: 0); each term then passes through
  // at most k - 1 additions (sequential) or ceil(log2 k) (pairwise), each rounded (u_accumulate);
  // mean divides once more (u_compute). Higham, Accuracy and Stability, Lemma 3.1: the product of
  // (1 + d_i) over m roundings lies within (1 + u)^m - 1 <= gamma_m.
  std::size_t additions = k > 0 ? k - 1 : 0;
  if (summation == Summation::pairwise && k > 1 && !pooled) {
    additions = static_cast<std::size_t>(std::ceil(std::log2(static_cast<double>(k))));
  }
  const auto c_in = op.op == Op::gemm ? optional_values(in, 2) : std::span<const double>();
  if (!c_in.empty()) ++additions;  // C is added last, in the accumulation format
  const bool products = op.op == Op::gemm || op.op == Op::dot;
  double coefficient = (products ? 1 + u_compute : 1.0) *
                           std::pow(1 + u_accumulate, static_cast<double>(additions)) *
                           (op.op == Op::mean || pooled ? 1 + u_compute : 1.0) -
                       1;
  coefficient = metrics::with_final_rounding(coefficient, u_output);
  // The bound multiplies sum |a_i b_i| (or sum |x_i|, / k for the mean), computed in binary64 and
  // enlarged by k u_64 so that its own rounding cannot make it too small.
  const auto magnitude = [&](std::size_t position) {
    double total = 0;
    if (op.op == Op::gemm) {
      const std::size_t row = position / s[1];
      const std::size_t column = position % s[1];
      for (std::size_t l = 0; l < k; ++l) {
        total += std::fabs(values(in, 0)[row * k + l] * values(in, 1)[l * s[1] + column]);
      }
      if (!c_in.empty()) total += std::fabs(c_in[position]);
    } else if (op.op == Op::dot) {
      for (std::size_t l = 0; l < k; ++l) total += std::fabs(values(in, 0)[l] * values(in, 1)[l]);
    } else if (pooled) {
      for (std::size_t l = 0; l < k; ++l) total += std::fabs(values(in, 0)[position * k + l]);
      total /= static_cast<double>(k);
    } else {
      for (const double v : values(in, 0)) total += std::fabs(v);
      if (op.op == Op::mean) total /= static_cast<double>(k);
    }
    return total * (1 + static_cast<double>(k + 2) * 0x1p-53);
  };
  const double absolute =
      (products ? static_cast<double>(k) * underflow(arithmetic.compute) : 0.0) +
      static_cast<double>(additions) * underflow(arithmetic.accumulate) +
      underflow(arithmetic.output);
  std::vector<double> bounds;
  bounds.reserve(positions.size());
  for (const auto p : positions) bounds.push_back(coefficient * magnitude(p) + absolute);
  return bounds;
}

}  // namespace

}  // namespace ampbench::ops
