// Summing the range profiler's decoded ranges by path and the shares formed from the sums, on
// hand-made counter values whose results are worked out in the comments.
#include "harness/profile/hardware_metrics.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace ampbench::profile {
namespace {

// values: tensor instructions, tensor cycles active, tensor pipe (% of peak), DRAM bytes, GPU time
// (ns), DRAM throughput (% of peak); warpgroup (wgmma) instructions counted per warp.
RangeCounters counters(std::string path, double tensor, double active, double tensor_pct,
                       double bytes, double ns, double dram_pct, double warpgroup = 0) {
  return {std::move(path), {tensor, warpgroup, active, tensor_pct, bytes, ns, dram_pct}};
}

// The base metrics of an Ampere-like chip (the pipe's counters only) and of a Hopper-like one
// (warpgroup MMA counters too), as the profiler host library lists them.
const std::vector<std::string> kAmpereLike = {"sm__inst_executed_pipe_tensor",
                                              "sm__inst_executed_pipe_tensor_op_hmma",
                                              "sm__pipe_tensor_cycles_active",
                                              "dram__bytes",
                                              "gpu__time_duration",
                                              "dram__throughput"};
std::vector<std::string> hopper_like() {
  std::vector<std::string> m = kAmpereLike;
  m.push_back("sm__inst_executed_pipe_tensor_op_gmma");
  m.push_back("sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active");
  return m;
}
const HardwareMetricSet kAmpereSet = choose_hardware_metrics(kAmpereLike);

const double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(HardwareMetrics, RangesOfOnePathAreSummedInFirstSeenOrder) {
  const std::vector<RangeCounters> decoded = {
      counters("step", 300, 60, 6, 4000, 2000, 10),
      counters("step/forward", 100, 20, 5, 1000, 800, 5),
      counters("step/forward/linear", 60, 12, 40, 500, 200, 50),
      counters("step/forward/linear", 40, 8, 0, 500, 600, 10),
      counters("step/backward", 200, 40, 7, 3000, 1200, 25),
  };
  const std::vector<RangeMetrics> summed = sum_by_path(decoded, kAmpereSet);
  ASSERT_EQ(summed.size(), 4u);
  EXPECT_EQ(summed[0].path, "step");
  EXPECT_EQ(summed[1].path, "step/forward");
  EXPECT_EQ(summed[2].path, "step/forward/linear");
  EXPECT_EQ(summed[3].path, "step/backward");
  const RangeMetrics& linear = summed[2];
  EXPECT_EQ(linear.occurrences, 2u);
  EXPECT_EQ(linear.depth(), 3u);
  EXPECT_EQ(linear.tensor_instructions, 100);
  EXPECT_EQ(linear.tensor_cycles_active, 20);
  EXPECT_EQ(linear.dram_bytes, 1000);
  EXPECT_EQ(linear.gpu_time_ns, 800);
  // (200 x 40% + 600 x 0%) / 800 ns = 10%; 1000 bytes in 800 ns;
  // (200 x 50% + 600 x 10%) / 800 ns = 20%.
  EXPECT_DOUBLE_EQ(*linear.tensor_active_share(), 0.1);
  EXPECT_DOUBLE_EQ(*linear.dram_bytes_per_second(), 1000 / 800e-9);
  EXPECT_DOUBLE_EQ(*linear.dram_peak_share(), 0.2);
  EXPECT_EQ(summed[0].depth(), 1u);
  EXPECT_EQ(summed[0].occurrences, 1u);
}

// A share CUPTI could not form (no work in the range) is left out of the average, with its time.
TEST(HardwareMetrics, AShareWithoutAValueIsLeftOutOfTheAverage) {
  const std::vector<RangeMetrics> summed =
      sum_by_path({counters("step/update", 0, 0, kNaN, 0, 100, kNaN),
                   counters("step/update", 0, 0, 20, 64, 300, 30)},
                  kAmpereSet);
  ASSERT_EQ(summed.size(), 1u);
  EXPECT_EQ(summed[0].gpu_time_ns, 400);
  EXPECT_DOUBLE_EQ(*summed[0].tensor_active_share(), 0.2);
  EXPECT_DOUBLE_EQ(*summed[0].dram_peak_share(), 0.3);
  const std::vector<RangeMetrics> none =
      sum_by_path({counters("step", 0, 0, kNaN, 0, 0, kNaN)}, kAmpereSet);
  EXPECT_FALSE(none[0].tensor_active_share());
  EXPECT_FALSE(none[0].dram_bytes_per_second());
  EXPECT_FALSE(none[0].dram_peak_share());
  HardwareMetrics m;
  m.ranges = none;
  const nlohmann::json j = to_json(m);
  EXPECT_TRUE(j["ranges"][0]["tensor_active_share"].is_null());
  EXPECT_TRUE(j["ranges"][0]["dram_peak_share"].is_null());
}

TEST(HardwareMetrics, DecodingErrorsAreRefusedWithTheRangeAndMetric) {
  try {
    sum_by_path({counters("step/forward", 1, 1, 1, kNaN, 1, 1)}, kAmpereSet);
    FAIL() << "a NaN counter was summed";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("step/forward"), std::string::npos) << what;
    EXPECT_NE(what.find("dram__bytes.sum"), std::string::npos) << what;
  }
  EXPECT_THROW(sum_by_path({counters("step", -1, 0, 0, 0, 0, 0)}, kAmpereSet),
               std::invalid_argument);
  EXPECT_THROW(sum_by_path({counters("step", 0, 0, -5, 0, 0, 0)}, kAmpereSet),
               std::invalid_argument);
  EXPECT_THROW(sum_by_path({counters("", 0, 0, 0, 0, 0, 0)}, kAmpereSet), std::invalid_argument);
}

TEST(HardwareMetrics, TheRecordNamesTheMetricsAndCarriesEverySum) {
  HardwareMetrics m;
  m.chip = "GH100";
  m.passes = 3;
  m.dropped_ranges = 1;
  m.metrics = choose_hardware_metrics(hopper_like());
  m.ranges = sum_by_path({counters("step", 300, 60, 6, 4000, 2000, 10, 48)}, m.metrics);
  const nlohmann::json j = to_json(m);
  EXPECT_EQ(j["chip"], "GH100");
  EXPECT_EQ(j["passes"], 3);
  EXPECT_EQ(j["dropped_ranges"], 1);
  ASSERT_EQ(j["metrics"].size(), kHardwareMetricCount);
  EXPECT_EQ(j["metrics"][0], "sm__inst_executed_pipe_tensor.sum");
  EXPECT_EQ(j["metrics"][1], "sm__inst_executed_pipe_tensor_op_gmma.sum");
  const nlohmann::json& r = j["ranges"][0];
  EXPECT_EQ(r["path"], "step");
  EXPECT_EQ(r["occurrences"], 1);
  EXPECT_EQ(r["tensor_instructions"], 300.0);
  EXPECT_EQ(r["warpgroup_mma_instructions"], 12.0);  // 48 warp counts, four per wgmma
  EXPECT_EQ(r["tensor_cycles_active"], 60.0);
  EXPECT_EQ(r["dram_bytes"], 4000.0);
  EXPECT_EQ(r["gpu_time_ns"], 2000.0);
  EXPECT_DOUBLE_EQ(r["tensor_active_share"].get<double>(), 0.06);
  EXPECT_DOUBLE_EQ(r["dram_bytes_per_second"].get<double>(), 4000 / 2000e-9);
  EXPECT_DOUBLE_EQ(r["dram_peak_share"].get<double>(), 0.1);
}

// Where the chip lists warpgroup MMA counters (Hopper), they are counted and the active cycles come
// from the counter naming every MMA kind; elsewhere the tensor pipe's own counters, and no wgmma.
TEST(HardwareMetrics, TheMetricSetFollowsWhatTheChipLists) {
  EXPECT_EQ(kAmpereSet.name(Counted::tensor_instructions), "sm__inst_executed_pipe_tensor.sum");
  EXPECT_EQ(kAmpereSet.name(Counted::warpgroup_instructions), "");
  EXPECT_EQ(kAmpereSet.name(Counted::tensor_cycles_active), "sm__pipe_tensor_cycles_active.sum");
  EXPECT_EQ(kAmpereSet.name(Counted::tensor_peak_pct),
            "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(kAmpereSet.requested().size(), kHardwareMetricCount - 1);
  const HardwareMetricSet hopper = choose_hardware_metrics(hopper_like());
  EXPECT_EQ(hopper.name(Counted::warpgroup_instructions),
            "sm__inst_executed_pipe_tensor_op_gmma.sum");
  EXPECT_EQ(hopper.name(Counted::tensor_cycles_active),
            "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.sum");
  EXPECT_EQ(hopper.requested().size(), kHardwareMetricCount);
  // A chip without a counter every set needs is refused, the counter named.
  std::vector<std::string> no_dram = kAmpereLike;
  no_dram.erase(std::find(no_dram.begin(), no_dram.end(), "dram__bytes"));
  try {
    choose_hardware_metrics(no_dram);
    FAIL() << "a set without DRAM bytes was chosen";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("dram__bytes"), std::string::npos) << e.what();
  }
}

// wgmma instructions are the per-warp count over four; absent (null) on a chip without them.
TEST(HardwareMetrics, WarpgroupInstructionsAreCountedPerWarpgroupWhereTheChipHasThem) {
  const std::vector<RangeCounters> decoded = {counters("step/forward", 10, 5, 1, 0, 10, 1, 400),
                                              counters("step/forward", 10, 5, 1, 0, 10, 1, 40)};
  const std::vector<RangeMetrics> hopper =
      sum_by_path(decoded, choose_hardware_metrics(hopper_like()));
  ASSERT_TRUE(hopper[0].warpgroup_mma_instructions);
  EXPECT_EQ(*hopper[0].warpgroup_mma_instructions, 110);
  const std::vector<RangeMetrics> ampere = sum_by_path(decoded, kAmpereSet);
  EXPECT_FALSE(ampere[0].warpgroup_mma_instructions);
  HardwareMetrics m;
  m.metrics = kAmpereSet;
  m.ranges = ampere;
  EXPECT_TRUE(to_json(m)["ranges"][0]["warpgroup_mma_instructions"].is_null());
  // The value of a quantity without a metric is not looked at: NaN there is not an error.
  EXPECT_NO_THROW(sum_by_path({counters("step", 1, 1, 1, 1, 1, 1, std::nan(""))}, kAmpereSet));
}

// The H200's transformer step kept the tensor pipe busy 3.16e-5 of its peak: one decimal said
// 0.0%, as if no Tensor Core had run; a 4096^3 bf16 GEMM alone reads 90.11% (ncu).
TEST(HardwareMetrics, SharesBelowATenthOfAPercentKeepTwoSignificantDigits) {
  EXPECT_EQ(share_percent(0.9011), "90.1%");
  EXPECT_EQ(share_percent(0.001), "0.1%");
  EXPECT_EQ(share_percent(0.00099), "0.099%");
  EXPECT_EQ(share_percent(3.16489866739149e-05), "0.0032%");
  EXPECT_EQ(share_percent(0), "0%");
}

}  // namespace
}  // namespace ampbench::profile
