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
#include <vector>

namespace ampbench::profile {

// The quantities counted per range, in the order of RangeCounters::values and of
// HardwareMetricSet::names. The counters are sums over the range's work; the two shares of a peak
// are CUPTI's own normalisation, averaged over the range.
enum class Counted : std::size_t {
  tensor_instructions,     // warp instructions executed by the Tensor Core pipe
  warpgroup_instructions,  // Hopper's wgmma, counted once per warp of the warpgroup (four each)
  tensor_cycles_active,    // SM cycles with the tensor pipe active, over all SMs
  tensor_peak_pct,         // the same, % of its peak over the elapsed time
  dram_bytes,              // bytes read from and written to DRAM
  gpu_time_ns,             // the range's duration on the GPU
  dram_peak_pct,           // DRAM throughput, % of its peak
};
inline constexpr std::size_t kHardwareMetricCount = 7;

// The metric (full name, with its rollup) that counts each quantity on one chip, chosen from the
// base metrics the chip's profiler host library lists (docs/profiling.md, "Hardware counters"):
// Ampere and Ada count every Tensor Core instruction in the tensor pipe's counters; Hopper's
// warpgroup MMA (wgmma) has counters of its own (the pipe's "gmma" op), which are added where the
// chip lists them, and its active cycles are taken from the counter whose name covers the
// warpgroup MMA kinds (hgmma, qgmma, igmma, bgmma) rather than from the plain pipe counter, which
// is not documented to include them. An empty name: the chip has no such counter, and the
// quantity is absent from its ranges.
struct HardwareMetricSet {
  std::array<std::string, kHardwareMetricCount> names;

  const std::string& name(Counted c) const { return names[static_cast<std::size_t>(c)]; }
  // The names that are not empty, in order: what the range profiler is asked for.
  std::vector<std::string> requested() const;
};

// The set for a chip whose base metrics are `base_metrics` (as cuptiProfilerHostGetBaseMetrics
// lists them, without rollups). Throws std::invalid_argument naming a base metric that every set
// needs and the chip lacks.
HardwareMetricSet choose_hardware_metrics(const std::vector<std::string>& base_metrics);

// One range as the range profiler decodes it: its path (names from the outermost range, joined by
// '/', e.g. "step/forward/linear") and the value of each quantity (0 where the set has no metric).
struct RangeCounters {
  std::string path;
  std::array<double, kHardwareMetricCount> values{};
};

// The ranges of one path, summed; the shares of a peak weighted by each range's GPU time.
struct RangeMetrics {
  std::string path;
  std::size_t occurrences = 0;  // decoded ranges with this path
  double tensor_instructions = 0;
  // wgmma instructions (the per-warp count divided by the four warps of a warpgroup); none on a
  // chip without warpgroup MMA counters.
  std::optional<double> warpgroup_mma_instructions;
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
  HardwareMetricSet metrics;         // what counted each quantity on this chip
  std::size_t passes = 0;            // replay passes run (one step each)
  std::size_t dropped_ranges = 0;    // ranges the counter data image had no room for
  std::vector<RangeMetrics> ranges;  // by path, in the order each path was first decoded
};

// Sums the counters of ranges with the same path, in first-seen order; the quantities `metrics`
// has no metric for are absent. A share of a peak that is not finite is left out of its average
// (with its range's time). Throws std::invalid_argument for an empty path, a negative value, or a
// counter that is not finite (a decoding error, never a measurement), naming the range and the
// metric.
std::vector<RangeMetrics> sum_by_path(const std::vector<RangeCounters>& ranges,
                                      const HardwareMetricSet& metrics);

// {"chip", "passes", "dropped_ranges", "metrics": [the names used], "ranges": [{"path",
// "occurrences", "tensor_instructions", "warpgroup_mma_instructions", "tensor_cycles_active",
// "dram_bytes", "gpu_time_ns", "tensor_active_share", "dram_bytes_per_second",
// "dram_peak_share"}]}; a share without its denominator, and a quantity the chip has no counter
// for, is null.
nlohmann::json to_json(const HardwareMetrics& metrics);

// A share of a peak (0 to 1) as a percentage: one decimal from 0.1% up, two significant digits
// below ("0.0032%"), "0%" for none. A step of a small model keeps the tensor pipe busy a few
// thousandths of a percent of its peak, which one decimal would show as 0.0%.
std::string share_percent(double share);

}  // namespace ampbench::profile
