// The activation family: relu, gelu (erf), gelu_tanh and silu of x + bias, and their backward ops
// (dx from x and dy, without the bias, as autograd saves the activation's input).
#include <numbers>

#include "harness/ops/definition.hpp"
#include "reference/mp/ops.hpp"

namespace ampbench::ops {
namespace {
// The family's own names (a unity build compiles the families as one unit).
namespace activation_family {

using backends::cpu::Arithmetic;
using backends::cpu::Summation;

// The activation of an op or of its backward, in the CPU backend's and in the reference's terms.
backends::cpu::Activation cpu_activation(const OpInfo& op) {
  using A = backends::cpu::Activation;
  switch (op.op) {
    case Op::relu:
    case Op::relu_backward: return A::relu;
    case Op::gelu:
    case Op::gelu_backward: return A::gelu;
    case Op::gelu_tanh:
    case Op::gelu_tanh_backward: return A::gelu_tanh;
    default: return A::silu;
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

std::vector<Operand> x_bias(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {{"x", {s[0], s[1]}}, parameter("bias", {s[1]})};
}
std::vector<Operand> x_dy(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {{"x", {s[0], s[1]}}, {"dy", {s[0], s[1]}}};
}

CpuRun activation_run(const OpInfo& op, const Shape& shape, const Arithmetic& arithmetic, Summation,
                      const Inputs& in) {
  const auto& s = shape.sizes;
  CpuRun run;
  run.output = backends::cpu::bias_activation(arithmetic, cpu_activation(op), values(in, 0), s[0],
                                              s[1], values(in, 1), run.events);
  return run;
}

// Per row, in multiprecision; exp(-v) and erfc(-v / sqrt 2) amplify the error of v by about v^2.
Reference activation_reference(const OpInfo& op, const Shape& shape, const Inputs& in,
                               const numeric::Format& output, numeric::Rounding mode,
                               Reference result, std::uint64_t seed) {
  const std::size_t cols = shape.sizes[1];
  return forward_rows<Real>(
      shape, in, cols, output, mode, std::move(result), seed,
      [&](std::span<const double> row_values) {
        double largest = 0;
        for (const double v : row_values) largest = std::max(largest, std::fabs(v));
        RowEvaluation<Real> made;
        made.bound = static_cast<std::uint64_t>(
            std::min(64.0 + 8.0 * largest * largest + 64.0, static_cast<double>(1u << 31)));
        made.evaluate = [&op, &in, row_values, cols] {
          const std::vector<Real> rx = to_reals(row_values);
          const auto bias = to_reals(values(in, 1));
          const auto f = reference_activation(op);
          std::vector<Real> y;
          y.reserve(cols);
          for (std::size_t c = 0; c < cols; ++c) {
            y.push_back(reference::ops::activate<Real>(f, rx[c] + bias[c]));
          }
          return y;
        };
        return made;
      });
}

CpuRun activation_backward_run(const OpInfo& op, const Shape&, const Arithmetic& arithmetic,
                               Summation, const Inputs& in) {
  CpuRun run;
  run.output = backends::cpu::activation_backward(arithmetic, cpu_activation(op), values(in, 0),
                                                  values(in, 1), run.events);
  return run;
}

// The derivative's cancellation, per element in binary64: gelu: Phi(x) + x phi(x); gelu_tanh:
// (1 + t)/2 + x/2 (1 - t^2) u'(x); silu: 1 + x (1 - s); relu's has none.
double derivative_condition(const OpInfo& op, double v) {
  switch (op.op) {
    case Op::gelu_backward: {
      const double cdf = 0.5 * std::erfc(-v / std::sqrt(2.0));
      const double pdf = std::exp(-0.5 * v * v) / std::sqrt(2.0 * std::numbers::pi);
      return ratio(cdf + std::fabs(v) * pdf, cdf + v * pdf);
    }
    case Op::gelu_tanh_backward: {
      const double t = std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v));
      const double right =
          0.5 * v * (1 - t * t) * std::sqrt(2 / std::numbers::pi) * (1 + 3 * 0.044715 * v * v);
      return ratio(0.5 * (1 + t) + std::fabs(right), 0.5 * (1 + t) + right);
    }
    case Op::silu_backward: {
      const double sig = 1.0 / (1.0 + std::exp(-v));
      return ratio(1.0 + std::fabs(v) * (1.0 - sig), 1.0 + v * (1.0 - sig));
    }
    default: return 1;
  }
}

Reference activation_backward_reference(const OpInfo& op, const Shape& shape, const Inputs& in,
                                        const numeric::Format& output, numeric::Rounding mode,
                                        Reference result, std::uint64_t seed) {
  const auto condition_of = [&](std::size_t, std::span<const double> xr, std::span<const double>) {
    double worst = 1;
    for (const double v : xr) worst = std::max(worst, derivative_condition(op, v));
    return worst;
  };
  const auto evaluate = [&](std::size_t, std::span<const double> xr, std::span<const double> dyr) {
    const auto rx = to_reals(xr);
    const auto rdy = to_reals(dyr);
    return reference::ops::elementwise_backward<Real>(reference_activation(op), rx, rdy);
  };
  return row_backward_reference<Real>(shape, in, true, output, mode, std::move(result), seed,
                                      condition_of, evaluate);
}

constexpr Definition forward(OpInfo info) {
  return {.info = info,
          .operands = x_bias,
          .run = activation_run,
          .sampling = rows_of(1),
          .reference = activation_reference};
}
constexpr Definition backward(OpInfo info) {
  return {.info = info,
          .operands = x_dy,
          .run = activation_backward_run,
          .sampling = rows_of(2),
          .reference = activation_backward_reference};
}

constexpr Definition kActivation[] = {
    forward({Op::relu, "relu", "activation", "RxC", "64x1024", "max(x + bias, 0)", "none"}),
    forward({Op::gelu, "gelu", "activation", "RxC", "64x1024",
             "v/2 (1 + erf(v / sqrt 2)), v = x + bias", "none"}),
    forward({Op::gelu_tanh, "gelu_tanh", "activation", "RxC", "64x1024",
             "v/2 (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), v = x + bias", "none"}),
    forward({Op::silu, "silu", "activation", "RxC", "64x1024", "v / (1 + exp(-v)), v = x + bias",
             "none"}),
    backward({Op::relu_backward, "relu_backward", "activation", "RxC", "64x1024",
              "dx = x <= 0 ? 0 : dy (threshold_backward)", "none", "relu"}),
    backward({Op::gelu_backward, "gelu_backward", "activation", "RxC", "64x1024",
              "dx = dy * (Phi(x) + x phi(x))", "none", "gelu"}),
    backward({Op::gelu_tanh_backward, "gelu_tanh_backward", "activation", "RxC", "64x1024",
              "dx = dy * ((1 + t)/2 + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 0.044715 x^2)), t = "
              "tanh(...)",
              "none", "gelu_tanh"}),
    backward({Op::silu_backward, "silu_backward", "activation", "RxC", "64x1024",
              "dx = dy * s (1 + x (1 - s)), s = 1 / (1 + exp(-x))", "none", "silu"}),
};

}  // namespace activation_family
}  // namespace

std::span<const Definition> activation_ops() {
  return activation_family::kActivation;
}

}  // namespace ampbench::ops
