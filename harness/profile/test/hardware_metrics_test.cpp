// Summing the range profiler's decoded ranges by path and the shares formed from the sums, on
// hand-made counter values whose results are worked out in the comments.
#include "harness/profile/hardware_metrics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace ampbench::profile {
namespace {

// values: tensor instructions, tensor cycles active, tensor pipe (% of peak), DRAM bytes, GPU time
// (ns), DRAM throughput (% of peak).
RangeCounters counters(std::string path, double tensor, double active, double tensor_pct,
                       double bytes, double ns, double dram_pct) {
  return {std::move(path), {tensor, active, tensor_pct, bytes, ns, dram_pct}};
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(HardwareMetrics, RangesOfOnePathAreSummedInFirstSeenOrder) {
  const std::vector<RangeCounters> decoded = {
      counters("step", 300, 60, 6, 4000, 2000, 10),
      counters("step/forward", 100, 20, 5, 1000, 800, 5),
      counters("step/forward/linear", 60, 12, 40, 500, 200, 50),
      counters("step/forward/linear", 40, 8, 0, 500, 600, 10),
      counters("step/backward", 200, 40, 7, 3000, 1200, 25),
  };
  const std::vector<RangeMetrics> summed = sum_by_path(decoded);
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
  const std::vector<RangeMetrics> summed = sum_by_path({
      counters("step/update", 0, 0, kNaN, 0, 100, kNaN),
      counters("step/update", 0, 0, 20, 64, 300, 30),
  });
  ASSERT_EQ(summed.size(), 1u);
  EXPECT_EQ(summed[0].gpu_time_ns, 400);
  EXPECT_DOUBLE_EQ(*summed[0].tensor_active_share(), 0.2);
  EXPECT_DOUBLE_EQ(*summed[0].dram_peak_share(), 0.3);
  const std::vector<RangeMetrics> none = sum_by_path({counters("step", 0, 0, kNaN, 0, 0, kNaN)});
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
    sum_by_path({counters("step/forward", 1, 1, 1, kNaN, 1, 1)});
    FAIL() << "a NaN counter was summed";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("step/forward"), std::string::npos) << what;
    EXPECT_NE(what.find("dram__bytes.sum"), std::string::npos) << what;
  }
  EXPECT_THROW(sum_by_path({counters("step", -1, 0, 0, 0, 0, 0)}), std::invalid_argument);
  EXPECT_THROW(sum_by_path({counters("step", 0, 0, -5, 0, 0, 0)}), std::invalid_argument);
  EXPECT_THROW(sum_by_path({counters("", 0, 0, 0, 0, 0, 0)}), std::invalid_argument);
}

TEST(HardwareMetrics, TheRecordNamesTheMetricsAndCarriesEverySum) {
  HardwareMetrics m;
  m.chip = "GH100";
  m.passes = 3;
  m.dropped_ranges = 1;
  m.ranges = sum_by_path({counters("step", 300, 60, 6, 4000, 2000, 10)});
  const nlohmann::json j = to_json(m);
  EXPECT_EQ(j["chip"], "GH100");
  EXPECT_EQ(j["passes"], 3);
  EXPECT_EQ(j["dropped_ranges"], 1);
  ASSERT_EQ(j["metrics"].size(), kHardwareMetricCount);
  EXPECT_EQ(j["metrics"][0], "sm__inst_executed_pipe_tensor.sum");
  const nlohmann::json& r = j["ranges"][0];
  EXPECT_EQ(r["path"], "step");
  EXPECT_EQ(r["occurrences"], 1);
  EXPECT_EQ(r["tensor_instructions"], 300.0);
  EXPECT_EQ(r["tensor_cycles_active"], 60.0);
  EXPECT_EQ(r["dram_bytes"], 4000.0);
  EXPECT_EQ(r["gpu_time_ns"], 2000.0);
  EXPECT_DOUBLE_EQ(r["tensor_active_share"].get<double>(), 0.06);
  EXPECT_DOUBLE_EQ(r["dram_bytes_per_second"].get<double>(), 4000 / 2000e-9);
  EXPECT_DOUBLE_EQ(r["dram_peak_share"].get<double>(), 0.1);
}

}  // namespace
}  // namespace ampbench::profile
