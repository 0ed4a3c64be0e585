// Result records of one suite from several devices set side by side (docs/comparing-devices.md):
// the devices, and for every case what each device computed, with the cases where the devices
// disagree beyond the tolerance first. `ampbench report R1 R2 ... --html FILE` renders it when
// the records come from different devices (or with --side-by-side).
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "harness/results/device.hpp"
#include "harness/results/report.hpp"

namespace ampbench::results {

// A device's column: a record, or the part of a record that ran on one device (a --backend all
// run's GPU and CPU cases; the CPU emulation's cases of one Tensor Core model).
struct DeviceColumn {
  std::string source;  // the record's file
  Device device;
  std::string label;  // label_of(device), with the file when two columns share a device
  const nlohmann::json* document = nullptr;
  std::size_t cases = 0;  // the record's cases in this column
};

// One case on one device.
struct CaseOnDevice {
  std::string key;  // the record's own key
  bool pass = false;
  std::map<std::string, double> metrics;
  std::map<std::string, std::string> features;  // a fingerprint's inferred parameters
  const nlohmann::json* detail = nullptr;       // nothing when the record holds none
};

struct CaseAcross {
  std::string key;                              // without the parts that name the device (case_key)
  std::string kind;                             // "audit", "train", "profile" or "fingerprint"
  std::vector<std::optional<CaseOnDevice>> on;  // per device column; nothing where it lacks it
  // "status" when the devices' verdicts differ, then every judged metric (compare.hpp's
  // direction_of) in which a device differs from the first device that has the case by more
  // than max(tolerance * |first|, floor): compare's rule; then every fingerprint parameter in
  // which a device's inferred value is not the first device's.
  std::vector<std::string> disagreements;
};

struct DeviceComparison {
  std::string suite;
  double tolerance = 0.1;
  double floor = 1e-12;
  std::vector<DeviceColumn> devices;
  // The cases where the devices disagree first, then the others; each group in the order of the
  // first record, then the cases only later records hold, in theirs.
  std::vector<CaseAcross> cases;
  std::size_t disagreeing() const;
};

// A case's key without what names its device (its column): "/backend=cuda" (a GPU case) and
// "/mma=MODEL" (the emulation of a Tensor Core model).
std::string case_key(const std::string& key);

// Whether the records come from more than one device (label_of), which makes the report a
// comparison: never for shards (a shard is a part of one device's run: merge them first) nor for
// records that do not say their device.
bool from_several_devices(std::span<const ResultDocument> results);

// A column per record and device its cases ran on (DeviceColumn), in the order of the files.
// Throws ResultError naming the file for: fewer than two records, records of different suites,
// and, unless `same_device_allowed` (--side-by-side), two columns of the same device. The
// tolerance is the first record's suite's (0.1 when it carries none).
DeviceComparison compare_devices(std::span<const ResultDocument> results, bool same_device_allowed);

// The comparison as a self-contained HTML page (the HTML report's style and charts) and as
// Markdown tables.
std::string html_comparison(const DeviceComparison& comparison);
std::string markdown_comparison(const DeviceComparison& comparison);

}  // namespace ampbench::results
