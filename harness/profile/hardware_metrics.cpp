#include "harness/profile/hardware_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

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

std::vector<std::string> HardwareMetricSet::requested() const {
  std::vector<std::string> out;
  for (const std::string& n : names) {
    if (!n.empty()) out.push_back(n);
  }
  return out;
}

HardwareMetricSet choose_hardware_metrics(const std::vector<std::string>& base_metrics) {
  const std::set<std::string> listed(base_metrics.begin(), base_metrics.end());
  const auto has = [&](const std::string& base) { return listed.count(base) != 0; };
  const auto require = [&](const std::string& base) {
    if (!has(base)) {
      throw std::invalid_argument(fmt::format(
          "the chip's profiler lists no base metric {} (its {} metrics lack a counter every "
          "hardware-metrics collection needs)",
          base, base_metrics.size()));
    }
    return base;
  };
  // Hopper's counter of the tensor pipe's active cycles over every MMA kind, the warpgroup ones
  // (hgmma, qgmma, igmma, bgmma) named; elsewhere the pipe's own counter.
  constexpr const char* kAllMmaKindsCycles =
      "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active";
  const std::string cycles =
      has(kAllMmaKindsCycles) ? kAllMmaKindsCycles : require("sm__pipe_tensor_cycles_active");
  constexpr const char* kWarpgroupInstructions = "sm__inst_executed_pipe_tensor_op_gmma";
  HardwareMetricSet set;
  const auto assign = [&](Counted c, std::string name) {
    set.names[static_cast<std::size_t>(c)] = std::move(name);
  };
  assign(Counted::tensor_instructions, require("sm__inst_executed_pipe_tensor") + ".sum");
  assign(Counted::warpgroup_instructions,
         has(kWarpgroupInstructions) ? std::string(kWarpgroupInstructions) + ".sum" : "");
  assign(Counted::tensor_cycles_active, cycles + ".sum");
  assign(Counted::tensor_peak_pct, cycles + ".avg.pct_of_peak_sustained_elapsed");
  assign(Counted::dram_bytes, require("dram__bytes") + ".sum");
  assign(Counted::gpu_time_ns, require("gpu__time_duration") + ".sum");
  assign(Counted::dram_peak_pct,
         require("dram__throughput") + ".avg.pct_of_peak_sustained_elapsed");
  return set;
}

std::vector<RangeMetrics> sum_by_path(const std::vector<RangeCounters>& ranges,
                                      const HardwareMetricSet& metrics) {
  const auto at = [](Counted c) { return static_cast<std::size_t>(c); };
  const bool warpgroup = !metrics.name(Counted::warpgroup_instructions).empty();
  std::vector<RangeMetrics> summed;
  std::map<std::string, std::size_t> index;
  for (const RangeCounters& r : ranges) {
    if (r.path.empty()) throw std::invalid_argument("a decoded range has no name");
    for (std::size_t m = 0; m < kHardwareMetricCount; ++m) {
      if (metrics.names[m].empty()) continue;
      const bool share = m == at(Counted::tensor_peak_pct) || m == at(Counted::dram_peak_pct);
      if (r.values[m] < 0 || (!share && !std::isfinite(r.values[m]))) {
        throw std::invalid_argument(fmt::format("range {}: metric {} decoded as {}", r.path,
                                                metrics.names[m], r.values[m]));
      }
    }
    const auto [found, inserted] = index.try_emplace(r.path, summed.size());
    if (inserted) {
      summed.emplace_back();
      summed.back().path = r.path;
    }
    RangeMetrics& s = summed[found->second];
    const double ns = r.values[at(Counted::gpu_time_ns)];
    ++s.occurrences;
    s.tensor_instructions += r.values[at(Counted::tensor_instructions)];
    if (warpgroup) {
      // Counted once per warp: a warpgroup of four warps issues each wgmma.
      s.warpgroup_mma_instructions = s.warpgroup_mma_instructions.value_or(0) +
                                     r.values[at(Counted::warpgroup_instructions)] / 4;
    }
    s.tensor_cycles_active += r.values[at(Counted::tensor_cycles_active)];
    s.dram_bytes += r.values[at(Counted::dram_bytes)];
    s.gpu_time_ns += ns;
    if (const double pct = r.values[at(Counted::tensor_peak_pct)]; std::isfinite(pct)) {
      s.tensor_peak_time_ns += ns * pct / 100;
      s.tensor_peak_weight_ns += ns;
    }
    if (const double pct = r.values[at(Counted::dram_peak_pct)]; std::isfinite(pct)) {
      s.dram_peak_time_ns += ns * pct / 100;
      s.dram_peak_weight_ns += ns;
    }
  }
  return summed;
}

nlohmann::json to_json(const HardwareMetrics& metrics) {
  nlohmann::json ranges = nlohmann::json::array();
  for (const RangeMetrics& r : metrics.ranges) {
    ranges.push_back({{"path", r.path},
                      {"occurrences", r.occurrences},
                      {"tensor_instructions", r.tensor_instructions},
                      {"warpgroup_mma_instructions", optional_number(r.warpgroup_mma_instructions)},
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
          {"metrics", metrics.metrics.requested()},
          {"ranges", ranges}};
}

std::string share_percent(double share) {
  const double percent = 100 * share;
  return std::abs(percent) >= 0.1 ? fmt::format("{:.1f}%", percent)
                                  : fmt::format("{:.2g}%", percent);
}

}  // namespace ampbench::profile
