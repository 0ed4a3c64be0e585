// The device a result record's cases ran on (docs/comparing-devices.md): a GPU with its compute
// capability, size, clocks, library versions and settings, or the CPU emulation with the Tensor
// Core models (--mma presets) its cases used. `ampbench run` records it in the environment as
// "device"; compare, report and merge read it from there. A record from before it derives what
// it can from the environment's text ("gpu", "cpu") and its keys, and says so (derived).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ampbench::results {

struct Device {
  // "gpu"; "cpu-emulation"; "mixed" (shards of several devices merged); "unknown" (a record
  // without an environment, or a writer that did not know)
  std::string kind = "unknown";
  std::string name;  // "NVIDIA H200"; for the CPU emulation, the CPU's model name
  std::optional<std::string> compute_capability;  // "9.0"
  std::optional<std::int64_t> sms;
  std::optional<std::int64_t> memory_bytes;
  std::optional<std::int64_t> sm_clock_mhz;  // the largest clock the driver reports
  std::optional<std::int64_t> memory_clock_mhz;
  // Versions the process loaded, "13.0.2"
  std::optional<std::string> driver, cuda_runtime, cublas, cudnn;
  // NVIDIA_TF32_OVERRIDE as the process saw it: its value, "unset", or nothing when unknown.
  std::optional<std::string> tf32_override;
  std::vector<std::string> mma;  // the Tensor Core models of the emulation's cases, sorted
  bool derived = false;          // from an old record's text, not recorded
};

// The emulation on this CPU with the given Tensor Core models.
Device cpu_emulation(std::string cpu, std::vector<std::string> mma);
// "NVIDIA H200 (sm 9.0)", "CPU emulation (mma=hopper) on CPU NAME", "mixed devices", "unknown
// device": what tells two devices apart (the kind, name, compute capability and models); the
// versions and clocks are not part of it.
std::string label_of(const Device& device);

nlohmann::json to_json(const Device& device);
// The device of a result document: environment.device when present (checked: a member of the
// wrong type is a ResultError naming `source` and the member), else derived from the
// environment's gpu and cpu text and the keys' "/mma=" parts.
Device device_of(const nlohmann::json& document, std::string_view source);
// The Tensor Core models named by keys' "/mma=NAME" parts, sorted, each once.
std::vector<std::string> mma_of_keys(const std::vector<std::string>& keys);

}  // namespace ampbench::results
