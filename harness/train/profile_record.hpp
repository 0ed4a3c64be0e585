// The record of a CPU-backend profile run, "ampbench.profile-run/1" (docs/profiling.md): each
// policy's step times and phase shares. `ampbench profile --json` writes it, and a suite's
// [[profile]] entries carry it in their result records.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/train/trainer.hpp"

namespace ampbench::train {

// The phases of a step, in the order tables show them.
inline constexpr const char* kProfilePhases[] = {"forward", "backward",  "unscale",
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

nlohmann::json to_json(const ProfileResult& result, std::string_view backend = "cpu");

}  // namespace ampbench::train
