#include "harness/train/profile_record.hpp"

#include <algorithm>

#include "harness/profile/attribution.hpp"

namespace ampbench::train {

StepTimes step_times(std::vector<std::uint64_t> ns) {
  std::sort(ns.begin(), ns.end());
  if (ns.empty()) return {};
  return {static_cast<double>(ns[(ns.size() - 1) / 2]) * 1e-6,
          static_cast<double>(ns.front()) * 1e-6, static_cast<double>(ns.back()) * 1e-6};
}

double phase_share(const PolicyProfile& p, const std::string& phase) {
  std::uint64_t phase_ns = 0, step_ns = 0;
  for (const auto& r : p.attribution.ranges) {
    if (r.name == phase) phase_ns = r.wall_ns;
    if (r.name == "step") step_ns = r.wall_ns;
  }
  return step_ns == 0 ? 0.0 : static_cast<double>(phase_ns) / static_cast<double>(step_ns);
}

std::vector<double> vs_fp32(const ProfileResult& result) {
  double baseline = 0;
  for (const auto& p : result.policies) {
    if (p.policy == "fp32") baseline = step_times(p.step_ns).median_ms;
  }
  std::vector<double> ratios;
  for (const auto& p : result.policies) {
    ratios.push_back(baseline > 0 ? step_times(p.step_ns).median_ms / baseline : 0.0);
  }
  return ratios;
}

nlohmann::json to_json(const ProfileResult& result, std::string_view backend) {
  const std::vector<double> ratios = vs_fp32(result);
  nlohmann::json runs = nlohmann::json::array();
  for (std::size_t i = 0; i < result.policies.size(); ++i) {
    const PolicyProfile& p = result.policies[i];
    const StepTimes t = step_times(p.step_ns);
    nlohmann::json phases = nlohmann::json::object();
    for (const char* phase : kProfilePhases) phases[phase] = phase_share(p, phase);
    runs.push_back(
        {{"policy", p.policy},
         {"step_ms", {{"median", t.median_ms}, {"min", t.min_ms}, {"max", t.max_ms}}},
         {"vs_fp32", ratios[i] > 0 ? nlohmann::json(ratios[i]) : nlohmann::json(nullptr)},
         {"phase_share", phases},
         {"attribution", profile::to_json(p.attribution)}});
  }
  return {{"schema", "ampbench.profile-run/1"},
          {"backend", std::string(backend)},
          {"model", result.config.model},
          {"steps", result.config.steps},
          {"warmup", result.warmup},
          {"batch", result.config.batch},
          {"seed", result.config.seed},
          {"runs", runs}};
}

}  // namespace ampbench::train
