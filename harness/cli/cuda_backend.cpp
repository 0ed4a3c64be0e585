#include "harness/cli/cuda_backend.hpp"

#include <fmt/format.h>

#include <stdexcept>

#if AMPBENCH_HAVE_CUDA
#include "harness/backends/cuda/kernel.hpp"
#include "harness/backends/cuda/train.hpp"
#include "kernels/device.hpp"
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

#else

CudaBackend open_cuda_backend() {
  return {false,
          "this build has no CUDA backend (configure with the CUDA toolkit)",
          {},
          "not probed: this build has no CUDA backend",
          "none: this build has no CUDA backend"};
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

#endif

}  // namespace ampbench::cli
