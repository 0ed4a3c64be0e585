// The structured device of a result record: written and read back, derived from the text of a
// record from before it (a GPU's line, the CPU emulation's models from the keys), and a device
// member of the wrong type named in the error.
#include "harness/results/device.hpp"

#include <gtest/gtest.h>

#include "harness/results/compare.hpp"
#include "harness/results/record.hpp"

namespace ampbench::results {
namespace {

nlohmann::json document_with(const nlohmann::json& environment, const nlohmann::json& keys) {
  nlohmann::json records = nlohmann::json::array();
  for (const auto& key : keys) {
    records.push_back({{"key", key}, {"status", "pass"}, {"metrics", nlohmann::json::object()}});
  }
  return {{"schema", "ampbench.result/1"},
          {"suite", "t"},
          {"environment", environment},
          {"records", records}};
}

TEST(Device, WrittenAndReadBack) {
  Device h200;
  h200.kind = "gpu";
  h200.name = "NVIDIA H200";
  h200.compute_capability = "9.0";
  h200.sms = 132;
  h200.memory_bytes = 150'083'584'000;
  h200.sm_clock_mhz = 1980;
  h200.driver = "13.0.0";
  h200.cublas = "13.1.0";
  h200.tf32_override = "unset";
  Environment environment;
  environment.device = h200;
  const Device read = device_of(document_with(to_json(environment), {}), "r.json");
  EXPECT_EQ(to_json(read), to_json(h200));
  EXPECT_FALSE(read.derived);
  EXPECT_FALSE(read.memory_clock_mhz);  // not given: null, unknown
  EXPECT_EQ(label_of(read), "NVIDIA H200 (sm 9.0)");
}

TEST(Device, TheCpuEmulationNamesItsModelsOnce) {
  const Device d = cpu_emulation("Test CPU", {"hopper", "ampere", "hopper"});
  EXPECT_EQ(d.mma, (std::vector<std::string>{"ampere", "hopper"}));
  EXPECT_EQ(label_of(d), "CPU emulation (mma=ampere,hopper) on Test CPU");
  EXPECT_EQ(label_of(cpu_emulation("Test CPU", {})), "CPU emulation on Test CPU");
  EXPECT_EQ(mma_of_keys({"audit/gemm/8x8x8/fp16/normal/seed=1/mma=volta/samples=4",
                         "audit/dot/64/fp16/normal/seed=1/mma=blackwell", "train/mlp/steps=2"}),
            (std::vector<std::string>{"blackwell", "volta"}));
}

// A record written before the structured device (a checked-in fixture): the GPU's line and the
// libraries' line give what they say; the rest is unknown, and the device says it was derived.
TEST(Device, AnOldGpuRecordLoadsWithItsDeviceDerived) {
  const ResultFile file = load_result(AMPBENCH_RESULTS_TEST_DIR "/fixtures/old-record-gpu.json");
  const Device& d = file.device;
  EXPECT_TRUE(d.derived);
  EXPECT_EQ(d.kind, "gpu");
  EXPECT_EQ(d.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.compute_capability, "9.0");
  EXPECT_EQ(d.sms, 132);
  EXPECT_NEAR(static_cast<double>(*d.memory_bytes), 79.1 * (1 << 30), 1.0);
  EXPECT_EQ(d.driver, "12.6.0");
  EXPECT_EQ(d.cuda_runtime, "12.4.0");
  EXPECT_EQ(d.cublas, "12.4.5");
  EXPECT_EQ(d.cudnn, "9.1.0");
  EXPECT_FALSE(d.sm_clock_mhz);
  EXPECT_FALSE(d.tf32_override);  // unknown, not "unset"
  EXPECT_EQ(file.records.size(), 1u);
}

// The checked-in baseline, written since records name their device: the CPU emulation, recorded
// (not derived from the keys, as for the older records of OldCpuRecordsTakeTheirModelsFromTheKeys).
// The checked-in baseline is the CPU emulation, named after the CPU that ran it (whichever
// machine last regenerated it: scripts/update-baseline).
TEST(Device, TheCpuBaselineIsTheCpuEmulation) {
  const std::string path = AMPBENCH_SOURCE_DIR "/reports/baselines/nightly-cpu.json";
  const ResultFile file = load_result(path);
  EXPECT_EQ(file.device.kind, "cpu-emulation");
  const std::string cpu = read_result_json(path)["environment"]["cpu"].get<std::string>();
  EXPECT_FALSE(cpu.empty());
  EXPECT_EQ(file.device.name, cpu);
  EXPECT_FALSE(file.device.derived);
  EXPECT_TRUE(file.device.mma.empty());
}

TEST(Device, OldCpuRecordsTakeTheirModelsFromTheKeys) {
  const nlohmann::json old = document_with(
      {{"gpu", "not probed: this build has no CUDA backend"}, {"cpu", "Test CPU"}},
      {"audit/gemm/8x8x8/fp16/normal/seed=1/mma=hopper", "audit/gemm/8x8x8/fp16/normal/seed=1"});
  const Device d = device_of(old, "old.json");
  EXPECT_EQ(d.kind, "cpu-emulation");
  EXPECT_EQ(d.mma, std::vector<std::string>{"hopper"});
  // A --backend cpu run on a machine with a GPU: its gpu line names the device it did not use.
  nlohmann::json cpu_run = document_with({{"gpu", "NVIDIA H200, compute capability 9.0"}}, {});
  EXPECT_EQ(device_of(cpu_run, "cpu-run.json").kind, "gpu");
  cpu_run["backend"] = "cpu";
  EXPECT_EQ(device_of(cpu_run, "cpu-run.json").kind, "cpu-emulation");
  EXPECT_EQ(device_of(document_with({{"gpu", "mixed"}}, {}), "m.json").kind, "mixed");
  EXPECT_EQ(device_of(document_with({{"device", "mixed"}}, {}), "m.json").kind, "mixed");
  EXPECT_EQ(device_of(nlohmann::json{{"schema", "ampbench.result/1"}}, "x.json").kind, "unknown");
}

TEST(Device, AMemberOfTheWrongTypeIsNamed) {
  const auto message = [](const nlohmann::json& device) {
    try {
      device_of(document_with({{"device", device}}, {}), "bad.json");
    } catch (const ResultError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({{"kind", "tpu"}}),
            "bad.json: not an ampbench.result/1 record: environment.device.kind is not \"gpu\", "
            "\"cpu-emulation\" or \"unknown\"");
  EXPECT_EQ(message({{"kind", "gpu"}, {"sms", -1}}),
            "bad.json: not an ampbench.result/1 record: environment.device.sms is not a count (an "
            "integer >= 0) or null");
  EXPECT_EQ(message({{"kind", "gpu"}, {"driver", 13}}),
            "bad.json: not an ampbench.result/1 record: environment.device.driver is not a string "
            "or null");
  EXPECT_EQ(message({{"kind", "cpu-emulation"}, {"mma", {"hopper", 3}}}),
            "bad.json: not an ampbench.result/1 record: environment.device.mma[1] is not a string");
  EXPECT_EQ(message(42),
            "bad.json: not an ampbench.result/1 record: environment.device is not an object");
}

}  // namespace
}  // namespace ampbench::results
