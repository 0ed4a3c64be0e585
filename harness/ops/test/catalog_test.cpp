// The op catalog: shapes and their errors, operands, and for every op the agreement of two
// independent computations — the CPU emulation in binary64 and the multiprecision or exact
// reference — and the a-priori bounds holding for emulated low-precision results.
#include "harness/ops/catalog.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

#include "harness/metrics/metrics.hpp"
#include "reference/exact/dot.hpp"

namespace ampbench::ops {
namespace {

namespace formats = numeric::formats;
using backends::cpu::Arithmetic;
using backends::cpu::Summation;

// A convolution with every option away from its default: out 3 x 9 from 7 x 6.
constexpr const char* kSmallConvolution = "2x4x7x6:6x3x2,stride=2x1,pad=1x2,dilation=2x1,groups=2";

std::string shape_error(std::string_view op, std::string_view text) {
  try {
    parse_shape(*find_op(op), text);
  } catch (const OpError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Shapes, ParseAndReportErrors) {
  EXPECT_EQ(parse_shape(*find_op("gemm"), "64x32x16").sizes,
            (std::vector<std::size_t>{64, 32, 16}));
  EXPECT_EQ(to_string(parse_shape(*find_op("softmax"), "8x1024")), "8x1024");
  EXPECT_EQ(shape_error("gemm", "64x64"), "gemm shape '64x64': expected MxNxK (3 sizes), got 2");
  EXPECT_EQ(shape_error("softmax", "8xx4"),
            "softmax shape '8xx4': '' is not a positive size (expected RxC)");
  EXPECT_EQ(shape_error("dot", "0"), "dot shape '0': '0' is not a positive size (expected N)");
  EXPECT_EQ(shape_error("dot", "-3"), "dot shape '-3': '-3' is not a positive size (expected N)");
  EXPECT_NE(shape_error("gemm", "100000x100000x100000").find("too large"), std::string::npos);
  EXPECT_EQ(find_op("conv9d"), nullptr);
  // Batch norm's training statistics need two values per channel (PyTorch refuses one).
  EXPECT_EQ(shape_error("batch_norm", "1x4"),
            "batch_norm shape '1x4': batch norm in training needs more than 1 value per channel "
            "(N >= 2)");
  EXPECT_EQ(to_string(parse_shape(*find_op("batch_norm"), "2x1")), "2x1");
  for (const auto& op : catalog()) {
    EXPECT_NO_THROW(parse_shape(op, op.default_shape)) << op.name;
  }
}

TEST(Shapes, OnlyTheMatrixOpsHaveTensorCoreModels) {
  for (const auto& op : catalog()) {
    EXPECT_EQ(why_no_mma(op).has_value(), !runs_on_mma(op)) << op.name;
  }
  EXPECT_EQ(why_no_mma(*find_op("softmax")),
            "softmax has no Tensor Core model (the ops with one: gemm, bmm, dot, gemm_backward_a, "
            "gemm_backward_b, conv2d, conv2d_backward_data, conv2d_backward_filter, linear)");
  EXPECT_FALSE(why_no_mma(*find_op("bmm")).has_value());
}

TEST(Shapes, ConvolutionOptionsParseAndReportErrors) {
  const auto& conv = *find_op("conv2d");
  EXPECT_EQ(to_string(parse_shape(conv, kSmallConvolution)), kSmallConvolution);
  EXPECT_EQ(to_string(parse_shape(conv, "1x2x5x5:3x3x3,stride=1,pad=0,groups=1")), "1x2x5x5:3x3x3");
  const auto o = operands(conv, parse_shape(conv, kSmallConvolution));
  EXPECT_EQ(o[1].shape, (std::vector<std::size_t>{6, 2, 3, 2}));  // w: O x C/groups x R x S
  EXPECT_EQ(output_shape(conv, parse_shape(conv, kSmallConvolution)),
            (std::vector<std::size_t>{2, 6, 3, 9}));
  EXPECT_EQ(output_shape(*find_op("conv2d_backward_filter"), parse_shape(conv, kSmallConvolution)),
            (std::vector<std::size_t>{6, 2, 3, 2}));
  const std::string expected =
      " (expected NxCxHxW:KxRxS[,stride=A][,pad=A][,dilation=A][,groups=G], A one size or HxW)";
  EXPECT_EQ(shape_error("conv2d", "1x2x5x5x3x3"),
            "conv2d shape '1x2x5x5x3x3': no ':' between the image and the filters" + expected);
  EXPECT_EQ(shape_error("conv2d", "1x2x5:3x3x3"),
            "conv2d shape '1x2x5:3x3x3': '1x2x5' has 3 sizes where 4 are needed" + expected);
  EXPECT_EQ(
      shape_error("conv2d", "1x2x5x5:3x3x3,stride=0"),
      "conv2d shape '1x2x5x5:3x3x3,stride=0': stride '0' is not a positive size or HxW" + expected);
  EXPECT_EQ(shape_error("conv2d", "1x2x5x5:3x3x3,padding=1"),
            "conv2d shape '1x2x5x5:3x3x3,padding=1': unknown option 'padding=1'" + expected);
  EXPECT_EQ(shape_error("conv2d", "1x2x5x5:3x3x3,groups=2"),
            "conv2d shape '1x2x5x5:3x3x3,groups=2': 2 channels and 3 filters are not both "
            "divisible by 2 groups" +
                expected);
  EXPECT_EQ(shape_error("conv2d", "1x2x5x5:3x7x3"),
            "conv2d shape '1x2x5x5:3x7x3': the 7x3 kernel (dilation 1) does not fit the 5x5 image "
            "padded by 0" +
                expected);
  EXPECT_NE(shape_error("conv2d", "8x64x128x128:64x7x7,pad=3").find("im2col"), std::string::npos);
}

TEST(Operands, NamesAndShapes) {
  const auto& gemm = *find_op("gemm");
  const auto o = operands(gemm, parse_shape(gemm, "4x3x2"));
  ASSERT_EQ(o.size(), 3u);
  EXPECT_EQ(o[0].shape, (std::vector<std::size_t>{4, 2}));
  EXPECT_EQ(o[1].shape, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(o[2].name, "c");
  EXPECT_TRUE(o[2].optional);
  EXPECT_EQ(o[2].shape, (std::vector<std::size_t>{4, 3}));
  EXPECT_EQ(output_shape(gemm, parse_shape(gemm, "4x3x2")), (std::vector<std::size_t>{4, 3}));
  const auto& ce = *find_op("cross_entropy");
  const auto c = operands(ce, parse_shape(ce, "5x7"));
  EXPECT_TRUE(c[1].is_index);
  EXPECT_EQ(c[1].index_limit, 7u);
}

// Seeded inputs: normal values rounded to `f`, indices uniform below their limit.
Inputs make_inputs(const OpInfo& op, const Shape& shape, const numeric::Format& f,
                   std::uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  Inputs in;
  for (const auto& operand : operands(op, shape)) {
    const std::size_t n = element_count(operand.shape);
    std::vector<double> v;
    std::vector<std::int64_t> idx;
    if (operand.is_index) {
      for (std::size_t i = 0; i < n; ++i) {
        idx.push_back(static_cast<std::int64_t>(rng() % operand.index_limit));
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        v.push_back(numeric::round_to(f, numeric::Rounding::nearest_even, normal(rng)).value);
      }
    }
    in.values.push_back(std::move(v));
    in.indices.push_back(std::move(idx));
  }
  return in;
}

// A small shape of the op's syntax: three sizes, one, or two (bmm: three batches of `three`;
// convolutions: kSmallConvolution).
std::string small_shape(const OpInfo& op, const char* three, const char* one, const char* two) {
  if (op.shape_syntax == "NxCxHxW:KxRxS") return kSmallConvolution;
  if (op.shape_syntax.size() == 7) return std::string("3x") + three;
  if (op.shape_syntax.size() == 5) return three;
  return op.shape_syntax.size() == 1 ? one : two;
}

Arithmetic all(const numeric::Format& f) {
  return Arithmetic{f, f, f};
}

// The binary64 emulation and the reference agree to within a few binary64 ulps on every op whose
// emulated formula does not cancel: two independent computations of the same function. (GELU's
// formulas, and its derivatives' Phi(x) = (1 + erf(x / sqrt 2)) / 2 and (1 + tanh u) / 2, cancel
// for negative inputs, as the kernels they model do: see the next test.)
TEST(Catalog, Binary64EmulationAgreesWithTheReference) {
  for (const auto& op : catalog()) {
    if (op.op == Op::gelu || op.op == Op::gelu_tanh || op.op == Op::gelu_backward ||
        op.op == Op::gelu_tanh_backward) {
      continue;
    }
    SCOPED_TRACE(op.name);
    const Shape shape = parse_shape(op, small_shape(op, "6x5x40", "300", "3x50"));
    const Inputs in = make_inputs(op, shape, formats::fp32, 11, 2.0);
    const CpuRun run = run_cpu(op, shape, all(formats::fp64), Summation::sequential, in);
    const Reference ref =
        reference(op, shape, in, formats::fp64, numeric::Rounding::nearest_even, 0, 0);
    ASSERT_EQ(ref.rounded.size(), run.output.size());
    const metrics::ErrorSummary summary =
        metrics::summarize(formats::fp64, run.output, ref.rounded, ref.nearest);
    EXPECT_EQ(summary.compared, run.output.size());
    // Sums of up to 300 terms with cancellation, exp and erf within a few ulps: 2^12 ulps of
    // binary64 is a generous envelope that still catches any wrong formula (errors of 2^40+).
    EXPECT_LE(*summary.max_ulp, 4096u) << "max ulp error " << *summary.max_ulp;
    EXPECT_LT(*summary.normwise_rel_error, 1e-12);
  }
}

// GELU as kernels write it, v/2 (1 + erf(v / sqrt 2)), cancels for negative v: at v = -5 the sum
// 1 + erf(-3.54) = 5.7e-7 keeps only the bits of erf below 2^-21. The reference (written with
// erfc) does not; the audit reports the emulated kernel's error, which grows with -v.
TEST(Catalog, GeluCancelsForNegativeInputsAsItsKernelFormulaDoes) {
  const auto& op = *find_op("gelu");
  const Shape shape = parse_shape(op, "1x3");
  Inputs in;
  in.values = {{-1.0, -5.0, -8.0}, {0.0, 0.0, 0.0}};
  in.indices = {{}, {}};
  const auto run = run_cpu(op, shape, all(formats::fp32), Summation::sequential, in);
  const auto ref = reference(op, shape, in, formats::fp32, numeric::Rounding::nearest_even, 0, 0);
  const auto relative = [&](std::size_t i) {
    return std::fabs(run.output[i] - ref.nearest[i]) / std::fabs(ref.nearest[i]);
  };
  EXPECT_LT(relative(0), 1e-6);  // 1 + erf(-0.71) = 0.32: nothing lost
  EXPECT_GT(relative(1), 1e-3);  // 2^-24 / 5.7e-7: about 3% of the result is rounding noise
  EXPECT_NEAR(ref.nearest[1], -5.0 / 2 * std::erfc(5.0 / std::sqrt(2.0)), 1e-20);
  // At v = -8, 1 + erf(-5.66) is 1.2e-15, below half an fp32 ulp of 1: the kernel returns -0.
  EXPECT_EQ(run.output[2], 0.0);
  EXPECT_LT(ref.nearest[2], -1e-15);
}

TEST(Catalog, SampledReferenceIsTheFullReferenceAtThosePositions) {
  for (const char* name : {"gemm", "softmax", "gelu", "logsumexp"}) {
    const auto& op = *find_op(name);
    const Shape shape = parse_shape(op, op.shape_syntax == "MxNxK" ? "8x9x10" : "6x20");
    const Inputs in = make_inputs(op, shape, formats::bf16, 3);
    const Reference full =
        reference(op, shape, in, formats::bf16, numeric::Rounding::nearest_even, 0, 0);
    const std::size_t samples = op.op == Op::logsumexp ? 4 : 17;  // logsumexp has 6 outputs
    const Reference some =
        reference(op, shape, in, formats::bf16, numeric::Rounding::nearest_even, samples, 5);
    ASSERT_EQ(some.positions.size(), samples) << name;
    for (std::size_t i = 0; i < some.positions.size(); ++i) {
      EXPECT_EQ(some.rounded[i], full.rounded[some.positions[i]]) << name;
      EXPECT_EQ(some.nearest[i], full.nearest[some.positions[i]]) << name;
    }
  }
}

// A sampled run computes exactly the full run's values at the sampled positions.
TEST(Catalog, RunAtPositionsEqualsTheFullRunThere) {
  for (const auto& op : catalog()) {
    SCOPED_TRACE(op.name);
    const Shape shape = parse_shape(op, small_shape(op, "12x9x33", "100", "10x24"));
    const Inputs in = make_inputs(op, shape, formats::bf16, 8);
    const std::size_t outputs = element_count(output_shape(op, shape));
    const auto positions =
        reference::sample_positions(outputs, std::min<std::size_t>(outputs, 7), 3);
    for (const auto& arithmetic :
         {all(formats::bf16), Arithmetic{formats::fp32, formats::fp32, formats::bf16}}) {
      const CpuRun full = run_cpu(op, shape, arithmetic, Summation::sequential, in);
      const CpuRun some = run_cpu_at(op, shape, arithmetic, Summation::sequential, in, positions);
      ASSERT_EQ(some.output.size(), outputs == 1 ? 1u : positions.size());
      for (std::size_t i = 0; i < positions.size() && outputs > 1; ++i) {
        EXPECT_EQ(some.output[i], full.output[positions[i]]) << i;
      }
    }
  }
}

// The emulated low-precision sums stay within their a-priori bound. Lengths keep n u < 1, where the
// bound says something; stagnating sums of ones come within a small factor of it.
TEST(Catalog, LowPrecisionSumsStayWithinTheirBounds) {
  struct Case {
    const char* op;
    const char* shape;
    Arithmetic arithmetic;
    Summation summation;
  };
  const Case cases[] = {
      {"gemm", "16x16x512", all(formats::fp16), Summation::sequential},
      {"gemm", "16x16x512", all(formats::bf16), Summation::pairwise},
      {"gemm", "16x16x512", Arithmetic{formats::fp16, formats::fp32, formats::fp16},
       Summation::sequential},
      {"dot", "1000", all(formats::fp16), Summation::sequential},
      {"sum", "200", all(formats::bf16), Summation::sequential},
      {"mean", "100000", all(formats::fp32), Summation::sequential},
      {"linear", "16x16x512", all(formats::fp16), Summation::sequential},
      {"linear", "16x16x512", Arithmetic{formats::bf16, formats::fp32, formats::bf16},
       Summation::sequential},
      {"linear_backward_bias", "200x12", all(formats::bf16), Summation::sequential},
      // mean_pool sums in order whatever the summation asked for: its bound is the sequential one.
      {"mean_pool", "8x1000", all(formats::fp16), Summation::pairwise},
      {"mean_pool_backward", "9x30", all(formats::bf16), Summation::sequential},
      {"batch_norm_backward_beta", "200x6", all(formats::bf16), Summation::sequential},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.op) + " " + c.shape);
    const auto& op = *find_op(c.op);
    const Shape shape = parse_shape(op, c.shape);
    const Inputs in = make_inputs(op, shape, c.arithmetic.compute, 21);
    const CpuRun run = run_cpu(op, shape, c.arithmetic, c.summation, in);
    const Reference ref = reference(op, shape, in, c.arithmetic.output, c.arithmetic.mode, 0, 0);
    const auto bounds = error_bounds(op, shape, c.arithmetic, c.summation, in, ref.positions);
    ASSERT_EQ(bounds.size(), ref.positions.size());
    const metrics::ErrorSummary summary = metrics::summarize(
        c.arithmetic.output, run.output, ref.rounded, ref.nearest, {bounds, std::nullopt});
    ASSERT_TRUE(summary.bound_ratio.has_value());
    EXPECT_LE(*summary.bound_ratio, 1.0);
  }
  // 1024 ones summed in bf16 stop at 256 (256 + 1 is a tie that rounds to even), an error of 768
  // against a bound of
  // ((1 + 2^-8)^1023 - 1) * 1024 + (output rounding): a ratio of about 1/70.
  const auto& sum = *find_op("sum");
  const Shape shape = parse_shape(sum, "1024");
  Inputs ones;
  ones.values = {std::vector<double>(1024, 1.0)};
  ones.indices = {{}};
  const auto run = run_cpu(sum, shape, all(formats::bf16), Summation::sequential, ones);
  EXPECT_EQ(run.output[0], 256.0);
  const auto ref =
      reference(sum, shape, ones, formats::bf16, numeric::Rounding::nearest_even, 0, 0);
  const auto bounds =
      error_bounds(sum, shape, all(formats::bf16), Summation::sequential, ones, ref.positions);
  const double ratio = 768.0 / bounds[0];
  EXPECT_GT(ratio, 1.0 / 100);
  EXPECT_LT(ratio, 1.0);
}

// The convolution and its gradients against their definitions, on small integers (every sum exact
// in binary64): the forward pass against the 7-deep loop of the definition, written here from
// scratch; the two gradients through the adjoint identities <conv(x, w), dy> = <x, dx(dy, w)> =
// <w, dw(x, dy)>, which hold exactly for integers and fail for any misplaced tap.
TEST(Catalog, ConvolutionAndItsGradientsMatchTheirDefinitions) {
  for (const char* text : {kSmallConvolution, "2x3x5x5:4x3x3,pad=1", "1x4x9x8:4x3x3,stride=3",
                           "3x6x6x7:9x2x3,dilation=2x1,groups=3"}) {
    SCOPED_TRACE(text);
    const auto& forward = *find_op("conv2d");
    const Shape shape = parse_shape(forward, text);
    const auto& sz = shape.sizes;  // N C H W O R S sh sw ph pw dh dw groups
    std::mt19937_64 rng(7);
    const auto integers = [&](std::size_t n) {
      std::vector<double> v(n);
      for (auto& e : v) e = static_cast<double>(static_cast<int>(rng() % 9) - 4);
      return v;
    };
    const auto outputs = output_shape(forward, shape);
    const std::size_t oh = outputs[2], ow = outputs[3];
    const std::size_t cg = sz[1] / sz[13], og = sz[4] / sz[13];
    const auto x = integers(sz[0] * sz[1] * sz[2] * sz[3]);
    const auto w = integers(sz[4] * cg * sz[5] * sz[6]);
    const auto dy = integers(element_count(outputs));
    std::vector<double> y(element_count(outputs), 0.0);
    for (std::size_t n = 0; n < sz[0]; ++n) {
      for (std::size_t o = 0; o < sz[4]; ++o) {
        for (std::size_t i = 0; i < oh; ++i) {
          for (std::size_t j = 0; j < ow; ++j) {
            double total = 0;
            for (std::size_t c = 0; c < cg; ++c) {
              for (std::size_t r = 0; r < sz[5]; ++r) {
                for (std::size_t t = 0; t < sz[6]; ++t) {
                  const auto h =
                      static_cast<long>(i * sz[7] + r * sz[11]) - static_cast<long>(sz[9]);
                  const auto v =
                      static_cast<long>(j * sz[8] + t * sz[12]) - static_cast<long>(sz[10]);
                  if (h < 0 || v < 0 || h >= static_cast<long>(sz[2]) ||
                      v >= static_cast<long>(sz[3])) {
                    continue;
                  }
                  const std::size_t channel = (o / og) * cg + c;
                  total += x[((n * sz[1] + channel) * sz[2] + static_cast<std::size_t>(h)) * sz[3] +
                             static_cast<std::size_t>(v)] *
                           w[((o * cg + c) * sz[5] + r) * sz[6] + t];
                }
              }
            }
            y[((n * sz[4] + o) * oh + i) * ow + j] = total;
          }
        }
      }
    }
    const auto run = [&](const char* op, std::vector<std::vector<double>> values) {
      Inputs in;
      in.values = std::move(values);
      in.indices.resize(in.values.size());
      const auto ref =
          reference(*find_op(op), shape, in, formats::fp64, numeric::Rounding::nearest_even, 0, 0);
      const auto emulated =
          run_cpu(*find_op(op), shape, all(formats::fp64), Summation::sequential, in);
      EXPECT_EQ(emulated.output, ref.rounded) << op;
      return ref.rounded;
    };
    EXPECT_EQ(run("conv2d", {x, w}), y);
    const auto dx = run("conv2d_backward_data", {dy, w});
    const auto dw = run("conv2d_backward_filter", {x, dy});
    const auto inner = [](const std::vector<double>& a, const std::vector<double>& b) {
      double total = 0;
      for (std::size_t i = 0; i < a.size(); ++i) total += a[i] * b[i];
      return total;
    };
    EXPECT_EQ(inner(y, dy), inner(x, dx));
    EXPECT_EQ(inner(y, dy), inner(w, dw));
    EXPECT_NE(inner(y, dy), 0.0);
  }
}

// The fused multiply-add rounds once: the emulation (binary64 with rounding to odd) equals the
// exact result correctly rounded, on random fp32 and fp16 triples whose sums cancel, tie or
// underflow, where rounding the product first would differ.
TEST(Catalog, FmaRoundsOnceToItsComputeFormat) {
  const auto& op = *find_op("fma");
  const Shape shape = parse_shape(op, "100x200");
  for (const auto& f : {formats::fp32, formats::fp16, formats::bf16}) {
    SCOPED_TRACE(f.name);
    std::mt19937_64 rng(17);
    std::uniform_real_distribution<double> unit(1.0, 2.0);
    std::uniform_int_distribution<int> exponent(f.emin - 2, 4);
    Inputs in;
    in.values.assign(3, {});
    in.indices.assign(3, {});
    const auto value = [&](int e) {
      const double sign = rng() % 2 ? -1.0 : 1.0;
      return numeric::round_to(f, numeric::Rounding::nearest_even, sign * std::ldexp(unit(rng), e))
          .value;
    };
    for (std::size_t i = 0; i < 20000; ++i) {
      const int ex = exponent(rng) / 2, ey = exponent(rng) / 2;
      const double x = value(ex), y = value(ey);
      in.values[0].push_back(x);
      in.values[1].push_back(y);
      // z near -x y (cancellation), or well apart.
      in.values[2].push_back(i % 2 ? numeric::round_to(f, numeric::Rounding::nearest_even,
                                                       -x * y * (1 + std::ldexp(unit(rng), -12)))
                                         .value
                                   : value(ex + ey + static_cast<int>(rng() % 30) - 15));
    }
    // The hard cases: x y a tie of the format, z far below it. The exact sum lies just above the
    // tie and rounds up; binary64 rounds it to the tie first, which then rounds to even (down),
    // unless the sum is rounded to odd. fp16's range is too narrow for binary64 to round at all.
    if (f.precision != formats::fp16.precision) {
      const double x = 1 + std::ldexp(1.0, -(f.precision + 1) / 2);  // x^2 = 1 + 2x + tie bit
      for (std::size_t i = 0; i < 4; ++i) {
        in.values[0][i] = i % 2 ? -x : x;
        in.values[1][i] = x;
        in.values[2][i] = (i % 2 ? -1.0 : 1.0) * std::ldexp(1.0, f.emin + 10) * (i < 2 ? 1 : 3);
      }
    }
    const Arithmetic arithmetic = all(f);
    const CpuRun run = run_cpu(op, shape, arithmetic, Summation::sequential, in);
    const Reference ref = reference(op, shape, in, f, numeric::Rounding::nearest_even, 0, 0);
    EXPECT_EQ(run.output, ref.rounded);
    std::size_t double_rounding_differs = 0;
    for (std::size_t i = 0; i < run.output.size(); ++i) {
      const double product =
          numeric::round_to(f, numeric::Rounding::nearest_even, in.values[0][i] * in.values[1][i])
              .value;
      const double unfused =
          numeric::round_to(f, numeric::Rounding::nearest_even, product + in.values[2][i]).value;
      double_rounding_differs += unfused != ref.rounded[i];
    }
    EXPECT_GT(double_rounding_differs, 1000u);  // the test tells a fused step from an unfused one
  }
}

// Elementwise ops and convolutions under low precision stay within their a-priori bounds.
TEST(Catalog, ElementwiseAndConvolutionResultsStayWithinTheirBounds) {
  const Arithmetic amp{formats::fp32, formats::fp32, formats::fp16};
  for (const char* name :
       {"add", "mul", "fma", "cast", "conv2d", "conv2d_backward_data", "conv2d_backward_filter"}) {
    for (const Arithmetic& arithmetic : {all(formats::fp16), all(formats::bf16), amp}) {
      SCOPED_TRACE(std::string(name) + " to " + arithmetic.output.name);
      const auto& op = *find_op(name);
      const Shape shape =
          parse_shape(op, op.shape_syntax == "RxC" ? "40x50" : "2x8x9x9:8x3x3,pad=1");
      // A cast reads fp32 data.
      const Inputs in =
          make_inputs(op, shape, op.op == Op::cast ? formats::fp32 : arithmetic.compute, 23, 1e-3);
      const CpuRun run = run_cpu(op, shape, arithmetic, Summation::sequential, in);
      const Reference ref = reference(op, shape, in, arithmetic.output, arithmetic.mode, 0, 0);
      const auto bounds =
          error_bounds(op, shape, arithmetic, Summation::sequential, in, ref.positions);
      ASSERT_EQ(bounds.size(), ref.positions.size());
      const metrics::ErrorSummary summary = metrics::summarize(
          arithmetic.output, run.output, ref.rounded, ref.nearest, {bounds, std::nullopt});
      ASSERT_TRUE(summary.bound_ratio.has_value());
      EXPECT_LE(*summary.bound_ratio, 1.0);
      EXPECT_GT(*summary.bound_ratio, 0.0);
    }
  }
}

// Infinite inputs (log-uniform and near-overflow distributions reach them) make a term inf * 0:
// no bound applies to the inf or NaN output, and the bound says so with +inf rather than NaN.
TEST(Catalog, BoundsOfNonFiniteInputsAreInfinite) {
  const auto& gemm = *find_op("gemm");
  const Shape shape = parse_shape(gemm, "1x1x2");
  Inputs in;
  in.values = {{std::numeric_limits<double>::infinity(), 1.0}, {0.0, 2.0}, {}};
  in.indices = {{}, {}, {}};
  const std::vector<std::size_t> positions{0};
  const auto bounds =
      error_bounds(gemm, shape, all(formats::fp32), Summation::sequential, in, positions);
  ASSERT_EQ(bounds.size(), 1u);
  EXPECT_EQ(bounds[0], std::numeric_limits<double>::infinity());
}

TEST(Catalog, SoftmaxUnderPureFp16LosesAccuracyThatFp32ComputeKeeps) {
  const auto& op = *find_op("softmax");
  const Shape shape = parse_shape(op, "8x512");
  const Inputs in = make_inputs(op, shape, formats::fp16, 5, 4.0);
  const Arithmetic pure = all(formats::fp16);
  const Arithmetic amp{formats::fp32, formats::fp32, formats::fp32};
  const auto low = run_cpu(op, shape, pure, Summation::sequential, in);
  const auto wide = run_cpu(op, shape, amp, Summation::sequential, in);
  const auto ref16 = reference(op, shape, in, formats::fp16, numeric::Rounding::nearest_even, 0, 0);
  const auto ref32 = reference(op, shape, in, formats::fp32, numeric::Rounding::nearest_even, 0, 0);
  const auto s16 = metrics::summarize(formats::fp16, low.output, ref16.rounded, ref16.nearest);
  const auto s32 = metrics::summarize(formats::fp32, wide.output, ref32.rounded, ref32.nearest);
  EXPECT_GT(*s16.normwise_rel_error, 100 * *s32.normwise_rel_error);
  EXPECT_LT(*s32.max_ulp, 64u);  // a few fp32 roundings per element
}

// The next test, for one output format.
void attention_backward_in_fp32_is_its_documented_rounding_order(const numeric::Format& output) {
  const std::size_t queries = 5, keys = 7, d = 6;
  const auto& op_q = *find_op("attention_backward_q");
  const Shape shape = parse_shape(op_q, "5x7x6");
  const Inputs in = make_inputs(op_q, shape, output, 41, 1.5);
  const auto to_output = [&](float x) {
    return static_cast<float>(numeric::round_to(output, numeric::Rounding::nearest_even, x).value);
  };
  const auto f = [&](std::size_t operand) {
    std::vector<float> r;
    for (const double x : in.values.at(operand)) r.push_back(static_cast<float>(x));
    return r;
  };
  const auto q = f(0), k = f(1), v = f(2), d_out = f(3);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::vector<float> p(queries * keys), ds(queries * keys), dq(queries * d), dk(keys * d),
      dv(keys * d);
  for (std::size_t i = 0; i < queries; ++i) {
    std::vector<float> scores(keys), e(keys), o(d, 0.0f);
    for (std::size_t j = 0; j < keys; ++j) {
      float dot = q[i * d] * k[j * d];
      for (std::size_t t = 1; t < d; ++t) dot += q[i * d + t] * k[j * d + t];
      scores[j] = dot * scale;
    }
    const float top = *std::max_element(scores.begin(), scores.end());
    float total = 0.0f;
    for (std::size_t j = 0; j < keys; ++j) {
      e[j] = static_cast<float>(std::exp(static_cast<double>(scores[j] - top)));
      total = j == 0 ? e[0] : total + e[j];
    }
    for (std::size_t j = 0; j < keys; ++j) p[i * keys + j] = e[j] / total;
    for (std::size_t t = 0; t < d; ++t) {
      o[t] = p[i * keys] * v[t];
      for (std::size_t j = 1; j < keys; ++j) o[t] += p[i * keys + j] * v[j * d + t];
      o[t] = to_output(o[t]);
    }
    float row_sum = d_out[i * d] * o[0];
    for (std::size_t t = 1; t < d; ++t) row_sum += d_out[i * d + t] * o[t];
    for (std::size_t j = 0; j < keys; ++j) {
      float dp = d_out[i * d] * v[j * d];
      for (std::size_t t = 1; t < d; ++t) dp += d_out[i * d + t] * v[j * d + t];
      ds[i * keys + j] = p[i * keys + j] * (dp - row_sum);
    }
    for (std::size_t t = 0; t < d; ++t) {
      float total_t = ds[i * keys] * k[t];
      for (std::size_t j = 1; j < keys; ++j) total_t += ds[i * keys + j] * k[j * d + t];
      dq[i * d + t] = to_output(total_t * scale);
    }
  }
  for (std::size_t j = 0; j < keys; ++j) {
    for (std::size_t t = 0; t < d; ++t) {
      float dk_total = ds[j] * q[t];
      float dv_total = p[j] * d_out[t];
      for (std::size_t i = 1; i < queries; ++i) {
        dk_total += ds[i * keys + j] * q[i * d + t];
        dv_total += p[i * keys + j] * d_out[i * d + t];
      }
      dk[j * d + t] = to_output(dk_total * scale);
      dv[j * d + t] = to_output(dv_total);
    }
  }
  for (const auto& [name, want] :
       {std::pair{"attention_backward_q", &dq}, std::pair{"attention_backward_k", &dk},
        std::pair{"attention_backward_v", &dv}}) {
    SCOPED_TRACE(name);
    const CpuRun run =
        run_cpu(*find_op(name), shape, Arithmetic{formats::fp32, formats::fp32, output},
                Summation::sequential, in);
    ASSERT_EQ(run.output.size(), want->size());
    for (std::size_t e = 0; e < want->size(); ++e) {
      EXPECT_EQ(run.output[e], static_cast<double>((*want)[e])) << e;
    }
  }
}

// The attention gradients computed in fp32 are the rounding order attention_backward.cpp
// documents, written here again in binary32 hardware arithmetic (every +, -, *, / and sqrt rounded
// to nearest-even once; exp taken in binary64 and rounded, as the emulation models libm):
// recomputed P, O rounded to the output format, D_i = rowsum(dO_i * O_i), dS = P * (dP - D), the
// scale applied last; with fp32 output and with fp16 output (amp-fp16).
TEST(Catalog, AttentionBackwardInFp32IsItsDocumentedRoundingOrder) {
  for (const auto& output : {formats::fp32, formats::fp16}) {
    SCOPED_TRACE(output.name);
    attention_backward_in_fp32_is_its_documented_rounding_order(output);
  }
}

// With one key, P = 1 and the forward output is V's row (a value of the output format when the
// inputs are), so D_i = rowsum(dO_i * O_i) is the sum dP_i1 computes, rounded alike: dS, dQ and
// dK are exactly 0 in every format, as the reference's are. dV is the column sums of dO, exact
// when they accumulate in fp32, and then correctly rounded.
// Batch norm's backward computes its three gradients in one pass; each catalog op reports the
// output roundings of its own gradient only, every other rounding as intermediate (dx's one more
// per channel: rstd * gamma, which the parameter gradients do not need).
TEST(Catalog, BatchNormBackwardOpsCountTheirOwnOutputRoundings) {
  const Arithmetic arithmetic{formats::fp32, formats::fp32, formats::bf16};
  std::vector<std::uint64_t> intermediate;
  for (const char* name :
       {"batch_norm_backward", "batch_norm_backward_gamma", "batch_norm_backward_beta"}) {
    SCOPED_TRACE(name);
    const auto& op = *find_op(name);
    const Shape shape = parse_shape(op, "16x6");
    const CpuRun run =
        run_cpu(op, shape, arithmetic, Summation::sequential,
                make_inputs(*find_op("batch_norm_backward"), shape, formats::bf16, 4));
    EXPECT_EQ(run.events.output.total(), run.output.size());
    intermediate.push_back(run.events.intermediate.total());
  }
  EXPECT_GT(intermediate[1], 0u);
  EXPECT_EQ(intermediate[0], intermediate[1] + 6);
  EXPECT_EQ(intermediate[1], intermediate[2]);
}

TEST(Catalog, AttentionBackwardWithOneKeyIsExact) {
  const Shape shape = parse_shape(*find_op("attention_backward_q"), "6x1x8");
  const Arithmetic amp{formats::fp32, formats::fp32, formats::fp16};
  for (const auto& [arithmetic, input] :
       {std::pair{all(formats::fp16), formats::fp16}, std::pair{all(formats::bf16), formats::bf16},
        std::pair{amp, formats::fp16}}) {
    SCOPED_TRACE(fmt::format("{} / {}", arithmetic.compute.name, arithmetic.output.name));
    const Inputs in = make_inputs(*find_op("attention_backward_q"), shape, input, 43);
    for (const char* name :
         {"attention_backward_q", "attention_backward_k", "attention_backward_v"}) {
      SCOPED_TRACE(name);
      const auto& op = *find_op(name);
      const CpuRun run = run_cpu(op, shape, arithmetic, Summation::sequential, in);
      const Reference ref = reference(op, shape, in, arithmetic.output, arithmetic.mode, 0, 0);
      if (op.op != Op::attention_backward_v) {
        EXPECT_EQ(ref.rounded, std::vector<double>(run.output.size(), 0.0));
        EXPECT_EQ(run.output, ref.rounded);
      } else if (arithmetic.accumulate.precision == formats::fp32.precision) {
        EXPECT_EQ(run.output, ref.rounded);
      }
    }
  }
}

}  // namespace
}  // namespace ampbench::ops
