// Random models: a preset with F, the products per fused step and the subnormal switches drawn at
// random, within the domain the probes are built for (F at least the output's fraction bits and
// enough for the exact-products probe, at most 25; fused steps of 4 or more); the fingerprint of
// its CPU model recovers every parameter the model predicts.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/fingerprint/fingerprint.hpp"

namespace ampbench::fingerprint {
namespace {

int output_fraction_bits(const numeric::MmaModel& m) {
  return m.output == numeric::MmaOutput::fp32_truncate    ? 23
         : m.output == numeric::MmaOutput::e8m13_truncate ? 13
                                                          : 10;
}

RC_GTEST_PROP(FingerprintOfRandomModels, RecoversEveryPredictedParameter, ()) {
  const auto presets = numeric::mma_presets();
  numeric::MmaModel m = presets[*rc::gen::inRange<std::size_t>(0, presets.size())];
  const int lowest = std::max(2 * m.input.precision - 1, output_fraction_bits(m));
  m.fraction_bits = *rc::gen::inRange(lowest, 26);
  std::vector<int> steps;
  for (int k = 4; k <= 2 * m.instruction_k; k *= 2) steps.push_back(k);
  m.fused_k = *rc::gen::elementOf(steps);
  m.subnormal_inputs = *rc::gen::arbitrary<bool>();
  m.subnormal_outputs = *rc::gen::arbitrary<bool>();
  ModelExecutor executor(m);
  const Parameters inferred = take_fingerprint(executor).parameters;
  std::string mismatches;  // printed by RC_ASSERT when not empty
  for (const Comparison& row : compare(inferred, predicted_parameters(m))) {
    if (!row.match) mismatches += row.parameter + ": " + row.inferred + " != " + row.preset + "; ";
  }
  RC_ASSERT(mismatches == std::string());
}

}  // namespace
}  // namespace ampbench::fingerprint
