// The range profiler's host half needs no device: CUPTI's profiler host API knows the counters of
// every chip it supports and schedules metrics into passes offline. So the metrics ampbench
// collects are checked here against the chips users profile on, and so is how many passes (steps
// of the workload per nesting level) they cost.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "harness/profile/hardware_metrics.hpp"
#include "kernels/range_profiler.hpp"

namespace ampbench::kernels {
namespace {

// Ampere (A100), Hopper (H100, H200), Ada (L40, RTX 4090) and Blackwell (B200).
TEST(RangeProfilerConfig, TheHardwareMetricsExistOnEveryTensorCoreGenerationAndTakeOnePass) {
  for (const char* chip : {"GA100", "GH100", "AD102", "GB100"}) {
    SCOPED_TRACE(chip);
    const ConfigImage config = range_profiler_config(chip, profile::kHardwareMetrics);
    EXPECT_FALSE(config.image.empty());
    EXPECT_EQ(config.passes, 1u) << "every counter in one pass of the schedule";
  }
}

TEST(RangeProfilerConfig, AnUnknownMetricIsRefusedByName) {
  const std::vector<std::string_view> metrics{"sm__inst_executed_pipe_tensor.sum",
                                              "sm__no_such_counter.sum"};
  try {
    range_profiler_config("GH100", metrics);
    FAIL() << "an unknown metric was scheduled";
  } catch (const RangeProfilerError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cuptiProfilerHostConfigAddMetrics"), std::string::npos) << what;
    EXPECT_NE(what.find("sm__no_such_counter.sum"), std::string::npos) << what;
  }
}

TEST(RangeProfilerConfig, AnUnknownChipIsRefusedByName) {
  try {
    range_profiler_config("XX999", profile::kHardwareMetrics);
    FAIL() << "an unknown chip was initialised";
  } catch (const RangeProfilerError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cuptiProfilerHostInitialize"), std::string::npos) << what;
    EXPECT_NE(what.find("XX999"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace ampbench::kernels
