// The CUDA backend as the commands see it, in every build: whether it can run here (the device
// probe, or the build's lack of CUDA), what the records say of the device, and the kernel of a
// plan. Only this file's implementation knows whether the build has CUDA.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "harness/audit/audit.hpp"
#include "harness/backends/cuda/plan.hpp"
#include "harness/fingerprint/fingerprint.hpp"
#include "harness/numeric/mma.hpp"
#include "harness/results/device.hpp"
#include "harness/train/trainer.hpp"

namespace ampbench::cli {

struct CudaBackend {
  bool available = false;
  std::string unavailable;  // why not, with the CUDA error's text and name where there is one
  nlohmann::json device;    // backends::cuda::device_record, when available
  // For a run's environment: the device in one line, or why there is none; the CUDA library
  // versions this process loaded.
  std::string gpu;
  std::string libraries;
  results::Device gpu_device;  // the device, structured, when available
};

// Probes the device (making its context): never throws.
CudaBackend open_cuda_backend();

// The device for a command's --backend cpu|cuda|all, probed only when the GPU is asked for (cpu
// gets a CudaBackend that is not available and says nothing). Without a usable device cuda is
// refused: "COMMAND: --backend cuda: WHY" goes to `err` and the result is empty, for the caller to
// exit with kExitNoDevice; all goes on with the CPU alone (`unavailable` says why).
std::optional<CudaBackend> open_for_backend(std::string_view command, std::string_view backend,
                                            std::ostream& err);

// backends::cuda::make_kernel; only to be called when open_cuda_backend() found a device (a build
// without CUDA throws std::logic_error).
audit::Kernel cuda_kernel(const ops::OpInfo& op, const ops::Shape& shape,
                          const backends::cuda::Plan& plan, nlohmann::json* detail);

// backends::cuda::train_on_device and profile_on_device (the latter with NVTX ranges around every
// phase, and with hardware_metrics the CUPTI range profiler's counters); likewise only after
// open_cuda_backend() found a device.
// `both`: backends::cuda::train_on_device_and_cpu, each policy on the CPU and on the device.
train::TrainResult cuda_train(const train::TrainConfig& config, const train::Dataset& train_set,
                              const train::Dataset& eval_set,
                              const std::function<void(std::size_t)>& progress, bool both = false);
train::ProfileResult cuda_profile(const train::TrainConfig& config, const train::Dataset& train_set,
                                  std::size_t warmup, bool hardware_metrics = false);

// The fingerprint's executor on the device's matrix units (kernels::make_mma_executor) for an
// instruction "auto", "mma" or "wgmma", and the device's architecture as
// fingerprint::mma_architecture names it ("" when it names none); likewise only after
// open_cuda_backend() found a device. Throws std::invalid_argument where no kernel exists for the
// combination, std::runtime_error (CudaError included) where the device cannot run it.
struct MmaExecutor {
  std::unique_ptr<fingerprint::Executor> executor;
  std::string arch;
};
MmaExecutor cuda_mma_executor(const numeric::Format& input, numeric::MmaAccumulator accumulator,
                              std::string_view instruction);

}  // namespace ampbench::cli
