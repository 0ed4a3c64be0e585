#include "harness/train/profile_record.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

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

namespace {

// Device time per timed step of each kernel category (and memcpy/memset) in milliseconds.
std::map<std::string, double> category_ms_per_step(const PolicyProfile& p) {
  std::map<std::string, double> ms;
  if (p.step_ns.empty()) return ms;
  const double steps = static_cast<double>(p.step_ns.size());
  for (const auto& [category, stats] : p.attribution.total.categories) {
    ms[std::string(profile::to_string(category))] =
        static_cast<double>(stats.time_ns) * 1e-6 / steps;
  }
  return ms;
}

}  // namespace

std::optional<Verdict> verdict(const ProfileResult& result, std::size_t index) {
  const PolicyProfile* fp32 = nullptr;
  for (const auto& p : result.policies) {
    if (p.policy == "fp32") fp32 = &p;
  }
  const PolicyProfile& p = result.policies.at(index);
  if (fp32 == nullptr || fp32 == &p || fp32->step_ns.empty() || p.step_ns.empty()) {
    return std::nullopt;
  }
  Verdict v;
  const StepTimes mine = step_times(p.step_ns), base = step_times(fp32->step_ns);
  if (base.median_ms > 0) v.time_ratio = mine.median_ms / base.median_ms;
  v.time = mine.max_ms < base.min_ms   ? "saves time"
           : mine.min_ms > base.max_ms ? "costs time"
                                       : "no clear difference";
  if (p.peak_device_bytes && fp32->peak_device_bytes && *fp32->peak_device_bytes > 0) {
    v.memory_ratio =
        static_cast<double>(*p.peak_device_bytes) / static_cast<double>(*fp32->peak_device_bytes);
  }
  std::map<std::string, double> change = category_ms_per_step(p);
  for (const auto& [category, ms] : category_ms_per_step(*fp32)) change[category] -= ms;
  for (const auto& [category, ms] : change) {
    if (ms != 0) v.category_change_ms.emplace_back(category, ms);
  }
  // Ties keep the categories' name order.
  std::stable_sort(
      v.category_change_ms.begin(), v.category_change_ms.end(),
      [](const auto& a, const auto& b) { return std::fabs(a.second) > std::fabs(b.second); });
  if (v.category_change_ms.size() > 3) v.category_change_ms.resize(3);

  v.text = fmt::format("{} vs fp32: step {} ({:.2f}x the median)", p.policy, v.time,
                       v.time_ratio.value_or(0));
  if (v.memory_ratio) {
    v.text += fmt::format(", peak memory {:.2f}x ({})", *v.memory_ratio,
                          *v.memory_ratio < 1   ? "saves memory"
                          : *v.memory_ratio > 1 ? "costs memory"
                                                : "the same");
  }
  if (!v.category_change_ms.empty()) {
    v.text += "; device time per step:";
    for (std::size_t i = 0; i < v.category_change_ms.size(); ++i) {
      v.text += fmt::format("{} {} {:+.3f} ms", i == 0 ? "" : ",", v.category_change_ms[i].first,
                            v.category_change_ms[i].second);
    }
  }
  return v;
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
         {"peak_device_bytes",
          p.peak_device_bytes ? nlohmann::json(*p.peak_device_bytes) : nlohmann::json(nullptr)},
         {"attribution", profile::to_json(p.attribution)}});
    if (p.hardware_metrics) runs.back()["hardware_metrics"] = profile::to_json(*p.hardware_metrics);
    if (!p.hardware_metrics_why.empty())
      runs.back()["hardware_metrics_why"] = p.hardware_metrics_why;
    if (const auto v = verdict(result, i)) {
      nlohmann::json changes = nlohmann::json::object();
      for (const auto& [category, ms] : v->category_change_ms) changes[category] = ms;
      runs.back()["verdict"] = {
          {"time", v->time},
          {"time_ratio", v->time_ratio ? nlohmann::json(*v->time_ratio) : nlohmann::json(nullptr)},
          {"memory_ratio",
           v->memory_ratio ? nlohmann::json(*v->memory_ratio) : nlohmann::json(nullptr)},
          {"category_change_ms_per_step", changes},
          {"text", v->text}};
    }
  }
  nlohmann::json record = {{"schema", "ampbench.profile-run/1"},
                           {"backend", std::string(backend)},
                           {"model", result.config.model},
                           {"steps", result.config.steps},
                           {"warmup", result.warmup},
                           {"batch", result.config.batch},
                           {"seed", result.config.seed},
                           {"runs", runs}};
  if (!result.device.is_null()) record["device"] = result.device;
  if (!result.profiler_overhead.is_null()) record["profiler_overhead"] = result.profiler_overhead;
  if (!result.hardware_metrics.is_null()) record["hardware_metrics"] = result.hardware_metrics;
  return record;
}

}  // namespace ampbench::train
