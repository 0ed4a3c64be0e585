// The fingerprint against the CPU models: for every preset, the tests recover its parameters from
// the outputs alone (the "same tests against the CPU presets" of CPU CI); for models altered in
// one parameter (F, products per fused step, subnormals flushed, another output rounding) they
// infer the altered value and the comparison with the original preset names it.
#include "harness/fingerprint/fingerprint.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ampbench::numeric {
// GoogleTest prints a preset by its name.
void PrintTo(const MmaModel& m, std::ostream* os) {
  *os << m.name;
}
}  // namespace ampbench::numeric

namespace ampbench::fingerprint {
namespace {

using numeric::MmaAccumulator;
using numeric::MmaModel;
using numeric::MmaOutput;
using numeric::Rounding;

std::vector<MmaModel> presets() {
  const auto all = numeric::mma_presets();
  return {all.begin(), all.end()};
}

std::string ParamName(const ::testing::TestParamInfo<MmaModel>& param) {
  std::string s = param.param.name;
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

// Fraction bits of each output, written down independently of the fingerprint's own table.
int output_fraction_bits(const MmaModel& m) {
  return m.output == MmaOutput::fp32_truncate    ? 23
         : m.output == MmaOutput::e8m13_truncate ? 13
                                                 : 10;
}

std::vector<std::string> mismatches(const Parameters& inferred, const Parameters& predicted) {
  std::vector<std::string> names;
  for (const Comparison& row : compare(inferred, predicted)) {
    if (!row.match) names.push_back(row.parameter);
  }
  return names;
}

bool names(const std::vector<std::string>& list, const std::string& parameter) {
  return std::find(list.begin(), list.end(), parameter) != list.end();
}

// The model's fused steps with the output rounded in another mode: what no preset does, to see
// that the tests tell the roundings apart (the same integer sum as mma_fused_step, then
// round_window in `mode`).
class RoundingExecutor final : public Executor {
 public:
  RoundingExecutor(const MmaModel& model, Rounding mode) : model_(model), mode_(mode) {}
  std::string description() const override { return "test"; }
  numeric::Format input() const override { return model_.input; }
  MmaAccumulator accumulator() const override { return model_.accumulator(); }
  int instruction_k() const override { return model_.instruction_k; }
  std::vector<double> run(std::span<const Probe> probes) override {
    std::vector<double> d;
    for (const Probe& p : probes) {
      double acc = p.c;
      const int k = static_cast<int>(p.a.size());
      for (int i = 0; i < k; i += model_.fused_k) {
        acc = step(acc, p.a.data() + i, p.b.data() + i, std::min(model_.fused_k, k - i));
      }
      d.push_back(acc);
    }
    return d;
  }

 private:
  double step(double c, const double* a, const double* b, int n) const {
    int emax = 0;
    const std::int64_t sum = numeric::detail::mma_fused_sum(model_, c, a, 1, b, 1, n, emax);
    if (sum == 0) return 0.0;
    const std::uint64_t magnitude = sum < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(sum)
                                            : static_cast<std::uint64_t>(sum);
    const int lead = std::countl_zero(magnitude);
    const numeric::Window w{sum < 0, magnitude << lead, 0, false,
                            emax - model_.fraction_bits - lead};
    const numeric::Format out = model_.output == MmaOutput::e8m13_truncate
                                    ? numeric::detail::kE8m13
                                    : model_.accumulator_format();
    return numeric::round_window(out, mode_, w).value;
  }

  MmaModel model_;
  Rounding mode_;
};

class PresetFingerprint : public ::testing::TestWithParam<MmaModel> {
 protected:
  const MmaModel& preset() const { return GetParam(); }
  static Fingerprint of(const MmaModel& m) {
    ModelExecutor executor(m);
    return take_fingerprint(executor);
  }
};

TEST_P(PresetFingerprint, RecoversEveryParameterOfThePreset) {
  const MmaModel& m = preset();
  const Fingerprint fp = of(m);
  const Parameters& p = fp.parameters;
  EXPECT_EQ(p.subnormal_inputs, true);
  EXPECT_EQ(p.subnormal_outputs, true);
  EXPECT_EQ(p.exact_products, true);
  EXPECT_EQ(p.fraction_bits, m.fraction_bits);
  // Every preset's output precision is observable: q <= F + 2.
  EXPECT_EQ(p.output_bits, output_fraction_bits(m));
  EXPECT_EQ(p.output_rounding, m.accumulator() == MmaAccumulator::fp16 ? Rounding::nearest_even
                                                                       : Rounding::toward_zero);
  EXPECT_EQ(p.normalise_once, true);
  EXPECT_EQ(p.fused_k, m.fused_k);
  // Fasi21 (V100, T4, A100) and the models of the later devices: the truncating adders are not
  // monotonic; with an fp16 output the test does not apply.
  if (m.accumulator() == MmaAccumulator::fp32) {
    EXPECT_EQ(p.monotonic, false);
  } else {
    EXPECT_FALSE(p.monotonic.has_value());
  }
  // A nonzero sum that rounds to zero is +0 in every model (as MMA-Sim and an H200 give it), where
  // a probe applies: inputs whose smallest normal squared lies below half an fp16 accumulator's
  // smallest subnormal (fp16, e5m2), or bf16 and tf32 into fp32 with F >= 24.
  const bool zero_probe = m.accumulator() == MmaAccumulator::fp16
                              ? 2 * m.input.emin <= -25
                              : m.input.emin <= -75 && m.fraction_bits >= 24;
  if (zero_probe) {
    EXPECT_EQ(p.zero_sign_kept, false);
  } else {
    EXPECT_FALSE(p.zero_sign_kept.has_value());
  }
  EXPECT_EQ(mismatches(p, predicted_parameters(m)), std::vector<std::string>{});
  ASSERT_EQ(fp.evidence.size(), 10u);
  for (const Evidence& e : fp.evidence) {
    EXPECT_FALSE(e.verdict.empty()) << e.parameter;
    EXPECT_EQ(e.verdict.find("no hypothesis"), std::string::npos) << e.parameter;
    EXPECT_EQ(e.verdict.find("cannot"), std::string::npos) << e.parameter << ": " << e.verdict;
  }
}

// The parameters whose tests do not depend on F or on the fused step.
void expect_independent_parameters(const Parameters& p, const MmaModel& m) {
  const Parameters want = predicted_parameters(m);
  EXPECT_EQ(p.subnormal_inputs, want.subnormal_inputs);
  EXPECT_EQ(p.subnormal_outputs, want.subnormal_outputs);
  EXPECT_EQ(p.exact_products, want.exact_products);
  EXPECT_EQ(p.output_rounding, want.output_rounding);
}

TEST_P(PresetFingerprint, DetectsAChangedNumberOfAlignmentBits) {
  for (const int delta : {-1, 1, 3}) {
    MmaModel altered = preset();
    altered.fraction_bits += delta;
    SCOPED_TRACE("F = " + std::to_string(altered.fraction_bits));
    const Parameters p = of(altered).parameters;
    EXPECT_EQ(p.fraction_bits, altered.fraction_bits);
    EXPECT_TRUE(names(mismatches(p, predicted_parameters(preset())), "fraction_bits"));
    expect_independent_parameters(p, preset());
  }
}

TEST_P(PresetFingerprint, DetectsAChangedFusedStep) {
  // Half and twice the step, at least 4 (the tests of F and normalisation need 3 products in one
  // step; every device has 4 or more).
  for (const int k : {preset().fused_k / 2, preset().fused_k * 2}) {
    if (k < 4) continue;
    MmaModel altered = preset();
    altered.fused_k = k;
    SCOPED_TRACE("fused_k = " + std::to_string(k));
    const Parameters p = of(altered).parameters;
    EXPECT_EQ(p.fused_k, std::min(k, 2 * preset().instruction_k));
    EXPECT_TRUE(names(mismatches(p, predicted_parameters(preset())), "fused_k"));
    EXPECT_EQ(mismatches(p, predicted_parameters(altered)), std::vector<std::string>{});
  }
}

TEST_P(PresetFingerprint, DetectsFlushedSubnormals) {
  MmaModel inputs = preset();
  inputs.subnormal_inputs = false;
  Parameters p = of(inputs).parameters;
  EXPECT_EQ(p.subnormal_inputs, false);
  EXPECT_EQ(mismatches(p, predicted_parameters(preset())),
            std::vector<std::string>{"subnormal_inputs"});

  MmaModel outputs = preset();
  outputs.subnormal_outputs = false;
  p = of(outputs).parameters;
  EXPECT_EQ(p.subnormal_outputs, false);
  EXPECT_EQ(mismatches(p, predicted_parameters(preset())),
            std::vector<std::string>{"subnormal_outputs"});
}

TEST_P(PresetFingerprint, DetectsAnotherOutputRounding) {
  for (const Rounding mode : {Rounding::toward_zero, Rounding::nearest_even, Rounding::nearest_away,
                              Rounding::upward, Rounding::downward}) {
    SCOPED_TRACE(describe(std::optional<Rounding>(mode)));
    RoundingExecutor executor(preset(), mode);
    const Parameters p = take_fingerprint(executor).parameters;
    EXPECT_EQ(p.output_rounding, mode);
    EXPECT_EQ(p.fraction_bits, preset().fraction_bits);
    EXPECT_EQ(p.output_bits, output_fraction_bits(preset()));
    EXPECT_EQ(p.fused_k, preset().fused_k);
    const bool same = mode == predicted_parameters(preset()).output_rounding;
    EXPECT_EQ(names(mismatches(p, predicted_parameters(preset())), "output_rounding"), !same);
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, PresetFingerprint, ::testing::ValuesIn(presets()), ParamName);

TEST(Fingerprint, EvidenceCarriesProbesOutputsAndHypotheses) {
  ModelExecutor executor(*numeric::mma_model_named("ampere-fp16"));
  const Fingerprint fp = take_fingerprint(executor);
  EXPECT_EQ(fp.executor, executor.description());
  for (const Evidence& e : fp.evidence) {
    SCOPED_TRACE(e.parameter);
    if (e.verdict.starts_with("not applicable")) continue;  // fp16 into fp32: no zero-sign probe
    EXPECT_FALSE(e.probes.empty());
    EXPECT_EQ(e.outputs.size(), e.probes.size());
    for (const Hypothesis& h : e.hypotheses) EXPECT_EQ(h.expected.size(), e.outputs.size());
  }
  // Fasi21 D1 on the A100: one extra bit; the sweep keeps the match and its neighbours.
  const Evidence& f = fp.evidence[3];
  ASSERT_EQ(f.parameter, "fraction_bits");
  ASSERT_EQ(f.hypotheses.size(), 3u);
  EXPECT_EQ(f.hypotheses[1].name, "F = 24");
  EXPECT_EQ(f.verdict, "F = 24");
}

// The zero-sign probes of the two settings that decide it on hardware (fp16 into fp16: -2^-14 *
// 2^-14 = -2^-28; bf16 into fp32: -2^-75 * 2^-75 = -2^-150): the models give +0, as MMA-Sim's
// reference and an H200 do; an executor that keeps the sum's sign (-0, as IEEE 754 rounding
// does) is inferred as keeping it, a mismatch with the preset.
TEST(Fingerprint, TheSignOfAZeroFromANonzeroSum) {
  class SignedZero final : public Executor {
   public:
    explicit SignedZero(const MmaModel& m) : model_(m) {}
    std::string description() const override { return "-0"; }
    numeric::Format input() const override { return model_.input(); }
    MmaAccumulator accumulator() const override { return model_.accumulator(); }
    int instruction_k() const override { return model_.instruction_k(); }
    std::vector<double> run(std::span<const Probe> probes) override {
      std::vector<double> d = model_.run(probes);
      for (double& v : d) v = v == 0.0 ? -0.0 : v;  // every zero -0
      return d;
    }

   private:
    ModelExecutor model_;
  };
  for (const auto& [preset, a] :
       {std::pair{"ampere-fp16-acc16", -0x1p-14}, std::pair{"hopper-bf16", -0x1p-75}}) {
    SCOPED_TRACE(preset);
    const MmaModel m = *numeric::mma_model_named(preset);
    ModelExecutor model(m);
    const Fingerprint fp = take_fingerprint(model);
    const Evidence& e = fp.evidence.back();
    ASSERT_EQ(e.parameter, "zero_sign_kept");
    ASSERT_EQ(e.probes.size(), 1u);
    EXPECT_EQ(e.probes[0].c, 0.0);
    EXPECT_FALSE(std::signbit(e.probes[0].c));
    // In the instruction's last slot, after zero products.
    std::vector<double> want_a(static_cast<std::size_t>(m.instruction_k), 0.0), want_b = want_a;
    want_a.back() = a;
    want_b.back() = -a;
    EXPECT_EQ(e.probes[0].a, want_a);
    EXPECT_EQ(e.probes[0].b, want_b);
    EXPECT_EQ(e.outputs[0], 0.0);
    EXPECT_FALSE(std::signbit(e.outputs[0]));
    EXPECT_EQ(fp.parameters.zero_sign_kept, false);
    SignedZero signed_zero(m);
    const Parameters p = take_fingerprint(signed_zero).parameters;
    EXPECT_EQ(p.zero_sign_kept, true);
    EXPECT_EQ(mismatches(p, predicted_parameters(m)), std::vector<std::string>{"zero_sign_kept"});
  }
}

// An executor whose outputs no hypothesis explains leaves the parameters unknown, and the
// comparison reports each as a mismatch.
TEST(Fingerprint, NonsenseOutputsAreUnknownAndMismatch) {
  class Constant final : public Executor {
   public:
    std::string description() const override { return "constant"; }
    numeric::Format input() const override { return numeric::formats::bf16; }
    MmaAccumulator accumulator() const override { return MmaAccumulator::fp32; }
    int instruction_k() const override { return 16; }
    std::vector<double> run(std::span<const Probe> probes) override {
      return std::vector<double>(probes.size(), 3.0);
    }
  } constant;
  const Fingerprint fp = take_fingerprint(constant);
  EXPECT_FALSE(fp.parameters.fraction_bits.has_value());
  EXPECT_FALSE(fp.parameters.fused_k.has_value());
  const auto rows =
      compare(fp.parameters, predicted_parameters(*numeric::mma_model_named("ampere-bf16")));
  EXPECT_FALSE(all_match(rows));
  for (const Comparison& row : rows) {
    EXPECT_EQ(row.inferred, "unknown") << row.parameter;
    EXPECT_FALSE(row.match) << row.parameter;
  }
}

TEST(Fingerprint, ArchitectureOfAComputeCapability) {
  EXPECT_STREQ(mma_architecture(7, 0), "volta");
  EXPECT_STREQ(mma_architecture(7, 5), "turing");
  EXPECT_STREQ(mma_architecture(8, 0), "ampere");
  EXPECT_STREQ(mma_architecture(8, 6), "ampere");
  EXPECT_STREQ(mma_architecture(8, 9), "ada");
  EXPECT_STREQ(mma_architecture(9, 0), "hopper");
  EXPECT_STREQ(mma_architecture(10, 0), "blackwell");
  EXPECT_STREQ(mma_architecture(12, 0), "blackwell");
  EXPECT_EQ(mma_architecture(6, 1), nullptr);
}

}  // namespace
}  // namespace ampbench::fingerprint
