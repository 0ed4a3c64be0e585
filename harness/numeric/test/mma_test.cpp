// Tests of the Tensor Core MMA models (mma.hpp):
//   - the presets (which exist, their parameters' consistency, lookup);
//   - every feature test of Fasi, Higham, Mikaitis & Pranesh (PeerJ CS 2021), with the inputs and
//     expected outputs of their test programs (north-numerical-computing/
//     tensor-cores-numerical-behavior, tc_test_numerics-*.cu), on every preset they apply to; for
//     the architectures they did not measure (Ada, Hopper, Blackwell) the expected value is the
//     model's prediction, derived by hand in the comments;
//   - block size (fused_k) and split-k detected from the outputs alone;
//   - specials, overflow, zeros, the subnormal switches, tf32 truncation, the e8m13 output;
//   - an independent re-implementation of MMA-Sim's fused_dot_add on MPFR (frexp-style splitting,
//     mpfr_trunc alignment, the MPFR oracle for the output), compared on random inputs for every
//     preset;
//   - with F large enough that no term loses a bit, the model equals the exact dot product
//     (computed in MPFR) rounded as the output says, and is monotonic in c; the presets are not.
#include "harness/numeric/mma.hpp"

#include <gtest/gtest.h>
#include <mpfr.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "harness/numeric/test/mpfr_oracle.hpp"
#include "harness/numeric/test/test_support.hpp"

namespace ampbench::numeric {
// GoogleTest prints a preset by its name.
void PrintTo(const MmaModel& m, std::ostream* os) {
  *os << m.name;
}
}  // namespace ampbench::numeric

namespace ampbench::numeric::test {
namespace {

double p2(int e) {
  return std::ldexp(1.0, e);
}

// One dot product of the model over k entries: a and b padded with zeros to k, as the unused
// entries of Fasi et al.'s 16x16x16 matrices are.
double dot(const MmaModel& m, double c, std::vector<double> a, std::vector<double> b, int k) {
  a.resize(static_cast<std::size_t>(k), 0.0);
  b.resize(static_cast<std::size_t>(k), 0.0);
  return mma_dot(m, c, a.data(), b.data(), k);
}

// Two instructions' worth of k: covers the split inside an instruction and the chaining between
// instructions; Fasi et al.'s vectors use the first four entries only.
int two_instructions(const MmaModel& m) {
  return 2 * m.instruction_k;
}

std::string test_name(const MmaModel& m) {
  std::string s = m.name;
  for (char& ch : s) {
    if (ch == '-') ch = '_';
  }
  return s;
}

std::string ParamName(const ::testing::TestParamInfo<MmaModel>& param) {
  return test_name(param.param);
}

std::vector<MmaModel> presets_where(bool (*keep)(const MmaModel&)) {
  std::vector<MmaModel> out;
  for (const MmaModel& m : mma_presets()) {
    if (keep(m)) out.push_back(m);
  }
  return out;
}

bool is_input(const MmaModel& m, const Format& f) {
  return same_values(m.input, f);
}
bool fasi_input(const MmaModel& m) {
  return is_input(m, formats::fp16) || is_input(m, formats::bf16) || is_input(m, formats::tf32);
}
bool fp8_input(const MmaModel& m) {
  return is_input(m, formats::e4m3) || is_input(m, formats::e5m2);
}

// What the sources say about each architecture, written independently of the presets so that the
// feature tests below check the presets against them (not against themselves).
// F: MMA-Sim arch_accum_fractional_bits; Fasi et al. (V100 0 extra bits, T4/A100 1).
int hardware_F(const MmaModel& m) {
  const std::string arch = m.arch;
  if (fp8_input(m) && (arch == "ada" || arch == "hopper")) return 13;
  if (arch == "volta") return 23;
  if (arch == "hopper" || arch == "blackwell") return 25;
  return 24;
}
// Products per fused step: Khattak & Mikaitis (V100 4; A100/Ada 8, tf32 4; H100/B200 16) and
// MMA-Sim (split-k halves on Ampere/Ada: fp8 k32 -> 16; Turing m16n8k8 whole; wgmma/tcgen05 whole
// k: tf32 8, fp8 32).
int hardware_block(const MmaModel& m) {
  const std::string arch = m.arch;
  const bool tf32 = is_input(m, formats::tf32);
  if (arch == "volta") return 4;
  if (arch == "turing") return 8;
  if (arch == "ampere" || arch == "ada") return fp8_input(m) ? 16 : tf32 ? 4 : 8;
  return fp8_input(m) ? 32 : tf32 ? 8 : 16;
}

// --- Presets ----------------------------------------------------------------------------------

TEST(MmaPresets, ExistExactlyWhereTheHardwareHasTheInstruction) {
  const char* archs[] = {"volta", "turing", "ampere", "ada", "hopper", "blackwell"};
  const Format inputs[] = {formats::fp16, formats::bf16, formats::tf32, formats::e4m3,
                           formats::e5m2};
  // Rows: archs; columns: inputs. Volta/Turing fp16 only (sm_70/sm_75); Ampere no fp8 (sm_80);
  // Ada, Hopper, Blackwell all five.
  const bool expected[6][5] = {
      {true, false, false, false, false}, {true, false, false, false, false},
      {true, true, true, false, false},   {true, true, true, true, true},
      {true, true, true, true, true},     {true, true, true, true, true},
  };
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 5; ++j) {
      EXPECT_EQ(mma_model(archs[i], inputs[j]).has_value(), expected[i][j])
          << archs[i] << " " << inputs[j].name;
      // fp16 accumulator: fp16 and fp8 inputs only.
      const bool acc16 = expected[i][j] && (j == 0 || j >= 3);
      EXPECT_EQ(mma_model(archs[i], inputs[j], MmaAccumulator::fp16).has_value(), acc16)
          << archs[i] << " " << inputs[j].name << " fp16 accumulator";
    }
  }
  EXPECT_FALSE(mma_model("pascal", formats::fp16));
  EXPECT_FALSE(mma_model("hopper", formats::fp32));
  EXPECT_EQ(mma_presets().size(), 32u);
}

TEST(MmaPresets, ParametersAreConsistentAndNamed) {
  std::set<std::string> names;
  for (const MmaModel& m : mma_presets()) {
    SCOPED_TRACE(m.name);
    EXPECT_EQ(mma_model_error(m), nullptr);
    EXPECT_TRUE(names.insert(m.name).second) << "duplicate name";
    const auto by_name = mma_model_named(m.name);
    ASSERT_TRUE(by_name.has_value());
    EXPECT_EQ(std::string(by_name->arch), m.arch);
    const auto by_arch = mma_model(m.arch, m.input, m.accumulator());
    ASSERT_TRUE(by_arch.has_value());
    EXPECT_EQ(std::string(by_arch->name), m.name);
    EXPECT_GT(m.fused_k, 0);
    EXPECT_EQ(m.instruction_k % m.fused_k, 0);
    EXPECT_TRUE(m.subnormal_inputs && m.subnormal_outputs && m.canonical_nan);
    const std::string arch = m.arch;
    // Split-k on Ampere and Ada only (MMA-Sim nv_ptx.py is_split_k), in halves.
    EXPECT_EQ(m.split_k(), arch == "ampere" || arch == "ada");
    if (m.split_k()) {
      EXPECT_EQ(m.fused_k * 2, m.instruction_k);
    }
    // F per architecture (MMA-Sim arch_accum_fractional_bits; FP8 13 on Ada and Hopper).
    const int f = arch == "volta" ? 23 : (arch == "hopper" || arch == "blackwell") ? 25 : 24;
    const bool e8m13 = fp8_input(m) && (arch == "ada" || arch == "hopper");
    EXPECT_EQ(m.fraction_bits, e8m13 ? 13 : f);
    if (m.accumulator() == MmaAccumulator::fp32) {
      EXPECT_EQ(m.output, e8m13 ? MmaOutput::e8m13_truncate : MmaOutput::fp32_truncate);
    } else {
      EXPECT_EQ(m.output, MmaOutput::fp16_nearest_even);
    }
  }
  EXPECT_FALSE(mma_model_named("ampere-fp8"));
  // Products per fused step, KM25 / MMA-Sim: V100 4, A100/Ada fp16 8, tf32 4; H100/B200 16.
  EXPECT_EQ(mma_model_named("volta-fp16")->fused_k, 4);
  EXPECT_EQ(mma_model_named("ampere-fp16")->fused_k, 8);
  EXPECT_EQ(mma_model_named("ampere-tf32")->fused_k, 4);
  EXPECT_EQ(mma_model_named("ada-e4m3")->fused_k, 16);
  EXPECT_EQ(mma_model_named("hopper-bf16")->fused_k, 16);
  EXPECT_EQ(mma_model_named("hopper-e5m2")->fused_k, 32);
  EXPECT_EQ(mma_model_named("blackwell-tf32")->fused_k, 8);
}

TEST(MmaPresets, ModelErrorRejectsWhatTheArithmeticCannotHold) {
  MmaModel m = *mma_model_named("hopper-fp16");
  m.fraction_bits = kMaxFractionBits + 1;
  EXPECT_NE(mma_model_error(m), nullptr);
  m.fraction_bits = kMaxFractionBits;
  EXPECT_EQ(mma_model_error(m), nullptr);
  m.fused_k = -1;
  EXPECT_NE(mma_model_error(m), nullptr);
  m.fused_k = 0;
  EXPECT_EQ(mma_model_error(m), nullptr);
  m.input = formats::fp64;
  EXPECT_NE(mma_model_error(m), nullptr);
}

// --- Fasi et al. feature tests ----------------------------------------------------------------

// The fp32-accumulator presets with fp16, bf16 or tf32 inputs: what Fasi et al.'s programs test.
class FasiFeature : public ::testing::TestWithParam<MmaModel> {
 protected:
  const MmaModel& m() const { return GetParam(); }
  int F() const { return hardware_F(m()); }
  int block() const { return hardware_block(m()); }
  bool volta() const { return std::string(m().arch) == "volta"; }
  bool fp16() const { return is_input(m(), formats::fp16); }
  bool bf16() const { return is_input(m(), formats::bf16); }
  double run(double c, std::vector<double> a, std::vector<double> b) const {
    return dot(m(), c, std::move(a), std::move(b), two_instructions(m()));
  }
};

// A. Subnormal inputs: fp16 2^-24 * 4 = 2^-22; bf16 2^-133 * 2^7 = 2^-126; tf32 2^-136 * 2^10.
TEST_P(FasiFeature, SubnormalInputs) {
  if (fp16()) {
    EXPECT_EQ(run(0.0, {p2(-24)}, {4.0}), p2(-22));
  } else if (bf16()) {
    EXPECT_EQ(run(0.0, {p2(-133)}, {p2(7)}), p2(-126));
  } else {
    EXPECT_EQ(run(0.0, {p2(-136)}, {p2(10)}), p2(-126));
  }
  // An fp32 subnormal c passes unchanged.
  EXPECT_EQ(run(p2(-149), {}, {}), p2(-149));
}

// A. Subnormal outputs: fp16 2^-14 * 1/2 and 2^-14 - 2^-15 are nonzero (2^-15); bf16/tf32
// 2^-126 * 1/2 = 2^-127 and 2^-126 - 2^-127 = 2^-127.
TEST_P(FasiFeature, SubnormalOutputs) {
  const double x = fp16() ? p2(-14) : p2(-126);
  EXPECT_EQ(run(0.0, {x}, {0.5}), x / 2);
  EXPECT_EQ(run(-x / 2, {x}, {1.0}), x / 2);
}

// B. Products are exact: (1-u)^2 = 1 - 2u + u^2 with u = 2^-11 (fp16, tf32) or 2^-8 (bf16); four
// of them give 4x. For tf32 the input is fp32's 1 - 2^-24, which the hardware truncates to tf32's
// 1 - 2^-11 (tc_test_numerics-A100-tf32.cu).
TEST_P(FasiFeature, ProductsAreExact) {
  const double u = bf16() ? p2(-8) : p2(-11);
  double below = 1.0 - u;
  if (is_input(m(), formats::tf32)) below = mma_quantize_input(m(), 1.0 - p2(-24));
  const double product = 1.0 - 2 * u + u * u;
  EXPECT_EQ(run(0.0, {below}, {below}), product);
  EXPECT_EQ(run(0.0, {below, below, below, below}, {below, below, below, below}), 4 * product);
}

// B. Accumulation in binary32: four products 1/2 * 2^-24 (V100 program: 1 * 2^-24) added to
// c = 1 give 1 when at most 24 fraction bits are kept (each product is below the last kept bit).
// With F = 25 (Hopper, Blackwell) each product 2^-25 is one unit of the last kept bit: the model
// predicts 1 + 4 * 2^-25 = 1 + 2^-23.
TEST_P(FasiFeature, AccumulationInBinary32) {
  const double a = volta() ? 1.0 : 0.5;
  const double t = p2(-24);
  const double expected = F() >= 25 ? 1.0 + p2(-23) : 1.0;
  EXPECT_EQ(run(1.0, {a, a, a, a}, {t, t, t, t}), expected);
}

// B. Alignment to the largest term: one product 1 * 1 in slot j, the others 1/2 * 2^-24 (V100:
// 1 * 2^-24), c = 2^-24: 1 wherever the 1 is. F = 25: three products of 2^-25 and c = 2^-24 add
// 5 * 2^-25, truncated to 1 + 2^-23 (model prediction).
TEST_P(FasiFeature, AlignmentToTheLargest) {
  const double small_a = volta() ? 1.0 : 0.5;
  for (int j = 0; j < 4; ++j) {
    std::vector<double> a(4, small_a), b(4, p2(-24));
    a[static_cast<std::size_t>(j)] = 1.0;
    b[static_cast<std::size_t>(j)] = 1.0;
    const double expected = F() >= 25 ? 1.0 + p2(-23) : 1.0;
    EXPECT_EQ(run(p2(-24), a, b), expected) << "slot " << j;
  }
}

// C. The fp32 result is truncated: 1*2 + 1*(2^-23 + 2^-24) = 2 + 0.75 ulp(2) gives 2 (round to
// nearest would give 2 + 2^-22), and -2 for the negated products (truncation, not round-down).
TEST_P(FasiFeature, Fp32ResultIsTruncated) {
  const double small = p2(-23) + p2(-24);
  EXPECT_EQ(run(0.0, {1, 1, 1, 1}, {2.0, small}), 2.0);
  EXPECT_EQ(run(0.0, {1, 1, 1, 1}, {-2.0, -small}), -2.0);
}

// D1. Extra bits in alignment: 1*1 + c with c = -(1 - 2^-24): V100 (F = 23) gives 2^-23 (c is
// truncated to -(1 - 2^-23) when aligned to 2^0), T4/A100 (F = 24) 2^-24, F = 25 2^-24.
TEST_P(FasiFeature, ExtraAlignmentBits) {
  EXPECT_EQ(run(-(1.0 - p2(-24)), {1.0}, {1.0}), F() == 23 ? p2(-23) : p2(-24));
}

// A subnormal operand's exponent is its format's emin (MMA-Sim's term definition), not the
// exponent of its value: 2^-24 (fp16; bf16 2^-133, tf32 2^-136: significand 2^-10 or 2^-7 at
// exponent emin) times 2^(-emin) makes a term with exponent 0 although its value is 2^-10 (2^-7).
// That term sets the alignment, so c = 2^-3 + 2^-26 loses its last bit (below 2^-F for F <= 25):
// 2^-3 + value. Were the exponent that of the value (2^-10), the largest exponent would be c's and
// the bit would survive. Model prediction from the definition; no published hardware measurement.
TEST_P(FasiFeature, SubnormalOperandHasExponentEmin) {
  const double tiny = fp16() ? p2(-24) : bf16() ? p2(-133) : p2(-136);
  const double scale = p2(-m().input.emin);
  const double value = tiny * scale;
  EXPECT_EQ(run(p2(-3) + p2(-26), {tiny}, {scale}), p2(-3) + value);
}

// D2. Normalisation in addition: four 1 * 2^-24 and c = 1 - 2^-24: 1 + 2^-23 on every device.
TEST_P(FasiFeature, NormalisationInAddition) {
  const double t = p2(-24);
  EXPECT_EQ(run(1.0 - t, {1, 1, 1, 1}, {t, t, t, t}), 1.0 + p2(-23));
}

// D3. Normalisation in subtraction: 1*1 + 1*(-2^-24) + (-1 + 2^-24): 0 on T4/A100 (and F = 25),
// 2^-23 on V100.
TEST_P(FasiFeature, NormalisationInSubtraction) {
  EXPECT_EQ(run(-1.0 + p2(-24), {1.0, 1.0}, {1.0, -p2(-24)}), F() == 23 ? p2(-23) : 0.0);
}

// D4. Carry-out bits: a 2^-23 in any slot with three 1s and c = 1 + 2^-22 + 2^-23 gives
// 4 + 2^-21; 1 + 1.5 + 1.75 + 1.875 + 1.875 = 8; four 1s and c = 1 + 2^-22 + 2^-23 give 5
// (truncated), -5 negated.
TEST_P(FasiFeature, CarryOut) {
  const double c = 1.0 + p2(-22) + p2(-23);
  for (int i = 0; i < 4; ++i) {
    std::vector<double> b(4, 1.0);
    b[static_cast<std::size_t>(i)] = p2(-23);
    EXPECT_EQ(run(c, {1, 1, 1, 1}, b), 4.0 + p2(-21)) << "slot " << i;
  }
  EXPECT_EQ(run(1.875, {1, 1, 1, 1}, {1.0, 1.5, 1.75, 1.875}), 8.0);
  EXPECT_EQ(run(c, {1, 1, 1, 1}, {1, 1, 1, 1}), 5.0);
  EXPECT_EQ(run(-c, {1, 1, 1, 1}, {-1, -1, -1, -1}), -5.0);
}

// D5. Non-monotonicity: a larger c gives a smaller result. V100 program: four 1 * 2^-24 with
// c = 1 - 2^-24 give 1 + 2^-23, with c = 1 give 1. T4/A100 program: three 1/2 * 2^-24 and
// 1/2 * (2^-23 + 2^-24): 1 + 2^-23 versus 1 with F = 24; with F = 25 both give 1 + 2^-23 (the
// vector does not show it there; see NonMonotonicWithTwoExtraBits).
TEST_P(FasiFeature, NonMonotonicity) {
  std::vector<double> a, b;
  if (volta()) {
    a = {1, 1, 1, 1};
    b = {p2(-24), p2(-24), p2(-24), p2(-24)};
  } else {
    a = {0.5, 0.5, 0.5, 0.5};
    b = {p2(-24), p2(-24), p2(-24), p2(-23) + p2(-24)};
  }
  const double below = run(1.0 - p2(-24), a, b);
  const double at_one = run(1.0, a, b);
  EXPECT_EQ(below, 1.0 + p2(-23));
  if (F() <= 24) {
    EXPECT_EQ(at_one, 1.0);
    EXPECT_LT(at_one, below);
  } else {
    EXPECT_EQ(at_one, 1.0 + p2(-23));
  }
}

// Block size from the outputs alone: 2*4 - 7*1 = 1 in slots 0 and 1, and 2^-23 in slot j. In the
// same fused step the largest exponent is 3, so 2^-23 is below the last kept bit (2^(3-F), F <= 25)
// and is lost: 1. In a later step c = 1 sets the exponent and 2^-23 survives: 1 + 2^-23. The
// first j that keeps it is the products-per-step of the preset.
TEST_P(FasiFeature, BlockSizeFromOutputs) {
  const int k = two_instructions(m());
  int first_kept = -1;
  for (int j = 2; j < k; ++j) {
    std::vector<double> a{2.0, -7.0}, b{4.0, 1.0};
    a.resize(static_cast<std::size_t>(k), 0.0);
    b.resize(static_cast<std::size_t>(k), 0.0);
    a[static_cast<std::size_t>(j)] = p2(-23);
    b[static_cast<std::size_t>(j)] = 1.0;
    const double d = run(0.0, a, b);
    EXPECT_EQ(d, j < block() ? 1.0 : 1.0 + p2(-23)) << "j = " << j;
    if (first_kept < 0 && d != 1.0) first_kept = j;
  }
  EXPECT_EQ(first_kept, block());
}

// Non-monotonicity with F = 25 and 8 products (fits every Hopper/Blackwell step): three
// 3/4 * 2^-24 and five 1/4 * 2^-24. With c = 1 (emax 0, units of 2^-25) they keep 3 * 2^-25:
// 1 + 6 * 2^-26 truncates to 1. With c = 1 - 2^-24 (emax -1, units of 2^-26) they keep
// 9 + 5 = 14 units: 1 - 4 * 2^-26 + 14 * 2^-26 = 1 + 10 * 2^-26 truncates to 1 + 2^-23. With F = 24
// both give 1, with F = 23 both give 1 (model prediction; derived by hand).
TEST_P(FasiFeature, NonMonotonicWithTwoExtraBits) {
  const std::vector<double> a{0.75, 0.75, 0.75, 0.25, 0.25, 0.25, 0.25, 0.25};
  const std::vector<double> b(8, p2(-24));
  const double below = run(1.0 - p2(-24), a, b);
  const double at_one = run(1.0, a, b);
  if (F() == 25 && block() >= 8) {
    EXPECT_EQ(below, 1.0 + p2(-23));
    EXPECT_EQ(at_one, 1.0);
  } else {
    EXPECT_EQ(at_one, 1.0);
    EXPECT_LE(below, at_one);
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, FasiFeature,
                         ::testing::ValuesIn(presets_where([](const MmaModel& m) {
                           return fasi_input(m) && m.accumulator() == MmaAccumulator::fp32;
                         })),
                         ParamName);

// The fp16-accumulator ("binary16 mode") tests, on the fp16-input presets with fp16 output.
class FasiFp16Mode : public ::testing::TestWithParam<MmaModel> {
 protected:
  double run(double c, std::vector<double> a, std::vector<double> b) const {
    return dot(GetParam(), c, std::move(a), std::move(b), two_instructions(GetParam()));
  }
};

TEST_P(FasiFp16Mode, SubnormalInputsAndOutputs) {
  EXPECT_EQ(run(0.0, {p2(-24)}, {4.0}), p2(-22));
  EXPECT_EQ(run(0.0, {p2(-14)}, {0.5}), p2(-15));
  EXPECT_EQ(run(-p2(-15), {p2(-14)}, {1.0}), p2(-15));
}

// (1 - 2^-11)^2 + (1 - 2^-11) * 2^-11 = 1 - 2^-11 exactly.
TEST_P(FasiFp16Mode, ProductsAreExact) {
  const double below = 1.0 - p2(-11);
  EXPECT_EQ(run(0.0, {below, below}, {below, p2(-11)}), 1.0 - p2(-10) + p2(-11));
}

// 2^-24 * 1/2 + 2^-24 * 1/4 = 0.75 * 2^-24 rounds to nearest: 2^-24 (truncation would give 0).
TEST_P(FasiFp16Mode, OutputRoundsToNearest) {
  EXPECT_EQ(run(0.0, {p2(-24), p2(-24)}, {0.5, 0.25}), p2(-24));
  EXPECT_EQ(run(0.0, {-p2(-24), -p2(-24)}, {0.5, 0.25}), -p2(-24));
  // A tie goes to even: 1 + 2^-11 (half an fp16 ulp) gives 1; 1 + 3 * 2^-11 gives 1 + 2^-9.
  EXPECT_EQ(run(1.0, {p2(-11)}, {1.0}), 1.0);
  EXPECT_EQ(run(1.0, {3 * p2(-11)}, {1.0}), 1.0 + p2(-9));
}

// Block size with an fp16 result: 256*256 - 255*257 = 1 in slots 0, 1 (emax 16, so a 2^-10 in the
// same step is below 2^(16-F) and lost) and 2^-10 in slot j, exact in fp16 at 1 when it comes in a
// later step.
TEST_P(FasiFp16Mode, BlockSizeFromOutputs) {
  const MmaModel& m = GetParam();
  const int k = two_instructions(m);
  for (int j = 2; j < k; ++j) {
    std::vector<double> a{256.0, -255.0}, b{256.0, 257.0};
    a.resize(static_cast<std::size_t>(k), 0.0);
    b.resize(static_cast<std::size_t>(k), 0.0);
    a[static_cast<std::size_t>(j)] = p2(-10);
    b[static_cast<std::size_t>(j)] = 1.0;
    EXPECT_EQ(run(0.0, a, b), j < hardware_block(m) ? 1.0 : 1.0 + p2(-10)) << "j = " << j;
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, FasiFp16Mode,
                         ::testing::ValuesIn(presets_where([](const MmaModel& m) {
                           return is_input(m, formats::fp16) &&
                                  m.accumulator() == MmaAccumulator::fp16;
                         })),
                         ParamName);

// --- FP8 --------------------------------------------------------------------------------------

class Fp8Preset : public ::testing::TestWithParam<MmaModel> {};
class Fp8Fp32Preset : public ::testing::TestWithParam<MmaModel> {};  // fp32 accumulator

// e8m13: with F = 13 even c alone is truncated to 13 fraction bits (Ada and Hopper FP8: the
// "about 14 bits" of FP8 accumulation); Blackwell (F = 25, fp32 output) keeps it.
TEST_P(Fp8Fp32Preset, AccumulatorPrecision) {
  const MmaModel& m = GetParam();
  const double c = 1.0 + p2(-13) + p2(-14) + p2(-20);
  const bool e8m13 = hardware_F(m) == 13;  // Ada, Hopper
  const double kept = e8m13 ? 1.0 + p2(-13) : c;
  EXPECT_EQ(dot(m, c, {}, {}, m.instruction_k), kept);
  EXPECT_EQ(dot(m, -c, {}, {}, m.instruction_k), -kept);
  // 1 + 1*2^-9 + c: exact sum 2 + 2^-9 + 2^-13 + ..., kept to 13 (or 23) fraction bits at 2^1.
  const double d = dot(m, c, {1.0, p2(-9)}, {1.0, 1.0}, m.instruction_k);
  EXPECT_EQ(d, e8m13 ? 2.0 + p2(-9) : 2.0 + p2(-9) + p2(-13) + p2(-14) + p2(-20));
}

// F = 13 versus more: 1*1 + 2^-7*2^-7 + 2^-7*2^-7: each 2^-14 is below 2^-13 and lost with F = 13
// (Ada, Hopper: 1); with F = 25 (Blackwell) they add to 2^-13, kept by the fp32 output.
TEST_P(Fp8Fp32Preset, ThirteenFractionBitsInAlignment) {
  const MmaModel& m = GetParam();
  const double t = p2(-7);
  EXPECT_EQ(dot(m, 0.0, {1.0, t, t}, {1.0, t, t}, m.instruction_k),
            hardware_F(m) == 13 ? 1.0 : 1.0 + p2(-13));
}

// Block size: 16*16 - 7*32 = 32 in slots 0, 1 (emax 8) and a small product p in slot j, below
// 2^(8-F) but representable at 32 in the output: p = 2^-8 (= 2^-4 * 2^-4) for F = 13,
// p = 2^-18 (= 2^-9 * 2^-9) for F = 25.
TEST_P(Fp8Fp32Preset, BlockSizeFromOutputs) {
  const MmaModel& m = GetParam();
  const int k = two_instructions(m);
  const double half = hardware_F(m) == 13 ? p2(-4) : p2(-9);
  for (int j = 2; j < k; ++j) {
    std::vector<double> a{16.0, -7.0}, b{16.0, 32.0};
    a.resize(static_cast<std::size_t>(k), 0.0);
    b.resize(static_cast<std::size_t>(k), 0.0);
    a[static_cast<std::size_t>(j)] = half;
    b[static_cast<std::size_t>(j)] = half;
    EXPECT_EQ(dot(m, 0.0, a, b, k), j < hardware_block(m) ? 32.0 : 32.0 + half * half)
        << "j = " << j;
  }
}

// fp8 subnormal inputs are read as such: e4m3 2^-9 and e5m2 2^-16 (the smallest subnormals).
TEST_P(Fp8Preset, SubnormalInputs) {
  const MmaModel& m = GetParam();
  const double tiny = is_input(m, formats::e4m3) ? p2(-9) : p2(-16);
  const double d = dot(m, 0.0, {tiny}, {tiny}, m.instruction_k);
  // fp32: tiny^2 is a normal fp32; fp16: 2^-18 is an fp16 subnormal, 2^-32 rounds to 0.
  if (m.accumulator() == MmaAccumulator::fp32) {
    EXPECT_EQ(d, tiny * tiny);
  } else {
    EXPECT_EQ(d, is_input(m, formats::e4m3) ? p2(-18) : 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, Fp8Fp32Preset,
                         ::testing::ValuesIn(presets_where([](const MmaModel& m) {
                           return fp8_input(m) && m.accumulator() == MmaAccumulator::fp32;
                         })),
                         ParamName);
INSTANTIATE_TEST_SUITE_P(Presets, Fp8Preset, ::testing::ValuesIn(presets_where(fp8_input)),
                         ParamName);

// --- Specials, overflow, zeros, switches --------------------------------------------------------

class AnyPreset : public ::testing::TestWithParam<MmaModel> {};

TEST_P(AnyPreset, NanIsCanonicalAndInfinitiesPassThrough) {
  const MmaModel& m = GetParam();
  const int k = m.instruction_k;
  const double nan = -std::nan("");  // negative, with a payload: both must disappear
  const double inf = INFINITY;
  const Format acc = m.accumulator_format();
  const std::uint64_t canonical = m.accumulator() == MmaAccumulator::fp16 ? 0x7FFF : 0x7FFFFFFF;
  const auto expect_canonical = [&](double d, const char* what) {
    EXPECT_TRUE(std::isnan(d)) << what;
    EXPECT_EQ(round_to(acc, Rounding::nearest_even, d).bits, canonical) << what;
  };
  expect_canonical(dot(m, 1.0, {nan}, {1.0}, k), "NaN in a");
  expect_canonical(dot(m, 1.0, {1.0, 2.0}, {1.0, nan}, k), "NaN in b");
  expect_canonical(dot(m, nan, {1.0}, {1.0}, k), "NaN in c");
  EXPECT_EQ(dot(m, inf, {1.0}, {-1.0}, k), inf);
  EXPECT_EQ(dot(m, -inf, {1.0}, {1.0}, k), -inf);
  if (m.input.has_infinity()) {
    expect_canonical(dot(m, 0.0, {inf}, {0.0}, k), "inf * 0");
    expect_canonical(dot(m, 0.0, {inf, 1.0}, {1.0, -inf}, k), "inf - inf");
    expect_canonical(dot(m, inf, {-inf}, {1.0}, k), "c = inf, product -inf");
    EXPECT_EQ(dot(m, 1.0, {inf}, {-2.0}, k), -inf);
    EXPECT_EQ(dot(m, -1.0, {-inf, inf}, {-2.0, 1.0}, k), inf);
  }
}

// Beyond the accumulator's range the result is an infinity (MMA-Sim converts the out-of-range
// value), even though the fp32 output is otherwise truncated; just below it, truncation keeps the
// largest finite value.
TEST_P(AnyPreset, OverflowGivesInfinity) {
  const MmaModel& m = GetParam();
  const int k = m.instruction_k;
  if (m.accumulator() == MmaAccumulator::fp16) {
    // 65504 + 8 = 65512 < 65520 rounds to 65504; 65504 + 16 = 65520 rounds to inf.
    EXPECT_EQ(dot(m, 65504.0, {8.0}, {1.0}, k), 65504.0);
    EXPECT_EQ(dot(m, 65504.0, {16.0}, {1.0}, k), INFINITY);
    EXPECT_EQ(dot(m, -65504.0, {-16.0}, {1.0}, k), -INFINITY);
    return;
  }
  const double max32 = std::ldexp(2.0 - p2(-23), 127);
  // The largest output: fp32's, or e8m13's (13 fraction bits) for FP8 on Ada and Hopper.
  const double top = hardware_F(m) == 13 ? std::ldexp(2.0 - p2(-13), 127) : max32;
  EXPECT_EQ(dot(m, max32, {1.0}, {1.0}, k), top);  // max + 1 truncates to the largest
  // c = max and one product of 2^(emax of the input): exceeds 2^128 in every format but fp8 (whose
  // products are at most 2^17 or 2^31: c + product still truncates to the largest).
  const double big = p2(m.input.emax);
  if (m.input.emax >= 100) {
    EXPECT_EQ(dot(m, max32, {big}, {big}, k), INFINITY);
    EXPECT_EQ(dot(m, -max32, {-big}, {big}, k), -INFINITY);
  } else {
    EXPECT_EQ(dot(m, max32, {big}, {big}, k), top);
    EXPECT_EQ(dot(m, -max32, {-big}, {big}, k), -top);
  }
}

// An exact zero sum is +0 whatever the signs (MMA-Sim adds the truncated terms from +0.0).
TEST_P(AnyPreset, ZeroSumIsPositiveZero) {
  const MmaModel& m = GetParam();
  const int k = m.instruction_k;
  EXPECT_TRUE(same(dot(m, 1.0, {-1.0}, {1.0}, k), 0.0));
  EXPECT_TRUE(same(dot(m, -0.0, {-0.0}, {1.0}, k), 0.0));
  EXPECT_TRUE(same(dot(m, -1.0, {1.0}, {1.0}, k), 0.0));
}

INSTANTIATE_TEST_SUITE_P(Presets, AnyPreset,
                         ::testing::ValuesIn(presets_where([](const MmaModel&) { return true; })),
                         ParamName);

TEST(MmaSwitches, SubnormalInputsAndOutputsCanBeFlushed) {
  MmaModel m = *mma_model_named("ampere-fp16");
  EXPECT_EQ(dot(m, 0.0, {p2(-24)}, {4.0}, 16), p2(-22));
  m.subnormal_inputs = false;
  EXPECT_EQ(dot(m, 0.0, {p2(-24)}, {4.0}, 16), 0.0);
  EXPECT_EQ(dot(m, 0.0, {p2(-14)}, {4.0}, 16), p2(-12));  // normal inputs untouched
  MmaModel b = *mma_model_named("ampere-bf16");
  EXPECT_EQ(dot(b, 0.0, {p2(-126)}, {0.5}, 16), p2(-127));
  b.subnormal_outputs = false;
  EXPECT_EQ(dot(b, 0.0, {p2(-126)}, {0.5}, 16), 0.0);
  // One step keeps the sign of the flushed result; a later step would add +0 (zero sum).
  const double a1[] = {-p2(-126)}, b1[] = {0.5};
  EXPECT_TRUE(same(mma_fused_step(b, 0.0, a1, b1, 1), -0.0));
  EXPECT_EQ(dot(b, 0.0, {p2(-126)}, {1.0}, 16), p2(-126));
}

TEST(MmaSwitches, NonCanonicalNanIsStillNan) {
  MmaModel m = *mma_model_named("hopper-fp16");
  m.canonical_nan = false;
  EXPECT_TRUE(std::isnan(dot(m, 0.0, {std::nan("")}, {1.0}, 16)));
}

TEST(MmaDot, KZeroReturnsCAndShortTailEqualsZeroPadding) {
  const MmaModel m = *mma_model_named("ada-e4m3");
  const double c = 1.0 + p2(-20);
  EXPECT_EQ(mma_dot(m, c, nullptr, nullptr, 0), c);  // no instruction issued
  std::mt19937_64 rng(7);
  for (int t = 0; t < 200; ++t) {
    std::vector<double> a(20), b(20);
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i] = mma_quantize_input(m, std::ldexp(static_cast<double>(rng() % 15) - 7.0, -3));
      b[i] = mma_quantize_input(m, std::ldexp(static_cast<double>(rng() % 15) - 7.0, -5));
    }
    EXPECT_TRUE(same(mma_dot(m, 0.5, a.data(), b.data(), 20), dot(m, 0.5, a, b, 32)));
  }
}

TEST(MmaDot, StridedEqualsContiguous) {
  const MmaModel m = *mma_model_named("ampere-bf16");
  std::vector<double> a(48), b(48 * 3);
  std::mt19937_64 rng(11);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = mma_quantize_input(m, std::ldexp(static_cast<double>(rng() % 255) - 127.0, -6));
  }
  for (std::size_t i = 0; i < b.size(); ++i) {
    b[i] = mma_quantize_input(m, std::ldexp(static_cast<double>(rng() % 255) - 127.0, -9));
  }
  std::vector<double> column(48);
  for (std::size_t i = 0; i < column.size(); ++i) column[i] = b[i * 3 + 1];
  EXPECT_TRUE(same(mma_dot(m, 0.25, a.data(), 1, b.data() + 1, 3, 48),
                   mma_dot(m, 0.25, a.data(), column.data(), 48)));
}

// --- TF32 truncation --------------------------------------------------------------------------

TEST(Tf32, TruncatesTheLow13BitsOfFp32) {
  EXPECT_EQ(tf32_truncate_bits(0x3F7FFFFFu), 0x3F7FE000u);
  EXPECT_EQ(tf32_truncate(1.0 - p2(-24)), 1.0 - p2(-11));
  EXPECT_EQ(tf32_truncate(-(1.0 - p2(-24))), -(1.0 - p2(-11)));      // toward zero, not down
  EXPECT_EQ(tf32_truncate(1.0 + p2(-10) + p2(-11)), 1.0 + p2(-10));  // not to nearest (even)
  EXPECT_EQ(tf32_truncate(3 * p2(-149)), 0.0);                       // fp32 subnormal
  EXPECT_EQ(tf32_truncate(p2(-136) + p2(-140)), p2(-136));           // tf32 subnormal
  EXPECT_EQ(tf32_truncate(std::ldexp(2.0 - p2(-23), 127)), std::ldexp(2.0 - p2(-10), 127));
  EXPECT_EQ(tf32_truncate(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(tf32_truncate(std::nan(""))));
  // As bits a NaN whose payload is only in the low 13 bits becomes an infinity (what the hardware
  // and MMA-Sim's bit truncation do).
  EXPECT_EQ(tf32_truncate_bits(0x7F800001u), 0x7F800000u);
  // Agrees with the bit operation on every 2^16-th fp32 pattern (finite ones).
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += 65521) {
    const auto bits = static_cast<std::uint32_t>(u);
    if ((bits & 0x7F800000u) == 0x7F800000u) continue;
    const double x = float_of(bits);
    ASSERT_EQ(bits_of(static_cast<float>(tf32_truncate(x))), tf32_truncate_bits(bits))
        << fmt_bits(bits);
  }
  // The model's quantiser truncates for tf32 and rounds to nearest for the others.
  EXPECT_EQ(mma_quantize_input(*mma_model_named("ampere-tf32"), 1.0 - p2(-24)), 1.0 - p2(-11));
  EXPECT_EQ(mma_quantize_input(*mma_model_named("ampere-fp16"), 1.0 - p2(-24)), 1.0);
}

// --- Independent reference: MMA-Sim's fused_dot_add on MPFR -------------------------------------

// MMA-Sim's extract_significand_exponent: frexp, significand in [1, 2), clamped at the format's
// emin (subnormal: significand < 1), zero -> exponent -126.
void split_like_mmasim(double x, int emin, double& s, int& e) {
  int ex = 0;
  s = std::frexp(x, &ex) * 2;
  e = ex - 1;
  if (e < emin) {
    s = std::ldexp(s, e - emin);
    e = emin;
  }
  if (s == 0) e = -126;
}

using oracle::Mpfr;

// One fused step, written from MMA-Sim's arithmetic.py (fused_sum, nv_fused_dot_add) with MPFR
// and the oracle; finite inputs only. a's values are split at a_format's emin, b's at b_format's.
double reference_step(const MmaModel& m, const Format& a_format, const Format& b_format, double c,
                      const double* a, const double* b, int n) {
  const Format acc = m.accumulator_format();
  std::vector<double> sig;
  std::vector<int> ex;
  double s = 0;
  int e = 0;
  split_like_mmasim(c, acc.emin, s, e);
  sig.push_back(s);
  ex.push_back(e);
  for (int i = 0; i < n; ++i) {
    double sa = 0, sb = 0;
    int ea = 0, eb = 0;
    split_like_mmasim(a[i], a_format.emin, sa, ea);
    split_like_mmasim(b[i], b_format.emin, sb, eb);
    sig.push_back(sa * sb);  // exact: at most 2 * 11 significant bits
    ex.push_back(ea + eb);
  }
  int emax = ex[0];
  for (const int x : ex) emax = std::max(emax, x);
  Mpfr sum, term;
  for (std::size_t i = 0; i < sig.size(); ++i) {
    mpfr_set_d(term.v, sig[i], MPFR_RNDN);
    mpfr_mul_2si(term.v, term.v, m.fraction_bits + ex[i] - emax, MPFR_RNDN);
    mpfr_trunc(term.v, term.v);
    mpfr_add(sum.v, sum.v, term.v, MPFR_RNDN);  // exact at 512 bits
  }
  if (mpfr_zero_p(sum.v)) return 0.0;
  mpfr_mul_2si(sum.v, sum.v, emax - m.fraction_bits, MPFR_RNDN);
  oracle::Result r{};
  switch (m.output) {
    case MmaOutput::fp32_truncate:
      r = oracle::round(oracle::spec_of(formats::fp32), Rounding::toward_zero, sum.v);
      break;
    case MmaOutput::e8m13_truncate: {
      const Format e8m13{"e8m13", 14, -126, 127, true, Overflow::infinity, SpecialEncoding::ieee};
      r = oracle::round(oracle::spec_of(e8m13), Rounding::toward_zero, sum.v);
      break;
    }
    case MmaOutput::fp16_nearest_even:
      r = oracle::round(oracle::spec_of(formats::fp16), Rounding::nearest_even, sum.v);
      break;
  }
  if (r.overflowed) return mpfr_sgn(sum.v) < 0 ? -INFINITY : INFINITY;
  return r.value;
}

double reference_dot(const MmaModel& m, const Format& a_format, const Format& b_format, double c,
                     const std::vector<double>& a, const std::vector<double>& b) {
  double acc = c;
  const int k = static_cast<int>(a.size());
  for (int i = 0; i < k; i += m.fused_k) {
    acc = reference_step(m, a_format, b_format, acc, a.data() + i, b.data() + i,
                         std::min(m.fused_k, k - i));
  }
  return acc;
}

double reference_dot(const MmaModel& m, double c, const std::vector<double>& a,
                     const std::vector<double>& b) {
  return reference_dot(m, m.input, m.input, c, a, b);
}

// A random value of format f near 2^center (exponents center +- spread), sometimes zero, sometimes
// subnormal, sometimes with few significant bits.
double random_value(std::mt19937_64& rng, const Format& f, int center, int spread) {
  const auto pick = rng() % 16;
  if (pick == 0) return 0.0;
  int e = center - spread + static_cast<int>(rng() % static_cast<std::uint64_t>(2 * spread + 1));
  if (pick == 1) e = f.emin - 1 - static_cast<int>(rng() % static_cast<std::uint64_t>(f.precision));
  e = std::min(e, f.emax);
  double x = std::ldexp(1.0 + std::ldexp(static_cast<double>(rng() >> 12), -52), e);
  if (pick == 2) x = std::ldexp(std::round(std::ldexp(x, -e + 2)), e - 2);
  if ((rng() & 1) != 0) x = -x;
  return round_to(f, Rounding::nearest_even, x).value;
}

class MmaSimReference : public ::testing::TestWithParam<MmaModel> {};

TEST_P(MmaSimReference, AgreesOnRandomInputs) {
  const MmaModel& m = GetParam();
  std::mt19937_64 rng(std::hash<std::string>{}(m.name));
  const Format acc = m.accumulator_format();
  // Product exponents around 2 * center, c around it: terms overlap, so alignment truncates.
  const int center = std::min(m.input.emax / 2, 3);
  const int k = 2 * m.instruction_k + m.fused_k / 2 + 1;  // includes a short last step
  int mismatches = 0;
  for (int t = 0; t < 4000 && mismatches < 5; ++t) {
    const int spread = 1 + static_cast<int>(rng() % 8);
    std::vector<double> a(static_cast<std::size_t>(k)), b(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i] = random_value(rng, m.input, center, spread);
      b[i] = random_value(rng, m.input, center - static_cast<int>(rng() % 3), spread);
    }
    const double c = random_value(rng, acc, 2 * center + static_cast<int>(rng() % 5) - 2, spread);
    const double got = mma_dot(m, c, a.data(), b.data(), k);
    const double want = reference_dot(m, c, a, b);
    if (!same(got, want)) {
      ++mismatches;
      ADD_FAILURE() << "trial " << t << ": model " << describe(got) << ", reference "
                    << describe(want);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, MmaSimReference,
                         ::testing::ValuesIn(presets_where([](const MmaModel&) { return true; })),
                         ParamName);

// The mixed-format MMA (e4m3 A, e5m2 B, and the reverse) against the MPFR reference with each
// operand split at its own format's emin: B's values reach e5m2's subnormals (below 2^-14), which
// e4m3's emin (-6) would split differently, so a model that split B as A's format would fail here.
TEST(MmaSimReferenceMixed, E4m3TimesE5m2AgreesOnRandomInputs) {
  for (const char* name : {"ada-e4m3", "hopper-e4m3", "blackwell-e4m3", "hopper-e4m3-acc16"}) {
    SCOPED_TRACE(name);
    const MmaModel m = *mma_model_named(name);
    const Format acc = m.accumulator_format();
    std::mt19937_64 rng(std::hash<std::string>{}(name));
    const int k = 2 * m.instruction_k + 5;
    for (const bool swap : {false, true}) {
      const Format& fa = swap ? formats::e5m2 : formats::e4m3;
      const Format& fb = swap ? formats::e4m3 : formats::e5m2;
      int mismatches = 0;
      for (int t = 0; t < 3000 && mismatches < 5; ++t) {
        const int spread = 1 + static_cast<int>(rng() % 6);
        std::vector<double> a(static_cast<std::size_t>(k)), b(a.size());
        // The e5m2 operand near 2^-12 (its subnormals start below 2^-14), the e4m3 one near 2^2.
        for (std::size_t i = 0; i < a.size(); ++i) {
          a[i] = random_value(rng, fa, swap ? -12 : 2, spread);
          b[i] = random_value(rng, fb, swap ? 2 : -12, spread);
        }
        const double c = random_value(rng, acc, -10 + static_cast<int>(rng() % 5) - 2, spread);
        const double got = mma_dot(m, fa, fb, c, a.data(), 1, b.data(), 1, k);
        const double want = reference_dot(m, fa, fb, c, a, b);
        if (!same(got, want)) {
          ++mismatches;
          ADD_FAILURE() << "trial " << t << (swap ? " (e5m2 x e4m3)" : " (e4m3 x e5m2)")
                        << ": model " << describe(got) << ", reference " << describe(want);
        }
      }
    }
  }
}

// --- The matrix product: mma_dot for every output, bit for bit ---------------------------------

// Each output of MmaMatrixProduct against mma_dot on its row and column.
void expect_matrix_product_is_mma_dot(const MmaModel& m, const Format& fa, const Format& fb,
                                      std::size_t rows, std::size_t cols, std::size_t k,
                                      const std::vector<double>& a, const std::vector<double>& b,
                                      const std::vector<double>& c, const std::string& what) {
  SCOPED_TRACE(std::string(m.name) + " (" + fa.name + " x " + fb.name + "), " + what + ", " +
               std::to_string(rows) + "x" + std::to_string(cols) + "x" + std::to_string(k));
  std::vector<double> d(rows * cols);
  const MmaMatrixProduct product(m, fa, fb, k, cols, b);
  product.multiply(a, c, d);
  int mismatches = 0;
  for (std::size_t i = 0; i < rows && mismatches < 5; ++i) {
    for (std::size_t j = 0; j < cols && mismatches < 5; ++j) {
      const double want =
          mma_dot(m, fa, fb, c.empty() ? 0.0 : c[i * cols + j], a.data() + i * k, 1, b.data() + j,
                  static_cast<std::ptrdiff_t>(cols), static_cast<int>(k));
      if (!same(d[i * cols + j], want)) {
        ++mismatches;
        ADD_FAILURE() << "d[" << i << "][" << j << "] = " << describe(d[i * cols + j])
                      << ", mma_dot " << describe(want);
      }
    }
  }
}

void expect_matrix_product_is_mma_dot(const MmaModel& m, std::size_t rows, std::size_t cols,
                                      std::size_t k, const std::vector<double>& a,
                                      const std::vector<double>& b, const std::vector<double>& c,
                                      const std::string& what) {
  expect_matrix_product_is_mma_dot(m, m.input, m.input, rows, cols, k, a, b, c, what);
}

// Random operands as in MmaSimReference (zeros, subnormals, few significant bits, overlapping
// terms); operands that cancel (pairs of products of opposite signs, in two equal rows); specials
// and values beyond the formats' ranges in one row, in columns and in c; c at the accumulator's
// largest value with large products (overflow to an infinity mid-product); tiny operands whose sums
// are subnormal; over shapes with one and several column blocks of lanes, k = 0, 1, a short last
// fused step, and no C.
void check_matrix_product(const MmaModel& m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Format acc = m.accumulator_format();
  const int center = std::min(m.input.emax / 2, 3);
  const int step = m.fused_k > 0 ? m.fused_k : 8;
  const std::size_t k_tail = static_cast<std::size_t>(2 * step + step / 2 + 1);
  for (const auto& [rows, cols, k] : std::initializer_list<std::array<std::size_t, 3>>{
           {6, 5, k_tail}, {2, 300, k_tail}, {4, 7, 1}, {2, 3, 0}, {1, 130, 3 * k_tail}}) {
    const int spread = 1 + static_cast<int>(rng() % 8);
    std::vector<double> a(rows * k), b(k * cols), c(rows * cols);
    for (auto& x : a) x = random_value(rng, m.input, center, spread);
    for (auto& x : b) x = random_value(rng, m.input, center - static_cast<int>(rng() % 3), spread);
    for (auto& x : c) x = random_value(rng, acc, 2 * center, spread);
    expect_matrix_product_is_mma_dot(m, rows, cols, k, a, b, c, "random");
    expect_matrix_product_is_mma_dot(m, rows, cols, k, a, b, {}, "random, no c");
    if (k < 2 || rows < 2) continue;

    std::vector<double> cancel_a = a, cancel_b = b;
    for (std::size_t l = 0; l + 1 < k; l += 2) {
      cancel_a[l + 1] = cancel_a[l];
      for (std::size_t j = 0; j < cols; ++j) cancel_b[(l + 1) * cols + j] = -cancel_b[l * cols + j];
    }
    std::copy_n(cancel_a.begin(), k, cancel_a.begin() + static_cast<std::ptrdiff_t>(k));
    expect_matrix_product_is_mma_dot(m, rows, cols, k, cancel_a, cancel_b, c, "cancellation");

    std::vector<double> special_a = a, special_b = b, special_c = c;
    const double inf = INFINITY;
    special_a[k + 1] = m.input.has_infinity() ? -inf : std::nan("");
    special_a[(rows - 1) * k] = std::nan("");
    special_b[(k - 1) * cols + cols / 2] = std::nan("");
    special_b[1] = m.input.has_infinity() ? inf : 0.0;
    special_c[cols - 1] = -inf;
    special_c[0] = std::nan("");
    // Not values of the formats at all: beyond every format's range (mma_dot's contract allows
    // them; its split truncates what it can).
    special_b[2] = 1e300;
    special_c[1] = -1e300;
    special_a[k] = special_b[2 + cols] = -1e300;  // and their product beyond binary64's
    expect_matrix_product_is_mma_dot(m, rows, cols, k, special_a, special_b, special_c, "specials");

    std::vector<double> big_a(a.size()), big_b(b.size()), big_c(c.size());
    const double big =
        round_to(m.input, Rounding::toward_zero, std::ldexp(1.0, m.input.emax)).value;
    const double acc_max = round_to(acc, Rounding::toward_zero, INFINITY).value;
    for (auto& x : big_a) x = (rng() & 3) == 0 ? -big : big;
    for (auto& x : big_b) x = random_value(rng, m.input, m.input.emax - 2, 2);
    for (auto& x : big_c) x = (rng() & 1) != 0 ? acc_max : -acc_max;
    expect_matrix_product_is_mma_dot(m, rows, cols, k, big_a, big_b, big_c, "overflow");

    std::vector<double> tiny_a(a.size()), tiny_b(b.size()), tiny_c(c.size());
    for (auto& x : tiny_a) x = random_value(rng, m.input, m.input.emin + 2, 3);
    for (auto& x : tiny_b) x = random_value(rng, m.input, 0, 2);
    for (auto& x : tiny_c) x = random_value(rng, acc, acc.emin, 4);
    expect_matrix_product_is_mma_dot(m, rows, cols, k, tiny_a, tiny_b, tiny_c, "subnormal sums");
  }
}

// The mixed-format product (e4m3 x e5m2 and the reverse) against mixed mma_dot, output by output:
// random values around 2^2 and 2^-12 (the e5m2 side reaching its subnormals), cancellation, and
// specials.
TEST(MmaMatrixProductMixed, EqualsMixedMmaDot) {
  std::mt19937_64 rng(19);
  for (const char* name : {"hopper-e4m3", "ada-e4m3", "blackwell-e4m3"}) {
    const MmaModel m = *mma_model_named(name);
    for (const bool swap : {false, true}) {
      const Format& fa = swap ? formats::e5m2 : formats::e4m3;
      const Format& fb = swap ? formats::e4m3 : formats::e5m2;
      for (const auto& [rows, cols, k] : std::initializer_list<std::array<std::size_t, 3>>{
               {6, 5, 77}, {2, 300, 64}, {5, 131, 33}}) {
        std::vector<double> a(rows * k), b(k * cols), c(rows * cols);
        for (auto& x : a) x = random_value(rng, fa, swap ? -12 : 2, 4);
        for (auto& x : b) x = random_value(rng, fb, swap ? 2 : -12, 4);
        for (auto& x : c) x = random_value(rng, formats::fp32, -10, 4);
        expect_matrix_product_is_mma_dot(m, fa, fb, rows, cols, k, a, b, c, "random");
        expect_matrix_product_is_mma_dot(m, fa, fb, rows, cols, k, a, b, {}, "random, no c");
        a[1] = std::nan("");
        b[cols + 2] = INFINITY;
        expect_matrix_product_is_mma_dot(m, fa, fb, rows, cols, k, a, b, c, "specials");
      }
    }
  }
}

class MatrixProduct : public ::testing::TestWithParam<MmaModel> {};

TEST_P(MatrixProduct, EqualsMmaDotForEveryOutput) {
  check_matrix_product(GetParam(), std::hash<std::string>{}(GetParam().name));
}

INSTANTIATE_TEST_SUITE_P(Presets, MatrixProduct,
                         ::testing::ValuesIn(presets_where([](const MmaModel&) { return true; })),
                         ParamName);

// A fused step that sums to zero leaves c = +0 with exponent -126 (MMA-Sim's constant), which sets
// emax for a next step whose products all lie below 2^-126 (bf16, tf32): its terms near 2^-136 are
// truncated against 2^-126, while its result, dominated by products near 2^-125, stays normal.
TEST(MatrixProductZeroStep, ZeroAccumulatorExponentAlignsTheNextStep) {
  for (const MmaModel& m : presets_where([](const MmaModel& x) { return x.input.emin <= -126; })) {
    std::mt19937_64 rng(std::hash<std::string>{}(m.name));
    const auto value = [&](int e) {
      const double x = std::ldexp(1.0 + std::ldexp(static_cast<double>(rng() >> 12), -52), e);
      return mma_quantize_input(m, (rng() & 1) != 0 ? -x : x);
    };
    const std::size_t step = static_cast<std::size_t>(m.fused_k), k = 2 * step, rows = 2, cols = 9;
    std::vector<double> a(rows * k), b(k * cols);
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t l = 0; l < step; l += 2) a[i * k + l] = a[i * k + l + 1] = value(3);
      for (std::size_t l = step; l < k; ++l) a[i * k + l] = value(-64);
    }
    for (std::size_t j = 0; j < cols; ++j) {
      for (std::size_t l = 0; l < step; l += 2) {
        b[l * cols + j] = value(-2);
        b[(l + 1) * cols + j] = -b[l * cols + j];
      }
      for (std::size_t l = step; l < k; ++l) b[l * cols + j] = value(l % 3 == 0 ? -72 : -63);
    }
    expect_matrix_product_is_mma_dot(m, rows, cols, k, a, b, {}, "zero step, then tiny products");
  }
}

// Products at the top of the input format's range, all of one sign, in whole blocks of 16 lanes:
// terms near 2^(F + 2), whose sums pass 2^31 over one fused step of Blackwell's k32 (F = 25) and
// over the whole k of user models (F = 29: a 32-bit group of one term; F = 20: groups of 512 over
// k = 1100), where the product's terms are summed in binary32 lanes and 32-bit groups.
TEST(MatrixProductLargeTerms, SumsPast32BitsEqualMmaDot) {
  std::vector<MmaModel> models;
  for (const char* name : {"blackwell-e4m3", "blackwell-e5m2", "hopper-e4m3", "hopper-fp16"}) {
    models.push_back(*mma_model_named(name));
  }
  for (const int f : {29, 20}) {
    MmaModel whole = *mma_model_named("hopper-fp16");
    whole.fused_k = 0;
    whole.fraction_bits = f;
    models.push_back(whole);
  }
  std::mt19937_64 rng(29);
  for (const MmaModel& m : models) {
    const std::size_t rows = 3, cols = 48, k = m.fused_k == 0 ? 1100 : 64;
    const double top = std::ldexp(1.0, m.input.emax);
    std::vector<double> a(rows * k), b(k * cols), c(rows * cols);
    for (auto& x : a)
      x = mma_quantize_input(m, top * (1.5 + 0.25 * static_cast<double>(rng() & 1)));
    for (auto& x : b) x = mma_quantize_input(m, (1.0 + 0.5 * static_cast<double>(rng() & 1)));
    for (auto& x : c) x = static_cast<double>(rng() & 0xFF);
    ASSERT_TRUE(std::isfinite(a[0]) && std::isfinite(b[0])) << m.name;
    expect_matrix_product_is_mma_dot(m, rows, cols, k, a, b, c, "large terms of one sign");
    for (auto& x : a) x = -x;
    expect_matrix_product_is_mma_dot(m, rows, cols, k, a, b, {}, "large negative terms");
  }
}

// A B large enough to be split and packed on several cores (mma.cpp: 2^16 values per core), with
// a last partial block of lanes, and specials in B's last rows and last columns: every output as
// mma_dot makes it, in binary32 lanes (hopper-e4m3, hopper-fp16) and binary64 ones (hopper-bf16).
TEST(MatrixProductLargeB, EqualsMmaDotForEveryOutput) {
  for (const char* name : {"hopper-e4m3", "hopper-fp16", "hopper-bf16"}) {
    const MmaModel m = *mma_model_named(name);
    std::mt19937_64 rng(std::hash<std::string>{}(name));
    const std::size_t rows = 3, cols = 600, k = 256;
    std::vector<double> a(rows * k), b(k * cols), c(rows * cols);
    for (auto& x : a) x = random_value(rng, m.input, 0, 4);
    for (auto& x : b) x = random_value(rng, m.input, 0, 4);
    for (auto& x : c) x = random_value(rng, formats::fp32, 0, 4);
    b[(k - 3) * cols + 17] = INFINITY;
    b[(k - 1) * cols + cols - 2] = std::nan("");
    expect_matrix_product_is_mma_dot(m, rows, cols, k, a, b, c, "large B");
  }
}

// The switches and parameters that no preset sets: flushed subnormal inputs and outputs, a
// non-canonical NaN, the whole k in one fused step, F = 40 (terms of up to 42 bits).
TEST(MatrixProductUserModels, EqualsMmaDotForEveryOutput) {
  std::uint64_t seed = 1;
  for (const char* name : {"ampere-fp16", "hopper-bf16", "ada-e4m3-acc16", "hopper-tf32"}) {
    const MmaModel preset = *mma_model_named(name);
    MmaModel flush = preset;
    flush.subnormal_inputs = false;
    flush.subnormal_outputs = false;
    flush.canonical_nan = false;
    check_matrix_product(flush, ++seed);
    MmaModel whole = preset;
    whole.fused_k = 0;
    whole.fraction_bits = kMaxFractionBits;
    check_matrix_product(whole, ++seed);
  }
  // An input format whose products can leave binary64's normal range: every output by mma_dot.
  MmaModel wide = *mma_model_named("hopper-bf16");
  wide.input = user_format(8, -600, 600);
  ASSERT_EQ(mma_model_error(wide), nullptr);
  check_matrix_product(wide, ++seed);
}

// --- Against the exact dot product --------------------------------------------------------------

// With F = 40 and operands whose terms span at most 40 fraction bits below the largest, no term
// loses a bit: one fused step is the exact sum, rounded once as the output says.
TEST(MmaExact, WideFractionEqualsExactDotProductRounded) {
  for (const char* name : {"hopper-fp16", "hopper-bf16", "hopper-fp16-acc16", "ada-tf32"}) {
    MmaModel m = *mma_model_named(name);
    m.fraction_bits = kMaxFractionBits;
    m.fused_k = 0;  // the whole k in one step
    SCOPED_TRACE(name);
    const Format acc = m.accumulator_format();
    const Rounding mode =
        m.accumulator() == MmaAccumulator::fp16 ? Rounding::nearest_even : Rounding::toward_zero;
    std::mt19937_64 rng(3);
    for (int t = 0; t < 3000; ++t) {
      const int k = 1 + static_cast<int>(rng() % 64);
      std::vector<double> a(static_cast<std::size_t>(k)), b(a.size());
      // Operand exponents in [-3, 2] (tf32 truncation never leaves this range): products in
      // [2^-6, 2^6), fraction bits <= 20, c in [2^-6, 2^6) with <= 23: spread <= 12 + 23 < 40.
      for (std::size_t i = 0; i < a.size(); ++i) {
        a[i] = mma_quantize_input(m, random_value(rng, formats::fp32, 0, 2) * 0.5);
        b[i] = mma_quantize_input(m, random_value(rng, formats::fp32, 0, 2) * 0.5);
        if (a[i] == 0) a[i] = 0.125;
        if (b[i] == 0) b[i] = -0.25;
        if (std::abs(a[i]) < 0.125) a[i] = std::copysign(0.125, a[i]);
        if (std::abs(b[i]) < 0.125) b[i] = std::copysign(0.125, b[i]);
      }
      double c =
          round_to(acc, Rounding::nearest_even, random_value(rng, formats::fp32, 0, 5)).value;
      if (std::abs(c) < p2(-6)) c = p2(-6);
      Mpfr exact, prod;
      mpfr_set_d(exact.v, c, MPFR_RNDN);
      for (std::size_t i = 0; i < a.size(); ++i) {
        mpfr_set_d(prod.v, a[i], MPFR_RNDN);
        mpfr_mul_d(prod.v, prod.v, b[i], MPFR_RNDN);
        mpfr_add(exact.v, exact.v, prod.v, MPFR_RNDN);
      }
      const double got = mma_dot(m, c, a.data(), b.data(), k);
      const double want =
          mpfr_zero_p(exact.v) ? 0.0 : oracle::round(oracle::spec_of(acc), mode, exact.v).value;
      ASSERT_TRUE(same(got, want))
          << "trial " << t << ": " << describe(got) << " vs " << describe(want);
    }
  }
}

// Monotonicity in c, for c = 1 - 2^-24 versus c = 1 and small products: with F = 40 what the terms
// lose (< n * 2^-40) is far below the gap 2^-24 between the two c, so a larger c never gives a
// smaller result; with the presets' F it breaks (Fasi et al.: V100, T4, A100; the model predicts it
// for Hopper and Blackwell too), and random search finds such inputs.
TEST(MmaExact, MonotonicOnlyWithoutTermTruncation) {
  for (const char* name : {"volta-fp16", "ampere-fp16", "hopper-fp16", "blackwell-bf16"}) {
    const MmaModel preset = *mma_model_named(name);
    MmaModel wide = preset;
    wide.fraction_bits = kMaxFractionBits;
    SCOPED_TRACE(name);
    std::mt19937_64 rng(5);
    int preset_failures = 0;
    for (int t = 0; t < 20000; ++t) {
      const int k = preset.fused_k;
      std::vector<double> a(static_cast<std::size_t>(k)), b(a.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        a[i] = mma_quantize_input(preset, std::ldexp(1.0 + static_cast<double>(rng() % 1024) / 1024,
                                                     -static_cast<int>(rng() % 3)));
        b[i] = mma_quantize_input(preset, std::ldexp(1.0 + static_cast<double>(rng() % 1024) / 1024,
                                                     -24 - static_cast<int>(rng() % 3)));
      }
      const double c_low = 1.0 - p2(-24);  // the fp32 neighbours below and at 1
      const double c_high = 1.0;
      EXPECT_LE(mma_dot(wide, c_low, a.data(), b.data(), k),
                mma_dot(wide, c_high, a.data(), b.data(), k));
      if (mma_dot(preset, c_low, a.data(), b.data(), k) >
          mma_dot(preset, c_high, a.data(), b.data(), k)) {
        ++preset_failures;
      }
    }
    EXPECT_GT(preset_failures, 0);
  }
}

}  // namespace
}  // namespace ampbench::numeric::test
