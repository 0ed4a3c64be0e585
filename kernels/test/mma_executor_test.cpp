// The fingerprint on the device's matrix units. A test fails only when the executor is wrong or
// its outputs make no sense (a CUDA error, a tile whose elements disagree, an operand that does
// not reach its product, results that change between two runs); what the fingerprint says about
// the device, including a mismatch with the architecture's preset, is printed as a finding. Every
// test runs through mma (WMMA, mma.sync) and, in tests of its own defined last (a fault in one
// spoils the CUDA context of the tests after it in the same process), through wgmma.
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

const char* name_of(MmaInstruction instruction) {
  return instruction == MmaInstruction::wgmma ? "wgmma" : "mma";
}

class MmaExecutorTest : public test::GpuTest {
 protected:
  // The executor, or nothing (with the reason printed) where the device has no such instruction:
  // no FP8 MMA below sm_89, no wgmma off compute capability 9.0.
  static std::unique_ptr<fingerprint::Executor> executor(const Case& c,
                                                         MmaInstruction instruction) {
    const int cc = device().compute_major * 10 + device().compute_minor;
    if (instruction == MmaInstruction::wgmma && cc != 90) {
      std::cout << c.name << ": wgmma skipped: compute capability " << cc << " is not 9.0\n";
      return nullptr;
    }
    try {
      return make_mma_executor(c.input, c.accumulator, instruction);
    } catch (const std::runtime_error& e) {
      const bool fp8 = same_values(c.input, numeric::formats::e4m3) ||
                       same_values(c.input, numeric::formats::e5m2);
      if (fp8 && cc < 89) {  // no FP8 MMA below sm_89: not a failure
        std::cout << c.name << ": skipped: " << e.what() << "\n";
        return nullptr;
      }
      throw;
    }
  }

  // One-hot probes: a_j = 1 and b_j = 2 in slot j of two instructions' worth of k, all else 0,
  // give 2 only when the kernel puts a's and b's slot j at the same k; plus a chained dot with c.
  static void operands_reach_their_products(MmaInstruction instruction) {
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(c.name) + " " + name_of(instruction));
      const auto x = executor(c, instruction);
      if (!x) continue;
      std::vector<fingerprint::Probe> probes = one_hot_probes(x->instruction_k());
      const std::size_t k = probes.size();
      ASSERT_EQ(k, 2 * static_cast<std::size_t>(x->instruction_k()));
      probes.push_back({0.5, {1.0, 2.0, 3.0}, {1.0, 1.0, 1.0}});
      const std::vector<double> d = x->run(probes);
      ASSERT_EQ(d.size(), probes.size());
      for (std::size_t j = 0; j < k; ++j) EXPECT_EQ(d[j], 2.0) << "slot " << j;
      EXPECT_EQ(d.back(), 6.5);
    }
  }

  // The fingerprint of every format, each test's probes run twice with the same outputs bit for
  // bit; the parameters and every mismatch with the architecture's preset are printed.
  static void fingerprint_is_reproducible_and_reported(MmaInstruction instruction) {
    const char* arch =
        fingerprint::mma_architecture(device().compute_major, device().compute_minor);
    std::cout << "device: " << describe(device()) << "; architecture "
              << (arch == nullptr ? "unknown" : arch) << "\n";
    for (const Case& c : kCases) {
      const std::string name = std::string(c.name) + "_" + name_of(instruction);
      SCOPED_TRACE(name);
      const auto x = executor(c, instruction);
      if (!x) continue;
      const fingerprint::Fingerprint fp = fingerprint::take_fingerprint(*x);
      for (const fingerprint::Evidence& e : fp.evidence) {
        if (e.probes.empty()) continue;
        const std::vector<double> again = x->run(e.probes);
        ASSERT_EQ(again.size(), e.outputs.size()) << e.parameter;
        for (std::size_t i = 0; i < again.size(); ++i) {
          EXPECT_EQ(numeric::detail::bits_of(again[i]), numeric::detail::bits_of(e.outputs[i]))
              << e.parameter << " probe " << i;
        }
      }
      std::cout << name << " on " << fp.executor << ":\n";
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
      RecordProperty(name + "_matches_" + preset->name,
                     fingerprint::all_match(rows) ? "yes" : "no");
    }
  }
};

TEST_F(MmaExecutorTest, OperandsReachTheirProducts) {
  operands_reach_their_products(MmaInstruction::mma);
}

TEST_F(MmaExecutorTest, FingerprintOfTheDeviceIsReproducibleAndReported) {
  fingerprint_is_reproducible_and_reported(MmaInstruction::mma);
}

// The automatic choice is wgmma exactly where the device and the build have it.
TEST_F(MmaExecutorTest, AutomaticChoosesWgmmaOnHopperOnly) {
  const auto x = make_mma_executor(numeric::formats::fp16, MmaAccumulator::fp32);
  const bool hopper = device().compute_major == 9 && device().compute_minor == 0;
  EXPECT_EQ(x->description().find("wgmma") != std::string::npos, hopper) << x->description();
}

// wgmma on compute capability 9.0; elsewhere asking for it is refused with the reason.
TEST_F(MmaExecutorTest, WgmmaOperandsReachTheirProducts) {
  if (device().compute_major * 10 + device().compute_minor != 90) {
    try {
      (void)make_mma_executor(numeric::formats::fp16, MmaAccumulator::fp32, MmaInstruction::wgmma);
      ADD_FAILURE() << "wgmma was not refused off compute capability 9.0";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("compute capability 9.0 only"), std::string::npos)
          << e.what();
    }
    return;
  }
  operands_reach_their_products(MmaInstruction::wgmma);
}

TEST_F(MmaExecutorTest, WgmmaFingerprintOfTheDeviceIsReproducibleAndReported) {
  fingerprint_is_reproducible_and_reported(MmaInstruction::wgmma);
}

}  // namespace
}  // namespace ampbench::kernels
