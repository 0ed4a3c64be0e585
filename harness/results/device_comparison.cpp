#include "harness/results/device_comparison.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "harness/results/compare.hpp"

namespace ampbench::results {
namespace {

// The key without one "/NAME=VALUE" part, or the key itself when it has none.
std::string without_part(const std::string& key, std::string_view name) {
  const auto at = key.find(fmt::format("/{}=", name));
  if (at == std::string::npos) return key;
  const auto end = key.find('/', at + 1);
  return key.substr(0, at) + (end == std::string::npos ? std::string() : key.substr(end));
}

// The VALUE of a key's "/NAME=VALUE" part; empty when it has none.
std::string part_of(const std::string& key, std::string_view name) {
  const std::string part = fmt::format("/{}=", name);
  const auto at = key.find(part);
  if (at == std::string::npos) return "";
  const auto start = at + part.size();
  return key.substr(start, key.find('/', start) - start);
}

// The device of a record's cases with the given parts: a Tensor Core model's cases are the CPU's
// emulation of that model; the cases without /backend=cuda of a record whose device is a GPU (a
// --backend all run) are the CPU's emulation; the rest are the record's device.
Device device_of_part(const Device& device, const std::string& cpu, const std::string& backend,
                      const std::string& mma) {
  if (!mma.empty()) return cpu_emulation(device.kind == "gpu" ? cpu : device.name, {mma});
  if (backend.empty() && device.kind == "gpu") {
    Device emulation = cpu_emulation(cpu, {});
    emulation.derived = device.derived;
    return emulation;
  }
  if (device.kind != "cpu-emulation") return device;
  Device plain = device;
  plain.mma.clear();
  return plain;
}

std::vector<std::string> find_disagreements(const CaseAcross& c, double tolerance, double floor) {
  std::vector<std::string> found;
  const CaseOnDevice* first = nullptr;
  for (const auto& on : c.on) {
    if (on && first == nullptr) first = &*on;
  }
  if (first == nullptr) return found;
  const auto add = [&](const std::string& what) {
    if (std::find(found.begin(), found.end(), what) == found.end()) found.push_back(what);
  };
  for (const auto& on : c.on) {
    if (!on || &*on == first) continue;
    if (on->pass != first->pass) add("status");
  }
  for (const auto& [metric, value] : first->metrics) {
    if (direction_of(metric) == Direction::unjudged) continue;
    for (const auto& on : c.on) {
      if (!on || &*on == first) continue;
      const auto it = on->metrics.find(metric);
      if (it == on->metrics.end()) continue;
      if (std::abs(it->second - value) > std::max(tolerance * std::abs(value), floor)) add(metric);
    }
  }
  for (const auto& [feature, value] : first->features) {
    for (const auto& on : c.on) {
      if (!on || &*on == first) continue;
      const auto it = on->features.find(feature);
      if (it != on->features.end() && it->second != value) add(feature);
    }
  }
  return found;
}

}  // namespace

std::size_t DeviceComparison::disagreeing() const {
  return static_cast<std::size_t>(std::count_if(
      cases.begin(), cases.end(), [](const CaseAcross& c) { return !c.disagreements.empty(); }));
}

std::string case_key(const std::string& key) {
  return without_part(without_part(key, "backend"), "mma");
}

bool from_several_devices(std::span<const ResultDocument> results) {
  std::set<std::string> labels;
  for (const auto& r : results) {
    // A shard is a part of one device's run, and a record without an environment says nothing.
    const std::string shard = text_of(r.document, "shard");
    const Device device = device_of(r.document, r.source);
    if ((shard != "-" && shard != "0/1") || device.kind == "unknown") return false;
    labels.insert(label_of(device));
  }
  return labels.size() > 1;
}

DeviceComparison compare_devices(std::span<const ResultDocument> results,
                                 bool same_device_allowed) {
  if (results.size() < 2) {
    throw ResultError("a comparison of devices needs two or more result files");
  }
  DeviceComparison comparison;
  std::vector<ResultFile> files;
  for (const auto& r : results) files.push_back(parse_result(r.document, r.source));
  comparison.suite = files.front().suite;
  comparison.tolerance = files.front().tolerance.value_or(0.1);
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (files[i].suite != comparison.suite) {
      throw ResultError(fmt::format(
          "{}: a result of suite '{}', not of suite '{}' as {}: a comparison sets one suite's "
          "results side by side",
          results[i].source, files[i].suite, comparison.suite, results.front().source));
    }
  }
  // A column per record and kind of its cases (their "/backend=" and "/mma=" parts): a record of
  // the CPU emulation with Tensor Core model cases gives a column for each model beside the plain
  // emulation, so that each lines up with a GPU's cases.
  std::vector<CaseAcross> cases;
  std::map<std::string, std::size_t> index;
  for (std::size_t d = 0; d < files.size(); ++d) {
    std::string cpu =
        text_of(results[d].document.value("environment", nlohmann::json::object()), "cpu");
    if (cpu == "-") cpu.clear();
    std::map<std::pair<std::string, std::string>, std::size_t> column_of;
    const auto column_for = [&](const std::string& backend, const std::string& mma) {
      const auto [it, added] =
          column_of.emplace(std::pair{backend, mma}, comparison.devices.size());
      if (added) {
        const Device device = device_of_part(files[d].device, cpu, backend, mma);
        comparison.devices.push_back(
            {results[d].source, device, label_of(device), &results[d].document, 0});
      }
      return it->second;
    };
    const auto& records = results[d].document["records"];
    for (std::size_t i = 0; i < files[d].records.size(); ++i) {
      const ResultRecord& r = files[d].records[i];
      const std::size_t column = column_for(part_of(r.key, "backend"), part_of(r.key, "mma"));
      ++comparison.devices[column].cases;
      const auto [it, added] = index.emplace(case_key(r.key), cases.size());
      if (added) cases.push_back({case_key(r.key), text_of(records[i], "kind"), {}, {}});
      CaseAcross& c = cases[it->second];
      c.on.resize(std::max(c.on.size(), column + 1));
      const auto& record = records[i];
      const bool has_detail = record.contains("detail") && record["detail"].is_object();
      c.on[column] = CaseOnDevice{r.key, r.pass, r.metrics, r.features,
                                  has_detail ? &record["detail"] : nullptr};
    }
    // A record without cases still names its device.
    if (column_of.empty()) column_for(files[d].device.kind == "gpu" ? "cuda" : "", "");
  }
  for (auto& c : cases) c.on.resize(comparison.devices.size());
  for (std::size_t i = 0; i < comparison.devices.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const DeviceColumn& column = comparison.devices[i];
      const DeviceColumn& other = comparison.devices[j];
      if (other.label == column.label && !same_device_allowed) {
        throw ResultError(fmt::format(
            "{}: the same device ({}) as {}: give each device once (merge a device's shards "
            "first), or --side-by-side to set results of one device side by side",
            column.source, column.label, other.source));
      }
    }
  }
  // Columns of one device (--side-by-side) are told apart by their place and file, the place first
  // so that a chart legend cut to its first characters still tells them apart.
  std::map<std::string, std::size_t> columns_of;
  for (const auto& column : comparison.devices) ++columns_of[column.label];
  for (std::size_t i = 0; i < comparison.devices.size(); ++i) {
    DeviceColumn& column = comparison.devices[i];
    if (columns_of[column.label] > 1) {
      column.label = fmt::format("#{} {} · {}", i + 1, column.label, column.source);
    }
  }
  for (auto& c : cases) {
    c.disagreements = find_disagreements(c, comparison.tolerance, comparison.floor);
  }
  std::stable_partition(cases.begin(), cases.end(),
                        [](const CaseAcross& c) { return !c.disagreements.empty(); });
  comparison.cases = std::move(cases);
  return comparison;
}

}  // namespace ampbench::results
