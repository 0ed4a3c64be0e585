#include "harness/results/device.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "harness/results/compare.hpp"

namespace ampbench::results {
namespace {

// The parts of a one-line description, split at ", ".
std::vector<std::string> parts_of(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(", ", start);
    parts.push_back(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 2;
  }
  return parts;
}

// The GPU of an old record's "gpu" line: "NVIDIA H200, compute capability 9.0, 132 SMs, 139.8
// GiB"; the libraries of its "cuda_libraries" line: "CUDA runtime 13.0.0, driver 13.0.0, cuBLAS
// 13.1.0, cuDNN 9.19.0, CUPTI API 130001". What does not read as such stays unknown.
Device derived_gpu(const std::string& gpu, const std::string& libraries) {
  Device d;
  d.kind = "gpu";
  d.derived = true;
  const auto parts = parts_of(gpu);
  d.name = parts.front();
  for (std::size_t i = 1; i < parts.size(); ++i) {
    std::istringstream in(parts[i]);
    std::string word, unit;
    double number = 0;
    if (parts[i].starts_with("compute capability ")) {
      d.compute_capability = parts[i].substr(std::string_view("compute capability ").size());
    } else if (in >> number >> unit && in.eof() && std::isfinite(number) && number >= 0) {
      if (unit == "SMs") d.sms = std::llround(number);
      if (unit == "GiB") d.memory_bytes = std::llround(number * 1024 * 1024 * 1024);
    }
  }
  for (const auto& part : parts_of(libraries)) {
    const auto space = part.rfind(' ');
    if (space == std::string::npos || part.starts_with("CUPTI")) continue;
    const std::string name = part.substr(0, space), version = part.substr(space + 1);
    if (version == "none") continue;
    if (name == "CUDA runtime") d.cuda_runtime = version;
    if (name == "driver") d.driver = version;
    if (name == "cuBLAS") d.cublas = version;
    if (name == "cuDNN") d.cudnn = version;
  }
  return d;
}

std::vector<std::string> record_keys(const nlohmann::json& document) {
  std::vector<std::string> keys;
  if (!document.contains("records") || !document["records"].is_array()) return keys;
  for (const auto& r : document["records"]) {
    if (r.is_object() && r.contains("key") && r["key"].is_string()) {
      keys.push_back(r["key"].get<std::string>());
    }
  }
  return keys;
}

Device parse_device(const nlohmann::json& j, std::string_view source) {
  const auto bad = [&](const std::string& member, const char* what) {
    return ResultError(fmt::format("{}: not an ampbench.result/1 record: environment.device.{} {}",
                                   source, member, what));
  };
  if (!j.is_object()) {
    throw ResultError(fmt::format(
        "{}: not an ampbench.result/1 record: environment.device is not an object", source));
  }
  Device d;
  const auto text = [&](const char* name) -> std::optional<std::string> {
    if (!j.contains(name) || j[name].is_null()) return std::nullopt;
    if (!j[name].is_string()) throw bad(name, "is not a string or null");
    return j[name].get<std::string>();
  };
  const auto count = [&](const char* name) -> std::optional<std::int64_t> {
    if (!j.contains(name) || j[name].is_null()) return std::nullopt;
    if (!j[name].is_number_integer() || j[name].get<std::int64_t>() < 0) {
      throw bad(name, "is not a count (an integer >= 0) or null");
    }
    return j[name].get<std::int64_t>();
  };
  d.kind = text("kind").value_or("");
  if (d.kind != "gpu" && d.kind != "cpu-emulation" && d.kind != "unknown") {
    throw bad("kind", "is not \"gpu\", \"cpu-emulation\" or \"unknown\"");
  }
  d.name = text("name").value_or("");
  d.compute_capability = text("compute_capability");
  d.sms = count("sms");
  d.memory_bytes = count("memory_bytes");
  d.sm_clock_mhz = count("sm_clock_mhz");
  d.memory_clock_mhz = count("memory_clock_mhz");
  d.driver = text("driver");
  d.cuda_runtime = text("cuda_runtime");
  d.cublas = text("cublas");
  d.cudnn = text("cudnn");
  d.tf32_override = text("tf32_override");
  if (j.contains("mma")) {
    if (!j["mma"].is_array()) throw bad("mma", "is not an array");
    for (std::size_t i = 0; i < j["mma"].size(); ++i) {
      if (!j["mma"][i].is_string()) throw bad(fmt::format("mma[{}]", i), "is not a string");
      d.mma.push_back(j["mma"][i].get<std::string>());
    }
  }
  return d;
}

}  // namespace

Device cpu_emulation(std::string cpu, std::vector<std::string> mma) {
  Device d;
  d.kind = "cpu-emulation";
  d.name = std::move(cpu);
  std::sort(mma.begin(), mma.end());
  mma.erase(std::unique(mma.begin(), mma.end()), mma.end());
  d.mma = std::move(mma);
  return d;
}

std::string label_of(const Device& d) {
  if (d.kind == "gpu") {
    return d.compute_capability ? fmt::format("{} (sm {})", d.name, *d.compute_capability) : d.name;
  }
  if (d.kind == "cpu-emulation") {
    const std::string models =
        d.mma.empty() ? std::string() : fmt::format(" (mma={})", fmt::join(d.mma, ","));
    return d.name.empty() ? "CPU emulation" + models
                          : fmt::format("CPU emulation{} on {}", models, d.name);
  }
  return d.kind == "mixed" ? "mixed devices" : "unknown device";
}

nlohmann::json to_json(const Device& d) {
  const auto optional = [](const auto& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  };
  return {{"kind", d.kind},
          {"name", d.name},
          {"compute_capability", optional(d.compute_capability)},
          {"sms", optional(d.sms)},
          {"memory_bytes", optional(d.memory_bytes)},
          {"sm_clock_mhz", optional(d.sm_clock_mhz)},
          {"memory_clock_mhz", optional(d.memory_clock_mhz)},
          {"driver", optional(d.driver)},
          {"cuda_runtime", optional(d.cuda_runtime)},
          {"cublas", optional(d.cublas)},
          {"cudnn", optional(d.cudnn)},
          {"tf32_override", optional(d.tf32_override)},
          {"mma", d.mma}};
}

std::vector<std::string> mma_of_keys(const std::vector<std::string>& keys) {
  std::set<std::string> models;
  for (const auto& key : keys) {
    const auto at = key.find("/mma=");
    if (at == std::string::npos) continue;
    const auto start = at + std::string_view("/mma=").size();
    models.insert(key.substr(start, key.find('/', start) - start));
  }
  return {models.begin(), models.end()};
}

Device device_of(const nlohmann::json& document, std::string_view source) {
  if (!document.is_object() || !document.contains("environment") ||
      !document["environment"].is_object()) {
    return Device{};
  }
  const auto& environment = document["environment"];
  // merge: shards of different devices
  const auto mixed = [] {
    Device d;
    d.kind = "mixed";
    d.name = "mixed";
    return d;
  };
  if (environment.contains("device")) {
    return environment["device"] == "mixed" ? mixed() : parse_device(environment["device"], source);
  }
  const auto text = [&](const char* name) {
    return environment.contains(name) && environment[name].is_string()
               ? environment[name].get<std::string>()
               : std::string();
  };
  // "not probed: ..." and "no CUDA device: ..." say why there is no GPU: the CPU ran the cases;
  // so did it in a --backend cpu run, whose gpu line names the device it would have used.
  const std::string gpu = text("gpu");
  if (gpu == "mixed") return mixed();
  const bool on_cpu = document.contains("backend") && document["backend"] == "cpu";
  const bool has_gpu =
      !on_cpu && !gpu.empty() && !gpu.starts_with("not probed") && !gpu.starts_with("no ");
  Device d = has_gpu ? derived_gpu(gpu, text("cuda_libraries"))
                     : cpu_emulation(text("cpu"), mma_of_keys(record_keys(document)));
  d.derived = true;
  return d;
}

}  // namespace ampbench::results
