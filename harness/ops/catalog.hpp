// The op catalog: every op the audit knows, its shape syntax, its operands, how the CPU backend
// runs it, its reference, and its a-priori error bound where the literature gives one.
//
// An op is evaluated in three steps, each a plain value passed to the next:
//   operands(op, shape)            what to generate (names and shapes)
//   run_cpu(op, shape, ...)        the emulated result under an arithmetic (backends/cpu)
//   reference(op, shape, ...)      the exact result correctly rounded to the output format, at all
//                                  output positions or a seeded sample of them, and the bounds
//
// Each op is defined once, by a record in its family's file (definition.hpp: matmul.cpp,
// convolution.cpp, reduction.cpp, softmax.cpp, normalization.cpp, activation.cpp, elementwise.cpp,
// attention.cpp); the functions below answer from those records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness/backends/cpu/emulate.hpp"
#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::ops {

// Every op of the catalog, in the order `ampbench ops` and `audit --all` list them (append a new
// one); each defined once, in its family's file (definition.hpp).
enum class Op {
  gemm,
  bmm,
  dot,
  sum,
  mean,
  l2_norm,
  softmax,
  log_softmax,
  logsumexp,
  layer_norm,
  rms_norm,
  relu,
  gelu,
  gelu_tanh,
  silu,
  cross_entropy,
  add,
  mul,
  batch_norm,
  attention,
  gemm_backward_a,
  gemm_backward_b,
  softmax_backward,
  log_softmax_backward,
  cross_entropy_backward,
  relu_backward,
  gelu_backward,
  layer_norm_backward_gamma,
  layer_norm_backward_beta,
  layer_norm_backward,
  silu_backward,
  conv2d,
  conv2d_backward_data,
  conv2d_backward_filter,
  gelu_tanh_backward,
  fma,
  cast,
  attention_backward_q,
  attention_backward_k,
  attention_backward_v,
  linear,
  linear_backward_bias,
  mean_pool,
  mean_pool_backward,
  batch_norm_backward,
  batch_norm_backward_gamma,
  batch_norm_backward_beta,
};

// The constants of the ops, as PyTorch's modules default them.
inline constexpr double kLayerNormEps = 1e-5;  // torch.nn.LayerNorm
inline constexpr double kRmsNormEps = 1e-6;    // fixed (torch.nn.RMSNorm: the dtype's epsilon)
inline constexpr double kBatchNormEps = 1e-5;  // torch.nn.BatchNorm1d/2d

struct OpInfo {
  Op op;
  std::string_view name;
  std::string_view op_class;       // the precision policies' class: matmul, softmax, ...
  std::string_view shape_syntax;   // e.g. "MxNxK"
  std::string_view default_shape;  // the shape the audit uses when none is given
  std::string_view summary;
  std::string_view bound;  // the a-priori bound the audit checks, or "none"
  // The op whose precision the policies give this one (a backward op runs as its forward op does
  // under autocast); empty: the op itself.
  std::string_view policy_op = {};
  std::string_view precision_op() const { return policy_op.empty() ? name : policy_op; }
};

std::span<const OpInfo> catalog();
// Empty when the name is unknown.
const OpInfo* find_op(std::string_view name);
std::string op_names();  // "gemm, dot, ..." for messages

// Bad input to an op: a shape that does not parse or does not fit, operands of the wrong size.
class OpError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Sizes separated by 'x' ("64x1024"), checked against the op's syntax and against a limit on the
// memory the audit would need (kMaxElements per operand). A convolution's shape also holds its
// stride, padding, dilation and groups (harness/ops/convolution.hpp): "8x32x16x16:64x3x3,pad=1".
struct Shape {
  std::vector<std::size_t> sizes;
};
inline constexpr std::size_t kMaxElements = std::size_t{1} << 27;
Shape parse_shape(const OpInfo& op, std::string_view text);
std::string to_string(const Shape& shape);

// An operand's part in the op: data (x, dy, the matrices) or a parameter (gamma, beta, a bias),
// which the audit draws from a distribution of its own (gamma near 1, the others normal).
enum class Role : std::uint8_t { data, parameter };
// The format a value operand is held in, as autocast and the kernels hold it: the op's input
// format (the cast of its inputs); its output format (linear's bias and the dy of its bias
// gradient: addmm's epilogue adds the bias in the output's type, autograd sums dy in it); or its
// accumulation format (gemm's C, as a Tensor Core's accumulator holds it); or the input format
// except under a promote entry, where it keeps its own (batch norm's weight and bias: autocast
// leaves the fp32 parameters of a half-precision input's batch norm as they are).
enum class HeldIn : std::uint8_t { input, output, accumulation, input_or_own };

// An operand to generate: its name, shape, and whether it is an index (cross-entropy targets:
// integers in [0, classes), not values of a format).
struct Operand {
  std::string name;
  std::vector<std::size_t> shape;
  bool is_index = false;
  std::size_t index_limit = 0;
  // gemm's accumulator input C: optional (the audit leaves it out, eval takes it when given), and
  // held in the accumulation format, as a Tensor Core's accumulator is.
  bool optional = false;
  Role role = Role::data;
  HeldIn held_in = HeldIn::input;
};
std::vector<Operand> operands(const OpInfo& op, const Shape& shape);
// The operands' names and parts without a shape (their `shape` is that of a unit-sized op): what
// the type flow (autocast.hpp) reads.
std::vector<Operand> operand_roles(const OpInfo& op);
std::size_t element_count(const std::vector<std::size_t>& shape);
// The output's shape and the length of the sums inside it (k of a gemm; the row length of a
// softmax), for bounds and reports.
std::vector<std::size_t> output_shape(const OpInfo& op, const Shape& shape);
// The shape an op has for operands of the given shapes (in operands() order), or OpError naming
// the operand whose shape does not fit: what `ampbench eval` uses to read a user's tensors.
Shape shape_from_operands(const OpInfo& op, const std::vector<std::vector<std::size_t>>& shapes);
// How the reference of an op is computed, for listings: "exact" or "multiprecision (Ziv)".
std::string_view reference_kind(const OpInfo& op);

// Operands in the order operands() lists them: values (in binary64 containers) or indices; an
// absent optional operand is an empty vector.
struct Inputs {
  std::vector<std::vector<double>> values;
  std::vector<std::vector<std::int64_t>> indices;  // same positions; empty unless is_index
};

// An op run outside the CPU backend (a user's kernel, a GPU op), for the audit to judge
// (audit::run_kernel_case): the case's operands in (operands() order, values of the policy's
// input format in binary64 containers), the output at every position out (row-major over
// output_shape), values of the policy's output format for the op.
using Kernel = std::function<std::vector<double>(const Inputs& inputs)>;

struct CpuRun {
  std::vector<double> output;
  backends::cpu::Events events;
};
CpuRun run_cpu(const OpInfo& op, const Shape& shape, const backends::cpu::Arithmetic& arithmetic,
               backends::cpu::Summation summation, const Inputs& inputs);

// The same at some output positions only (increasing), for sampled audits of large shapes: only
// the rows (and, for gemm, the columns) those positions need are computed, each exactly as the
// full run computes it; the events are those of the computed outputs.
CpuRun run_cpu_at(const OpInfo& op, const Shape& shape, const backends::cpu::Arithmetic& arithmetic,
                  backends::cpu::Summation summation, const Inputs& inputs,
                  std::span<const std::size_t> positions);

// gemm and dot on a Tensor Core model (backends::cpu::gemm_mma), rounded to `output`; OpError for
// the other ops.
bool runs_on_mma(const OpInfo& op);
// Why `op` cannot run on a Tensor Core model ("softmax has no Tensor Core model (the ops with one:
// gemm, ...)"), or nothing: the check of every command and suite that takes --mma or mma.
std::optional<std::string> why_no_mma(const OpInfo& op);
CpuRun run_cpu_mma(const OpInfo& op, const Shape& shape, const numeric::MmaModel& model,
                   const numeric::Format& output, numeric::Rounding mode, const Inputs& inputs);

// The reference at some output positions: the exact result of the op on the given inputs
// (gemm, dot, sum exactly; the others in multiprecision, correctly rounded by Ziv's strategy),
// rounded to `output` in `mode`, and to the nearest binary64.
struct Reference {
  std::vector<std::size_t> positions;  // increasing
  std::vector<double> rounded;
  std::vector<double> nearest;
};
// All positions when samples == 0 or samples >= the output size; otherwise `samples` positions
// chosen from `seed` (reference::sample_positions).
Reference reference(const OpInfo& op, const Shape& shape, const Inputs& inputs,
                    const numeric::Format& output, numeric::Rounding mode, std::size_t samples,
                    std::uint64_t seed);

// The a-priori absolute error bound of each output position, for the ops that have one: gemm, bmm,
// dot, sum, mean, the gemm and conv2d gradients and conv2d (recursive summation, Higham's Lemma 3.1
// and eq. (3.5), with products rounded to compute, sums to accumulate and the result to output);
// add, mul, fma and cast (one rounding to compute, one to output); empty otherwise. Each includes
// the absolute error underflow may add to every rounding.
std::vector<double> error_bounds(const OpInfo& op, const Shape& shape,
                                 const backends::cpu::Arithmetic& arithmetic,
                                 backends::cpu::Summation summation, const Inputs& inputs,
                                 std::span<const std::size_t> positions);

}  // namespace ampbench::ops
