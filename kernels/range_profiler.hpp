// Per-range hardware counters through the CUPTI range profiler (cupti_range_profiler.h and
// cupti_profiler_host.h, CUDA 12.6 and later): the quantities of profile::Counted (Tensor Core
// pipe instructions and active cycles, Hopper's warpgroup MMA instructions, DRAM bytes and
// throughput, GPU time), each through the metric the chip has for it
// (profile::choose_hardware_metrics over what the chip's profiler host library lists), for every
// range a workload pushes, nested up to a depth. It runs in user-range, user-replay mode: CUPTI
// schedules the counters into passes (and nesting levels), and the workload runs once per pass,
// pushing the same ranges each time; here that workload is one training step, so each pass is a
// step of its own (the same kernels on other weights), and each nesting level may be counted on a
// different step. The decoded ranges become plain profile::HardwareMetrics
// (harness/profile/hardware_metrics.hpp).
//
//   profile::HardwareMetrics m = collect_range_metrics([&](const profile::RangeHooks& hooks) {
//     run_one_step_with(hooks);   // PhaseRecorder(hooks): every phase is a range
//   });
//
// Push and pop take no stream: every range boundary waits for the device, so that a range holds
// exactly the work launched inside it, whatever streams that work runs on. That changes the
// timing, and tools do not combine range profiling with activity tracing (Kineto refuses to), so
// it runs after every policy's timed steps. Counters need privileges on most drivers
// (NVreg_RestrictProfilingToAdminUsers): without them CUPTI refuses, and the error says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness/profile/hardware_metrics.hpp"
#include "harness/profile/host_timer.hpp"

namespace ampbench::kernels {

// A failed CUPTI profiler call: the call and CUPTI's message (e.g. "cuptiRangeProfilerEnable:
// CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"), or a workload that pushed no range or too many passes.
class RangeProfilerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The host half, which needs no device: the configuration image that schedules `metrics` on a chip
// (CUPTI's name, e.g. "GH100", "GA100"), and the number of passes it needs. `availability` is the
// device's counter availability image (empty: every counter of the chip). Throws
// RangeProfilerError for an unknown chip or metric.
struct ConfigImage {
  std::vector<std::uint8_t> image;
  std::size_t passes = 0;
};
ConfigImage range_profiler_config(const std::string& chip,
                                  std::span<const std::string_view> metrics,
                                  std::span<const std::uint8_t> availability = {});

// The base metrics (counters, ratios and throughputs, without rollups) that CUPTI's profiler host
// library knows for a chip, and the metric set chosen from them: offline, no device needed.
// Throws RangeProfilerError for an unknown chip, and std::invalid_argument (from
// choose_hardware_metrics) for a chip without a needed counter.
std::vector<std::string> chip_base_metrics(const std::string& chip);
profile::HardwareMetricSet hardware_metric_set(const std::string& chip);

struct RangeProfilerOptions {
  std::uint16_t nesting_levels = 3;  // ranges deeper than this are not pushed to CUPTI
  std::size_t max_ranges = 2048;     // per pass, and in the counter data image
  std::size_t max_passes = 16;       // refuse a schedule that needs more workload runs
};

// Runs `workload` under the range profiler of the current CUDA context once per pass, until CUPTI
// has every pass; decodes the counters and returns them summed by range path. The hooks the
// workload receives wait for the device and push or pop a CUPTI range (at most
// options.nesting_levels deep); they never throw: a failed push, pop or wait is reported after the
// pass. Every pass must push the same ranges in the same order as the first. Throws
// RangeProfilerError naming the CUPTI call that failed, when the device does not support range
// profiling (and why), when the workload pushed no range or other ranges than in its first pass,
// or when a value decodes as no count. One range profiler at a time per process.
profile::HardwareMetrics collect_range_metrics(
    const std::function<void(const profile::RangeHooks&)>& workload,
    const RangeProfilerOptions& options = {});

}  // namespace ampbench::kernels
