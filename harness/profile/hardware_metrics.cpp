#include "harness/profile/hardware_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace ampbench::profile {
namespace {

std::optional<double> ratio(double numerator, double denominator) {
  if (denominator <= 0) return std::nullopt;
  return numerator / denominator;
}

nlohmann::json optional_number(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::size_t RangeMetrics::depth() const {
  return static_cast<std::size_t>(std::count(path.begin(), path.end(), '/')) + 1;
}

std::optional<double> RangeMetrics::tensor_active_share() const {
  return ratio(tensor_peak_time_ns, tensor_peak_weight_ns);
}

std::optional<double> RangeMetrics::dram_bytes_per_second() const {
  return ratio(dram_bytes, gpu_time_ns * 1e-9);
}

std::optional<double> RangeMetrics::dram_peak_share() const {
  return ratio(dram_peak_time_ns, dram_peak_weight_ns);
}

std::vector<RangeMetrics> sum_by_path(const std::vector<RangeCounters>& ranges) {
  // kHardwareMetrics' positions: counters, and shares of a peak in percent.
  constexpr std::size_t kTensorInstructions = 0, kTensorCycles = 1, kTensorPeak = 2, kDramBytes = 3,
                        kGpuTime = 4, kDramPeak = 5;
  std::vector<RangeMetrics> summed;
  std::map<std::string, std::size_t> index;
  for (const RangeCounters& r : ranges) {
    if (r.path.empty()) throw std::invalid_argument("a decoded range has no name");
    for (std::size_t m = 0; m < kHardwareMetricCount; ++m) {
      const bool share = m == kTensorPeak || m == kDramPeak;
      if (r.values[m] < 0 || (!share && !std::isfinite(r.values[m]))) {
        throw std::invalid_argument(fmt::format("range {}: metric {} decoded as {}", r.path,
                                                kHardwareMetrics[m], r.values[m]));
      }
    }
    const auto [at, inserted] = index.try_emplace(r.path, summed.size());
    if (inserted) summed.push_back(RangeMetrics{.path = r.path});
    RangeMetrics& s = summed[at->second];
    const double ns = r.values[kGpuTime];
    ++s.occurrences;
    s.tensor_instructions += r.values[kTensorInstructions];
    s.tensor_cycles_active += r.values[kTensorCycles];
    s.dram_bytes += r.values[kDramBytes];
    s.gpu_time_ns += ns;
    if (std::isfinite(r.values[kTensorPeak])) {
      s.tensor_peak_time_ns += ns * r.values[kTensorPeak] / 100;
      s.tensor_peak_weight_ns += ns;
    }
    if (std::isfinite(r.values[kDramPeak])) {
      s.dram_peak_time_ns += ns * r.values[kDramPeak] / 100;
      s.dram_peak_weight_ns += ns;
    }
  }
  return summed;
}

nlohmann::json to_json(const HardwareMetrics& metrics) {
  nlohmann::json names = nlohmann::json::array();
  for (const std::string_view name : kHardwareMetrics) names.push_back(name);
  nlohmann::json ranges = nlohmann::json::array();
  for (const RangeMetrics& r : metrics.ranges) {
    ranges.push_back({{"path", r.path},
                      {"occurrences", r.occurrences},
                      {"tensor_instructions", r.tensor_instructions},
                      {"tensor_cycles_active", r.tensor_cycles_active},
                      {"dram_bytes", r.dram_bytes},
                      {"gpu_time_ns", r.gpu_time_ns},
                      {"tensor_active_share", optional_number(r.tensor_active_share())},
                      {"dram_bytes_per_second", optional_number(r.dram_bytes_per_second())},
                      {"dram_peak_share", optional_number(r.dram_peak_share())}});
  }
  return {{"chip", metrics.chip},
          {"passes", metrics.passes},
          {"dropped_ranges", metrics.dropped_ranges},
          {"metrics", names},
          {"ranges", ranges}};
}

}  // namespace ampbench::profile
