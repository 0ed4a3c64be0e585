// What the CUPTI collector costs a program: the rate at which one host thread launches empty
// kernels (and the device runs them) without tracing, with kernels traced, and with every kind the
// collector records. The ratio to the untraced time is the profiler's own overhead per launch,
// the cost that launch-bound steps (small models, AMP's extra cast kernels) see most.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string>

namespace ampbench::kernels {

struct LaunchRate {
  double ns_per_launch = 0;  // median over repetitions of (launch loop + synchronize) / launches
  double launches_per_second = 0;
};

struct TracedLaunchRate {
  LaunchRate rate;
  double overhead_ratio = 0;           // ns per launch traced / untraced
  std::uint64_t kernels_expected = 0;  // launches the collector saw, warm-up included
  std::uint64_t kernels_recorded = 0;  // kernel events in its trace
  std::uint64_t dropped_records = 0;
};

struct ProfilerOverhead {
  std::uint32_t launches = 0;     // per repetition
  std::uint32_t repetitions = 0;  // per configuration
  LaunchRate untraced;
  std::optional<TracedLaunchRate> kernels_traced;  // CONCURRENT_KERNEL only
  std::optional<TracedLaunchRate> all_traced;      // every kind the collector enables
  std::string why_not_traced;  // why the traced rates are absent ("CUPTI unavailable: ...")
};

// Launches an empty kernel (<<<1, 1>>>) `launches` times on `stream`, and returns; throws
// CudaError when a launch fails.
void launch_empty_kernels(cudaStream_t stream, std::uint32_t launches);
// The same, then waits for the stream. Throws CudaError when a launch or the wait fails.
void launch_empty_kernels_and_wait(cudaStream_t stream, std::uint32_t launches);

// Runs `repetitions` loops of `launches` empty-kernel launches on one stream in each configuration,
// after a warm-up. Needs a device: CUDA failures throw CudaError; a collector that cannot start
// leaves the traced rates absent.
ProfilerOverhead measure_profiler_overhead(std::uint32_t launches = 10000,
                                           std::uint32_t repetitions = 5);

}  // namespace ampbench::kernels
