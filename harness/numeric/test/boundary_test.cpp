// The edges of each format's range, in both signs: smallest subnormal and half of it, smallest
// normal, largest finite and the overflow threshold, and the binary64 numbers next to them.
// Expected values and encodings are the published constants of each format (IEEE 754-2019
// table 3.5 and 3.6, the bfloat16 and TF32 definitions, OCP OFP8 rev 1.0 tables 1-2), written out
// here; the events follow the definitions in rounding.hpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "harness/numeric/options.hpp"
#include "harness/numeric/rounding.hpp"
#include "harness/numeric/test/test_support.hpp"

namespace ampbench::numeric::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr auto kRne = Rounding::nearest_even;
constexpr auto kRna = Rounding::nearest_away;
constexpr auto kRz = Rounding::toward_zero;
constexpr auto kRu = Rounding::upward;
constexpr auto kRd = Rounding::downward;
constexpr auto kRto = Rounding::to_odd;
constexpr auto kSrp = Rounding::stochastic_proportional;
constexpr auto kSre = Rounding::stochastic_equal;
using E = RoundingEvent;

double below(double x) {
  return std::nextafter(x, -kInf);
}
double above(double x) {
  return std::nextafter(x, kInf);
}

struct Row {
  Rounding mode;
  double x;
  double value;
  std::uint64_t bits;
  RoundingEvent event;
  std::uint32_t random = 0;
};

void check_rows(const Format& f, const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    const Rounded r = round_to(f, row.mode, row.x, row.random);
    SCOPED_TRACE(describe(f) + " " + std::string(rounding_name(row.mode)) +
                 " x=" + describe(row.x) + " random=" + fmt_bits(row.random));
    EXPECT_TRUE(same(r.value, row.value))
        << "value " << describe(r.value) << ", expected " << describe(row.value);
    EXPECT_EQ(r.bits, row.bits) << "bits " << fmt_bits(r.bits) << ", expected "
                                << fmt_bits(row.bits);
    EXPECT_EQ(r.event, row.event) << "event " << event_name(r.event) << ", expected "
                                  << event_name(row.event);
  }
}

const Format kSaturating16 = variant(formats::fp16, true, Overflow::saturate);
const Format kFlushing16 = variant(formats::fp16, false, Overflow::infinity);

// binary16: max 65504 = 0x7BFF, threshold 65520 (max + half its quantum of 32), smallest normal
// 2^-14 = 0x0400, smallest subnormal 2^-24 = 0x0001, infinity 0x7C00.
TEST(Boundaries, Fp16NearestEven) {
  const double max = 65504, threshold = 65520, tiny = 0x1p-24, normal = 0x1p-14;
  check_rows(formats::fp16,
             {
                 {kRne, max, max, 0x7BFF, E::exact},
                 {kRne, 65519.99, max, 0x7BFF, E::inexact},
                 {kRne, below(threshold), max, 0x7BFF, E::inexact},
                 {kRne, threshold, kInf, 0x7C00, E::overflow},  // tie; 0x7BFF is odd
                 {kRne, -threshold, -kInf, 0xFC00, E::overflow},
                 {kRne, -below(threshold), -max, 0xFBFF, E::inexact},
                 {kRne, 1e300, kInf, 0x7C00, E::overflow},
                 {kRne, kInf, kInf, 0x7C00, E::exact},
                 {kRne, -kInf, -kInf, 0xFC00, E::exact},
                 {kRne, tiny, tiny, 0x0001, E::exact},
                 {kRne, -tiny, -tiny, 0x8001, E::exact},
                 {kRne, tiny / 2, 0.0, 0x0000, E::flush_to_zero},  // tie with 0, which is even
                 {kRne, -tiny / 2, -0.0, 0x8000, E::flush_to_zero},
                 {kRne, above(tiny / 2), tiny, 0x0001, E::underflow},
                 {kRne, -above(tiny / 2), -tiny, 0x8001, E::underflow},
                 {kRne, below(tiny / 2), 0.0, 0x0000, E::flush_to_zero},
                 {kRne, below(tiny), tiny, 0x0001, E::underflow},
                 {kRne, 3 * tiny / 2, 2 * tiny, 0x0002, E::underflow},  // tie between 1 and 2: even
                 {kRne, 0x1p-1074, 0.0, 0x0000, E::flush_to_zero},
                 {kRne, normal, normal, 0x0400, E::exact},
                 {kRne, below(normal), normal, 0x0400, E::underflow},  // tiny before rounding
                 {kRne, above(normal), normal, 0x0400, E::inexact},
                 {kRne, -below(normal), -normal, 0x8400, E::underflow},
                 {kRne, normal - tiny, normal - tiny, 0x03FF, E::exact},
                 {kRne, 0.0, 0.0, 0x0000, E::exact},
                 {kRne, -0.0, -0.0, 0x8000, E::exact},
             });
}

TEST(Boundaries, Fp16DirectedAndOtherModes) {
  const double max = 65504, tiny = 0x1p-24;
  check_rows(
      formats::fp16,
      {
          {kRz, 1e6, max, 0x7BFF, E::saturation},
          {kRz, -1e6, -max, 0xFBFF, E::saturation},
          {kRz, 65535.0, max, 0x7BFF, E::inexact},  // rounds to max even unbounded: no overflow
          {kRu, above(max), kInf, 0x7C00, E::overflow},
          {kRu, -1e6, -max, 0xFBFF, E::saturation},
          {kRd, 1e6, max, 0x7BFF, E::saturation},
          {kRd, -above(max), -kInf, 0xFC00, E::overflow},
          {kRna, 65520.0, kInf, 0x7C00, E::overflow},
          {kRna, tiny / 2, tiny, 0x0001, E::underflow},
          {kRna, -tiny / 2, -tiny, 0x8001, E::underflow},
          {kRto, 65535.0, max, 0x7BFF, E::inexact},  // truncates to max, which is odd
          {kRto, 1e6, max, 0x7BFF, E::saturation},
          {kRto, 0x1p-30, tiny, 0x0001, E::underflow},
          {kRto, -0x1p-30, -tiny, 0x8001, E::underflow},
          {kRu, 0x1p-30, tiny, 0x0001, E::underflow},
          {kRd, 0x1p-30, 0.0, 0x0000, E::flush_to_zero},
          {kRd, -0x1p-30, -tiny, 0x8001, E::underflow},
          {kRz, -0x1p-30, -0.0, 0x8000, E::flush_to_zero},
          // Stochastic: 65520 is half-way from max to 65536 (the next value with unbounded exponent
          // range), so the threshold is 2^31; beyond the top both choices overflow.
          {kSrp, 65520.0, kInf, 0x7C00, E::overflow, 0x7FFFFFFF},
          {kSrp, 65520.0, max, 0x7BFF, E::inexact, 0x80000000},
          {kSrp, 1e6, max, 0x7BFF, E::saturation, 0xFFFFFFFF},
          {kSrp, -1e6, -kInf, 0xFC00, E::overflow, 0},
          {kSre, 1e6, kInf, 0x7C00, E::overflow, 0x80000000},
          {kSre, 1e6, max, 0x7BFF, E::saturation, 0x7FFFFFFF},
          {kSrp, tiny / 4, tiny, 0x0001, E::underflow, 0x3FFFFFFF},  // threshold 2^30
          {kSrp, tiny / 4, 0.0, 0x0000, E::flush_to_zero, 0x40000000},
      });
}

TEST(Boundaries, Fp16Saturating) {
  const double max = 65504;
  check_rows(kSaturating16, {
                                {kRne, 65520.0, max, 0x7BFF, E::saturation},
                                {kRne, -65520.0, -max, 0xFBFF, E::saturation},
                                {kRne, below(65520.0), max, 0x7BFF, E::inexact},
                                {kRne, kInf, max, 0x7BFF, E::saturation},
                                {kRne, -kInf, -max, 0xFBFF, E::saturation},
                                {kRu, 1e300, max, 0x7BFF, E::saturation},
                                {kSrp, 1e6, max, 0x7BFF, E::saturation, 0},
                                {kRne, kNaN, kNaN, 0x7E00, E::nan},
                            });
}

// Without subnormals the neighbours below 2^-14 are 0 and 2^-14; the tie 2^-15 goes to 0.
TEST(Boundaries, Fp16WithoutSubnormals) {
  const double normal = 0x1p-14;
  check_rows(kFlushing16, {
                              {kRne, normal / 2, 0.0, 0x0000, E::flush_to_zero},
                              {kRne, above(normal / 2), normal, 0x0400, E::underflow},
                              {kRne, -above(normal / 2), -normal, 0x8400, E::underflow},
                              {kRne, 0x1p-24, 0.0, 0x0000,
                               E::flush_to_zero},  // a subnormal of binary16: not a value
                              {kRne, below(normal), normal, 0x0400, E::underflow},
                              {kRna, normal / 2, normal, 0x0400, E::underflow},
                              {kRu, 0x1p-24, normal, 0x0400, E::underflow},
                              {kRd, 0x1p-24, 0.0, 0x0000, E::flush_to_zero},
                              {kRz, below(normal), 0.0, 0x0000, E::flush_to_zero},
                              {kRto, 0x1p-24, normal, 0x0400, E::underflow},
                              {kRto, -0x1p-24, -normal, 0x8400, E::underflow},
                              {kSrp, normal / 4, normal, 0x0400, E::underflow, 0x3FFFFFFF},
                              {kSrp, normal / 4, 0.0, 0x0000, E::flush_to_zero, 0x40000000},
                              {kRne, normal, normal, 0x0400, E::exact},
                          });
}

// bfloat16: max (2 - 2^-7) * 2^127 = 0x7F7F, threshold (2 - 2^-8) * 2^127, smallest subnormal
// 2^-133 = 0x0001, smallest normal 2^-126 = 0x0080, infinity 0x7F80.
TEST(Boundaries, Bf16) {
  const double max = 0x1.fep127, threshold = 0x1.ffp127, tiny = 0x1p-133, normal = 0x1p-126;
  check_rows(formats::bf16, {
                                {kRne, max, max, 0x7F7F, E::exact},
                                {kRne, threshold, kInf, 0x7F80, E::overflow},
                                {kRne, below(threshold), max, 0x7F7F, E::inexact},
                                {kRne, -threshold, -kInf, 0xFF80, E::overflow},
                                {kRne, -below(threshold), -max, 0xFF7F, E::inexact},
                                {kRz, 0x1p200, max, 0x7F7F, E::saturation},
                                {kRne, tiny, tiny, 0x0001, E::exact},
                                {kRne, tiny / 2, 0.0, 0x0000, E::flush_to_zero},
                                {kRne, above(tiny / 2), tiny, 0x0001, E::underflow},
                                {kRne, -above(tiny / 2), -tiny, 0x8001, E::underflow},
                                {kRne, normal, normal, 0x0080, E::exact},
                                {kRne, below(normal), normal, 0x0080, E::underflow},
                                {kRne, kInf, kInf, 0x7F80, E::exact},
                                {kRne, kNaN, kNaN, 0x7FC0, E::nan},
                            });
}

// OCP E4M3: max 448 = S.1111.110 (0x7E), NaN S.1111.111, no infinity; smallest subnormal 2^-9
// (0x01), smallest normal 2^-6 (0x08). 464 is half-way between 448 and 480 (not a value: the
// NaN pattern), and 448's significand 1.110 is even.
TEST(Boundaries, E4m3) {
  const double tiny = 0x1p-9, normal = 0x1p-6;
  check_rows(formats::e4m3, {
                                {kRne, 448.0, 448.0, 0x7E, E::exact},
                                {kRne, 464.0, 448.0, 0x7E, E::inexact},
                                {kRne, above(464.0), kNaN, 0x7F, E::overflow},
                                {kRne, -above(464.0), kNaN, 0xFF, E::overflow},
                                {kRne, -464.0, -448.0, 0xFE, E::inexact},
                                {kRne, 480.0, kNaN, 0x7F, E::overflow},
                                {kRne, kInf, kNaN, 0x7F, E::nan},
                                {kRne, -kInf, kNaN, 0xFF, E::nan},
                                {kRne, kNaN, kNaN, 0x7F, E::nan},
                                {kRz, 1000.0, 448.0, 0x7E, E::saturation},
                                {kRu, 449.0, kNaN, 0x7F, E::overflow},
                                {kRd, 449.0, 448.0, 0x7E, E::inexact},
                                {kRu, -1000.0, -448.0, 0xFE, E::saturation},
                                {kRto, 450.0, 448.0, 0x7E,
                                 E::saturation},  // 480 would be odd, and beyond the range
                                {kRne, tiny, tiny, 0x01, E::exact},
                                {kRne, tiny / 2, 0.0, 0x00, E::flush_to_zero},
                                {kRne, above(tiny / 2), tiny, 0x01, E::underflow},
                                {kRne, -above(tiny / 2), -tiny, 0x81, E::underflow},
                                {kRne, normal, normal, 0x08, E::exact},
                                {kRne, below(normal), normal, 0x08, E::underflow},
                            });
  check_rows(variant(formats::e4m3, true, Overflow::saturate),
             {
                 {kRne, above(464.0), 448.0, 0x7E, E::saturation},
                 {kRne, 480.0, 448.0, 0x7E, E::saturation},
                 {kRne, kInf, 448.0, 0x7E, E::saturation},
                 {kRne, -kInf, -448.0, 0xFE, E::saturation},
                 {kRne, kNaN, kNaN, 0x7F, E::nan},
             });
}

// OCP E5M2: max 57344 = 1.75 * 2^15 (0x7B), infinity 0x7C; 61440 is half-way to 2^16 and 57344's
// significand 1.11 is odd, so it rounds to infinity. Smallest subnormal 2^-16, normal 2^-14.
TEST(Boundaries, E5m2) {
  const double max = 57344, tiny = 0x1p-16, normal = 0x1p-14;
  check_rows(formats::e5m2, {
                                {kRne, max, max, 0x7B, E::exact},
                                {kRne, 61440.0, kInf, 0x7C, E::overflow},
                                {kRne, below(61440.0), max, 0x7B, E::inexact},
                                {kRne, -61440.0, -kInf, 0xFC, E::overflow},
                                {kRne, kInf, kInf, 0x7C, E::exact},
                                {kRne, kNaN, kNaN, 0x7E, E::nan},
                                {kRne, tiny, tiny, 0x01, E::exact},
                                {kRne, tiny / 2, 0.0, 0x00, E::flush_to_zero},
                                {kRne, above(tiny / 2), tiny, 0x01, E::underflow},
                                {kRne, normal, normal, 0x04, E::exact},
                                {kRne, below(normal), normal, 0x04, E::underflow},
                            });
  check_rows(variant(formats::e5m2, true, Overflow::saturate),
             {
                 {kRne, 61440.0, max, 0x7B, E::saturation},
                 {kRne, -kInf, -max, 0xFB, E::saturation},
             });
}

// TF32 (19 bits, 1+8+10): max (2 - 2^-10) * 2^127 = 0x3FBFF, infinity 0x3FC00, smallest
// subnormal 2^-136, smallest normal 2^-126 = 0x00400.
TEST(Boundaries, Tf32) {
  const double max = 0x1.ffcp127, threshold = 0x1.ffep127, tiny = 0x1p-136, normal = 0x1p-126;
  check_rows(formats::tf32, {
                                {kRne, max, max, 0x3FBFF, E::exact},
                                {kRne, threshold, kInf, 0x3FC00, E::overflow},
                                {kRne, below(threshold), max, 0x3FBFF, E::inexact},
                                {kRne, -threshold, -kInf, 0x7FC00, E::overflow},
                                {kRne, tiny, tiny, 0x00001, E::exact},
                                {kRne, tiny / 2, 0.0, 0x00000, E::flush_to_zero},
                                {kRne, above(tiny / 2), tiny, 0x00001, E::underflow},
                                {kRne, -above(tiny / 2), -tiny, 0x40001, E::underflow},
                                {kRne, normal, normal, 0x00400, E::exact},
                                {kRne, below(normal), normal, 0x00400, E::underflow},
                                {kRne, kNaN, kNaN, 0x3FE00, E::nan},
                            });
}

// binary32, with the constants of <limits>: FLT_MAX, FLT_MIN, FLT_TRUE_MIN.
TEST(Boundaries, Fp32) {
  using L = std::numeric_limits<float>;
  const double max = L::max(), threshold = 0x1.ffffffp127, tiny = L::denorm_min(),
               normal = L::min();
  EXPECT_EQ(max, 0x1.fffffep127);
  check_rows(formats::fp32, {
                                {kRne, max, max, 0x7F7FFFFF, E::exact},
                                {kRne, threshold, kInf, 0x7F800000, E::overflow},
                                {kRne, below(threshold), max, 0x7F7FFFFF, E::inexact},
                                {kRne, -threshold, -kInf, 0xFF800000, E::overflow},
                                {kRne, tiny, tiny, 0x00000001, E::exact},
                                {kRne, tiny / 2, 0.0, 0x00000000, E::flush_to_zero},
                                {kRne, above(tiny / 2), tiny, 0x00000001, E::underflow},
                                {kRne, -above(tiny / 2), -tiny, 0x80000001, E::underflow},
                                {kRne, normal, normal, 0x00800000, E::exact},
                                {kRne, below(normal), normal, 0x00800000, E::underflow},
                                {kRne, kNaN, kNaN, 0x7FC00000, E::nan},
                            });
}

// A user format whose exponent range is narrower than its significand (emax - emin < p - 1),
// without subnormals: below 2^emin the neighbours are still 0 and 2^emin, and nothing that small
// can overflow. p=11, emin=-4, emax=4: values 2^-4 .. (2 - 2^-10) * 2^4.
TEST(Boundaries, SubnormalsOffWithANarrowExponentRange) {
  const Format f = user_format(11, -4, 4, false);
  ASSERT_TRUE(validate(RoundingOptions{f, kRne, 0, Container::binary64}).ok());
  const double normal = 0x1p-4;
  // Encoding: 1 sign, 4 exponent (fields 0..10), 10 fraction bits; 2^-4 is field 1.
  check_rows(f, {
                    {kRne, normal, normal, 0x400, E::exact},
                    {kRne, 0x1p-6, 0.0, 0x000, E::flush_to_zero},
                    {kRne, -0x1p-6, -0.0, 0x4000, E::flush_to_zero},
                    {kRne, 0.75 * normal, normal, 0x400, E::underflow},
                    {kRu, 0x1p-20, normal, 0x400, E::underflow},
                    {kRz, below(normal), 0.0, 0x000, E::flush_to_zero},
                    {kRne, 31.0, 31.0, 0x27C0, E::exact},  // 1.9375 * 2^4: field 9, fraction 0x3C0
                });
}

}  // namespace
}  // namespace ampbench::numeric::test
