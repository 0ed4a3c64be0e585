// The scale formats of the microscaling recipes, every pattern: ue8m0 (OCP MX v1.0's E8M0: 2^-127
// .. 2^127 in patterns 0x00 .. 0xFE, 0xFF NaN) and ue4m3 (NVFP4's block scale: e4m3's non-negative
// values); round_scale against the MPFR oracle at every value, the midpoints between values and
// their binary64 neighbours, in every mode, and by hand where the oracle has no answer (e8m0 has no
// zero; precision 1 leaves ties-to-even to the exponent field).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "harness/numeric/options.hpp"
#include "harness/numeric/rounding.hpp"
#include "harness/numeric/test/failure_log.hpp"
#include "harness/numeric/test/mpfr_oracle.hpp"
#include "harness/numeric/test/test_support.hpp"

namespace ampbench::numeric::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// E8M0 as the oracle sees it: precision 1 (a power of two), 2^-127 .. 2^127, no subnormals,
// saturating. The oracle's results below 2^-127 (0 in some modes) are not e8m0's: it has no zero.
constexpr oracle::Spec kE8m0Spec{1, -127, 127, false, true, false, true, 0x1p127};

TEST(ScaleFormats, E8m0DecodesEveryPatternFromItsExponentField) {
  FailureLog log("ue8m0 decode");
  for (std::uint32_t bits = 0; bits < 256; ++bits) {
    const double got = decode_scale(formats::ue8m0, bits);
    if (bits == 0xFF) {
      if (!std::isnan(got)) log.add("0xff is not NaN");
      continue;
    }
    const double want = std::ldexp(1.0, static_cast<int>(bits) - 127);
    if (got != want)
      log.add(fmt_bits(bits) + ": " + describe(got) + ", expected " + describe(want));
  }
  EXPECT_EQ(decode_scale(formats::ue8m0, 0x7F), 1.0);
  EXPECT_EQ(decode_scale(formats::ue8m0, 0x00), 0x1p-127);
  EXPECT_EQ(decode_scale(formats::ue8m0, 0xFE), 0x1p127);
}

TEST(ScaleFormats, Ue4m3DecodesAsE4m3sNonNegativeHalf) {
  FailureLog log("ue4m3 decode");
  for (std::uint32_t bits = 0; bits < 256; ++bits) {
    const double got = decode_scale(formats::ue4m3, bits);
    const bool nan = bits >= 0x7F;  // 0x7F is e4m3's NaN; 0x80 and up carry a sign
    if (nan != std::isnan(got)) log.add(fmt_bits(bits) + ": NaN expected " + std::to_string(nan));
    if (!nan && !same(got, decode(formats::e4m3, bits))) log.add(fmt_bits(bits) + " differs");
  }
  EXPECT_EQ(decode_scale(formats::ue4m3, 0x7E), 448.0);
  EXPECT_EQ(decode_scale(formats::ue4m3, 0x01), 0x1p-9);
}

// Every e8m0 value, its binary64 neighbours and the midpoints to the next (1.5 * 2^k) with theirs.
std::vector<double> e8m0_probes() {
  std::vector<double> out;
  for (int k = -127; k <= 128; ++k) {
    const double v = std::ldexp(1.0, k);
    const double mid = 1.5 * v;
    out.insert(out.end(), {v, std::nextafter(v, 0.0), std::nextafter(v, kInf), mid,
                           std::nextafter(mid, 0.0), std::nextafter(mid, kInf)});
  }
  return out;
}

TEST(ScaleFormats, E8m0RoundingAgreesWithTheOracleInEveryMode) {
  FailureLog log("ue8m0 rounding");
  for (const double x : e8m0_probes()) {
    if (x < 0x1p-127) continue;  // below: by hand (no zero)
    const bool tie = x == 1.5 * std::ldexp(1.0, std::ilogb(x));
    for (const Draw& d : kDraws) {
      const Rounded got = round_scale(formats::ue8m0, d.mode, x, d.random);
      const auto where = [&] {
        return fmt::format("x={} mode {} random {:#x}: bits {:#x}", describe(x),
                           rounding_name(d.mode), d.random, got.bits);
      };
      if (!same(decode_scale(formats::ue8m0, got.bits), got.value)) log.add(where() + " decode");
      // Precision 1: every value's last bit is its implicit one, so ties-to-even and to-odd are
      // decided by the exponent field (even, resp. odd), which MPFR does not model.
      if ((tie && d.mode == Rounding::nearest_even) || d.mode == Rounding::to_odd) {
        const double lo = std::ldexp(1.0, std::ilogb(x));
        const int lo_field = std::ilogb(x) + 127;
        const bool lo_wanted =
            d.mode == Rounding::nearest_even ? lo_field % 2 == 0 : lo_field % 2 != 0 || lo == x;
        double want = lo_wanted ? lo : 2 * lo;
        if (want > 0x1p127) want = 0x1p127;
        if (got.value != want) log.add(where() + " expected " + describe(want));
        continue;
      }
      const oracle::Result want = oracle::round(kE8m0Spec, d.mode, x, d.random);
      if (!same(got.value, want.value) || got.event != want.event) {
        log.add(where() + fmt::format(" value {} event {}; oracle {} {}", describe(got.value),
                                      event_name(got.event), describe(want.value),
                                      event_name(want.event)));
      }
    }
  }
}

TEST(ScaleFormats, E8m0HasNoZeroNegativeValuesOrInfinity) {
  for (const Rounding mode : kAllModes) {
    for (const double tiny : {0.0, -0.0, 0x1p-1074, 0x1p-128, std::nextafter(0x1p-127, 0.0)}) {
      const Rounded r = round_scale(formats::ue8m0, mode, tiny, 0xFFFFFFFFu);
      EXPECT_EQ(r.bits, 0u) << describe(tiny);  // 2^-127, the smallest value
      EXPECT_EQ(r.event, RoundingEvent::underflow) << describe(tiny);
    }
    for (const double bad : {-1.0, -kInf, kNaN, -0x1p-1074}) {
      const Rounded r = round_scale(formats::ue8m0, mode, bad);
      EXPECT_EQ(r.bits, 0xFFu) << describe(bad);
      EXPECT_EQ(r.event, RoundingEvent::nan) << describe(bad);
    }
    const Rounded inf = round_scale(formats::ue8m0, mode, kInf);
    EXPECT_EQ(inf.bits, 0xFEu);
    EXPECT_EQ(inf.event, RoundingEvent::saturation);
  }
}

TEST(ScaleFormats, Ue4m3RoundingAgreesWithTheOracleForSaturatingE4m3) {
  Format e4m3_saturating = formats::e4m3;
  e4m3_saturating.overflow = Overflow::saturate;
  const oracle::Spec spec = oracle::spec_of(e4m3_saturating);
  FailureLog log("ue4m3 rounding");
  for (std::uint32_t bits = 0; bits < 0x7F; ++bits) {
    const double v = decode(formats::e4m3, bits);
    const double quantum = std::ldexp(1.0, std::max(static_cast<int>(bits >> 3), 1) - 7 - 3);
    const double mid = v + quantum / 2;
    for (const double x :
         {v, std::nextafter(v, kInf), mid, std::nextafter(mid, 0.0), std::nextafter(mid, kInf)}) {
      for (const Draw& d : kDraws) {
        const Rounded got = round_scale(formats::ue4m3, d.mode, x, d.random);
        const oracle::Result want = oracle::round(spec, d.mode, x, d.random);
        if (!same(got.value, want.value) || got.event != want.event || got.bits > 0x7E) {
          log.add(fmt::format("x={} mode {}: bits {:#x} value {} event {}; oracle {} {}",
                              describe(x), rounding_name(d.mode), got.bits, describe(got.value),
                              event_name(got.event), describe(want.value), event_name(want.event)));
        }
      }
    }
  }
  for (const double bad : {-1.0, -kInf, kNaN}) {
    const Rounded r = round_scale(formats::ue4m3, Rounding::nearest_even, bad);
    EXPECT_EQ(r.bits, 0x7Fu) << describe(bad);
    EXPECT_EQ(r.event, RoundingEvent::nan) << describe(bad);
  }
  EXPECT_EQ(round_scale(formats::ue4m3, Rounding::nearest_even, -0.0).bits, 0u);
  EXPECT_EQ(round_scale(formats::ue4m3, Rounding::nearest_even, kInf).bits, 0x7Eu);
}

}  // namespace
}  // namespace ampbench::numeric::test
