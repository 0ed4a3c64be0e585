// parse_number: correct rounding from the text's exact value (never through binary64 first), on
// cases whose answers are worked out by hand from the formats' definitions.
#include "harness/io/number_text.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ampbench::io {
namespace {

using numeric::Rounding;
using numeric::RoundingEvent;
namespace formats = numeric::formats;

double value(std::string_view text, const numeric::Format& f,
             Rounding mode = Rounding::nearest_even) {
  const auto parsed = parse_number(text, f, mode);
  EXPECT_TRUE(parsed.has_value()) << text;
  return parsed ? parsed->rounded.value : std::numeric_limits<double>::quiet_NaN();
}

TEST(ParseNumber, DecimalsRoundFromTheirExactValue) {
  // fp16's nearest to 1/10: 0x1.998p-4 (1638/16384 = 0.0999755859375).
  EXPECT_EQ(value("0.1", formats::fp16), 0x1.998p-4);
  EXPECT_FALSE(parse_number("0.1", formats::fp16)->exact);
  EXPECT_TRUE(parse_number("0.0999755859375", formats::fp16)->exact);
  // 1 + 2^-11 is the fp16 midpoint between 1 and 1 + 2^-10. A decimal 10^-26 above it reads as
  // exactly the midpoint in binary64 (whose tie would go to even, 1); its fp16 rounding is up.
  EXPECT_EQ(value("1.00048828125", formats::fp16), 1.0);
  EXPECT_EQ(value("1.00048828125000000000000001", formats::fp16), 1.0009765625);
  EXPECT_EQ(value("1.00048828124999999999999999", formats::fp16), 1.0);
  EXPECT_EQ(value("-1.00048828125000000000000001", formats::fp16), -1.0009765625);
  // The same for fp32 and bf16 midpoints.
  EXPECT_EQ(value("16777217.000000000000000001", formats::fp32), 16777218.0);
  EXPECT_EQ(value("1.00390625000000000000000001", formats::bf16), 1.0078125);
}

TEST(ParseNumber, HexFloatsAndDirectedModes) {
  EXPECT_EQ(value("0x1.8p-3", formats::fp64), 0.1875);
  EXPECT_TRUE(parse_number("0x1.8p-3", formats::fp16)->exact);
  // 65 significant bits: not a binary64.
  const auto wide = parse_number("0x1.0000000000000001p0", formats::fp64);
  ASSERT_TRUE(wide);
  EXPECT_EQ(wide->rounded.value, 1.0);
  EXPECT_FALSE(wide->exact);
  EXPECT_EQ(value("0x1.0000000000000001p0", formats::fp64, Rounding::upward), 1.0 + 0x1p-52);
  EXPECT_EQ(value("0.1", formats::fp16, Rounding::upward), 0x1.99cp-4);
  EXPECT_EQ(value("-0.1", formats::fp16, Rounding::toward_zero), -0x1.998p-4);
}

TEST(ParseNumber, SpecialsRangeAndSigns) {
  EXPECT_TRUE(std::isinf(value("inf", formats::fp32)));
  EXPECT_LT(value("-inf", formats::fp32), 0);
  EXPECT_TRUE(std::isnan(value("nan", formats::fp16)));
  EXPECT_TRUE(std::signbit(value("-0", formats::bf16)));
  EXPECT_TRUE(parse_number("-0", formats::bf16)->exact);
  // Beyond the range: overflow to inf, or NaN for e4m3 which has no infinity.
  EXPECT_EQ(parse_number("1e400", formats::fp64)->rounded.event, RoundingEvent::overflow);
  EXPECT_EQ(parse_number("70000", formats::fp16)->rounded.event, RoundingEvent::overflow);
  EXPECT_TRUE(std::isnan(value("1000", formats::e4m3)));
  EXPECT_EQ(value("448", formats::e4m3), 448.0);
  EXPECT_FALSE(parse_number("inf", formats::e4m3)->exact);
  // Below it: zero, or the smallest subnormal when rounding up.
  EXPECT_EQ(parse_number("1e-400", formats::fp64)->rounded.event, RoundingEvent::flush_to_zero);
  EXPECT_EQ(value("1e-400", formats::fp64, Rounding::upward), 0x1p-1074);
  // Beyond MPFR's own exponent range as well.
  EXPECT_EQ(parse_number("1e99999999999", formats::fp32)->rounded.event, RoundingEvent::overflow);
  EXPECT_EQ(value("1e-99999999999", formats::fp32, Rounding::upward), 0x1p-149);
  EXPECT_EQ(value("-1e-99999999999", formats::fp32, Rounding::nearest_even), 0.0);
}

TEST(ParseNumber, ExponentsNearTheRangeOfLong) {
  // MPFR 4.2 alone reads these as its largest number (its exponent arithmetic wraps); the values
  // are far below every format's range. Found by the number_text fuzz target.
  for (const char* text : {"0.004000e-400000000000000000000000000000000011",
                           "0.001e-9223372036854775807", "0x0.001p-9223372036854775807",
                           "0x0.001@-9223372036854775807", "0.001@-9223372036854775807",
                           "000.0000000000000000001e-"
                           "00000000000000000000000000000000000000000000000000099999999999"}) {
    const auto tiny = parse_number(text, formats::fp64);
    ASSERT_TRUE(tiny) << text;
    EXPECT_EQ(tiny->rounded.event, RoundingEvent::flush_to_zero) << text;
    EXPECT_EQ(tiny->rounded.value, 0.0) << text;
    EXPECT_EQ(value(text, formats::fp64, Rounding::upward), 0x1p-1074) << text;
  }
  for (const char* text : {"0.001e9223372036854775809", "0x0.001@9223372036854775807",
                           "1e+00000000000000000000000000000000000000012345678901234567"}) {
    EXPECT_EQ(parse_number(text, formats::fp16)->rounded.event, RoundingEvent::overflow) << text;
    EXPECT_EQ(value(text, formats::fp16, Rounding::toward_zero), 65504.0) << text;
  }
  // Exponent digits are only replaced by digits: what MPFR refuses stays refused, and leading
  // zeros of an ordinary exponent change nothing.
  EXPECT_FALSE(parse_number("1e-99999999999999999999x", formats::fp32).has_value());
  EXPECT_FALSE(parse_number("0x1e-99999999999999999999", formats::fp32).has_value());
  EXPECT_EQ(value("1e+00000000000000000000000000000000005", formats::fp64), 1e5);
  EXPECT_EQ(value("-0.001e-9223372036854775807", formats::fp64, Rounding::downward), -0x1p-1074);
}

TEST(ParseNumber, NotNumbers) {
  for (const char* text : {"", " 1", "1 ", "abc", "1.2.3", "0x", "--1", "1e", "nan1", "0x1.8q3"}) {
    EXPECT_FALSE(parse_number(text, formats::fp32).has_value()) << "'" << text << "'";
  }
}

}  // namespace
}  // namespace ampbench::io
