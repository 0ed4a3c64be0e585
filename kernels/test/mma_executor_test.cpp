// The fingerprint on the device's matrix units. A test fails only when the executor is wrong or
// its outputs make no sense (a CUDA error, a tile whose elements disagree, an operand that does
// not reach its product, results that change between two runs); what the fingerprint says about
// the device, including a mismatch with the architecture's preset, is printed as a finding.
#include "kernels/mma_executor.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/fingerprint/fingerprint.hpp"
#include "harness/numeric/mma.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::kernels {
namespace {

using numeric::MmaAccumulator;

struct Case {
  numeric::Format input;
  MmaAccumulator accumulator;
  const char* name;
};

const Case kCases[] = {
    {numeric::formats::fp16, MmaAccumulator::fp32, "fp16"},
    {numeric::formats::fp16, MmaAccumulator::fp16, "fp16-acc16"},
    {numeric::formats::bf16, MmaAccumulator::fp32, "bf16"},
    {numeric::formats::tf32, MmaAccumulator::fp32, "tf32"},
    {numeric::formats::e4m3, MmaAccumulator::fp32, "e4m3"},
    {numeric::formats::e5m2, MmaAccumulator::fp32, "e5m2"},
};

class MmaExecutorTest : public test::GpuTest {
 protected:
  // The executor, or nothing (with the reason printed) where the device has no such MMA.
  static std::unique_ptr<fingerprint::Executor> executor(const Case& c) {
    try {
      return make_mma_executor(c.input, c.accumulator);
    } catch (const std::runtime_error& e) {
      const int cc = device().compute_major * 10 + device().compute_minor;
      const bool fp8 = same_values(c.input, numeric::formats::e4m3) ||
                       same_values(c.input, numeric::formats::e5m2);
      if (fp8 && cc < 89) {  // no FP8 MMA below sm_89: not a failure
        std::cout << c.name << ": skipped: " << e.what() << "\n";
        return nullptr;
      }
      throw;
    }
  }
};

// One-hot probes: a_j = 1 and b_j = 2 in slot j of two instructions' worth of k, all else 0, give 2
// only when the kernel puts a's and b's slot j at the same k; plus a chained dot with c.
TEST_F(MmaExecutorTest, OperandsReachTheirProducts) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const auto x = executor(c);
    if (!x) continue;
    const std::size_t k = 2 * static_cast<std::size_t>(x->instruction_k());
    std::vector<fingerprint::Probe> probes;
    for (std::size_t j = 0; j < k; ++j) {
      fingerprint::Probe p{0.0, std::vector<double>(k, 0.0), std::vector<double>(k, 0.0)};
      p.a[j] = 1.0;
      p.b[j] = 2.0;
      probes.push_back(std::move(p));
    }
    probes.push_back({0.5, {1.0, 2.0, 3.0}, {1.0, 1.0, 1.0}});
    const std::vector<double> d = x->run(probes);
    ASSERT_EQ(d.size(), probes.size());
    for (std::size_t j = 0; j < k; ++j) EXPECT_EQ(d[j], 2.0) << "slot " << j;
    EXPECT_EQ(d.back(), 6.5);
  }
}

TEST_F(MmaExecutorTest, FingerprintOfTheDeviceIsReproducibleAndReported) {
  const char* arch = fingerprint::mma_architecture(device().compute_major, device().compute_minor);
  std::cout << "device: " << describe(device()) << "; architecture "
            << (arch == nullptr ? "unknown" : arch) << "\n";
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const auto x = executor(c);
    if (!x) continue;
    const fingerprint::Fingerprint fp = fingerprint::take_fingerprint(*x);
    // The same probes again give the same outputs, bit for bit.
    for (const fingerprint::Evidence& e : fp.evidence) {
      if (e.probes.empty()) continue;
      const std::vector<double> again = x->run(e.probes);
      ASSERT_EQ(again.size(), e.outputs.size()) << e.parameter;
      for (std::size_t i = 0; i < again.size(); ++i) {
        EXPECT_EQ(numeric::detail::bits_of(again[i]), numeric::detail::bits_of(e.outputs[i]))
            << e.parameter << " probe " << i;
      }
    }
    std::cout << c.name << " on " << fp.executor << ":\n";
    for (const fingerprint::Evidence& e : fp.evidence) {
      std::cout << "  " << e.parameter << ": " << e.verdict << "\n";
    }
    const std::optional<numeric::MmaModel> preset =
        arch == nullptr ? std::nullopt : numeric::mma_model(arch, c.input, c.accumulator);
    if (!preset) {
      std::cout << "  no preset to compare with\n";
      continue;
    }
    const auto rows =
        fingerprint::compare(fp.parameters, fingerprint::predicted_parameters(*preset));
    for (const auto& row : rows) {
      if (!row.match) {
        std::cout << "  FINDING: " << row.parameter << " is " << row.inferred << ", preset "
                  << preset->name << " says " << row.preset << "\n";
      }
    }
    RecordProperty(std::string(c.name) + "_matches_" + preset->name,
                   fingerprint::all_match(rows) ? "yes" : "no");
  }
}

}  // namespace
}  // namespace ampbench::kernels
