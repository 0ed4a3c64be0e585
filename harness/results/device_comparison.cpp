#include "harness/results/device_comparison.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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
  return found;
}

}  // namespace

std::size_t DeviceComparison::disagreeing() const {
  return static_cast<std::size_t>(std::count_if(
      cases.begin(), cases.end(), [](const CaseAcross& c) { return !c.disagreements.empty(); }));
}

std::string case_key(const std::string& key, const std::set<std::string>& keys) {
  std::string shorter = key;
  for (const char* part : {"backend", "mma"}) {
    const std::string candidate = without_part(shorter, part);
    if (candidate != shorter && !keys.contains(candidate)) shorter = candidate;
  }
  return shorter;
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
    DeviceColumn column{results[i].source, files[i].device, label_of(files[i].device),
                        &results[i].document};
    for (const auto& other : comparison.devices) {
      if (other.label == column.label && !same_device_allowed) {
        throw ResultError(fmt::format(
            "{}: the same device ({}) as {}: give each device once (merge a device's shards "
            "first), or --side-by-side to set results of one device side by side",
            column.source, column.label, other.source));
      }
    }
    comparison.devices.push_back(std::move(column));
  }
  // Columns of one device (--side-by-side) are told apart by their place and file.
  std::map<std::string, std::size_t> columns_of;
  for (const auto& column : comparison.devices) ++columns_of[column.label];
  for (std::size_t i = 0; i < comparison.devices.size(); ++i) {
    DeviceColumn& column = comparison.devices[i];
    if (columns_of[column.label] > 1) {
      column.label = fmt::format("{} · #{} {}", column.label, i + 1, column.source);
    }
  }
  // The cases by their device-free key, in the order they are first seen.
  std::vector<CaseAcross> cases;
  std::map<std::string, std::size_t> index;
  for (std::size_t d = 0; d < files.size(); ++d) {
    std::set<std::string> keys;
    for (const auto& r : files[d].records) keys.insert(r.key);
    const auto& records = results[d].document["records"];
    for (std::size_t i = 0; i < files[d].records.size(); ++i) {
      const ResultRecord& r = files[d].records[i];
      const std::string key = case_key(r.key, keys);
      auto [it, added] = index.emplace(key, cases.size());
      if (added) {
        cases.push_back({key, text_of(records[i], "kind"), {}, {}});
        cases.back().on.resize(files.size());
      }
      const auto& record = records[i];
      const bool has_detail = record.contains("detail") && record["detail"].is_object();
      cases[it->second].on[d] =
          CaseOnDevice{r.key, r.pass, r.metrics, has_detail ? &record["detail"] : nullptr};
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
