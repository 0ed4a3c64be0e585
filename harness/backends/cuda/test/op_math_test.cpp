// The per-element math of the CUDA backend's op kernels (kernels/op_math.hpp), on the host: the
// binary32 activations and derivatives against published values and against their definitions
// evaluated in binary64, and the derivatives against central differences of the forward.
#include "kernels/op_math.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <numbers>

namespace ampbench::kernels::op_math {
namespace {

constexpr double kUnit = 0x1p-24;  // binary32's unit roundoff

// The definitions, in binary64.
double exact_gelu(double v) {
  return 0.5 * v * (1 + std::erf(v / std::numbers::sqrt2));
}
double exact_gelu_tanh(double v) {
  const double k = std::sqrt(2 / std::numbers::pi);
  return 0.5 * v * (1 + std::tanh(k * (v + 0.044715 * v * v * v)));
}
double exact_silu(double v) {
  return v / (1 + std::exp(-v));
}
double exact_gelu_derivative(double v) {
  const double pdf = std::exp(-0.5 * v * v) / std::sqrt(2 * std::numbers::pi);
  return 0.5 * (1 + std::erf(v / std::numbers::sqrt2)) + v * pdf;
}
double exact_gelu_tanh_derivative(double v) {
  const double k = std::sqrt(2 / std::numbers::pi);
  const double t = std::tanh(k * (v + 0.044715 * v * v * v));
  return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * k * (1 + 3 * 0.044715 * v * v);
}
double exact_silu_derivative(double v) {
  const double s = 1 / (1 + std::exp(-v));
  return s * (1 + v * (1 - s));
}

struct Case {
  const char* name;
  float (*binary32)(float);
  double (*exact)(double);
};
const Case kForward[] = {{"gelu", gelu, exact_gelu},
                         {"gelu_tanh", gelu_tanh, exact_gelu_tanh},
                         {"silu", silu, exact_silu}};
const Case kDerivative[] = {
    {"gelu_derivative", gelu_derivative, exact_gelu_derivative},
    {"gelu_tanh_derivative", gelu_tanh_derivative, exact_gelu_tanh_derivative},
    {"silu_derivative", silu_derivative, exact_silu_derivative}};

// Values of v on [-10, 10] in steps of 1/64, all binary32 values.
template <typename Check>
void for_each_v(Check check) {
  for (int i = -640; i <= 640; ++i) check(static_cast<float>(i) / 64.0F);
}

TEST(OpMath, ActivationsMatchPublishedValues) {
  // Phi(1) = 0.8413447460685429 (the standard normal CDF), so gelu(1) = Phi(1) and
  // gelu(-1) = -Phi(-1); silu(1) = 1 / (1 + 1/e) = 0.7310585786300049.
  EXPECT_FLOAT_EQ(gelu(1.0F), 0.8413447460685429F);
  EXPECT_FLOAT_EQ(gelu(-1.0F), -0.15865525393145707F);
  EXPECT_FLOAT_EQ(silu(1.0F), 0.7310585786300049F);
  EXPECT_FLOAT_EQ(silu(-1.0F), -0.2689414213699951F);
  EXPECT_FLOAT_EQ(gelu_tanh(1.0F), static_cast<float>(exact_gelu_tanh(1.0)));
  // At 0 every activation is 0 and every derivative 1/2 (relu's: 0, x > 0 only).
  for (const Case& c : kForward) EXPECT_EQ(c.binary32(0.0F), 0.0F) << c.name;
  for (const Case& c : kDerivative) EXPECT_EQ(c.binary32(0.0F), 0.5F) << c.name;
  // gelu'(1) = Phi(1) + phi(1) = 0.8413447460685429 + 0.24197072451914337.
  EXPECT_FLOAT_EQ(gelu_derivative(1.0F), 1.0833154705876863F);
}

// The step-by-step binary32 evaluation stays within a few unit roundoffs of the binary64
// definition, relative to the result plus |v| + 1: the second term is the cancellation in 1 +
// erf(.) and 1 + tanh(.) for negative v, where an error of u in erf or tanh becomes an absolute
// error of about u |v| / 2. A wrong constant (0.0447 for 0.044715) or formula is far outside it.
TEST(OpMath, Binary32EvaluationStaysCloseToTheDefinition) {
  for (const auto* cases : {&kForward, &kDerivative}) {
    for (const Case& c : *cases) {
      for_each_v([&](float v) {
        const double exact = c.exact(v);
        const double tolerance =
            8 * kUnit * (std::fabs(exact) + std::fabs(static_cast<double>(v)) + 1);
        EXPECT_NEAR(c.binary32(v), exact, tolerance) << c.name << "(" << v << ")";
      });
    }
  }
}

// The derivatives are those of the forward functions: central differences of the binary64
// definitions, with h = 2^-14 (truncation error h^2 |f'''| / 6, below 1e-8 here).
TEST(OpMath, DerivativesAreThoseOfTheForwardFunctions) {
  constexpr double h = 0x1p-14;
  for (std::size_t i = 0; i < std::size(kForward); ++i) {
    for_each_v([&](float v) {
      const double x = v;
      const double difference = (kForward[i].exact(x + h) - kForward[i].exact(x - h)) / (2 * h);
      EXPECT_NEAR(kDerivative[i].exact(x), difference, 1e-8)
          << kDerivative[i].name << "(" << v << ")";
    });
  }
}

// binary32 a op b, correctly rounded: the binary64 result of two binary32 values rounded once more
// (binary64 has more than twice binary32's precision, so the double rounding is innocuous).
float product32(float a, float b) {
  return static_cast<float>(static_cast<double>(a) * static_cast<double>(b));
}
float sum32(float a, float b) {
  return static_cast<float>(static_cast<double>(a) + static_cast<double>(b));
}

// Attention's backward as the CPU backend's emulation rounds it in binary32
// (attention_backward.cpp): D = the products dO_t O_t added in order from the first, and
// dS = P (dP - D), every step rounded, no fused multiply-add.
TEST(OpMath, AttentionsScoreGradientRoundsEveryStepInTheEmulationsOrder) {
  const float d_out[] = {0.3F, -1.7F, 2.25F, 1e-3F, -0.6F, 7.5F};
  const float o[] = {1.1F, 0.45F, -0.35F, 3e4F, 0.2F, -0.015F};
  float expected = product32(d_out[0], o[0]);
  for (std::size_t t = 1; t < 6; ++t) expected = sum32(expected, product32(d_out[t], o[t]));
  const float row_sum = ordered_sum(6, [&](std::size_t t) { return d_out[t] * o[t]; });
  EXPECT_EQ(row_sum, expected);
  // 1 + 2^-24 + 2^-24 is 1 in this order (each addition a tie, to even) and 1 + 2^-23 backwards:
  // the order is the emulation's.
  const float small[] = {1.0F, 0x1p-24F, 0x1p-24F};
  EXPECT_EQ(ordered_sum(3, [&](std::size_t t) { return small[t]; }), 1.0F);
  EXPECT_EQ(ordered_sum(0, [](std::size_t) { return 1.0F; }), 0.0F);
  for (const float p : {0.3F, 1e-7F, 0.999F}) {
    for (const float dp : {row_sum, 31.4F, -2.7e-3F}) {
      EXPECT_EQ(score_gradient(p, dp, row_sum), product32(p, sum32(dp, -row_sum)));
    }
  }
}

TEST(OpMath, ReluKeepsNanAndGivesPositiveZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(relu(nan)));
  EXPECT_EQ(relu(inf), inf);
  EXPECT_EQ(relu(-inf), 0.0F);
  EXPECT_FALSE(std::signbit(relu(-0.0F)));
  EXPECT_EQ(relu(0x1p-149F), 0x1p-149F);
  EXPECT_EQ(relu(-2.5F), 0.0F);
}

// threshold_backward's select, where a product with the derivative would differ.
TEST(OpMath, ReluBackwardSelectsAsThresholdBackward) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(relu_backward(2.0F, -3.5F), -3.5F);
  EXPECT_EQ(relu_backward(0x1p-149F, inf), inf);
  EXPECT_EQ(relu_backward(-1.0F, inf), 0.0F) << "0, not inf * 0 = NaN";
  EXPECT_EQ(relu_backward(0.0F, -inf), 0.0F);
  EXPECT_FALSE(std::signbit(relu_backward(-1.0F, -2.0F))) << "+0, not -2 * 0 = -0";
  EXPECT_FALSE(std::signbit(relu_backward(-0.0F, -2.0F)));
  EXPECT_EQ(relu_backward(nan, 1.5F), 1.5F) << "NaN <= 0 is false: dy passes";
  EXPECT_TRUE(std::isnan(relu_backward(1.0F, nan)));
}

TEST(OpMath, LargeArgumentsSaturateWithoutNan) {
  for (const float v : {-1e30F, -100.0F, 100.0F, 1e30F}) {
    for (const Case& c : kForward) EXPECT_FALSE(std::isnan(c.binary32(v))) << c.name << v;
  }
  EXPECT_EQ(gelu(100.0F), 100.0F);
  EXPECT_EQ(gelu(-100.0F), -0.0F);
  EXPECT_EQ(silu(-1e30F), -0.0F);
  EXPECT_EQ(gelu_derivative(100.0F), 1.0F);
}

// The row maximum propagates NaN in either operand, as PyTorch's max does; fmaxf would drop it.
TEST(OpMath, MaxPropagatesNaNFromEitherSide) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(max_propagating_nan(nan, 1.0F)));
  EXPECT_TRUE(std::isnan(max_propagating_nan(1.0F, nan)));
  EXPECT_TRUE(std::isnan(max_propagating_nan(-inf, nan)));
  EXPECT_TRUE(std::isnan(max_propagating_nan(nan, inf)));
  EXPECT_TRUE(std::isnan(max_propagating_nan(inf, nan)));
  EXPECT_FALSE(std::isnan(std::fmax(-inf, nan)));  // what the kernels used before
  EXPECT_EQ(max_propagating_nan(-inf, 2.0F), 2.0F);
  EXPECT_EQ(max_propagating_nan(3.0F, -1.0F), 3.0F);
  EXPECT_EQ(max_propagating_nan(inf, 1e30F), inf);
  // A row folded from -inf as the kernels fold it: NaN wherever it stands.
  for (std::size_t at = 0; at < 4; ++at) {
    float m = -inf;
    for (std::size_t i = 0; i < 4; ++i) m = max_propagating_nan(m, i == at ? nan : 1.0F);
    EXPECT_TRUE(std::isnan(m)) << "NaN at " << at;
  }
  EXPECT_TRUE(std::isnan(max_propagating_nan(0.5, std::numeric_limits<double>::quiet_NaN())));
}

}  // namespace
}  // namespace ampbench::kernels::op_math
