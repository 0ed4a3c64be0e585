// Cutting a trace at the start of the work it should describe: a warm step's records dropped with
// their launches, the timed step's kept with theirs, however the device's execution straddles the
// cut.
#include "harness/profile/events.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace ampbench::profile {
namespace {

ApiCallEvent launch_call(std::uint32_t correlation, std::uint64_t start, std::uint64_t end) {
  ApiCallEvent a;
  a.name = "cudaLaunchKernel";
  a.correlation_id = correlation;
  a.start_ns = start;
  a.end_ns = end;
  return a;
}

KernelEvent kernel_run(const char* name, std::uint32_t correlation, std::uint64_t start,
                       std::uint64_t end) {
  KernelEvent k;
  k.name = name;
  k.correlation_id = correlation;
  k.start_ns = start;
  k.end_ns = end;
  return k;
}

//   cut at 100
//   host:   launch 1 [10, 20)          launch 2 [110, 120)
//   device:        warm_tail [95, 130) timed [125, 140)   orphan [105, 108) (no launch record)
//                  early_orphan [50, 60)
//   copy 3 launched at [90, 95), run [101, 102): the warm step's
TEST(RecordsFrom, DeviceWorkGoesWithItsLaunch) {
  Trace t;
  t.metadata.host_name = "host";
  t.api_calls = {launch_call(1, 10, 20), launch_call(2, 110, 120), launch_call(3, 90, 95)};
  t.kernels = {kernel_run("warm_tail", 1, 95, 130), kernel_run("timed", 2, 125, 140),
               kernel_run("orphan", 7, 105, 108), kernel_run("early_orphan", 8, 50, 60)};
  MemcpyEvent copy;
  copy.correlation_id = 3;
  copy.start_ns = 101;
  copy.end_ns = 102;
  t.memcpys = {copy};
  RangeEvent warm, timed;
  warm.name = "step";
  warm.start_ns = 5;
  warm.end_ns = 99;
  timed.name = "step";
  timed.start_ns = 100;
  timed.end_ns = 150;
  t.ranges = {warm, timed};
  t.external_correlations = {{3, 11, 1}, {3, 12, 2}};
  t.dropped_records = {{0, 0, 4}};
  SynchronizationEvent before, after;
  before.start_ns = 40;
  after.start_ns = 130;
  t.synchronizations = {before, after};

  const Trace kept = records_from(t, 100);
  ASSERT_EQ(kept.api_calls.size(), 1u);
  EXPECT_EQ(kept.api_calls[0].correlation_id, 2u);
  ASSERT_EQ(kept.kernels.size(), 2u);
  EXPECT_EQ(kept.kernels[0].name, "timed");
  EXPECT_EQ(kept.kernels[1].name, "orphan");
  EXPECT_TRUE(kept.memcpys.empty()) << "launched before the cut";
  ASSERT_EQ(kept.ranges.size(), 1u);
  EXPECT_EQ(kept.ranges[0].start_ns, 100u) << "a range starting at the cut is kept";
  ASSERT_EQ(kept.external_correlations.size(), 1u);
  EXPECT_EQ(kept.external_correlations[0].external_id, 12u);
  ASSERT_EQ(kept.synchronizations.size(), 1u);
  EXPECT_EQ(kept.synchronizations[0].start_ns, 130u);
  EXPECT_EQ(total_dropped_records(kept), 4u) << "CUPTI's count covers the whole collection";
  EXPECT_EQ(kept.metadata.host_name, "host");
}

TEST(RecordsFrom, ACutBeforeEverythingKeepsEverything) {
  Trace t;
  t.api_calls = {launch_call(1, 10, 20)};
  t.kernels = {kernel_run("k", 1, 25, 30)};
  const Trace kept = records_from(t, 0);
  EXPECT_EQ(kept.api_calls.size(), 1u);
  EXPECT_EQ(kept.kernels.size(), 1u);
}

}  // namespace
}  // namespace ampbench::profile
