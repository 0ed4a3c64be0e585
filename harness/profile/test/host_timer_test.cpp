// Host phases: nesting, the clock, the NVTX hook point, several threads.
#include "harness/profile/host_timer.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "harness/profile/attribution.hpp"

namespace ampbench::profile {
namespace {

// A clock that advances 10 ns per reading, so every time below is known exactly.
std::uint64_t g_ticks = 0;
std::uint64_t ticking_clock() {
  return g_ticks += 10;
}

std::vector<std::string> g_hook_calls;
void record_push(const char* name) {
  g_hook_calls.push_back(std::string("push ") + name);
}
void record_pop() {
  g_hook_calls.emplace_back("pop");
}

TEST(HostTimer, NestedPhases) {
  g_ticks = 0;
  PhaseRecorder recorder({}, &ticking_clock);
  {
    ScopedPhase step(recorder, "step");              // starts at 10
    { ScopedPhase forward(recorder, "forward"); }    // 20 to 30
    { ScopedPhase backward(recorder, "backward"); }  // 40 to 50
  }                                                  // ends at 60
  const std::vector<RangeEvent> phases = recorder.phases();
  ASSERT_EQ(phases.size(), 3u);  // in the order they finished
  EXPECT_EQ(phases[0].name, "forward");
  EXPECT_EQ(phases[0].start_ns, 20u);
  EXPECT_EQ(phases[0].end_ns, 30u);
  EXPECT_EQ(phases[0].depth, 1u);
  EXPECT_EQ(phases[1].name, "backward");
  EXPECT_EQ(phases[1].start_ns, 40u);
  EXPECT_EQ(phases[2].name, "step");
  EXPECT_EQ(phases[2].start_ns, 10u);
  EXPECT_EQ(phases[2].end_ns, 60u);
  EXPECT_EQ(phases[2].depth, 0u);
  for (const RangeEvent& p : phases) {
    EXPECT_EQ(p.kind, RangeKind::host_phase);
    EXPECT_EQ(p.thread_id, current_thread_id());
  }

  // The same report as the GPU's, without device fields.
  const Attribution a = attribute(recorder.trace());
  EXPECT_EQ(a.wall_ns, 50u);
  ASSERT_EQ(a.ranges.size(), 3u);
  EXPECT_EQ(a.ranges[2].name, "step");
  EXPECT_EQ(a.ranges[2].wall_ns, 50u);
  EXPECT_FALSE(a.tensor_core_share.has_value());
}

TEST(HostTimer, SteadyClockPhasesNest) {
  PhaseRecorder recorder;
  {
    ScopedPhase outer(recorder, "outer");
    ScopedPhase inner(recorder, "inner");
  }
  const std::vector<RangeEvent> phases = recorder.phases();
  ASSERT_EQ(phases.size(), 2u);
  const RangeEvent& inner = phases[0];
  const RangeEvent& outer = phases[1];
  EXPECT_LE(outer.start_ns, inner.start_ns);
  EXPECT_LE(inner.start_ns, inner.end_ns);
  EXPECT_LE(inner.end_ns, outer.end_ns);
}

TEST(HostTimer, HooksPushAndPopInOrder) {
  g_hook_calls.clear();
  PhaseRecorder recorder({.push = &record_push, .pop = &record_pop});
  {
    ScopedPhase step(recorder, "step");
    ScopedPhase forward(recorder, "forward");
  }
  const std::vector<std::string> expected = {"push step", "push forward", "pop", "pop"};
  EXPECT_EQ(g_hook_calls, expected);
}

TEST(HostTimer, ThreadsKeepTheirOwnDepth) {
  PhaseRecorder recorder;
  std::uint32_t worker_id = 0;
  {
    ScopedPhase main_phase(recorder, "main");
    std::thread worker([&] {
      worker_id = current_thread_id();
      ScopedPhase phase(recorder, "worker");
    });
    worker.join();
  }
  const std::vector<RangeEvent> phases = recorder.phases();
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[0].name, "worker");
  EXPECT_EQ(phases[0].depth, 0u);  // the main thread's open phase is not its parent
  EXPECT_EQ(phases[0].thread_id, worker_id);
  EXPECT_NE(phases[0].thread_id, phases[1].thread_id);
}

}  // namespace
}  // namespace ampbench::profile
