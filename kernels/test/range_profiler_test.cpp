// The range profiler on a device: known kernels inside nested ranges, each range decoded with its
// path, the DRAM traffic of a 64 MiB fill and scale counted where it ran, and ranges deeper than
// the nesting levels left out. Where the driver restricts hardware counters to administrators the
// test skips with CUPTI's reason (the profile then reports it as its "why").
#include "kernels/range_profiler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "kernels/cuda_check.hpp"
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

TEST_F(RangeProfilerTest, NestedRangesAreDecodedWithTheirPathsAndTraffic) {
  constexpr std::size_t kFloats = std::size_t{16} << 20;  // 64 MiB: far beyond the L2
  DeviceBuffer<float> data(kFloats);
  RangeProfilerOptions options;
  options.nesting_levels = 2;
  profile::HardwareMetrics m;
  try {
    m = collect_range_metrics(
        [&](const profile::RangeHooks& hooks) {
          hooks.push("step");
          hooks.push("fill");
          test::launch_probe_fill(data.data(), kFloats, 1.0F, nullptr);
          hooks.pop();
          hooks.push("scale");
          hooks.push("too deep");  // level 3: not pushed to CUPTI
          test::launch_probe_scale(data.data(), kFloats, 2.0F, nullptr);
          hooks.pop();
          hooks.pop();
          hooks.pop();
        },
        options);
  } catch (const RangeProfilerError& e) {
    const std::string why = e.what();
    if (why.find("INSUFFICIENT_PRIVILEGES") != std::string::npos) GTEST_SKIP() << why;
    FAIL() << why;
  }
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
  const double bytes = static_cast<double>(kFloats * sizeof(float));
  // The fill writes the buffer once; the scale reads and writes it.
  EXPECT_GE(fill->dram_bytes, 0.9 * bytes);
  EXPECT_GE(scale->dram_bytes, 1.8 * bytes);
  EXPECT_GE(step->dram_bytes, fill->dram_bytes);
  EXPECT_GT(step->gpu_time_ns, 0);
  EXPECT_EQ(step->tensor_instructions, 0) << "no Tensor Core work was launched";
}

}  // namespace
}  // namespace ampbench::kernels
