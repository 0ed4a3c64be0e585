// The kernel must give round_to's bits and values exactly, in every format and mode, on random
// binary32 patterns and on each format's boundary values and midpoints.
#include "kernels/rounding_kernels.cuh"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/numeric/options.hpp"
#include "harness/numeric/rounding.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::kernels {
namespace {

using numeric::Format;
using numeric::Rounding;
namespace formats = numeric::formats;

// A value of the format, its binary32 neighbours, and (with the next pattern's value) the midpoint
// between them and the midpoint's neighbours: where the modes differ.
void add_around(std::vector<float>& out, double value, double next) {
  const auto with_neighbours = [&](float x) {
    out.push_back(x);
    out.push_back(std::nextafter(x, std::numeric_limits<float>::infinity()));
    out.push_back(std::nextafter(x, -std::numeric_limits<float>::infinity()));
  };
  with_neighbours(static_cast<float>(value));
  if (std::isfinite(value) && std::isfinite(next)) {
    with_neighbours(static_cast<float>(value + (next - value) / 2));
  }
}

std::vector<float> test_inputs(const Format& f) {
  std::vector<float> in;
  const int t = f.fraction_bits();
  const std::uint64_t magnitudes = f.sign_mask();  // the patterns of the positive half
  if (f.total_bits() <= 16) {
    for (std::uint64_t p = 0; p < magnitudes; ++p) {
      add_around(in, numeric::decode(f, p), numeric::decode(f, p + 1));
    }
  } else {
    const std::uint64_t one = static_cast<std::uint64_t>(f.bias()) << t;
    const std::uint64_t min_normal = std::uint64_t{1} << t;
    const std::uint64_t max_finite = numeric::detail::max_finite_bits(f);
    for (const std::uint64_t p :
         {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{2}, min_normal - 2, min_normal - 1,
          min_normal, min_normal + 1, one - 1, one, one + 1, max_finite - 1, max_finite}) {
      add_around(in, numeric::decode(f, p), numeric::decode(f, p + 1));
    }
  }
  // The overflow threshold: max finite plus half a quantum.
  const double max = numeric::decode(f, numeric::detail::max_finite_bits(f));
  add_around(in, max + std::ldexp(1.0, f.emax - t - 1), max + std::ldexp(1.0, f.emax - t));
  for (const float x : {std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                        std::numeric_limits<float>::denorm_min(),
                        std::numeric_limits<float>::infinity(), std::bit_cast<float>(0x7FC00000u),
                        std::bit_cast<float>(0x7FA12345u), std::bit_cast<float>(0x7FFFFFFFu)}) {
    in.push_back(x);
  }
  const std::size_t boundary_count = in.size();
  for (std::size_t i = 0; i < boundary_count; ++i) in.push_back(-in[i]);

  std::mt19937_64 rng(0x5eed'0000 + static_cast<unsigned>(f.precision));
  std::uniform_int_distribution<std::uint32_t> any_bits;
  for (int i = 0; i < (1 << 15); ++i) in.push_back(std::bit_cast<float>(any_bits(rng)));
  // Random values in and just beyond the format's range, where most of the rounding happens.
  std::uniform_int_distribution<int> exponent(std::max(f.emin - t - 3, -149), f.emax + 2);
  for (int i = 0; i < (1 << 15); ++i) {
    const std::uint32_t bits = any_bits(rng);
    const auto significand = static_cast<float>(1.0 + std::ldexp(bits & 0x7FFFFFu, -23));
    const float x = std::ldexp(significand, exponent(rng));
    in.push_back((bits >> 31) != 0 ? -x : x);
  }
  return in;
}

struct RoundingCase {
  Format format;
  Rounding mode;
};

void PrintTo(const RoundingCase& c, std::ostream* os) {
  *os << c.format.name << ' ' << numeric::rounding_name(c.mode);
}

std::string case_name(const ::testing::TestParamInfo<RoundingCase>& param_info) {
  return std::string(param_info.param.format.name) + "_" +
         std::string(numeric::rounding_name(param_info.param.mode));
}

std::vector<RoundingCase> cases(bool stochastic_only) {
  std::vector<RoundingCase> out;
  // fp16 and bf16 also saturating: the kernel's fast path has a variant for each.
  Format fp16_saturating = formats::fp16, bf16_saturating = formats::bf16;
  fp16_saturating.name = "fp16_saturating";
  fp16_saturating.overflow = numeric::Overflow::saturate;
  bf16_saturating.name = "bf16_saturating";
  bf16_saturating.overflow = numeric::Overflow::saturate;
  for (const Format& f : {formats::fp16, formats::bf16, formats::e4m3, formats::e5m2, formats::tf32,
                          fp16_saturating, bf16_saturating}) {
    for (const Rounding mode :
         {Rounding::nearest_even, Rounding::nearest_away, Rounding::toward_zero, Rounding::upward,
          Rounding::downward, Rounding::to_odd, Rounding::stochastic_proportional,
          Rounding::stochastic_equal}) {
      if (!stochastic_only || numeric::is_stochastic(mode)) out.push_back({f, mode});
    }
  }
  return out;
}

class RoundingKernelTest : public test::GpuTest,
                           public ::testing::WithParamInterface<RoundingCase> {};
class StochasticRoundingKernelTest : public RoundingKernelTest {};

std::string hex(std::uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

void expect_same_as_host(const numeric::RoundingOptions& options, std::uint64_t first_index,
                         const std::vector<float>& in) {
  std::vector<std::uint64_t> bits(in.size());
  std::vector<float> values(in.size());
  round_on_device(options, in, bits, values, first_index);

  const bool stochastic = numeric::is_stochastic(options.mode);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::uint32_t random =
        stochastic ? numeric::stochastic_draw(options.seed, first_index + i) : 0u;
    const numeric::Rounded want = numeric::round_to(options.format, options.mode, in[i], random);
    const auto want_value = std::bit_cast<std::uint32_t>(static_cast<float>(want.value));
    const auto got_value = std::bit_cast<std::uint32_t>(values[i]);
    if (bits[i] != want.bits || got_value != want_value) {
      if (++mismatches <= 10) {
        ADD_FAILURE() << "input " << hex(std::bit_cast<std::uint32_t>(in[i])) << " (" << in[i]
                      << ", element " << i << "): bits " << hex(bits[i]) << " value "
                      << hex(got_value) << ", host bits " << hex(want.bits) << " value "
                      << hex(want_value);
      }
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << in.size() << " inputs";
}

void expect_same_as_host(const numeric::RoundingOptions& options, std::uint64_t first_index) {
  expect_same_as_host(options, first_index, test_inputs(options.format));
}

TEST_P(RoundingKernelTest, GivesTheHostBits) {
  expect_same_as_host({GetParam().format, GetParam().mode, 0x0123'4567'89AB'CDEFull}, 0);
}

// The stochastic draw of element i is number first_index + i of the stream, as on the host.
TEST_P(StochasticRoundingKernelTest, GivesTheHostBitsFromAnOffset) {
  expect_same_as_host({GetParam().format, GetParam().mode, 42}, 1'000'003);
}

// The fast path takes four elements per thread and the last n % 4 one by one: every length from
// 1 to 9 (none, one, two and three left over), on values between the format's neighbours, so that
// a stochastic draw taken for the wrong element shows.
TEST_P(RoundingKernelTest, GivesTheHostBitsForShortArrays) {
  const std::vector<float> all = test_inputs(GetParam().format);
  for (std::size_t n = 1; n <= 9; ++n) {
    SCOPED_TRACE("n = " + std::to_string(n));
    expect_same_as_host({GetParam().format, GetParam().mode, 42}, 7,
                        std::vector<float>(all.end() - static_cast<std::ptrdiff_t>(n), all.end()));
  }
}

INSTANTIATE_TEST_SUITE_P(AllModes, RoundingKernelTest, ::testing::ValuesIn(cases(false)),
                         case_name);
INSTANTIATE_TEST_SUITE_P(StochasticModes, StochasticRoundingKernelTest,
                         ::testing::ValuesIn(cases(true)), case_name);

// Arguments are checked before any CUDA call: these need no device.
TEST(RoundOnDevice, RejectsMismatchedSizes) {
  const std::vector<float> in(4);
  std::vector<std::uint64_t> bits(3);
  std::vector<float> values(4);
  EXPECT_THROW(round_on_device({formats::fp16}, in, bits, values), std::invalid_argument);
}

TEST(RoundOnDevice, RejectsFormatsBeyondBinary32) {
  const std::vector<float> in(4);
  std::vector<std::uint64_t> bits(4);
  std::vector<float> values(4);
  EXPECT_THROW(round_on_device({formats::fp64}, in, bits, values), std::invalid_argument);
}

TEST(RoundOnDevice, EmptyInputNeedsNoDevice) {
  EXPECT_NO_THROW(round_on_device({formats::bf16}, {}, {}, {}));
}

}  // namespace
}  // namespace ampbench::kernels
