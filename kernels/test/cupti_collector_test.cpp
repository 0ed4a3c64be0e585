// The CUPTI collector on a device: a trace of known launches (memsets, a copy, named kernels on
// two streams, inside NVTX ranges from a PhaseRecorder) checked record by record, one collector
// at a time, and the profiler's own overhead. Without a device these skip, except the test that
// the collector says why it cannot start.
#include "kernels/cupti_collector.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/profile/attribution.hpp"
#include "harness/profile/host_timer.hpp"
#include "kernels/cuda_stream.hpp"
#include "kernels/device.hpp"
#include "kernels/device_buffer.hpp"
#include "kernels/nvtx.hpp"
#include "kernels/profiler_overhead.hpp"
#include "kernels/test/gpu_test.hpp"
#include "kernels/test/trace_probe_kernels.hpp"

namespace ampbench::kernels {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(CuptiCollector, SaysWhyItCannotStart) {
  const DeviceStatus device = probe_device();
  std::string why_not;
  std::optional<CuptiCollector> collector = CuptiCollector::start({}, &why_not);
  if (device.available) {
    ASSERT_TRUE(collector.has_value()) << why_not;
    EXPECT_TRUE(why_not.empty());
    const CollectedTrace collected = collector->stop();
    EXPECT_FALSE(collector->running());
  } else {
    EXPECT_FALSE(collector.has_value());
    EXPECT_THAT(why_not, StartsWith("CUPTI unavailable: no CUDA device: "));
    std::cout << why_not << '\n';
  }
}

TEST(CuptiCollector, RefusesBuffersTooSmallForCupti) {
  CollectorOptions options;
  options.buffer_bytes = 1024;
  EXPECT_THROW((void)CuptiCollector::start(options, nullptr), std::invalid_argument);
}

// The hooks push and pop NVTX ranges around the phases, which are recorded as without them.
TEST(NvtxRangeHooks, PhasesAreRecordedAsWithoutHooks) {
  const profile::RangeHooks hooks = nvtx_range_hooks();
  ASSERT_NE(hooks.push, nullptr);
  ASSERT_NE(hooks.pop, nullptr);
  profile::PhaseRecorder recorder(hooks);
  {
    profile::ScopedPhase outer(recorder, "outer");
    profile::ScopedPhase inner(recorder, "inner");
  }
  const std::vector<profile::RangeEvent> phases = recorder.phases();
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[0].name, "inner");
  EXPECT_EQ(phases[0].depth, 1u);
  EXPECT_EQ(phases[1].name, "outer");
}

using CuptiCollectorTest = test::GpuTest;

TEST_F(CuptiCollectorTest, OneCollectorAtATime) {
  std::string why_not;
  std::optional<CuptiCollector> first = CuptiCollector::start({}, &why_not);
  ASSERT_TRUE(first.has_value()) << why_not;
  std::optional<CuptiCollector> second = CuptiCollector::start({}, &why_not);
  EXPECT_FALSE(second.has_value());
  EXPECT_THAT(why_not, HasSubstr("another CuptiCollector is running"));
  // A moved-from collector no longer owns the session; the moved-to one stops it.
  CuptiCollector moved = std::move(*first);
  EXPECT_FALSE(first->running());
  EXPECT_TRUE(moved.running());
  (void)moved.stop();
  why_not.clear();
  std::optional<CuptiCollector> third = CuptiCollector::start({}, &why_not);
  ASSERT_TRUE(third.has_value()) << why_not;
  (void)third->stop();
}

const profile::RangeEvent* find_range(const std::vector<profile::RangeEvent>& ranges,
                                      const std::string& name) {
  const auto it = std::find_if(ranges.begin(), ranges.end(),
                               [&](const profile::RangeEvent& r) { return r.name == name; });
  return it != ranges.end() ? &*it : nullptr;
}

const profile::RangeStats* find_stats(const profile::Attribution& a, const std::string& name) {
  const auto it = std::find_if(a.ranges.begin(), a.ranges.end(),
                               [&](const profile::RangeStats& r) { return r.name == name; });
  return it != a.ranges.end() ? &*it : nullptr;
}

TEST_F(CuptiCollectorTest, RecordsKnownLaunchesInRangesOnTheHostClock) {
  constexpr std::size_t n = std::size_t{1} << 20;
  constexpr std::uint64_t bytes = n * sizeof(float);
  DeviceBuffer<float> a(n);
  DeviceBuffer<float> b(n);
  std::vector<float> host(n);
  const CudaStream s1;
  const CudaStream s2;

  const std::uint64_t before = profile::steady_clock_ns();
  std::string why_not;
  std::optional<CuptiCollector> collector = CuptiCollector::start({}, &why_not);
  ASSERT_TRUE(collector.has_value()) << why_not;
  profile::PhaseRecorder recorder(nvtx_range_hooks());
  {
    profile::ScopedPhase step(recorder, "probe step");
    {
      profile::ScopedPhase fills(recorder, "fills");
      AMPBENCH_CUDA_CHECK(cudaMemsetAsync(a.data(), 0, bytes, s1.get()));
      for (int i = 1; i <= 3; ++i) {
        test::launch_probe_fill(a.data(), n, static_cast<float>(i), s1.get());
      }
    }
    {
      profile::ScopedPhase scales(recorder, "scales");
      AMPBENCH_CUDA_CHECK(cudaMemsetAsync(b.data(), 0, bytes, s2.get()));
      for (int i = 0; i < 2; ++i) test::launch_probe_scale(b.data(), n, 2.0f, s2.get());
    }
    AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(s1.get()));
    AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(s2.get()));
    a.copy_to(host, nullptr);  // a DtoH copy
  }
  const CollectedTrace collected = collector->stop();
  const std::uint64_t after = profile::steady_clock_ns();
  const profile::Trace& trace = collected.trace;
  for (const std::string& p : collected.problems) ADD_FAILURE() << "problem: " << p;
  EXPECT_EQ(host[0], 3.0f);
  EXPECT_EQ(host[n - 1], 3.0f);

  // Kernels: names, streams, one launch record each.
  ASSERT_EQ(trace.kernels.size(), 5u);
  std::map<std::string, std::vector<const profile::KernelEvent*>> by_kind;
  for (const profile::KernelEvent& k : trace.kernels) {
    const std::string kind = k.name.find("probe_fill") != std::string::npos    ? "fill"
                             : k.name.find("probe_scale") != std::string::npos ? "scale"
                                                                               : k.name;
    by_kind[kind].push_back(&k);
    EXPECT_EQ(k.block.x, 256u);
    EXPECT_EQ(k.grid.x, 64u);
  }
  ASSERT_EQ(by_kind["fill"].size(), 3u);
  ASSERT_EQ(by_kind["scale"].size(), 2u);
  EXPECT_THAT(by_kind["fill"][0]->name,
              StartsWith("ampbench::kernels::test::probe_fill(float*, unsigned long, float)"));
  for (const auto* k : by_kind["fill"]) EXPECT_EQ(k->stream, by_kind["fill"][0]->stream);
  for (const auto* k : by_kind["scale"]) EXPECT_EQ(k->stream, by_kind["scale"][0]->stream);
  EXPECT_NE(by_kind["fill"][0]->stream, by_kind["scale"][0]->stream);
  for (const profile::KernelEvent& k : trace.kernels) {
    const auto launch = std::find_if(trace.api_calls.begin(), trace.api_calls.end(), [&](auto& c) {
      return c.kind == profile::ApiKind::runtime && c.correlation_id == k.correlation_id;
    });
    ASSERT_NE(launch, trace.api_calls.end()) << k.name << " has no runtime launch record";
    EXPECT_THAT(launch->name, StartsWith("cudaLaunchKernel"));
    EXPECT_LE(launch->start_ns, k.start_ns);  // a kernel cannot start before its launch call
    EXPECT_EQ(launch->thread_id, profile::current_thread_id());
  }
  // Copies and memsets.
  ASSERT_EQ(trace.memsets.size(), 2u);
  for (const profile::MemsetEvent& m : trace.memsets) {
    EXPECT_EQ(m.bytes, bytes);
    EXPECT_EQ(m.value, 0u);
  }
  // A copy to pageable memory is staged; CUPTI may report it in more than one record.
  ASSERT_FALSE(trace.memcpys.empty());
  std::uint64_t copied = 0;
  for (const profile::MemcpyEvent& m : trace.memcpys) {
    EXPECT_EQ(m.kind, profile::MemcpyKind::device_to_host);
    copied += m.bytes;
  }
  EXPECT_EQ(copied, bytes);

  // NVTX ranges: one per phase, each enclosing its host phase on the same thread and clock (the
  // push comes before the phase's start reading, the pop after its end reading).
  for (const profile::RangeEvent& phase : recorder.phases()) {
    SCOPED_TRACE(phase.name);
    const profile::RangeEvent* range = find_range(trace.ranges, phase.name);
    ASSERT_NE(range, nullptr) << "no NVTX range recorded";
    EXPECT_EQ(range->kind, profile::RangeKind::push_pop);
    EXPECT_EQ(range->thread_id, phase.thread_id);
    EXPECT_EQ(range->depth, phase.depth);
    EXPECT_LE(range->start_ns, phase.start_ns);
    EXPECT_GE(range->end_ns, phase.end_ns);
  }
  EXPECT_EQ(collected.counts.unmatched_marker_ends, 0u);
  EXPECT_EQ(collected.counts.unclosed_markers, 0u);

  // Attribution places every kernel in its range.
  const profile::Attribution attribution = profile::attribute(trace);
  EXPECT_EQ(attribution.kernels_without_api_record, 0u);
  EXPECT_EQ(attribution.outside_any_range.self.kernel_count, 0u);
  const profile::RangeStats* fills = find_stats(attribution, "fills");
  const profile::RangeStats* scales = find_stats(attribution, "scales");
  const profile::RangeStats* step = find_stats(attribution, "probe step");
  ASSERT_NE(fills, nullptr);
  ASSERT_NE(scales, nullptr);
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(fills->self.kernel_count, 3u);
  EXPECT_EQ(fills->self.memset_count, 1u);
  EXPECT_EQ(scales->self.kernel_count, 2u);
  EXPECT_EQ(scales->self.memset_count, 1u);
  EXPECT_EQ(step->self.memcpy_bytes, bytes);
  EXPECT_EQ(step->inclusive.kernel_count, 5u);

  // Timestamps: on the host clock, inside [before, after], ordered on each stream.
  const auto in_window = [&](std::uint64_t start, std::uint64_t end, const std::string& what) {
    EXPECT_LE(before, start) << what;
    EXPECT_LE(start, end) << what;
    EXPECT_LE(end, after) << what;
  };
  for (const auto& k : trace.kernels) in_window(k.start_ns, k.end_ns, k.name);
  for (const auto& m : trace.memsets) in_window(m.start_ns, m.end_ns, "memset");
  for (const auto& m : trace.memcpys) in_window(m.start_ns, m.end_ns, "memcpy");
  for (const auto& c : trace.api_calls) in_window(c.start_ns, c.end_ns, c.name);
  for (const auto& r : trace.ranges) in_window(r.start_ns, r.end_ns, r.name);
  for (auto& [kind, kernels] : by_kind) {
    std::sort(kernels.begin(), kernels.end(),
              [](auto* x, auto* y) { return x->correlation_id < y->correlation_id; });
    for (std::size_t i = 1; i < kernels.size(); ++i) {
      EXPECT_LE(kernels[i - 1]->end_ns, kernels[i]->start_ns) << kind << " kernels overlap";
    }
  }

  // Nothing dropped, and the count was taken.
  ASSERT_FALSE(trace.dropped_records.empty());
  EXPECT_EQ(profile::total_dropped_records(trace), 0u);
  EXPECT_EQ(collected.clock_offset_ns, 0);  // CUPTI took the host clock
  ASSERT_TRUE(trace.metadata.device_names.contains(trace.kernels[0].device));
  EXPECT_FALSE(trace.metadata.device_names.at(trace.kernels[0].device).empty());
  EXPECT_EQ(trace.metadata.process_id, static_cast<std::uint32_t>(::getpid()));
}

using ProfilerOverheadTest = test::GpuTest;

TEST_F(ProfilerOverheadTest, LaunchRatesArePlausible) {
  const ProfilerOverhead o = measure_profiler_overhead(10000, 5);
  std::cout << "empty-kernel launches: untraced " << o.untraced.ns_per_launch << " ns ("
            << o.untraced.launches_per_second << "/s)";
  ASSERT_TRUE(o.kernels_traced.has_value()) << o.why_not_traced;
  ASSERT_TRUE(o.all_traced.has_value()) << o.why_not_traced;
  std::cout << ", kernels traced " << o.kernels_traced->rate.ns_per_launch << " ns (x"
            << o.kernels_traced->overhead_ratio << "), all kinds "
            << o.all_traced->rate.ns_per_launch << " ns (x" << o.all_traced->overhead_ratio
            << ")\n";
  // A launch costs the host at least a few hundred nanoseconds and far less than a millisecond.
  EXPECT_GT(o.untraced.ns_per_launch, 100.0);
  EXPECT_LT(o.untraced.ns_per_launch, 1e6);
  EXPECT_NEAR(o.untraced.launches_per_second * o.untraced.ns_per_launch, 1e9, 1.0);
  for (const TracedLaunchRate* t : {&*o.kernels_traced, &*o.all_traced}) {
    EXPECT_EQ(t->kernels_recorded, t->kernels_expected);
    EXPECT_EQ(t->dropped_records, 0u);
    // Tracing adds work per launch; it cannot make launches several times cheaper.
    EXPECT_GT(t->overhead_ratio, 0.5);
    EXPECT_LT(t->rate.ns_per_launch, 1e6);
  }
}

}  // namespace
}  // namespace ampbench::kernels
