// Per-range hardware counters of a training step, as the CUPTI range profiler measures them
// (kernels/range_profiler.hpp), in plain values: what the device did inside each phase and op
// range, counted by the hardware rather than inferred from kernel names. The range profiler
// replays the ranges of one step once per pass of its schedule and decodes one value per metric
// per range; here ranges with the same path (the same op in several places of the step) are
// summed and the shares formed. Plain C++: tested without a GPU.
#pragma once

#include <array>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ampbench::profile {

// The metrics collected, in this order (docs/profiling.md). The counters are sums over the
// range's work; the two shares of a peak are CUPTI's own normalisation, averaged over the range.
inline constexpr std::size_t kHardwareMetricCount = 6;
inline constexpr std::array<std::string_view, kHardwareMetricCount> kHardwareMetrics = {
    "sm__inst_executed_pipe_tensor.sum",  // warp instructions executed by the Tensor Core pipe
    "sm__pipe_tensor_cycles_active.sum",  // SM cycles with the tensor pipe active, over all SMs
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",  // the same, % of peak
    "dram__bytes.sum",                                     // bytes read from and written to DRAM
    "gpu__time_duration.sum",                              // the range's duration on the GPU, ns
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",  // DRAM throughput, % of its peak
};

// One range as the range profiler decodes it: its path (names from the outermost range, joined by
// '/', e.g. "step/forward/linear") and the value of each of kHardwareMetrics.
struct RangeCounters {
  std::string path;
  std::array<double, kHardwareMetricCount> values{};
};

// The ranges of one path, summed; the shares of a peak weighted by each range's GPU time.
struct RangeMetrics {
  std::string path;
  std::size_t occurrences = 0;  // decoded ranges with this path
  double tensor_instructions = 0;
  double tensor_cycles_active = 0;
  double dram_bytes = 0;
  double gpu_time_ns = 0;
  // Sums of gpu time x share, and of the gpu time of the ranges that had the share (CUPTI may
  // give none, NaN, for a range without work).
  double tensor_peak_time_ns = 0;
  double tensor_peak_weight_ns = 0;
  double dram_peak_time_ns = 0;
  double dram_peak_weight_ns = 0;

  std::size_t depth() const;  // 1 for "step", 2 for "step/forward", ...
  // The tensor pipe's active cycles as a share of its peak over the elapsed time.
  std::optional<double> tensor_active_share() const;
  // DRAM bytes per second of GPU time; none without GPU time.
  std::optional<double> dram_bytes_per_second() const;
  // DRAM throughput as a share of its peak.
  std::optional<double> dram_peak_share() const;
};

struct HardwareMetrics {
  std::string chip;                  // as CUPTI names it, e.g. "GH100"
  std::size_t passes = 0;            // replay passes run (one step each)
  std::size_t dropped_ranges = 0;    // ranges the counter data image had no room for
  std::vector<RangeMetrics> ranges;  // by path, in the order each path was first decoded
};

// Sums the counters of ranges with the same path, in first-seen order. A share of a peak that is
// not finite is left out of its average (with its range's time). Throws std::invalid_argument for
// an empty path, a negative value, or a counter that is not finite (a decoding error, never a
// measurement), naming the range and the metric.
std::vector<RangeMetrics> sum_by_path(const std::vector<RangeCounters>& ranges);

// {"chip", "passes", "dropped_ranges", "metrics": [names], "ranges": [{"path", "occurrences",
// "tensor_instructions", "tensor_cycles_active", "dram_bytes", "gpu_time_ns",
// "tensor_active_share", "dram_bytes_per_second", "dram_peak_share"}]}; a share without its
// denominator is null.
nlohmann::json to_json(const HardwareMetrics& metrics);

}  // namespace ampbench::profile
