// Stochastic rounding: the draws (splitmix64 against its reference), the two possible results,
// the frequency of rounding away from zero, reproducibility, and the array paths' use of the
// stream position.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "harness/numeric/rounding.hpp"
#include "harness/numeric/rounding_array.hpp"
#include "harness/numeric/test/failure_log.hpp"
#include "harness/numeric/test/mpfr_oracle.hpp"
#include "harness/numeric/test/test_support.hpp"

namespace ampbench::numeric::test {
namespace {

// SplitMix64 as published by Vigna (prng.di.unimi.it/splitmix64.c): the state advances by the
// golden gamma before each output.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

TEST(StochasticDraw, IsTheTopHalfOfSplitMix64AtThatPosition) {
  // Published outputs for seed 1234567 (Rosetta Code, "Pseudo-random numbers/Splitmix64").
  SplitMix64 reference(1234567);
  for (const std::uint64_t want : {6457827717110365317u, 3203168211198807973u, 9817491932198370423u,
                                   4593380528125082431u, 16408922859458223821u}) {
    EXPECT_EQ(reference.next(), want);
  }
  for (const std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{1234567}, ~std::uint64_t{0}}) {
    SplitMix64 stream(seed);
    for (std::uint64_t i = 0; i < 1000; ++i) {
      ASSERT_EQ(stochastic_draw(seed, i), static_cast<std::uint32_t>(stream.next() >> 32))
          << "seed " << seed << " index " << i;
    }
  }
}

// Inputs with assorted positions between their neighbours: k/8 of the way (k = 1..7), a third,
// a tiny fraction, inside the subnormal range, and beyond the largest finite value.
std::vector<double> inputs(const Format& f) {
  const double one_quantum = std::ldexp(1.0, -(f.precision - 1));  // at 1.0
  std::vector<double> out;
  for (int k = 1; k < 8; ++k) out.push_back(1.0 + k * one_quantum / 8);
  out.push_back(-(1.0 + one_quantum / 3));
  out.push_back(1.0 + one_quantum / 1000);
  out.push_back(std::ldexp(0.3, f.emin - (f.precision - 1)));   // 0.3 of the smallest subnormal
  out.push_back(-std::ldexp(1.7, f.emin - (f.precision - 1)));  // between 1 and 2 subnormals
  const double max = oracle::spec_of(f).max_finite;
  const double top_quantum = std::ldexp(1.0, f.emax - (f.precision - 1));
  out.push_back(max + top_quantum * 0.25);  // overflows when rounded away
  out.push_back(-(max + top_quantum * 0.75));
  return out;
}

constexpr Format kStochasticFormats[] = {formats::fp16, formats::bf16, formats::e4m3, formats::e5m2,
                                         formats::tf32};

// Over n draws the number of results away from zero is binomial(n, q), q = threshold / 2^32
// (proportional) or 1/2 (equal). The test allows 5 standard deviations: a correct implementation
// fails one value in about 1.7 million; the draws are fixed, so the outcome is reproducible.
TEST(StochasticRounding, FrequencyOfRoundingAwayMatchesTheFraction) {
  constexpr std::uint64_t kDraws = 100000;
  for (const Format& base : kStochasticFormats) {
    for (const Format& f : {base, variant(base, false, Overflow::saturate)}) {
      const oracle::Spec spec = oracle::spec_of(f);
      for (const double x : inputs(f)) {
        // The two possible results: the oracle's results rounding each way.
        const double down = oracle::round(spec, Rounding::toward_zero, x).value;
        const double away =
            oracle::round(spec, std::signbit(x) ? Rounding::downward : Rounding::upward, x).value;
        for (const Rounding mode :
             {Rounding::stochastic_proportional, Rounding::stochastic_equal}) {
          SCOPED_TRACE(describe(f) + " x=" + describe(x) + " mode " +
                       std::string(rounding_name(mode)));
          if (same(down, away)) {  // saturated both ways: nothing to count
            EXPECT_TRUE(same(round_to(f, mode, x, 0).value, down));
            continue;
          }
          const double q =
              mode == Rounding::stochastic_equal
                  ? 0.5
                  : std::ldexp(static_cast<double>(oracle::stochastic_threshold(spec, x)), -32);
          std::uint64_t aways = 0;
          for (std::uint64_t i = 0; i < kDraws; ++i) {
            const double r = round_to(f, mode, x, stochastic_draw(42, i)).value;
            if (same(r, away)) {
              ++aways;
            } else if (!same(r, down)) {
              FAIL() << "draw " << i << " gave " << describe(r) << ", neither " << describe(down)
                     << " nor " << describe(away);
            }
          }
          const double expected = q * kDraws;
          const double sigma = std::sqrt(kDraws * q * (1 - q));
          EXPECT_LE(std::fabs(static_cast<double>(aways) - expected), 5 * sigma)
              << aways << " of " << kDraws << " rounded away, expected " << expected;
        }
      }
    }
  }
}

std::vector<float> midpoints_of_fp16() {
  std::vector<float> out;
  for (int i = 0; i < 50000; ++i)
    out.push_back(1.0f + (2.0f * static_cast<float>(i % 1024) + 1) / 2048);
  return out;
}

TEST(StochasticRounding, SameSeedSameBitsOtherSeedOtherBits) {
  const std::vector<float> in = midpoints_of_fp16();  // every one a tie: a coin flip each
  for (const Rounding mode : {Rounding::stochastic_proportional, Rounding::stochastic_equal}) {
    RoundingOptions options{formats::fp16, mode, 7, Container::binary32};
    std::vector<float> a(in.size()), b(in.size()), c(in.size());
    round_array(options, in, a);
    round_array(options, in, b);
    options.seed = 8;
    round_array(options, in, c);
    std::size_t same_ab = 0, same_ac = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      same_ab += bits_of(a[i]) == bits_of(b[i]) ? 1 : 0;
      same_ac += bits_of(a[i]) == bits_of(c[i]) ? 1 : 0;
    }
    EXPECT_EQ(same_ab, in.size());
    // Independent coin flips agree about half the time.
    EXPECT_GT(same_ac, in.size() * 45 / 100);
    EXPECT_LT(same_ac, in.size() * 55 / 100);
  }
}

// The array paths give element i the draw first_index + i, whatever their chunking.
TEST(StochasticRounding, ArrayPathsUseTheDrawAtEachElementsPosition) {
  constexpr std::uint64_t kFirst = 1000003, kSeed = 0xC0FFEE;
  for (const Format& base : kStochasticFormats) {
    for (const Format& f : variants(base)) {
      const std::vector<float> in = floats_near_range(f, 5000, 17);
      for (const Rounding mode : {Rounding::stochastic_proportional, Rounding::stochastic_equal}) {
        const RoundingOptions options{f, mode, kSeed, Container::binary32};
        FailureLog log(describe(f) + " " + std::string(rounding_name(mode)));
        std::vector<float> rounded(in.size());
        round_array(options, in, rounded, kFirst);
        // In two pieces, the second starting at its own position in the stream.
        std::vector<float> pieces(in.size());
        const std::size_t split = 1237;
        round_array(options, std::span(in).first(split), std::span(pieces).first(split), kFirst);
        round_array(options, std::span(in).subspan(split), std::span(pieces).subspan(split),
                    kFirst + split);
        std::vector<std::uint16_t> encoded16(in.size());
        std::vector<std::uint8_t> encoded8(in.size());
        if (f.total_bits() == 16) encode_array(options, in, encoded16, kFirst);
        if (f.total_bits() == 8) encode_array(options, in, encoded8, kFirst);
        for (std::size_t i = 0; i < in.size(); ++i) {
          const Rounded want = round_to(f, mode, in[i], stochastic_draw(kSeed, kFirst + i));
          const auto want_value = static_cast<float>(want.value);
          const std::uint64_t encoded = f.total_bits() == 16  ? encoded16[i]
                                        : f.total_bits() == 8 ? encoded8[i]
                                                              : want.bits;
          if (bits_of(rounded[i]) != bits_of(want_value) ||
              bits_of(pieces[i]) != bits_of(want_value) || encoded != want.bits) {
            log.add("x=" + describe(in[i]) + " i=" + std::to_string(i) + ": round_array " +
                    describe(rounded[i]) + ", in pieces " + describe(pieces[i]) + ", encoded " +
                    fmt_bits(encoded) + "; round_to " + describe(want_value) + " bits " +
                    fmt_bits(want.bits));
          }
        }
      }
    }
  }
}

// Stochastic rounding goes away from zero iff random < threshold, so a draw equal to the
// threshold rounds toward zero. Random inputs practically never meet that equality; this test
// looks for stream positions whose draw can be a threshold (its low 32 - d bits zero, d being
// the binary32 fraction bits below the format's quantum in [1, 2)), and builds the input
// 1 + rest * 2^-23 whose threshold is that draw, one step below and one above, at each of the 16
// lanes of a vector.
TEST(StochasticRounding, DrawEqualToTheThresholdRoundsTowardZeroInEveryPath) {
  constexpr std::uint64_t kSeed = 12345;
  constexpr std::size_t kLanes = 16, kLength = 64;
  for (const Format& base : kStochasticFormats) {
    const int d = 23 - (base.precision - 1);
    const std::uint32_t low_bits = (1u << (32 - d)) - 1;
    std::vector<std::uint64_t> positions;
    for (std::uint64_t i = kLanes; positions.size() < 2 * kLanes; ++i) {
      if ((stochastic_draw(kSeed, i) & low_bits) == 0) positions.push_back(i);
    }
    for (const Format& f : {base, variant(base, true, Overflow::saturate)}) {
      const RoundingOptions o{f, Rounding::stochastic_proportional, kSeed, Container::binary32};
      FailureLog log(describe(f) + " draws equal to thresholds");
      for (std::size_t k = 0; k < positions.size(); ++k) {
        const std::size_t lane = k % kLanes;
        const std::uint64_t first = positions[k] - lane;
        const std::uint32_t rest = stochastic_draw(kSeed, positions[k]) >> (32 - d);
        for (const std::int64_t delta : {0, -1, 1}) {
          const std::int64_t fraction = static_cast<std::int64_t>(rest) + delta;
          if (fraction <= 0 || fraction >= (std::int64_t{1} << d)) continue;
          std::vector<float> in(kLength, 1.0f), out(kLength);
          in[lane] = float_of(0x3F800000u | static_cast<std::uint32_t>(fraction));
          const double want = delta > 0 ? 1.0 + std::ldexp(1.0, 1 - base.precision) : 1.0;
          round_array(o, in, out, first);
          std::vector<std::uint16_t> encoded16(kLength);
          std::vector<std::uint8_t> encoded8(kLength);
          double encoded = want;
          if (f.total_bits() == 16) {
            encode_array(o, in, encoded16, first);
            encoded = decode(f, encoded16[lane]);
          } else if (f.total_bits() == 8) {
            encode_array(o, in, encoded8, first);
            encoded = decode(f, encoded8[lane]);
          }
          const double scalar =
              round_to(f, o.mode, in[lane], stochastic_draw(kSeed, first + lane)).value;
          if (out[lane] != want || encoded != want || scalar != want) {
            log.add("lane " + std::to_string(lane) + " x=" + describe(in[lane]) + " draw " +
                    fmt_bits(stochastic_draw(kSeed, first + lane)) + ": round_array " +
                    describe(out[lane]) + ", encode_array " + describe(encoded) + ", round_to " +
                    describe(scalar) + "; expected " + describe(want));
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ampbench::numeric::test
