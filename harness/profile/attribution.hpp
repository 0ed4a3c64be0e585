// Where the time went: device activity (kernels, copies, memsets) attributed to host ranges (NVTX
// or host phases) and to kernel categories, with busy and idle time, launch delay and shares.
//
// Definitions (docs/profiling.md gives the same, with a worked picture):
//
// - Window: from the earliest start to the latest end over every kernel, copy, memset, API call
//   and range of the trace. wall_ns is its length.
// - Activity: a kernel, memcpy or memset record. Its launch is the API call with the same
//   correlation id. It belongs to the innermost range on the launch's thread that contains the
//   launch's start: of the ranges with start <= launch start < end, the one that started last
//   (ties: the one that ends first, then the later record). An activity with no API record, or
//   whose launch is in no range, belongs to the bucket "(outside any range)". Inclusively, it
//   also belongs to every enclosing range.
// - Busy time: per device, the length of the union of the activity intervals; summed over
//   devices. Overlapping kernels on several streams count once. kernel_time_ns is the plain sum of
//   kernel durations (counts overlap twice).
// - Idle gaps: per device with activity, the maximal sub-intervals of the window in which the
//   device runs nothing, the first (window start to first activity) and last included.
// - API time: per host thread, the length of the union of the API call intervals (a driver call
//   inside the runtime call that made it counts once); summed over threads. Launch API time: the
//   same over the API calls that launched a kernel (correlation id matches a kernel record) or
//   whose name contains "Launch".
// - Launch delay of a kernel: its start minus its launch's end, in ns; negative when the kernel
//   started before the launch call returned. Median: the lower median (element (n-1)/2 of the
//   sorted delays).
// - Shares (absent when their denominator is 0; launch_overhead_share also when no kernel was
//   launched and no launch call made, as on the CPU backend):
//     cast_share            = cast kernel time / kernel time           (sums of durations)
//     tensor_core_share     = Tensor Core kernel time / kernel time    (as torch-tb-profiler)
//     idle_share            = idle time / (wall_ns x devices with activity)
//     launch_overhead_share = launch API time / wall_ns
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/profile/classify.hpp"
#include "harness/profile/events.hpp"

namespace ampbench::profile {

inline constexpr std::string_view kOutsideAnyRange = "(outside any range)";

struct CategoryStats {
  std::uint64_t count = 0;
  std::uint64_t time_ns = 0;  // sum of durations
  std::uint64_t busy_ns = 0;  // union per device, summed over devices
};

struct LaunchDelayStats {
  std::uint64_t count = 0;  // kernels with a launch record
  std::int64_t median_ns = 0;
  std::int64_t max_ns = 0;
};

struct IdleGaps {
  std::uint64_t count = 0;
  std::uint64_t total_ns = 0;
  std::uint64_t largest_ns = 0;
};

// What a set of activities (and the API calls made in the same ranges) cost.
struct BucketStats {
  std::uint64_t kernel_count = 0;
  std::uint64_t kernel_time_ns = 0;
  std::uint64_t memcpy_count = 0;
  std::uint64_t memcpy_bytes = 0;
  std::uint64_t memset_count = 0;
  std::uint64_t busy_ns = 0;
  std::uint64_t api_count = 0;
  std::uint64_t api_time_ns = 0;
  std::uint64_t launch_api_time_ns = 0;
  LaunchDelayStats launch_delay;
  std::map<KernelCategory, CategoryStats> categories;  // only categories that occurred
};

struct RangeStats {
  std::string name;
  std::uint64_t instances = 0;
  std::uint64_t wall_ns = 0;  // sum of the instances' durations
  BucketStats self;           // activities whose innermost range this is
  BucketStats inclusive;      // activities in this range or any range nested in it
};

// The GEMM ranges (classify.hpp, "gemm m=.. n=.. k=.. dtype=..") by name, with what ran in them.
struct GemmRangeStats {
  std::string name;
  GemmShape shape;
  TensorCoreEligibility eligibility = TensorCoreEligibility::unsupported_dtype;
  std::uint64_t instances = 0;
  std::uint64_t kernel_count = 0;
  std::uint64_t kernel_time_ns = 0;
  std::uint64_t tensor_core_kernel_count = 0;
};

struct GemmEligibilitySummary {
  std::uint64_t gemm_ranges = 0;  // instances with at least one kernel
  std::uint64_t eligible = 0;
  std::uint64_t misaligned = 0;
  std::uint64_t unsupported_dtype = 0;
  std::uint64_t eligible_but_not_tensor_core = 0;  // eligible, and no kernel in it used them
  std::uint64_t eligible_but_not_tensor_core_time_ns = 0;
  std::vector<GemmRangeStats> by_name;  // sorted by name
};

struct Attribution {
  std::uint64_t window_start_ns = 0;
  std::uint64_t window_end_ns = 0;
  std::uint64_t wall_ns = 0;
  std::uint32_t devices = 0;  // devices with activity

  BucketStats total;
  IdleGaps idle;
  std::vector<RangeStats> ranges;  // sorted by name; the outside bucket is apart
  RangeStats outside_any_range;

  std::uint64_t kernels_without_api_record = 0;
  std::uint64_t synchronization_time_ns = 0;
  std::uint64_t cupti_overhead_ns = 0;
  std::map<std::string, std::uint64_t> other_kernel_names;  // names classified `other`, counted

  std::optional<double> cast_share;
  std::optional<double> tensor_core_share;
  std::optional<double> idle_share;
  std::optional<double> launch_overhead_share;

  GemmEligibilitySummary gemm;

  std::uint64_t dropped_records = 0;
  std::vector<std::string> warnings;
};

Attribution attribute(const Trace& trace);

// {"schema": "ampbench.profile/1", ...}; shares that are absent are null; categories by name.
nlohmann::json to_json(const Attribution& attribution);

}  // namespace ampbench::profile
