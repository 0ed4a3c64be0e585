// Error metrics and bounds on hand-computed cases. Every expected value is worked out in the
// comment beside it, not by calling the code under test.
#include "harness/metrics/metrics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace ampbench::metrics {
namespace {

using numeric::Format;
using numeric::Rounding;
namespace formats = numeric::formats;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

ErrorSummary summarize_vectors(const Format& f, const std::vector<double>& computed,
                               const std::vector<double>& rounded, const std::vector<double>& exact,
                               const ElementBounds& bounds = {}) {
  return summarize(f, computed, rounded, exact, bounds);
}

ElementBounds rigorous_bounds(const std::vector<double>& bounds) {
  return {bounds, std::nullopt};
}

// fp64 values 1 + k 2^-52: k steps above 1, so that ulp errors of any size are easy to make.
double steps_above_one(std::uint64_t k) {
  return 1.0 + std::ldexp(static_cast<double>(k), -52);
}

// ---- one element --------------------------------------------------------------------------------

TEST(metricsElement, OneUlpAboveOneInFp16) {
  // fp16 has p = 11: the neighbour above 1 is 1 + 2^-10.
  const ElementError e = compare_element(formats::fp16, 1 + 0x1p-10, 1.0, 1.0);
  EXPECT_EQ(e.kind, ElementClass::compared);
  EXPECT_EQ(e.ulp, 1u);
  EXPECT_EQ(e.abs_error, 0x1p-10);
  EXPECT_EQ(e.rel_error, 0x1p-10);
}

TEST(metricsElement, OneUlpBelowOneIsHalfTheStep) {
  // Below 1 the binade [1/2, 1) has spacing 2^-11: 1 - 2^-11 is one step from 1.
  const ElementError e = compare_element(formats::fp16, 1 - 0x1p-11, 1.0, 1.0);
  EXPECT_EQ(e.ulp, 1u);
  EXPECT_EQ(e.abs_error, 0x1p-11);
}

TEST(metricsElement, CorrectlyRoundedButNotExact) {
  // Exact 1 + 2^-12 rounds to 1 in fp16 (half a step is 2^-11). Computed 1 is correctly rounded,
  // 2^-12 away from the exact value: relative error 2^-12 / (1 + 2^-12) = 1 / 4097.
  const ElementError e = compare_element(formats::fp16, 1.0, 1.0, 1 + 0x1p-12);
  EXPECT_EQ(e.kind, ElementClass::compared);
  EXPECT_EQ(e.ulp, 0u);
  EXPECT_EQ(e.abs_error, 0x1p-12);
  EXPECT_EQ(e.rel_error, 1.0 / 4097.0);
}

TEST(metricsElement, ZeroReference) {
  // +0 and -0 are the same value: no error at all, relative error 0 by convention.
  const ElementError zeros = compare_element(formats::fp16, -0.0, 0.0, 0.0);
  EXPECT_EQ(zeros.ulp, 0u);
  EXPECT_EQ(zeros.abs_error, 0.0);
  EXPECT_EQ(zeros.rel_error, 0.0);
  // The smallest fp16 subnormal, 2^-24, against an exact 0: one step, relative error +inf.
  const ElementError tiny = compare_element(formats::fp16, 0x1p-24, 0.0, 0.0);
  EXPECT_EQ(tiny.ulp, 1u);
  EXPECT_EQ(tiny.abs_error, 0x1p-24);
  EXPECT_EQ(tiny.rel_error, kInf);
}

TEST(metricsElement, NanAndInfinityClasses) {
  const Format& f = formats::fp16;
  EXPECT_EQ(compare_element(f, kNaN, kNaN, kNaN).kind, ElementClass::both_nan);
  EXPECT_EQ(compare_element(f, kNaN, 1.0, 1.0).kind, ElementClass::nan_vs_number);
  EXPECT_EQ(compare_element(f, kNaN, kInf, kInf).kind, ElementClass::nan_vs_number);
  EXPECT_EQ(compare_element(f, 1.0, kNaN, kNaN).kind, ElementClass::number_vs_nan);
  EXPECT_EQ(compare_element(f, kInf, kInf, kInf).kind, ElementClass::both_inf);
  EXPECT_EQ(compare_element(f, -kInf, -kInf, -kInf).kind, ElementClass::both_inf);
  EXPECT_EQ(compare_element(f, -kInf, kInf, kInf).kind, ElementClass::opposite_inf);
  EXPECT_EQ(compare_element(f, kInf, 65504.0, 65504.0).kind, ElementClass::inf_vs_finite);
  EXPECT_EQ(compare_element(f, 65504.0, kInf, 1e6).kind, ElementClass::finite_vs_inf);
  const ElementError e = compare_element(f, kNaN, 1.0, 1.0);
  EXPECT_FALSE(e.ulp);
  EXPECT_FALSE(e.abs_error);
  EXPECT_FALSE(e.rel_error);
}

TEST(metricsElement, ValueNotInTheFormat) {
  // 1 + 2^-20 needs 21 significand bits; fp16 has 11. Counted whatever the reference is.
  EXPECT_EQ(compare_element(formats::fp16, 1 + 0x1p-20, 1.0, 1.0).kind,
            ElementClass::not_in_format);
  EXPECT_EQ(compare_element(formats::fp16, 1 + 0x1p-20, kNaN, kNaN).kind,
            ElementClass::not_in_format);
  // e4m3 has no infinity: an infinite output is not one of its values.
  EXPECT_EQ(compare_element(formats::e4m3, kInf, kNaN, 1e6).kind, ElementClass::not_in_format);
}

TEST(metricsElement, ReferenceNotInTheFormatIsRejected) {
  EXPECT_THROW(compare_element(formats::fp16, 1.0, 1 + 0x1p-20, 1.0), std::invalid_argument);
  EXPECT_THROW(compare_element(formats::e4m3, kNaN, kInf, kInf), std::invalid_argument);
}

TEST(metricsElement, SaturatedReferenceHasNoErrorAgainstExact) {
  // fp16 saturating: an infinite exact value rounds to the largest finite, 65504.
  Format f = formats::fp16;
  f.overflow = numeric::Overflow::saturate;
  const ElementError e = compare_element(f, 65504.0, 65504.0, kInf);
  EXPECT_EQ(e.kind, ElementClass::compared);
  EXPECT_EQ(e.ulp, 0u);
  EXPECT_FALSE(e.abs_error);
  EXPECT_FALSE(e.rel_error);
}

// ---- one tensor ---------------------------------------------------------------------------------

TEST(metricsSummary, MismatchesStayOutOfTheStatistics) {
  // Element 0 is compared with ulp error 3 (1 + 3 2^-10 against 1); all others are classes.
  const std::vector<double> computed{1 + 3 * 0x1p-10, kNaN, 1.0, kNaN,       kInf,
                                     -kInf,           kInf, 2.0, 1 + 0x1p-20};
  const std::vector<double> rounded{1.0, 1.0, kNaN, kNaN, kInf, kInf, 1.0, -kInf, 1.0};
  const std::vector<double> exact{1.0, 1.0, kNaN, kNaN, kInf, kInf, 1.0, -kInf, 1.0};
  const ErrorSummary s = summarize_vectors(formats::fp16, computed, rounded, exact);
  EXPECT_EQ(s.count, 9u);
  EXPECT_EQ(s.compared, 1u);
  EXPECT_EQ(s.mismatches.nan_vs_number, 1u);
  EXPECT_EQ(s.mismatches.number_vs_nan, 1u);
  EXPECT_EQ(s.mismatches.both_nan, 1u);
  EXPECT_EQ(s.mismatches.both_inf, 1u);
  EXPECT_EQ(s.mismatches.opposite_inf, 1u);
  EXPECT_EQ(s.mismatches.inf_vs_finite, 1u);
  EXPECT_EQ(s.mismatches.finite_vs_inf, 1u);
  EXPECT_EQ(s.mismatches.not_in_format, 1u);
  EXPECT_EQ(s.max_ulp, 3u);
  EXPECT_EQ(s.max_ulp_index, 0u);
  EXPECT_EQ(s.mean_ulp, 3.0);
  EXPECT_EQ(s.fraction_correctly_rounded, 0.0);
  EXPECT_EQ(s.max_abs_error, 3 * 0x1p-10);
  EXPECT_EQ(s.max_rel_error, 3 * 0x1p-10);
}

TEST(metricsSummary, HistogramEdges) {
  const std::vector<std::uint64_t> errors{0, 1, 2,  3,  4,          5,
                                          8, 9, 16, 17, 1ull << 32, (1ull << 32) + 1};
  std::vector<double> computed;
  for (auto k : errors) computed.push_back(steps_above_one(k));
  const std::vector<double> reference(errors.size(), 1.0);
  const ErrorSummary s = summarize_vectors(formats::fp64, computed, reference, reference);

  const auto& h = s.ulp_histogram;
  // {0} {1} {2} [3,4] [5,8] [9,16] [17,32] ... [2^31+1, 2^32] [2^32+1, inf)
  EXPECT_EQ(h[0].min, 0u);
  EXPECT_EQ(h[0].max, 0u);
  EXPECT_EQ(h[1].min, 1u);
  EXPECT_EQ(h[1].max, 1u);
  EXPECT_EQ(h[2].min, 2u);
  EXPECT_EQ(h[2].max, 2u);
  EXPECT_EQ(h[3].min, 3u);
  EXPECT_EQ(h[3].max, 4u);
  EXPECT_EQ(h[4].min, 5u);
  EXPECT_EQ(h[4].max, 8u);
  EXPECT_EQ(h[5].min, 9u);
  EXPECT_EQ(h[5].max, 16u);
  EXPECT_EQ(h[33].min, (1ull << 31) + 1);
  EXPECT_EQ(h[33].max, 1ull << 32);
  EXPECT_EQ(h[34].min, (1ull << 32) + 1);
  EXPECT_FALSE(h[34].max);

  const std::vector<std::uint64_t> expected_counts{1, 1, 1, 2, 2, 2, 1};
  for (std::size_t k = 0; k < h.size(); ++k) {
    const std::uint64_t expected = k < expected_counts.size() ? expected_counts[k]
                                   : k == 33 || k == 34       ? 1
                                                              : 0;
    EXPECT_EQ(h[k].count, expected) << "bucket " << k;
  }
  // Sum 0+1+2+3+4+5+8+9+16+17 = 65, plus 2^32 + 2^32 + 1: 8589934658 over 12 elements.
  EXPECT_EQ(s.mean_ulp, 8589934658.0 / 12.0);
  EXPECT_EQ(s.max_ulp, (1ull << 32) + 1);
  EXPECT_EQ(s.max_ulp_index, 11u);
  EXPECT_EQ(s.fraction_correctly_rounded, 1.0 / 12.0);
}

TEST(metricsSummary, MeanOverMixedBucketsAndFirstWorstIndex) {
  // fp16 errors 0, 3, 1, 3: mean 7/4, worst 3 first at index 1, one of four correctly rounded.
  const std::vector<double> computed{1.0, 1 + 3 * 0x1p-10, 1 + 0x1p-10, 1 - 3 * 0x1p-11};
  const std::vector<double> reference(4, 1.0);
  const ErrorSummary s = summarize_vectors(formats::fp16, computed, reference, reference);
  EXPECT_EQ(s.mean_ulp, 1.75);
  EXPECT_EQ(s.max_ulp, 3u);
  EXPECT_EQ(s.max_ulp_index, 1u);
  EXPECT_EQ(s.fraction_correctly_rounded, 0.25);
  EXPECT_EQ(s.ulp_histogram[0].count, 1u);
  EXPECT_EQ(s.ulp_histogram[1].count, 1u);
  EXPECT_EQ(s.ulp_histogram[3].count, 2u);
}

TEST(metricsSummary, NormwiseOnATwoVector) {
  // exact (3, 4), computed (3, 5): ||e|| = 1, ||x|| = 5, normwise 0.2; componentwise
  // max(0/3, 1/4) = 0.25.
  const std::vector<double> computed{3.0, 5.0};
  const std::vector<double> exact{3.0, 4.0};
  const ErrorSummary s = summarize_vectors(formats::fp64, computed, computed, exact);
  EXPECT_DOUBLE_EQ(s.normwise_rel_error.value(), 0.2);
  EXPECT_EQ(s.max_rel_error, 0.25);
  EXPECT_EQ(s.max_abs_error, 1.0);
}

TEST(metricsSummary, NormwiseWithHugeAndTinyValues) {
  // exact (x, x), computed one binary64 step above: ||e|| / ||x|| = step / x. Squares of 1e300
  // overflow and squares of 2^-1049 underflow to 0, so a plain sum of squares gives NaN or 0.
  // 1e300 lies in [2^996, 2^997): step 2^944. 1e-300 lies in [2^-997, 2^-996): step 2^-1049.
  const double huge = 1e300;
  const std::vector<double> huge_exact{huge, huge};
  const std::vector<double> huge_computed(2, std::nextafter(huge, kInf));
  const ErrorSummary h = summarize_vectors(formats::fp64, huge_computed, huge_computed, huge_exact);
  EXPECT_DOUBLE_EQ(h.normwise_rel_error.value(), 0x1p944 / 1e300);

  const double tiny = 1e-300;
  const std::vector<double> tiny_exact{tiny, tiny};
  const std::vector<double> tiny_computed(2, std::nextafter(tiny, kInf));
  const ErrorSummary t = summarize_vectors(formats::fp64, tiny_computed, tiny_computed, tiny_exact);
  EXPECT_DOUBLE_EQ(t.normwise_rel_error.value(), 0x1p-1049 / 1e-300);
}

TEST(metricsSummary, NormwiseZeroConvention) {
  const std::vector<double> zeros{0.0, 0.0};
  EXPECT_EQ(summarize_vectors(formats::fp64, zeros, zeros, zeros).normwise_rel_error, 0.0);
  const std::vector<double> computed{0.0, 0x1p-1074};
  EXPECT_EQ(summarize_vectors(formats::fp64, computed, computed, zeros).normwise_rel_error, kInf);
}

TEST(metricsSummary, SaturatedReferenceIsCountedApart) {
  Format f = formats::fp16;
  f.overflow = numeric::Overflow::saturate;
  const std::vector<double> computed{65504.0, 1 + 0x1p-10};
  const std::vector<double> rounded{65504.0, 1.0};
  const std::vector<double> exact{kInf, 1.0};
  const ErrorSummary s = summarize_vectors(f, computed, rounded, exact);
  EXPECT_EQ(s.compared, 2u);
  EXPECT_EQ(s.exact_not_finite, 1u);
  EXPECT_EQ(s.max_ulp, 1u);
  EXPECT_EQ(s.max_abs_error, 0x1p-10);
  EXPECT_DOUBLE_EQ(s.normwise_rel_error.value(), 0x1p-10);
}

TEST(metricsSummary, BoundRatio) {
  // Errors 0.5 and 0.25 against bounds 1 and 0.125: ratios 0.5 and 2, the bound is broken.
  const std::vector<double> computed{1.5, 2.25};
  const std::vector<double> exact{1.0, 2.0};
  const std::vector<double> bound{1.0, 0.125};
  const std::vector<double> probabilistic{0.25, 1.0};
  const ErrorSummary s = summarize_vectors(formats::fp64, computed, computed, exact,
                                           {bound, ProbabilisticBounds{probabilistic, 1.0, 0.0}});
  EXPECT_EQ(s.bound_ratio, 2.0);
  EXPECT_EQ(s.probabilistic_bound_ratio, 2.0);  // max(0.5 / 0.25, 0.25 / 1)
  EXPECT_EQ(s.probabilistic_bound_lambda, 1.0);
  EXPECT_EQ(s.probabilistic_bound_probability, 0.0);
  EXPECT_FALSE(summarize_vectors(formats::fp64, computed, computed, exact).bound_ratio);
}

TEST(metricsSummary, ZeroAndInfiniteBounds) {
  const std::vector<double> exact{1.0, 2.0};
  // A zero bound with a zero error is met (ratio 0); the other element gives 0.5 / 1.
  const std::vector<double> met{1.0, 2.5};
  const std::vector<double> zero_then_one{0.0, 1.0};
  EXPECT_EQ(
      summarize_vectors(formats::fp64, met, met, exact, rigorous_bounds(zero_then_one)).bound_ratio,
      0.5);
  // A zero bound with a nonzero error is broken without limit.
  const std::vector<double> broken{1.25, 2.0};
  EXPECT_EQ(summarize_vectors(formats::fp64, broken, broken, exact, rigorous_bounds(zero_then_one))
                .bound_ratio,
            kInf);
  // An infinite bound (n u >= 1) says nothing and is never broken.
  const std::vector<double> infinite{kInf, kInf};
  EXPECT_EQ(summarize_vectors(formats::fp64, broken, broken, exact, rigorous_bounds(infinite))
                .bound_ratio,
            0.0);
}

TEST(metricsSummary, EmptyTensor) {
  const ErrorSummary s = summarize(formats::fp16, {}, {}, {});
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.compared, 0u);
  EXPECT_FALSE(s.max_ulp);
  EXPECT_FALSE(s.max_ulp_index);
  EXPECT_FALSE(s.mean_ulp);
  EXPECT_FALSE(s.fraction_correctly_rounded);
  EXPECT_FALSE(s.max_abs_error);
  EXPECT_FALSE(s.max_rel_error);
  EXPECT_FALSE(s.normwise_rel_error);
  EXPECT_FALSE(s.bound_ratio);
  for (const auto& b : s.ulp_histogram) EXPECT_EQ(b.count, 0u);
}

TEST(metricsSummary, MismatchedLengthsSayWhich) {
  const std::vector<double> three{1.0, 1.0, 1.0};
  const std::vector<double> two{1.0, 1.0};
  try {
    summarize_vectors(formats::fp16, three, two, three);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rounded has 2 elements but computed has 3"),
              std::string::npos)
        << e.what();
  }
  try {
    summarize_vectors(formats::fp16, three, three, two);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("exact has 2 elements but computed has 3"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(summarize_vectors(formats::fp16, three, three, three, rigorous_bounds(two)),
               std::invalid_argument);
  const std::vector<double> negative{1.0, -1.0, 1.0};
  EXPECT_THROW(summarize_vectors(formats::fp16, three, three, three, rigorous_bounds(negative)),
               std::invalid_argument);
}

// ---- JSON ---------------------------------------------------------------------------------------

TEST(metricsJson, Shape) {
  const std::vector<double> computed{1 + 0x1p-10, 1.25, kNaN};
  const std::vector<double> rounded{1.0, 1.0, 1.0};
  const std::vector<double> exact{1.0, 0.0, 1.0};
  const std::vector<double> bound{1.0, 1.0, 1.0};
  ErrorSummary s =
      summarize_vectors(formats::fp16, computed, rounded, exact, rigorous_bounds(bound));
  s.output_events.add(numeric::RoundingEvent::inexact);
  s.output_events.add(numeric::RoundingEvent::inexact);
  s.intermediate_events.add(numeric::RoundingEvent::overflow);

  // Through text and back: the output is valid JSON (no NaN or Infinity tokens).
  const nlohmann::json j = nlohmann::json::parse(to_json(s).dump());
  EXPECT_EQ(j["count"], 3);
  EXPECT_EQ(j["compared"], 2);
  EXPECT_EQ(j["max_ulp"], 256);  // 1.25 is 256 steps of 2^-10 above 1
  EXPECT_EQ(j["max_ulp_index"], 1);
  EXPECT_EQ(j["mean_ulp"], 128.5);
  EXPECT_EQ(j["fraction_correctly_rounded"], 0.0);
  EXPECT_EQ(j["max_abs_error"], 1.25);
  EXPECT_EQ(j["max_rel_error"], "inf");  // 1.25 against an exact 0
  EXPECT_EQ(j["componentwise_rel_error"], "inf");
  // ||(2^-10, 1.25)|| / ||(1, 0)||
  EXPECT_DOUBLE_EQ(j["normwise_rel_error"].get<double>(), std::hypot(0x1p-10, 1.25));
  EXPECT_EQ(j["bound_ratio"], 1.25);
  EXPECT_TRUE(j["probabilistic_bound_ratio"].is_null());
  EXPECT_TRUE(j["probabilistic_bound_lambda"].is_null());
  EXPECT_EQ(j["exact_not_finite"], 0);

  ASSERT_TRUE(j["ulp_histogram"].is_array());
  ASSERT_EQ(j["ulp_histogram"].size(), static_cast<std::size_t>(kUlpHistogramBuckets));
  EXPECT_EQ(j["ulp_histogram"][3], nlohmann::json({{"min", 3}, {"max", 4}, {"count", 0}}));
  EXPECT_EQ(j["ulp_histogram"][1]["count"], 1);
  EXPECT_EQ(j["ulp_histogram"][9]["count"], 1);  // 256 is in [129, 256]
  EXPECT_TRUE(j["ulp_histogram"].back()["max"].is_null());

  const nlohmann::json expected_mismatches = {
      {"both_nan", 0},      {"nan_vs_number", 1}, {"number_vs_nan", 0}, {"inf_vs_finite", 0},
      {"finite_vs_inf", 0}, {"opposite_inf", 0},  {"both_inf", 0},      {"not_in_format", 0}};
  EXPECT_EQ(j["mismatches"], expected_mismatches);
  EXPECT_EQ(j["events"]["output"]["inexact"], 2);
  EXPECT_EQ(j["events"]["output"]["exact"], 0);
  EXPECT_EQ(j["events"]["intermediate"]["overflow"], 1);
  EXPECT_EQ(j["events"]["intermediate"].size(),
            static_cast<std::size_t>(numeric::kRoundingEventCount));
}

TEST(metricsJson, EmptyTensorIsNullNotZero) {
  const nlohmann::json j = to_json(summarize(formats::fp16, {}, {}, {}));
  EXPECT_EQ(j["count"], 0);
  for (const char* key : {"max_ulp", "max_ulp_index", "mean_ulp", "fraction_correctly_rounded",
                          "max_abs_error", "max_rel_error", "normwise_rel_error",
                          "componentwise_rel_error", "bound_ratio", "probabilistic_bound_ratio"}) {
    EXPECT_TRUE(j[key].is_null()) << key;
  }
}

// ---- bounds -------------------------------------------------------------------------------------

TEST(metricsBounds, UnitRoundoff) {
  EXPECT_EQ(unit_roundoff(formats::fp16, Rounding::nearest_even), 0x1p-11);
  EXPECT_EQ(unit_roundoff(formats::fp16, Rounding::nearest_away), 0x1p-11);
  EXPECT_EQ(unit_roundoff(formats::fp16, Rounding::toward_zero), 0x1p-10);
  EXPECT_EQ(unit_roundoff(formats::fp16, Rounding::stochastic_proportional), 0x1p-10);
  EXPECT_EQ(unit_roundoff(formats::fp32, Rounding::nearest_even), 0x1p-24);
  EXPECT_EQ(unit_roundoff(formats::bf16, Rounding::upward), 0x1p-7);
}

TEST(metricsBounds, GammaForFp16) {
  // n = 10, u = 2^-11: 10 2^-11 / (1 - 10 2^-11) = 10 / 2038.
  EXPECT_EQ(gamma(10, 0x1p-11), 10.0 / 2038.0);
  EXPECT_EQ(gamma(0, 0x1p-11), 0.0);
  EXPECT_EQ(gamma(2047, 0x1p-11), 2047.0);  // 2047/2048 / (1/2048)
  EXPECT_EQ(gamma(2048, 0x1p-11), kInf);    // n u = 1: no bound
  EXPECT_EQ(gamma(5000, 0x1p-11), kInf);
}

TEST(metricsBounds, ElementBounds) {
  const std::vector<double> abs_products{2.0, 0.0};
  EXPECT_EQ(element_bounds(gamma(10, 0x1p-11), abs_products),
            (std::vector<double>{20.0 / 2038.0, 0.0}));
  // n u >= 1: no information, except where every product is 0 and so is the result.
  EXPECT_EQ(element_bounds(kInf, abs_products), (std::vector<double>{kInf, 0.0}));
  const std::vector<double> negative{-1.0};
  EXPECT_THROW(element_bounds(1.0, negative), std::invalid_argument);
}

TEST(metricsBounds, FinalRounding) {
  // gamma_10 of fp32 accumulation, then rounding to fp16: g + 2^-11 (1 + g).
  const double g = gamma(10, 0x1p-24);
  EXPECT_EQ(with_final_rounding(g, 0x1p-11), g + 0x1p-11 * (1 + g));
  EXPECT_EQ(with_final_rounding(0.0, 0x1p-11), 0x1p-11);
}

TEST(metricsBounds, BlockFma) {
  const double u = 0x1p-24;
  // n = 8, block 4: q = 2 output roundings, exact products and block sums: (1 + u)^2 - 1.
  EXPECT_DOUBLE_EQ(block_fma_coefficient({8, 4, 0, 0, u}), 2 * u + u * u);
  // n = 9, block 4: q = 3.
  EXPECT_DOUBLE_EQ(block_fma_coefficient({9, 4, 0, 0, u}), 3 * u + 3 * u * u + u * u * u);
  // Internal additions in fp32 too: n + q = 10 roundings, (1 + u)^10 - 1 = 10u + 45u^2 + ...
  EXPECT_NEAR(block_fma_coefficient({8, 4, 0, u, u}), 10 * u + 45 * u * u, 1e-6 * u);
  // Rounded products add a factor (1 + u_product): n = 4, block 4 gives (1 + 2^-11)(1 + u) - 1.
  EXPECT_DOUBLE_EQ(block_fma_coefficient({4, 4, 0x1p-11, 0, u}), 0x1p-11 + u + 0x1p-11 * u);
  EXPECT_EQ(block_fma_coefficient({0, 4, 0, u, u}), 0.0);
  EXPECT_THROW(block_fma_coefficient({8, 0, 0, 0, u}), std::invalid_argument);
}

TEST(metricsBounds, Probabilistic) {
  const double u = 0x1p-24;
  // n = 100, lambda = 1: exp(a) - 1 with a = 10 u + 100 u^2 / (1 - u) is 10 u + 100 u^2 +
  // (10 u)^2 / 2 = 10 u + 150 u^2, plus about 1267 u^3 < 1e-3 u^2.
  const ProbabilisticCoefficient p = probabilistic_coefficient(100, u);
  EXPECT_EQ(p.lambda, 1.0);
  EXPECT_NEAR(p.coefficient, 10 * u + 150 * u * u, 1e-3 * u * u);
  EXPECT_EQ(p.probability, 0.0);  // 1 - 200 exp(-(1-u)^2 / 2) < 0: no guarantee
  // n = 1, lambda = 6: Q = 1 - 2 exp(-18 (1-u)^2) = 1 - 3.0459e-8 (to within 1e-13).
  const ProbabilisticCoefficient q = probabilistic_coefficient(1, u, 6.0);
  EXPECT_NEAR(q.probability, 1 - 3.0459959e-8, 1e-13);
  // n = 100, lambda = 6: the union bound over the 100 terms, Q = 1 - 200 exp(-18 (1-u)^2).
  EXPECT_NEAR(probabilistic_coefficient(100, u, 6.0).probability, 1 - 3.0459959e-6, 1e-11);
}

}  // namespace
}  // namespace ampbench::metrics
