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

// Ampere (A100), Hopper (H100, H200), Ada (L40, RTX 4090) and Blackwell (B200): the metric set
// chosen from what each chip's profiler host library lists, and its schedule. Hopper alone has
// counters of warpgroup MMA (wgmma, counted once per warp) and a cycles counter that names the
// warpgroup kinds; the others count every Tensor Core instruction in the pipe's own counters.
TEST(RangeProfilerConfig, EachTensorCoreGenerationGetsItsOwnMetrics) {
  for (const char* chip : {"GA100", "GH100", "AD102", "GB100"}) {
    SCOPED_TRACE(chip);
    const profile::HardwareMetricSet set = hardware_metric_set(chip);
    const bool hopper = std::string_view(chip) == "GH100";
    EXPECT_EQ(set.name(profile::Counted::tensor_instructions), "sm__inst_executed_pipe_tensor.sum");
    EXPECT_EQ(set.name(profile::Counted::warpgroup_instructions),
              hopper ? "sm__inst_executed_pipe_tensor_op_gmma.sum" : "");
    EXPECT_EQ(set.name(profile::Counted::tensor_cycles_active),
              hopper
                  ? "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.sum"
                  : "sm__pipe_tensor_cycles_active.sum");
    const std::vector<std::string> requested = set.requested();
    const std::vector<std::string_view> names(requested.begin(), requested.end());
    const ConfigImage config = range_profiler_config(chip, names);
    EXPECT_FALSE(config.image.empty());
    // Hopper's warpgroup counters do not fit one pass beside the pipe's instruction counter
    // (CUPTI's schedule: each needs a pass of its own); every pass is one more counted step per
    // level.
    EXPECT_EQ(config.passes, hopper ? 2u : 1u) << "passes of the schedule";
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
    range_profiler_config("XX999", std::vector<std::string_view>{"dram__bytes.sum"});
    FAIL() << "an unknown chip was initialised";
  } catch (const RangeProfilerError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cuptiProfilerHostInitialize"), std::string::npos) << what;
    EXPECT_NE(what.find("XX999"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace ampbench::kernels
