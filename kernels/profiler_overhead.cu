#include <cuda_runtime_api.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "harness/profile/host_timer.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/cuda_stream.hpp"
#include "kernels/cupti_collector.hpp"
#include "kernels/profiler_overhead.hpp"

namespace ampbench::kernels {

// Does nothing: its launches measure the cost of launching, and of tracing a launch.
__global__ void empty_launch_probe() {}

namespace {

// CUPTI instruments lazily: the first launches after enabling it pay for that, not for tracing.
constexpr std::uint32_t kWarmupLaunches = 100;

// Host nanoseconds from the first launch to the stream's completion: launch-bound loops fill the
// launch queue, so this is the rate launches can be sustained at.
std::uint64_t launch_and_wait(cudaStream_t stream, std::uint32_t launches) {
  const std::uint64_t start = profile::steady_clock_ns();
  launch_empty_kernels_and_wait(stream, launches);
  return profile::steady_clock_ns() - start;
}

LaunchRate median_rate(cudaStream_t stream, std::uint32_t launches, std::uint32_t repetitions) {
  std::vector<std::uint64_t> times;
  times.reserve(repetitions);
  for (std::uint32_t r = 0; r < repetitions; ++r)
    times.push_back(launch_and_wait(stream, launches));
  std::sort(times.begin(), times.end());
  const auto median_ns = static_cast<double>(times[(times.size() - 1) / 2]);  // the lower median
  const double ns_per_launch = median_ns / launches;
  return {.ns_per_launch = ns_per_launch, .launches_per_second = 1e9 / ns_per_launch};
}

std::optional<TracedLaunchRate> traced_rate(cudaStream_t stream, std::uint32_t launches,
                                            std::uint32_t repetitions, bool kernels_only,
                                            const LaunchRate& untraced, std::string* why_not) {
  CollectorOptions options;
  options.kernels_only = kernels_only;
  std::optional<CuptiCollector> collector = CuptiCollector::start(options, why_not);
  if (!collector) return std::nullopt;
  (void)launch_and_wait(stream, kWarmupLaunches);
  const LaunchRate rate = median_rate(stream, launches, repetitions);
  const CollectedTrace collected = collector->stop();
  return TracedLaunchRate{
      .rate = rate,
      .overhead_ratio = rate.ns_per_launch / untraced.ns_per_launch,
      .kernels_expected = kWarmupLaunches + std::uint64_t{launches} * repetitions,
      .kernels_recorded = collected.trace.kernels.size(),
      .dropped_records = profile::total_dropped_records(collected.trace)};
}

}  // namespace

void launch_empty_kernels(cudaStream_t stream, std::uint32_t launches) {
  for (std::uint32_t i = 0; i < launches; ++i) empty_launch_probe<<<1, 1, 0, stream>>>();
  AMPBENCH_CUDA_CHECK(cudaGetLastError());  // a failed launch leaves its error here
}

void launch_empty_kernels_and_wait(cudaStream_t stream, std::uint32_t launches) {
  launch_empty_kernels(stream, launches);
  AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
}

ProfilerOverhead measure_profiler_overhead(std::uint32_t launches, std::uint32_t repetitions) {
  if (launches == 0 || repetitions == 0) {
    throw std::invalid_argument("measure_profiler_overhead: launches and repetitions must be > 0");
  }
  ProfilerOverhead result;
  result.launches = launches;
  result.repetitions = repetitions;
  const CudaStream stream;
  (void)launch_and_wait(stream.get(), kWarmupLaunches);  // module load, first-launch costs
  result.untraced = median_rate(stream.get(), launches, repetitions);
  result.kernels_traced = traced_rate(stream.get(), launches, repetitions, true, result.untraced,
                                      &result.why_not_traced);
  if (result.kernels_traced) {
    result.all_traced = traced_rate(stream.get(), launches, repetitions, false, result.untraced,
                                    &result.why_not_traced);
  }
  return result;
}

}  // namespace ampbench::kernels
