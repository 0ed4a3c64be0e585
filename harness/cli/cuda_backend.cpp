#include "harness/cli/cuda_backend.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>

#if AMPBENCH_HAVE_CUDA
#include "harness/backends/cuda/kernel.hpp"
#include "harness/backends/cuda/train.hpp"
#include "kernels/device.hpp"
#include "kernels/mma_executor.hpp"
#endif

namespace ampbench::cli {

std::optional<CudaBackend> open_for_backend(std::string_view command, std::string_view backend,
                                            std::ostream& err) {
  if (backend == "cpu") return CudaBackend{};
  CudaBackend cuda = open_cuda_backend();
  if (!cuda.available && backend == "cuda") {
    err << fmt::format("{}: --backend cuda: {}\n", command, cuda.unavailable);
    return std::nullopt;
  }
  return cuda;
}

#if AMPBENCH_HAVE_CUDA

namespace {

results::Device structured(const kernels::DeviceStatus& status,
                           const kernels::LibraryVersions& versions) {
  results::Device d;
  d.kind = "gpu";
  d.name = status.name;
  d.compute_capability = fmt::format("{}.{}", status.compute_major, status.compute_minor);
  d.sms = status.multiprocessors;
  d.memory_bytes = static_cast<std::int64_t>(status.memory_bytes);
  if (status.clock_khz > 0) d.sm_clock_mhz = status.clock_khz / 1000;
  if (status.memory_clock_khz > 0) d.memory_clock_mhz = status.memory_clock_khz / 1000;
  d.driver = kernels::to_string(versions.cuda_driver);
  d.cuda_runtime = kernels::to_string(versions.cuda_runtime);
  d.cublas = kernels::to_string(versions.cublas);
  d.cudnn = kernels::to_string(versions.cudnn);
  const char* tf32 = std::getenv("NVIDIA_TF32_OVERRIDE");
  d.tf32_override = tf32 == nullptr ? "unset" : tf32;
  return d;
}

}  // namespace

CudaBackend open_cuda_backend() {
  const kernels::DeviceStatus status = kernels::probe_device();
  CudaBackend backend;
  backend.available = status.available;
  backend.gpu = kernels::describe(status);
  backend.libraries = kernels::describe(kernels::library_versions());
  if (!status.available) {
    backend.unavailable = "no usable CUDA device: " + status.error;
    return backend;
  }
  backend.device = backends::cuda::device_record(status, kernels::library_versions());
  backend.gpu_device = structured(status, kernels::library_versions());
  return backend;
}

audit::Kernel cuda_kernel(const ops::OpInfo& op, const ops::Shape& shape,
                          const backends::cuda::Plan& plan, nlohmann::json* detail) {
  return backends::cuda::make_kernel(op, shape, plan, detail);
}

train::TrainResult cuda_train(const train::TrainConfig& config, const train::Dataset& train_set,
                              const train::Dataset& eval_set,
                              const std::function<void(std::size_t)>& progress, bool both) {
  return both ? backends::cuda::train_on_device_and_cpu(config, train_set, eval_set, progress)
              : backends::cuda::train_on_device(config, train_set, eval_set, progress);
}

train::ProfileResult cuda_profile(const train::TrainConfig& config, const train::Dataset& train_set,
                                  std::size_t warmup, bool hardware_metrics) {
  return backends::cuda::profile_on_device(config, train_set, warmup, hardware_metrics);
}

MmaExecutor cuda_mma_executor(const numeric::Format& input, numeric::MmaAccumulator accumulator,
                              std::string_view instruction) {
  const kernels::DeviceStatus device = kernels::probe_device();
  const char* arch = fingerprint::mma_architecture(device.compute_major, device.compute_minor);
  const auto kind = instruction == "mma"     ? kernels::MmaInstruction::mma
                    : instruction == "wgmma" ? kernels::MmaInstruction::wgmma
                                             : kernels::MmaInstruction::automatic;
  return {kernels::make_mma_executor(input, accumulator, kind), arch == nullptr ? "" : arch};
}

#else

CudaBackend open_cuda_backend() {
  return {false,
          "this build has no CUDA backend (configure with the CUDA toolkit)",
          {},
          "not probed: this build has no CUDA backend",
          "none: this build has no CUDA backend",
          {}};
}

audit::Kernel cuda_kernel(const ops::OpInfo&, const ops::Shape&, const backends::cuda::Plan&,
                          nlohmann::json*) {
  throw std::logic_error("cuda_kernel: this build has no CUDA backend");
}

train::TrainResult cuda_train(const train::TrainConfig&, const train::Dataset&,
                              const train::Dataset&, const std::function<void(std::size_t)>&,
                              bool) {
  throw std::logic_error("cuda_train: this build has no CUDA backend");
}

train::ProfileResult cuda_profile(const train::TrainConfig&, const train::Dataset&, std::size_t,
                                  bool) {
  throw std::logic_error("cuda_profile: this build has no CUDA backend");
}

MmaExecutor cuda_mma_executor(const numeric::Format&, numeric::MmaAccumulator, std::string_view) {
  throw std::logic_error("cuda_mma_executor: this build has no CUDA backend");
}

#endif

}  // namespace ampbench::cli
