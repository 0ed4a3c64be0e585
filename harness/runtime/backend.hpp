// The backend registry: the backends' names (cpu, cuda, all) and how a --backend option reads
// them, which backends a request runs, the CUDA backend's state as the device probe finds it, and
// the rule for a request the device cannot serve. Every command of the command line and every
// embedding project select their backends here (docs/embedding.md). This header is installed; the
// probe and the CUDA backend's entry points, which need headers that are not, are in
// harness/runtime/cuda.hpp.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/results/device.hpp"

namespace ampbench::runtime {

// What a --backend option asks for: the CPU emulation, the GPU, or both (each case on both).
enum class Request { cpu, cuda, all };

// The requests a command accepts, in the order its messages list them: most take every one;
// those that run one backend at a time (profile, fingerprint) take cpu and cuda only.
inline constexpr std::array<Request, 3> kEveryRequest{Request::cpu, Request::cuda, Request::all};
inline constexpr std::array<Request, 2> kOneBackend{Request::cpu, Request::cuda};

// "cpu", "cuda", "all".
std::string_view name_of(Request request);

// A --backend value read against the requests a command accepts: the request, or the message
// that names the option, the value and the accepted names, "--backend: unknown backend 'tpu'
// (available: cpu, cuda, all)" (the command line puts the command's name in front).
struct ParsedRequest {
  std::optional<Request> request;
  std::string error;  // when there is no request
};
ParsedRequest parse_request(std::string_view value,
                            std::span<const Request> allowed = kEveryRequest,
                            std::string_view option = "--backend");

// Which backends run.
struct Selection {
  bool cpu = false;
  bool cuda = false;
  friend bool operator==(const Selection&, const Selection&) = default;
};
// What a request asks to run: cpu the CPU, cuda the GPU, all both.
Selection selection_of(Request request);
// The names of the selected backends in the order cases run on them: "cpu", then "cuda".
std::vector<std::string> names_of(Selection selection);

// The CUDA backend as a process finds it. Never probed (a request for the CPU alone): not
// available, and nothing said.
struct CudaStatus {
  bool available = false;
  std::string unavailable;  // why not, with the CUDA error's text and name where there is one
  nlohmann::json device;    // what a record says of the device (backends::cuda::device_record)
  // For a run's environment: the device in one line, or why there is none; the CUDA library
  // versions the process loaded.
  std::string gpu;
  std::string libraries;
  results::Device gpu_device;  // the device, structured, when available
};

// The status of a build without the CUDA backend: unavailable, saying so.
CudaStatus cuda_not_built();

// The backends a request runs, given the CUDA backend's status: the rule every command follows.
// cpu runs the CPU. cuda runs the GPU, or, without a usable device, nothing: `refusal` then says
// why ("--backend cuda: WHY") and the caller stops before any work (the command line with exit
// status 3, cli::kExitNoDevice). all runs both, or the CPU alone, and `cpu_alone` says why.
struct Opening {
  Selection runs;
  CudaStatus cuda;        // as given
  std::string refusal;    // non-empty: cuda asked for alone, and no usable device
  std::string cpu_alone;  // non-empty: all asked for, and no usable device
  bool refused() const { return !refusal.empty(); }
};
Opening opening_for(Request request, CudaStatus cuda);

}  // namespace ampbench::runtime
