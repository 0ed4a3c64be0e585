// The record of a profile run, "ampbench.profile-run/1" (docs/profiling.md): each policy's step
// times, phase shares, attribution, peak device memory and verdict against fp32. `ampbench profile
// --json` writes it, and a suite's
// [[profile]] entries carry it in their result records.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/train/trainer.hpp"

namespace ampbench::train {

// The phases of a step, in the order tables show them.
inline constexpr const char* kProfilePhases[] = {"forward", "loss",      "backward", "unscale",
                                                 "clip",    "optimizer", "update"};

struct StepTimes {
  double median_ms = 0;  // the lower median for an even count
  double min_ms = 0;
  double max_ms = 0;
};
StepTimes step_times(std::vector<std::uint64_t> ns);

// The phase's share of the policy's step time (all instances over all steps); 0 when absent.
double phase_share(const PolicyProfile& p, const std::string& phase);

// The median step time of each policy over fp32's, in the order of result.policies; 0 where fp32
// was not profiled.
std::vector<double> vs_fp32(const ProfileResult& result);

// Whether a policy saved time and memory against fp32, and what explains it.
//   time: "saves time" when its slowest timed step is faster than fp32's fastest, "costs time"
//   when its fastest is slower than fp32's slowest, and "no clear difference" when the ranges
//   overlap: a claim only where the spread of the steps cannot explain it.
//   memory: the peak device memory over fp32's (on a GPU; none on the CPU backend).
//   categories: the kernel categories whose device time per step changed most against fp32 (the
//   three largest changes), in milliseconds per step; empty without device activity.
struct Verdict {
  std::optional<double> time_ratio;    // median step time over fp32's
  std::string time;                    // "saves time", "costs time", "no clear difference"
  std::optional<double> memory_ratio;  // peak device bytes over fp32's
  std::vector<std::pair<std::string, double>> category_change_ms;
  std::string text;  // one sentence of all the above
};
// The verdict of result.policies[index]; none for fp32 itself or when fp32 was not profiled.
std::optional<Verdict> verdict(const ProfileResult& result, std::size_t index);

nlohmann::json to_json(const ProfileResult& result, std::string_view backend = "cpu");

}  // namespace ampbench::train
