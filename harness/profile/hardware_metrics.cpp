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
  return ratio(tensor_cycles_active, sm_cycles_elapsed);
}

std::optional<double> RangeMetrics::dram_bytes_per_second() const {
  return ratio(dram_bytes, gpu_time_ns * 1e-9);
}

std::optional<double> RangeMetrics::dram_peak_share() const {
  return ratio(dram_peak_time_ns, gpu_time_ns);
}

std::vector<RangeMetrics> sum_by_path(const std::vector<RangeCounters>& ranges) {
  std::vector<RangeMetrics> summed;
  std::map<std::string, std::size_t> index;
  for (const RangeCounters& r : ranges) {
    if (r.path.empty()) throw std::invalid_argument("a decoded range has no name");
    for (std::size_t m = 0; m < kHardwareMetricCount; ++m) {
      if (!std::isfinite(r.values[m]) || r.values[m] < 0) {
        throw std::invalid_argument(fmt::format("range {}: metric {} decoded as {}", r.path,
                                                kHardwareMetrics[m], r.values[m]));
      }
    }
    const auto [at, inserted] = index.try_emplace(r.path, summed.size());
    if (inserted) summed.push_back(RangeMetrics{.path = r.path});
    RangeMetrics& s = summed[at->second];
    ++s.occurrences;
    s.tensor_instructions += r.values[0];
    s.tensor_cycles_active += r.values[1];
    s.sm_cycles_elapsed += r.values[2];
    s.dram_bytes += r.values[3];
    s.gpu_time_ns += r.values[4];
    s.dram_peak_time_ns += r.values[4] * r.values[5] / 100;
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
                      {"sm_cycles_elapsed", r.sm_cycles_elapsed},
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
