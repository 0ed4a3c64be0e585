// The CPU emulation against arithmetic that needs no emulation: binary32 hardware arithmetic (IEEE
// round-to-nearest-even on every +, -, *, /, sqrt) for fp32 policies, binary64 for fp64 ones, and
// hand-worked fp16 cases (stagnation, overflow, underflow events).
#include "harness/backends/cpu/emulate.hpp"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ampbench::backends::cpu {
namespace {

namespace formats = numeric::formats;
using numeric::RoundingEvent;

Arithmetic all(const numeric::Format& f) {
  return Arithmetic{f, f, f};
}

std::vector<double> random_floats(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<double> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

TEST(EmulateGemm, Fp32IsBinary32HardwareArithmetic) {
  const std::size_t m = 9, n = 7, k = 300;
  const auto a = random_floats(m * k, 1), b = random_floats(k * n, 2), c = random_floats(m * n, 3);
  Events events;
  const auto got = gemm(all(formats::fp32), Summation::sequential, m, n, k, a, b, c, {}, events);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      float s = static_cast<float>(a[i * k]) * static_cast<float>(b[j]);
      for (std::size_t l = 1; l < k; ++l) {
        s += static_cast<float>(a[i * k + l]) * static_cast<float>(b[l * n + j]);
      }
      s += static_cast<float>(c[i * n + j]);
      ASSERT_EQ(got[i * n + j], static_cast<double>(s)) << i << "," << j;
    }
  }
  // k products and k - 1 additions and one for C per output, plus the output rounding.
  EXPECT_EQ(events.intermediate.total(), m * n * (2 * k));
  EXPECT_EQ(events.output.total(), m * n);
  EXPECT_EQ(events.output[RoundingEvent::exact], m * n);  // already fp32
}

// The binary32 fast path against the general one: the same values (bit for bit) and the same
// event counts, on inputs that reach every event: subnormal and overflowing products, flushes,
// infinities, NaN, and inf - inf.
TEST(EmulateGemm, Binary32FastPathEqualsTheGeneralPathInValuesAndEvents) {
  std::mt19937_64 rng(77);
  const std::size_t m = 6, n = 33, k = 70;
  std::vector<double> a(m * k), b(k * n);
  std::uniform_int_distribution<int> exponent(-140, 120);
  std::uniform_real_distribution<float> significand(1.0f, 2.0f);
  for (auto* v : {&a, &b}) {
    for (auto& x : *v) {
      x = std::ldexp(static_cast<double>(significand(rng)), exponent(rng)) * (rng() & 1 ? 1 : -1);
      x = static_cast<float>(x);  // a binary32 value (subnormal ones included)
    }
  }
  a[3] = std::numeric_limits<double>::infinity();
  b[5 * n + 2] = -std::numeric_limits<double>::infinity();
  a[k + 9] = std::numeric_limits<double>::quiet_NaN();
  a[2 * k + 1] = 0.0;
  for (const auto& output : {formats::fp32, formats::fp16, formats::bf16}) {
    const Arithmetic arithmetic{formats::fp32, formats::fp32, output};
    Events fast, general;
    const auto x = gemm(arithmetic, Summation::sequential, m, n, k, a, b, {}, {}, fast);
    const auto y =
        gemm(arithmetic, Summation::sequential, m, n, k, a, b, {}, {}, general, GemmPath::general);
    ASSERT_EQ(x.size(), y.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i]) && std::isnan(y[i]))
        continue;  // NaN payloads and signs are not modelled
      ASSERT_EQ(x[i], y[i]) << i;
      ASSERT_EQ(std::signbit(x[i]), std::signbit(y[i])) << i;  // zeros keep their sign
    }
    for (int e = 0; e < numeric::kRoundingEventCount; ++e) {
      EXPECT_EQ(fast.intermediate.count[e], general.intermediate.count[e])
          << numeric::event_name(static_cast<RoundingEvent>(e));
      EXPECT_EQ(fast.output.count[e], general.output.count[e]);
    }
    // The inputs reach every event class.
    for (const auto event :
         {RoundingEvent::exact, RoundingEvent::inexact, RoundingEvent::underflow,
          RoundingEvent::flush_to_zero, RoundingEvent::overflow, RoundingEvent::nan}) {
      EXPECT_GT(general.intermediate[event], 0u) << numeric::event_name(event);
    }
  }
}

// Fast path against general path: values bit for bit (zeros with their sign) and every event count.
void expect_fast_equals_general(const Arithmetic& arithmetic, std::size_t m, std::size_t n,
                                std::size_t k, const std::vector<double>& a,
                                const std::vector<double>& b, const std::vector<double>& c,
                                const std::vector<double>& bias, const std::string& what) {
  SCOPED_TRACE(what);
  Events fast, general;
  const auto x = gemm(arithmetic, Summation::sequential, m, n, k, a, b, c, bias, fast);
  const auto y =
      gemm(arithmetic, Summation::sequential, m, n, k, a, b, c, bias, general, GemmPath::general);
  ASSERT_EQ(x.size(), y.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    ASSERT_EQ(x[i], y[i]) << i;
    ASSERT_EQ(std::signbit(x[i]), std::signbit(y[i])) << i;
  }
  for (int e = 0; e < numeric::kRoundingEventCount; ++e) {
    EXPECT_EQ(fast.intermediate.count[e], general.intermediate.count[e])
        << numeric::event_name(static_cast<RoundingEvent>(e));
    EXPECT_EQ(fast.output.count[e], general.output.count[e])
        << numeric::event_name(static_cast<RoundingEvent>(e));
  }
}

// Inputs whose products and sums can be neither tiny nor overflow take a cheaper classification
// (four rows of C at a time, column blocks of 512): the same values and events as the general path,
// for row counts that leave 1, 2 or 3 rows over, columns over two blocks with a tail, k = 1, exact
// zero products of both signs, with C and bias, and at the edges of that range: products of nonzero
// operands down to 2^-100 (their errors are near binary32's subnormal spacing) and sums up to just
// below the overflow bound; beyond each edge the general classification takes over.
TEST(EmulateGemm, OrdinaryRangeFastPathEqualsTheGeneralPath) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  const auto fill = [&](std::size_t size, double zeros) {
    std::vector<double> v(size);
    std::bernoulli_distribution zero(zeros);
    for (auto& x : v) {
      x = zero(rng) ? (rng() & 1 ? 0.0 : -0.0) : static_cast<double>(u(rng));
    }
    return v;
  };
  const Arithmetic fp32{formats::fp32, formats::fp32, formats::fp32};
  const Arithmetic amp{formats::fp32, formats::fp32, formats::fp16};
  for (const auto& [m, n, k] : std::initializer_list<std::array<std::size_t, 3>>{
           {1, 1, 1}, {5, 1100, 37}, {6, 17, 1}, {7, 33, 300}, {4, 512, 64}, {3, 0, 5}}) {
    const auto a = fill(m * k, 0.1), b = fill(k * n, 0.1);
    const auto c = fill(m * n, 0.0), bias = fill(n, 0.0);
    const std::string shape = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    expect_fast_equals_general(fp32, m, n, k, a, b, {}, {}, shape);
    expect_fast_equals_general(amp, m, n, k, a, b, c, bias, shape + " with c and bias");
  }

  // Products near 2^-100: operands 2^-50 (1 + random 23-bit fraction), so that most products are
  // inexact with errors of about 2^-147, and one pair at exactly the 2^-100 bound; then products
  // below it: 2^-101, near 2^-120 (normal, but their errors lie below binary32's subnormal spacing)
  // and subnormal ones.
  const std::size_t m = 5, n = 21, k = 40;
  std::uniform_int_distribution<std::uint32_t> fraction(0, (1u << 23) - 1);
  for (const int exponent : {-50, -60}) {
    std::vector<double> a(m * k), b(k * n);
    for (auto* v : {&a, &b}) {
      for (auto& x : *v) {
        x = std::ldexp(1.0 + std::ldexp(static_cast<double>(fraction(rng)), -23), exponent) *
            (rng() & 1 ? 1 : -1);
      }
    }
    const std::string near = "products near 2^" + std::to_string(2 * exponent);
    expect_fast_equals_general(fp32, m, n, k, a, b, {}, {}, near);
    if (exponent != -50) continue;
    a[7] = 0x1p-50;
    b[3] = -0x1p-50;
    expect_fast_equals_general(fp32, m, n, k, a, b, {}, {}, near + ", one at 2^-100");
    a[7] = 0x1p-51;
    expect_fast_equals_general(fp32, m, n, k, a, b, {}, {}, near + ", one at 2^-101");
    a[7] = 0x1p-100;
    b[3] = 0x1p-49;
    expect_fast_equals_general(fp32, m, n, k, a, b, {}, {}, near + ", subnormal ones");
  }

  // Sums near the overflow bound: k max|a| max|b| just below, then above, half of binary32's
  // largest value; above it, with every product at the maximum, the sums overflow.
  const std::size_t big_k = 16;
  const double top = std::ldexp(1.0, 63);  // top^2 = 2^126; 16 * 2^126 = 2^130 > 2^127
  for (const double scale : {0x1p-4, 0x1p-3, 1.0}) {
    std::vector<double> x(2 * big_k), y(big_k * 3);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = top * (i % 3 == 0 ? 1.0 : 0.75);
    for (std::size_t i = 0; i < y.size(); ++i) {
      y[i] = top * scale * (i % 5 == 0 ? -1.0 : 1.0 - 0x1p-20 * static_cast<double>(i));
    }
    expect_fast_equals_general(fp32, 2, 3, big_k, x, y, {}, {},
                               "sums at 2^126 times " + std::to_string(scale));
  }
}

TEST(EmulateGemm, Fp64IsBinary64Arithmetic) {
  const std::size_t m = 3, n = 4, k = 50;
  const auto a = random_floats(m * k, 4), b = random_floats(k * n, 5);
  Events events;
  const auto got = gemm(all(formats::fp64), Summation::sequential, m, n, k, a, b, {}, {}, events);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double s = a[i * k] * b[j];
      for (std::size_t l = 1; l < k; ++l) s += a[i * k + l] * b[l * n + j];
      EXPECT_EQ(got[i * n + j], s);
    }
  }
}

TEST(EmulateGemm, Fp16AccumulationStagnatesAndPairwiseDoesNot) {
  const std::vector<double> ones(4096, 1.0);
  Events events;
  EXPECT_EQ(gemm(all(formats::fp16), Summation::sequential, 1, 1, 4096, ones, ones, {}, {}, events)
                .front(),
            2048.0);
  EXPECT_EQ(
      gemm(all(formats::fp16), Summation::pairwise, 1, 1, 4096, ones, ones, {}, {}, events).front(),
      4096.0);
  // fp16 products with fp32 accumulation and an fp16 output (the AMP matmul): exact here.
  const Arithmetic amp{formats::fp16, formats::fp32, formats::fp16};
  EXPECT_EQ(gemm(amp, Summation::sequential, 1, 1, 4096, ones, ones, {}, {}, events).front(),
            4096.0);
}

TEST(EmulateGemm, OverflowAndUnderflowAreCounted) {
  // 256 * 256 = 65536 overflows fp16 (largest 65504) in the product itself.
  Events events;
  const std::vector<double> big{256.0}, tiny{0x1p-13};
  EXPECT_TRUE(std::isinf(
      gemm(all(formats::fp16), Summation::sequential, 1, 1, 1, big, big, {}, {}, events).front()));
  EXPECT_EQ(events.intermediate[RoundingEvent::overflow], 1u);
  // 2^-13 * 2^-13 = 2^-26 is below half of fp16's smallest subnormal 2^-24: flushed to zero.
  Events small;
  EXPECT_EQ(
      gemm(all(formats::fp16), Summation::sequential, 1, 1, 1, tiny, tiny, {}, {}, small).front(),
      0.0);
  EXPECT_EQ(small.intermediate[RoundingEvent::flush_to_zero], 1u);
  // Accumulated in fp32 the product survives; only the fp16 output flushes it.
  Events amp_events;
  const Arithmetic amp{formats::fp32, formats::fp32, formats::fp16};
  EXPECT_EQ(gemm(amp, Summation::sequential, 1, 1, 1, tiny, tiny, {}, {}, amp_events).front(), 0.0);
  EXPECT_EQ(amp_events.intermediate[RoundingEvent::flush_to_zero], 0u);
  EXPECT_EQ(amp_events.output[RoundingEvent::flush_to_zero], 1u);
}

// gemm_mma against its definition: each output is mma_dot of its quantized row and column with
// C_in, rounded to the output format; the output events are those roundings' and there are no
// others. Operands that are not values of the input format (quantized first), specials in A, B and
// C_in, shapes with several blocks of outputs and rows left over, k = 1 and k = 0.
TEST(EmulateGemmMma, EachOutputIsMmaDotOfItsRowAndColumnRounded) {
  std::mt19937_64 rng(21);
  std::normal_distribution<double> normal(0.0, 2.0);
  for (const char* name : {"hopper-fp16", "ampere-tf32", "ada-e4m3-acc16", "volta-fp16"}) {
    const numeric::MmaModel model = *numeric::mma_model_named(name);
    const numeric::Format acc = model.accumulator_format();
    for (const auto& [m, n, k] :
         std::initializer_list<std::array<std::size_t, 3>>{{6, 131, 37}, {3, 7, 1}, {2, 3, 0}}) {
      std::vector<double> a(m * k), b(k * n), c(m * n);
      for (auto& x : a) x = normal(rng);
      for (auto& x : b) x = normal(rng);
      for (auto& x : c)
        x = numeric::round_to(acc, numeric::Rounding::nearest_even, normal(rng)).value;
      if (k > 1) {
        a[k + 1] = std::numeric_limits<double>::quiet_NaN();
        b[(k - 1) * n + 2] = -std::numeric_limits<double>::infinity();
      }
      c[n - 1] = std::numeric_limits<double>::infinity();
      std::vector<double> qa(a.size()), qb(b.size());
      for (std::size_t i = 0; i < a.size(); ++i) qa[i] = numeric::mma_quantize_input(model, a[i]);
      for (std::size_t i = 0; i < b.size(); ++i) qb[i] = numeric::mma_quantize_input(model, b[i]);
      for (const auto& output : {formats::fp16, formats::bf16, formats::fp32}) {
        SCOPED_TRACE(std::string(name) + " " + output.name + " " + std::to_string(m) + "x" +
                     std::to_string(n) + "x" + std::to_string(k));
        Events events;
        const auto got =
            gemm_mma(model, output, numeric::Rounding::nearest_even, m, n, k, a, b, c, events);
        numeric::EventCounts expected_events;
        for (std::size_t i = 0; i < m; ++i) {
          for (std::size_t j = 0; j < n; ++j) {
            const double d =
                numeric::mma_dot(model, c[i * n + j], qa.data() + i * k, 1, qb.data() + j,
                                 static_cast<std::ptrdiff_t>(n), static_cast<int>(k));
            const numeric::Rounded r =
                numeric::round_to(output, numeric::Rounding::nearest_even, d);
            expected_events.add(r.event);
            ASSERT_EQ(std::bit_cast<std::uint64_t>(got[i * n + j]),
                      std::bit_cast<std::uint64_t>(r.value))
                << i << "," << j;
          }
        }
        for (int e = 0; e < numeric::kRoundingEventCount; ++e) {
          EXPECT_EQ(events.output.count[e], expected_events.count[e])
              << numeric::event_name(static_cast<RoundingEvent>(e));
        }
        EXPECT_EQ(events.intermediate.total(), 0u);
      }
    }
  }
}

TEST(EmulateNorms, Fp32LayerNormAndRmsNormAreBinary32HardwareArithmetic) {
  const std::size_t rows = 5, cols = 33;
  const auto x = random_floats(rows * cols, 6, 10.0f);
  const auto gamma = random_floats(cols, 7), beta = random_floats(cols, 8);
  const float eps = 1e-5f;
  Events events;
  const auto ln =
      layer_norm(all(formats::fp32), x, rows, cols, static_cast<double>(eps), gamma, beta, events);
  const auto rms =
      rms_norm(all(formats::fp32), x, rows, cols, static_cast<double>(eps), gamma, events);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto in = [&](std::size_t c) { return static_cast<float>(x[r * cols + c]); };
    float s = in(0);
    for (std::size_t c = 1; c < cols; ++c) s += in(c);
    const float mu = s / static_cast<float>(cols);
    float v = (in(0) - mu) * (in(0) - mu);
    for (std::size_t c = 1; c < cols; ++c) v += (in(c)-mu) * (in(c)-mu);
    const float rstd = 1.0f / std::sqrt(v / static_cast<float>(cols) + eps);
    float q = in(0) * in(0);
    for (std::size_t c = 1; c < cols; ++c) q += in(c)*in(c);
    const float rrms = 1.0f / std::sqrt(q / static_cast<float>(cols) + eps);
    for (std::size_t c = 0; c < cols; ++c) {
      const float y =
          (in(c)-mu) * rstd * static_cast<float>(gamma[c]) + static_cast<float>(beta[c]);
      ASSERT_EQ(ln[r * cols + c], static_cast<double>(y)) << r << "," << c;
      ASSERT_EQ(rms[r * cols + c], static_cast<double>(in(c)*rrms * static_cast<float>(gamma[c])));
    }
  }
}

TEST(EmulateSoftmax, RowsSumToOneWithinTheFormatsRoundingAndLogsumexpMatches) {
  const std::size_t rows = 4, cols = 100;
  const auto x = random_floats(rows * cols, 9, 20.0f);
  Events events;
  const auto y = softmax(all(formats::fp32), x, rows, cols, events);
  const auto lse = logsumexp(all(formats::fp64), x, rows, cols, events);
  const auto log_y = log_softmax(all(formats::fp64), x, rows, cols, events);
  for (std::size_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::size_t c = 0; c < cols; ++c) s += y[r * cols + c];
    // Each y has relative error below 3u (exp, sum, divide); their sum is 1 within cols * 3u.
    EXPECT_NEAR(s, 1.0, 3.0 * 0x1p-24 * static_cast<double>(cols));
    for (std::size_t c = 0; c < cols; ++c) {
      EXPECT_NEAR(log_y[r * cols + c], x[r * cols + c] - lse[r], 1e-12);
    }
  }
}

TEST(EmulateSoftmax, Fp16ExpUnderflowsWhereFp32DoesNot) {
  // exp(-20) = 2.06e-9 is below fp16's smallest subnormal (6e-8): flushed in an fp16 softmax.
  const std::vector<double> x{0.0, -20.0};
  Events fp16_events, fp32_events;
  const auto low = softmax(all(formats::fp16), x, 1, 2, fp16_events);
  const auto amp =
      softmax(Arithmetic{formats::fp32, formats::fp32, formats::fp32}, x, 1, 2, fp32_events);
  EXPECT_EQ(low[1], 0.0);
  EXPECT_GT(fp16_events.intermediate[RoundingEvent::flush_to_zero], 0u);
  EXPECT_GT(amp[1], 2e-9);
  EXPECT_EQ(fp32_events.intermediate[RoundingEvent::flush_to_zero], 0u);
}

// Rows holding NaN, as PyTorch's row ops treat them: the maximum propagates NaN, so every output
// of such a row is NaN (a maximum that dropped NaN, as fmaxf does, gives a row of NaN -inf and a
// row of NaN and +inf a finite or infinite result). The last row is finite and stays so. The CUDA
// kernels share the maximum (kernels/op_math.hpp) and their test checks the same rows.
TEST(EmulateRowOps, ARowHoldingNaNIsNaNThroughoutInEveryRowOp) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::size_t rows = 5, cols = 3;
  const std::vector<double> x{nan,  nan, nan, nan, inf, 1.0, 1.0, nan,
                              -inf, inf, 2.0, nan, 2.0, 1.0, 0.5};
  const std::vector<double> dy{0.5,  -1.0, 0.25, 0.5,  -1.0, 0.25, 0.5, -1.0,
                               0.25, 0.5,  -1.0, 0.25, 0.5,  -1.0, 0.25};
  const std::vector<std::int64_t> targets{0, 1, 2, 1, 0};
  const std::vector<double> gamma{1.0, 2.0, 0.5}, beta{0.0, 1.0, -1.0};
  Events events;
  const Arithmetic fp32 = all(formats::fp32);
  const std::pair<const char*, std::vector<double>> per_element[] = {
      {"softmax", softmax(fp32, x, rows, cols, events)},
      {"log_softmax", log_softmax(fp32, x, rows, cols, events)},
      {"softmax_backward", softmax_backward(fp32, x, dy, rows, cols, events)},
      {"log_softmax_backward", log_softmax_backward(fp32, x, dy, rows, cols, events)},
      {"cross_entropy_backward", cross_entropy_backward(fp32, x, targets, rows, cols, events)},
      {"layer_norm", layer_norm(fp32, x, rows, cols, 1e-5, gamma, beta, events)},
      {"rms_norm", rms_norm(fp32, x, rows, cols, 1e-6, gamma, events)},
      {"layer_norm_backward", layer_norm_backward(fp32, x, dy, rows, cols, 1e-5, gamma, events)}};
  for (const auto& [name, y] : per_element) {
    ASSERT_EQ(y.size(), rows * cols) << name;
    for (std::size_t i = 0; i < (rows - 1) * cols; ++i) {
      EXPECT_TRUE(std::isnan(y[i])) << name << " row " << i / cols << " column " << i % cols;
    }
    for (std::size_t i = (rows - 1) * cols; i < rows * cols; ++i) {
      EXPECT_TRUE(std::isfinite(y[i])) << name << " finite row, column " << i % cols;
    }
  }
  const std::vector<double> lse = logsumexp(fp32, x, rows, cols, events);
  for (std::size_t r = 0; r + 1 < rows; ++r)
    EXPECT_TRUE(std::isnan(lse[r])) << "logsumexp row " << r;
  EXPECT_TRUE(std::isfinite(lse[rows - 1]));
  // Each row's loss term is NaN, so the mean is; without the NaN rows it is finite.
  EXPECT_TRUE(std::isnan(cross_entropy(fp32, x, targets, rows, cols, 0.0, events)));
  EXPECT_TRUE(std::isnan(cross_entropy(fp32, std::span(x).subspan(3, 3),
                                       std::span(targets).subspan(1, 1), 1, cols, 0.0, events)));
  EXPECT_TRUE(std::isfinite(cross_entropy(fp32, std::span(x).subspan(12, 3),
                                          std::span(targets).subspan(4, 1), 1, cols, 0.0, events)));
}

// torch.logsumexp of a row whose maximum is infinite is that maximum: +inf for a row holding +inf,
// -inf for a row of -inf (not the NaN of inf - inf), as the CUDA kernel and the reference give.
TEST(EmulateRowOps, LogsumexpOfAnInfiniteMaximumIsTheMaximum) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> x{inf, 1.0, -inf, -inf, -inf, 3.0};
  Events events;
  for (const auto& f : {formats::fp32, formats::fp16, formats::bf16}) {
    const std::vector<double> lse = logsumexp(all(f), x, 3, 2, events);
    EXPECT_EQ(lse[0], inf) << f.name;
    EXPECT_EQ(lse[1], -inf) << f.name;
    EXPECT_EQ(lse[2], 3.0) << f.name;  // exp(-inf - 3) = 0: log(1) = 0
  }
}

// relu's backward is ATen's threshold_backward, a select: where x <= 0 it is +0 even for an
// infinite or negative dy, and where x is NaN dy passes (a product with the derivative would give
// NaN, -0 and 0).
TEST(EmulateActivations, ReluBackwardSelectsAsThresholdBackward) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> x{nan, -1.0, -1.0, 0.0, 2.0};
  const std::vector<double> dy{1.5, inf, -2.0, -inf, -3.5};
  Events events;
  const auto dx = activation_backward(all(formats::fp32), Activation::relu, x, dy, events);
  ASSERT_EQ(dx.size(), x.size());
  EXPECT_EQ(dx[0], 1.5);
  EXPECT_EQ(dx[1], 0.0);
  EXPECT_EQ(dx[2], 0.0);
  EXPECT_FALSE(std::signbit(dx[2]));
  EXPECT_EQ(dx[3], 0.0);
  EXPECT_EQ(dx[4], -3.5);
}

TEST(EmulateActivations, ValuesAgainstBinary64) {
  const std::vector<double> x{-3.0, -0.5, 0.0, 0.25, 2.0, 7.5};
  Events events;
  for (const auto& [activation, f] :
       std::initializer_list<std::pair<Activation, double (*)(double)>>{
           {Activation::relu, [](double v) { return v > 0 ? v : 0.0; }},
           {Activation::gelu,
            [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }},
           {Activation::silu, [](double v) { return v / (1.0 + std::exp(-v)); }},
       }) {
    const auto y = bias_activation(all(formats::fp64), activation, x, 1, x.size(), {}, events);
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], f(x[i]), 1e-15) << x[i];
    // In bf16 (8 bits) each result is within a few bf16 ulps of the binary64 one.
    const auto low = bias_activation(all(formats::bf16), activation, x, 1, x.size(), {}, events);
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_NEAR(low[i], f(x[i]), 8 * 0x1p-8 * std::max(1.0, std::fabs(f(x[i])))) << x[i];
    }
  }
}

TEST(EmulateCrossEntropy, HandComputedAndSmoothed) {
  // Two classes with equal logits: each probability 1/2, loss log 2.
  const std::vector<double> logits{1.0, 1.0, 1.0, 1.0};
  const std::vector<std::int64_t> targets{0, 1};
  Events events;
  EXPECT_NEAR(cross_entropy(all(formats::fp64), logits, targets, 2, 2, 0.0, events), std::log(2.0),
              1e-15);
  EXPECT_NEAR(cross_entropy(all(formats::fp64), logits, targets, 2, 2, 0.1, events), std::log(2.0),
              1e-15);
  // Logits (0, log 3): p = (1/4, 3/4). Target 1: -log(3/4); smoothing s: (1-s)(-log 3/4) +
  // s * (-(log 1/4 + log 3/4) / 2).
  const std::vector<double> two{0.0, std::log(3.0)};
  const std::vector<std::int64_t> one{1};
  const double s = 0.2;
  const double expected = (1 - s) * -std::log(0.75) + s * -(std::log(0.25) + std::log(0.75)) / 2;
  EXPECT_NEAR(cross_entropy(all(formats::fp64), two, one, 1, 2, s, events), expected, 1e-15);
}

TEST(Emulate, FormatsThatWouldDoubleRoundAreRefused) {
  const numeric::Format p30 = numeric::user_format(30, -100, 100);
  EXPECT_FALSE(exact_emulation(p30));
  EXPECT_TRUE(exact_emulation(formats::fp32));
  Events events;
  const std::vector<double> one{1.0};
  EXPECT_THROW(gemm(all(p30), Summation::sequential, 1, 1, 1, one, one, {}, {}, events),
               std::invalid_argument);
  EXPECT_THROW(gemm(all(formats::fp32), Summation::sequential, 2, 1, 1, one, one, {}, {}, events),
               std::invalid_argument);
}

}  // namespace
}  // namespace ampbench::backends::cpu
