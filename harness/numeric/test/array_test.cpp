// The array paths (vectorised, F16C, scalar) against element-wise round_to and decode, bit for
// bit, on random binary32 bit patterns and on numbers near each format's range; event counts; and
// the errors they report.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/numeric/options.hpp"
#include "harness/numeric/rounding.hpp"
#include "harness/numeric/rounding_array.hpp"
#include "harness/numeric/test/failure_log.hpp"
#include "harness/numeric/test/test_support.hpp"

namespace ampbench::numeric::test {
namespace {

// Uniform binary32 bit patterns (NaNs with payloads, infinities, subnormals, everything), numbers
// in the format's normal range, numbers near its range, and the special values; the odd total
// length exercises the tails of the vector loops.
std::vector<float> array_inputs(const Format& f, std::size_t uniform, std::size_t near) {
  std::mt19937 rng(2024);
  std::vector<float> in;
  for (std::size_t i = 0; i < uniform; ++i) {
    in.push_back(float_of(static_cast<std::uint32_t>(rng())));
  }
  // Whole 16-lane blocks (`uniform` is a multiple of 16) of zeros and numbers in F's normal range,
  // its smallest normal and largest finite among them: where the AVX-512 stochastic encode takes
  // its constant-shift path.
  const double min_normal = std::ldexp(1.0, f.emin);
  const double max_finite = decode(f, detail::max_finite_bits(f));
  std::uniform_real_distribution<double> exponent(f.emin, std::log2(max_finite));
  for (std::size_t i = 0; i < near; ++i) {
    double x = std::clamp(std::exp2(exponent(rng)), min_normal, max_finite);
    if (i % 37 == 0) x = 0;
    if (i % 1001 == 5) x = min_normal;
    if (i % 1001 == 6) x = max_finite;
    in.push_back(static_cast<float>((rng() & 1u) != 0 ? -x : x));
  }
  const std::vector<float> ranged = floats_near_range(f, near, 99);
  in.insert(in.end(), ranged.begin(), ranged.end());
  constexpr float kInf = std::numeric_limits<float>::infinity();
  in.insert(in.end(), {0.0f, -0.0f, kInf, -kInf, float_of(0x7FC00000u), float_of(0xFFC00001u),
                       float_of(0x7F800001u), float_of(0x7FBFFFFFu), float_of(0x00000001u),
                       std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()});
  in.resize(in.size() + 37, 1.0f);
  return in;
}

std::string what(const RoundingOptions& o) {
  return describe(o.format) + " " + std::string(rounding_name(o.mode)) + " path " +
         rounding_path(o);
}

// round_array (with and without event counts) and encode_array against round_to.
void check_array_paths(const RoundingOptions& o, std::span<const float> in) {
  constexpr std::uint64_t kFirst = 77;
  FailureLog log(what(o));
  std::vector<float> rounded(in.size()), counted(in.size());
  round_array(o, in, rounded, kFirst);
  EventCounts events;
  round_array(o, in, counted, kFirst, &events);
  std::vector<std::uint16_t> encoded16(in.size());
  std::vector<std::uint8_t> encoded8(in.size());
  const int width = o.format.total_bits();
  if (width == 16) encode_array(o, in, encoded16, kFirst);
  if (width == 8) encode_array(o, in, encoded8, kFirst);

  EventCounts want_events;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::uint32_t random = is_stochastic(o.mode) ? stochastic_draw(o.seed, kFirst + i) : 0;
    const Rounded want = round_to(o.format, o.mode, in[i], random);
    want_events.add(want.event);
    const auto value = static_cast<float>(want.value);
    const std::uint64_t encoded = width == 16 ? encoded16[i] : width == 8 ? encoded8[i] : want.bits;
    if (bits_of(rounded[i]) != bits_of(value) || bits_of(counted[i]) != bits_of(value) ||
        encoded != want.bits) {
      log.add("x=" + describe(in[i]) + ": round_array " + describe(rounded[i]) + ", with events " +
              describe(counted[i]) + ", encode_array " + fmt_bits(encoded) + "; round_to " +
              describe(value) + " bits " + fmt_bits(want.bits));
    }
  }
  for (int e = 0; e < kRoundingEventCount; ++e) {
    EXPECT_EQ(events.count[e], want_events.count[e])
        << what(o) << ": count of " << event_name(static_cast<RoundingEvent>(e));
  }
}

constexpr Format kFastFormats[] = {formats::fp16, formats::bf16, formats::tf32, formats::e4m3,
                                   formats::e5m2};

class ArrayPaths : public ::testing::TestWithParam<Format> {};

// The vectorised paths: round to nearest even and stochastic rounding, both overflow policies.
TEST_P(ArrayPaths, FastPathsMatchRoundTo) {
  for (const Overflow overflow : {Overflow::infinity, Overflow::saturate}) {
    const Format f = variant(GetParam(), true, overflow);
    const std::vector<float> in = array_inputs(f, 1 << 19, 1 << 17);
    for (const Rounding mode : {Rounding::nearest_even, Rounding::stochastic_proportional}) {
      check_array_paths(RoundingOptions{f, mode, 31337, Container::binary32}, in);
    }
  }
}

// Everything else goes through the scalar path: other modes, and formats without subnormals.
TEST_P(ArrayPaths, ScalarPathsMatchRoundTo) {
  const std::vector<float> in = array_inputs(GetParam(), 1 << 15, 1 << 14);
  for (const Rounding mode : kAllModes) {
    for (const Format& f : variants(GetParam())) {
      if (f.subnormals &&
          (mode == Rounding::nearest_even || mode == Rounding::stochastic_proportional)) {
        continue;  // the fast paths, above
      }
      const RoundingOptions o{f, mode, 5, Container::binary32};
      EXPECT_STREQ(rounding_path(o), "scalar") << what(o);
      check_array_paths(o, in);
    }
  }
}

std::string FormatName(const ::testing::TestParamInfo<Format>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Formats, ArrayPaths, ::testing::ValuesIn(kFastFormats), FormatName);

TEST(ArrayPathsDecode, DecodeArrayMatchesDecodeForEveryPattern) {
  for (const Format& f : {formats::fp16, formats::bf16}) {
    std::vector<std::uint16_t> patterns(65536);
    for (std::uint32_t i = 0; i < 65536; ++i) patterns[i] = static_cast<std::uint16_t>(i);
    std::vector<float> out(patterns.size());
    decode_array(f, patterns, out);
    FailureLog log(std::string("decode_array ") + f.name);
    for (std::uint32_t i = 0; i < 65536; ++i) {
      const auto want = static_cast<float>(decode(f, i));
      if (bits_of(out[i]) != bits_of(want)) {
        log.add(fmt_bits(i) + ": " + describe(out[i]) + ", decode " + describe(want));
      }
    }
  }
  for (const Format& f :
       {formats::e4m3, formats::e5m2, variant(formats::e4m3, false, Overflow::saturate)}) {
    std::vector<std::uint8_t> patterns(256);
    for (std::uint32_t i = 0; i < 256; ++i) patterns[i] = static_cast<std::uint8_t>(i);
    std::vector<float> out(patterns.size());
    decode_array(f, patterns, out);
    FailureLog log(std::string("decode_array ") + f.name);
    for (std::uint32_t i = 0; i < 256; ++i) {
      const auto want = static_cast<float>(decode(f, i));
      if (bits_of(out[i]) != bits_of(want)) {
        log.add(fmt_bits(i) + ": " + describe(out[i]) + ", decode " + describe(want));
      }
    }
  }
}

TEST(ArrayPathsPaths, NamesThePathItTakes) {
  const auto path = [](const Format& f, Rounding mode) {
    return std::string(rounding_path(RoundingOptions{f, mode, 0, Container::binary32}));
  };
  const auto vectorised = [](const std::string& p) {
    return p == "avx512" || p == "avx2" || p == "avx2 fp8" || p == "generic";
  };
  if (cpu_has_f16c()) {
    EXPECT_EQ(path(formats::fp16, Rounding::nearest_even), "f16c");
  } else {
    EXPECT_TRUE(vectorised(path(formats::fp16, Rounding::nearest_even)));
  }
  EXPECT_TRUE(vectorised(path(formats::e4m3, Rounding::stochastic_proportional)));
  EXPECT_TRUE(
      vectorised(path(variant(formats::fp16, true, Overflow::saturate), Rounding::nearest_even)));
  EXPECT_EQ(path(formats::fp16, Rounding::to_odd), "scalar");
  EXPECT_EQ(path(formats::fp32, Rounding::nearest_even), "scalar");
}

// CTest runs this program once per instruction set (AMPBENCH_ISA, see test/CMakeLists.txt): each
// run must take the path it asked for, or the comparisons above test another path than claimed.
TEST(ArrayPathsPaths, FollowTheInstructionSetCap) {
  const char* cap = std::getenv("AMPBENCH_ISA");
  if (cap == nullptr) GTEST_SKIP() << "AMPBENCH_ISA is not set: the best path is tested";
  const std::string isa = cap;
  __builtin_cpu_init();
  const bool supported = isa == "baseline" || (isa == "avx2" && __builtin_cpu_supports("avx2")) ||
                         (isa == "avx512" && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"));
  if (!supported) GTEST_SKIP() << "this CPU lacks " << isa;
  const RoundingOptions bf16{formats::bf16, Rounding::nearest_even, 0, Container::binary32};
  EXPECT_EQ(std::string(rounding_path(bf16)), isa == "baseline" ? "generic" : isa);
  // e4m3 and e5m2 to nearest have a kernel of their own on AVX2 (AVX-512 has its own kernels).
  for (const Format& f : {formats::e4m3, formats::e5m2}) {
    const RoundingOptions fp8{f, Rounding::nearest_even, 0, Container::binary32};
    EXPECT_EQ(std::string(rounding_path(fp8)),
              isa == "avx2" ? "avx2 fp8" : (isa == "baseline" ? "generic" : isa));
  }
  const RoundingOptions fp16{formats::fp16, Rounding::nearest_even, 0, Container::binary32};
  if (isa == "baseline") {
    EXPECT_FALSE(cpu_has_f16c());
    EXPECT_EQ(std::string(rounding_path(fp16)), "generic");
  }
}

// The AVX2 fp8 kernel rounds below the normal range by a binary32 addition, which follows MXCSR's
// rounding direction: under another direction the path is not taken, and the codes stay
// round_to's.
TEST(ArrayPathsPaths, Fp8ToNearestIgnoresTheFloatingPointRoundingDirection) {
  for (const Format& f : {formats::e4m3, formats::e5m2}) {
    const RoundingOptions o{f, Rounding::nearest_even, 0, Container::binary32};
    const std::vector<float> in = array_inputs(f, 4096, 4096);
    std::vector<std::uint8_t> nearest(in.size()), upward(in.size());
    encode_array(o, in, nearest);
    const int direction = std::fegetround();
    std::fesetround(FE_UPWARD);
    const std::string path = rounding_path(o);
    encode_array(o, in, upward);
    std::fesetround(direction);
    EXPECT_NE(path, "avx2 fp8") << describe(f);
    EXPECT_EQ(nearest, upward) << describe(f);
  }
}

// ---- errors -------------------------------------------------------------------------------------

// Runs f, which must throw std::invalid_argument with a message containing `needle`.
template <typename F>
void expect_invalid_argument(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one mentioning \"" << needle << "\"";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ArrayPathsErrors, SizeMismatchIsRejected) {
  const RoundingOptions o{formats::fp16, Rounding::nearest_even, 0, Container::binary32};
  std::vector<float> in(10), out(9);
  std::vector<std::uint16_t> bits16(11);
  std::vector<std::uint8_t> bits8(3);
  expect_invalid_argument([&] { round_array(o, in, out); }, "round_array");
  expect_invalid_argument([&] { round_array(o, in, out); }, "10");
  expect_invalid_argument([&] { encode_array(o, in, bits16); }, "encode_array");
  const RoundingOptions o8{formats::e4m3, Rounding::nearest_even, 0, Container::binary32};
  expect_invalid_argument([&] { encode_array(o8, in, bits8); }, "encode_array");
  expect_invalid_argument([&] { decode_array(formats::fp16, bits16, in); }, "decode_array");
  expect_invalid_argument([&] { decode_array(formats::e4m3, bits8, in); }, "decode_array");
}

TEST(ArrayPathsErrors, FormatsThatDoNotFitAreRejected) {
  std::vector<float> in(4, 1.0f), out(4);
  std::vector<std::uint16_t> bits16(4);
  std::vector<std::uint8_t> bits8(4);
  const auto options = [](const Format& f) {
    return RoundingOptions{f, Rounding::nearest_even, 0, Container::binary32};
  };
  // binary64 values do not fit a binary32 container.
  expect_invalid_argument([&] { round_array(options(formats::fp64), in, out); }, "binary32");
  expect_invalid_argument([&] { encode_array(options(formats::fp64), in, bits16); }, "binary32");
  // Too many bits for the output patterns.
  expect_invalid_argument([&] { encode_array(options(formats::fp32), in, bits16); }, "bits");
  expect_invalid_argument([&] { encode_array(options(formats::tf32), in, bits16); }, "bits");
  expect_invalid_argument([&] { encode_array(options(formats::fp16), in, bits8); }, "bits");
  // Invalid formats.
  expect_invalid_argument([&] { round_array(options(user_format(60, -10, 10)), in, out); },
                          "precision");
  expect_invalid_argument([&] { round_array(options(user_format(8, 10, -10)), in, out); }, "emin");
}

}  // namespace
}  // namespace ampbench::numeric::test
