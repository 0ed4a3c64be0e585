// Empty-kernel launches per second (each iteration: 1000 launches on one stream, then a wait):
// untraced, with the CUPTI collector recording kernels only, and with every kind it records. The
// ratios to the untraced rate are the profiler's own cost per launch (docs/profiling.md, "The
// profiler's own cost"). A fourth benchmark launches each kernel inside an NVTX push/pop with no
// collector running: CUPTI is the process's NVTX tool from the first NVTX call on (the collector's
// static injection), so every range of an untraced training step calls into it; its ratio to the
// untraced rate is what an untraced step pays for that (a ratio near 1: nothing). Needs a device:
// without one it says why and exits 77, which CTest reports as skipped.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <iostream>
#include <optional>
#include <string>

#include "harness/bench/ratios.hpp"
#include "harness/profile/events.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/cuda_stream.hpp"
#include "kernels/cupti_collector.hpp"
#include "kernels/device.hpp"
#include "kernels/nvtx.hpp"
#include "kernels/profiler_overhead.hpp"

namespace {

namespace bench = ampbench::bench;
namespace kernels = ampbench::kernels;

constexpr std::uint32_t kLaunches = 1000;
constexpr std::uint32_t kWarmupLaunches = 100;  // CUPTI instruments lazily

void run_launches(benchmark::State& state,
                  const std::optional<kernels::CollectorOptions>& tracing) {
  const kernels::CudaStream stream;
  std::string why_not;
  std::optional<kernels::CuptiCollector> collector =
      tracing ? kernels::CuptiCollector::start(*tracing, &why_not) : std::nullopt;
  if (tracing && !collector) {
    state.SkipWithError(why_not.c_str());
    return;
  }
  kernels::launch_empty_kernels_and_wait(stream.get(), kWarmupLaunches);
  for (auto _ : state) kernels::launch_empty_kernels_and_wait(stream.get(), kLaunches);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kLaunches);
  if (collector) {
    const kernels::CollectedTrace collected = collector->stop();
    state.counters["dropped_records"] =
        static_cast<double>(ampbench::profile::total_dropped_records(collected.trace));
  }
}

void BM_launch_untraced(benchmark::State& state) {
  run_launches(state, std::nullopt);
}

// Each launch in a range of its own, as the ops of a step are: two NVTX calls per launch.
void BM_launch_untraced_in_nvtx_ranges(benchmark::State& state) {
  const kernels::CudaStream stream;
  kernels::launch_empty_kernels_and_wait(stream.get(), kWarmupLaunches);
  for (auto _ : state) {
    for (std::uint32_t i = 0; i < kLaunches; ++i) {
      const kernels::NvtxRange range("ampbench: launch");
      kernels::launch_empty_kernels(stream.get(), 1);
    }
    AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kLaunches);
}

void BM_launch_kernels_traced(benchmark::State& state) {
  kernels::CollectorOptions options;
  options.kernels_only = true;
  run_launches(state, options);
}

void BM_launch_all_traced(benchmark::State& state) {
  run_launches(state, kernels::CollectorOptions{});
}

}  // namespace

BENCHMARK(BM_launch_untraced)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_launch_untraced_in_nvtx_ranges)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_launch_kernels_traced)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_launch_all_traced)->Unit(benchmark::kMicrosecond)->UseRealTime();

int main(int argc, char** argv) {
  const kernels::DeviceStatus device = kernels::probe_device();
  if (!device.available) {
    std::cerr << "skipped: " << kernels::describe(device) << '\n';
    return 77;
  }
  const bench::RatioTable table{"untraced empty-kernel launches (launches/s)",
                                [](const bench::Results& results, const bench::Throughput& t) {
                                  if (t.family == "BM_launch_untraced") return -1.0;
                                  const auto it = results.find("BM_launch_untraced");
                                  return it == results.end() ? -1.0 : bench::median_of(it->second);
                                },
                                [](std::string_view family) {
                                  // NVTX ranges reaching an idle CUPTI: at least 0.95 of the
                                  // untraced rate (a launch costs a few microseconds; two NVTX
                                  // calls into a tool that records nothing, tens of nanoseconds).
                                  return family == "BM_launch_untraced_in_nvtx_ranges" ? 0.95 : 0.0;
                                }};
  return bench::run_with_ratios(argc, argv, {table});
}
