// The range profiler on a device: known kernels inside nested ranges on a stream of their own, each
// range decoded with its path, the DRAM traffic of a 1 GiB fill and scales counted where it ran,
// ranges deeper than the nesting levels left out, two collections in one process, and a workload
// that changes between passes refused. Where the driver keeps hardware counters from this user or
// the device cannot count, the tests skip with CUPTI's reason (a profile reports it as its "why").
#include "kernels/range_profiler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/cuda_stream.hpp"
#include "kernels/device_buffer.hpp"
#include "kernels/test/gpu_test.hpp"
#include "kernels/test/trace_probe_kernels.hpp"

namespace ampbench::kernels {
namespace {

using RangeProfilerTest = test::GpuTest;

const profile::RangeMetrics* find(const profile::HardwareMetrics& m, const std::string& path) {
  const auto it = std::find_if(m.ranges.begin(), m.ranges.end(),
                               [&](const profile::RangeMetrics& r) { return r.path == path; });
  return it == m.ranges.end() ? nullptr : &*it;
}

// Runs collect_range_metrics, or skips with CUPTI's reason where the device or the driver keeps
// counters from this process.
#define AMPBENCH_COLLECT_OR_SKIP(result, ...)                                \
  try {                                                                      \
    result = collect_range_metrics(__VA_ARGS__);                             \
  } catch (const RangeProfilerError& e) {                                    \
    const std::string why = e.what();                                        \
    if (why.find("INSUFFICIENT_PRIVILEGES") != std::string::npos ||          \
        why.find("does not support range profiling") != std::string::npos) { \
      GTEST_SKIP() << why;                                                   \
    }                                                                        \
    FAIL() << why;                                                           \
  }

// The fill and the scale run on a non-blocking stream and nothing waits for them before their
// ranges pop: the hooks' waits must still put each kernel's traffic in its range. 1 GiB is 20
// times an H100's or H200's L2, so the traffic reaches DRAM.
TEST_F(RangeProfilerTest, NestedRangesAreDecodedWithTheirPathsAndTraffic) {
  constexpr std::size_t kFloats = std::size_t{256} << 20;  // 1 GiB
  DeviceBuffer<float> data(kFloats);
  const CudaStream stream;
  RangeProfilerOptions options;
  options.nesting_levels = 2;
  profile::HardwareMetrics m;
  const auto workload = [&](const profile::RangeHooks& hooks) {
    hooks.push("step");
    hooks.push("fill");
    test::launch_probe_fill(data.data(), kFloats, 1.0F, stream.get());
    hooks.pop();
    hooks.push("scale");
    hooks.push("too deep");  // level 3: not pushed to CUPTI
    test::launch_probe_scale(data.data(), kFloats, 2.0F, stream.get());
    hooks.pop();
    hooks.pop();
    hooks.push("scale");  // the same path again
    test::launch_probe_scale(data.data(), kFloats, 0.5F, stream.get());
    hooks.pop();
    hooks.pop();
  };
  AMPBENCH_COLLECT_OR_SKIP(m, workload, options);
  EXPECT_FALSE(m.chip.empty());
  EXPECT_GE(m.passes, 1u);
  std::cout << "range profiler on " << m.chip << ": " << m.passes << " passes for "
            << options.nesting_levels << " nesting levels\n";
  EXPECT_EQ(m.dropped_ranges, 0u);
  const profile::RangeMetrics* step = find(m, "step");
  const profile::RangeMetrics* fill = find(m, "step/fill");
  const profile::RangeMetrics* scale = find(m, "step/scale");
  ASSERT_TRUE(step && fill && scale) << "decoded " << m.ranges.size() << " ranges";
  EXPECT_EQ(find(m, "step/scale/too deep"), nullptr);
  EXPECT_EQ(m.ranges.size(), 3u);
  std::cout << "step/scale pushed twice: decoded " << scale->occurrences << " time(s)\n";
  const double bytes = static_cast<double>(kFloats * sizeof(float));
  // The fill writes the buffer once; each scale reads and writes it.
  EXPECT_GE(fill->dram_bytes, 0.9 * bytes);
  EXPECT_LE(fill->dram_bytes, 1.5 * bytes);
  EXPECT_GE(scale->dram_bytes, 2 * 1.8 * bytes);
  EXPECT_GE(step->dram_bytes, fill->dram_bytes);
  EXPECT_GT(step->gpu_time_ns, 0);
  EXPECT_EQ(step->tensor_instructions, 0) << "no Tensor Core work was launched";
  ASSERT_TRUE(fill->dram_peak_share());
  EXPECT_GT(*fill->dram_peak_share(), 0.1) << "a 1 GiB fill is bandwidth-bound";
}

// A second collection in the same process, after the first has torn everything down.
TEST_F(RangeProfilerTest, CollectsTwiceInOneProcess) {
  DeviceBuffer<float> data(1 << 20);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    profile::HardwareMetrics m;
    const auto workload = [&](const profile::RangeHooks& hooks) {
      hooks.push("fill");
      test::launch_probe_fill(data.data(), data.size(), 1.0F, nullptr);
      hooks.pop();
    };
    AMPBENCH_COLLECT_OR_SKIP(m, workload);
    ASSERT_EQ(m.ranges.size(), 1u);
    EXPECT_EQ(m.ranges[0].path, "fill");
  }
}

// A workload that pushes other ranges in a later pass is refused: CUPTI adds the passes up per
// range. (On a device whose schedule needs one pass there is no later pass to differ.)
TEST_F(RangeProfilerTest, AWorkloadThatChangesBetweenPassesIsRefusedOrNeedsOnePass) {
  int calls = 0;
  profile::HardwareMetrics m;
  const auto workload = [&](const profile::RangeHooks& hooks) {
    hooks.push(calls++ == 0 ? "first" : "other");
    hooks.pop();
  };
  RangeProfilerOptions options;
  options.nesting_levels = 1;
  try {
    m = collect_range_metrics(workload, options);
    EXPECT_EQ(m.passes, 1u) << "several passes, yet the change went unnoticed";
  } catch (const RangeProfilerError& e) {
    const std::string why = e.what();
    if (why.find("INSUFFICIENT_PRIVILEGES") != std::string::npos ||
        why.find("does not support range profiling") != std::string::npos) {
      GTEST_SKIP() << why;
    }
    EXPECT_NE(why.find("pushed other ranges than pass 1"), std::string::npos) << why;
  }
}

}  // namespace
}  // namespace ampbench::kernels
