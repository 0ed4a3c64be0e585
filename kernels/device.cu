#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cudnn_graph.h>
#include <cupti_version.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "kernels/device.hpp"
#include "kernels/nvtx.hpp"

namespace ampbench::kernels {
namespace {

// CUDA's encoding of its own versions: 1000 * major + 10 * minor.
Version from_cuda(int v) {
  return Version{v / 1000, (v % 1000) / 10, 0};
}

// Text and name of a failed call's status; clears the runtime's last error so that it does not
// surface later as some other call's failure.
std::string error_text(cudaError_t status) {
  (void)cudaGetLastError();
  const char* text = cudaGetErrorString(status);
  const char* name = cudaGetErrorName(status);
  return std::string(text != nullptr ? text : "unknown CUDA error") + " (" +
         (name != nullptr ? name : "?") + ")";
}

}  // namespace

DeviceStatus probe_device() noexcept {
  const NvtxRange range("ampbench::probe_device");
  DeviceStatus s;
  cudaRuntimeGetVersion(&s.runtime_version);
  cudaDriverGetVersion(&s.driver_version);

  if (const cudaError_t e = cudaGetDeviceCount(&s.device_count); e != cudaSuccess) {
    s.device_count = 0;
    s.error = error_text(e);
    return s;
  }
  if (s.device_count == 0) {
    s.error = "cudaGetDeviceCount found no device";
    return s;
  }
  if (const cudaError_t e = cudaGetDevice(&s.device); e != cudaSuccess) {
    s.error = error_text(e);
    return s;
  }
  cudaDeviceProp prop{};
  if (const cudaError_t e = cudaGetDeviceProperties(&prop, s.device); e != cudaSuccess) {
    s.error = error_text(e);
    return s;
  }
  s.name = prop.name;
  s.compute_major = prop.major;
  s.compute_minor = prop.minor;
  s.multiprocessors = prop.multiProcessorCount;
  s.memory_bytes = prop.totalGlobalMem;
  // Clocks are informative: a driver that does not give them leaves them 0 (unknown).
  if (cudaDeviceGetAttribute(&s.clock_khz, cudaDevAttrClockRate, s.device) != cudaSuccess ||
      cudaDeviceGetAttribute(&s.memory_clock_khz, cudaDevAttrMemoryClockRate, s.device) !=
          cudaSuccess) {
    (void)cudaGetLastError();
    s.clock_khz = s.memory_clock_khz = 0;
  }
  // A device can be listed yet unusable (exclusive mode and busy, too little memory for a context,
  // a kernel image missing): making its context is the test.
  if (const cudaError_t e = cudaSetDevice(s.device); e != cudaSuccess) {
    s.error = error_text(e);
    return s;
  }
  if (const cudaError_t e = cudaFree(nullptr); e != cudaSuccess) {
    s.error = error_text(e);
    return s;
  }
  s.available = true;
  return s;
}

LibraryVersions library_versions() noexcept {
  LibraryVersions v;
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) v.cuda_runtime = from_cuda(runtime);
  int driver = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess) v.cuda_driver = from_cuda(driver);
  (void)cudaGetLastError();

  int part = 0;
  if (cublasGetProperty(MAJOR_VERSION, &part) == CUBLAS_STATUS_SUCCESS) v.cublas.major = part;
  if (cublasGetProperty(MINOR_VERSION, &part) == CUBLAS_STATUS_SUCCESS) v.cublas.minor = part;
  if (cublasGetProperty(PATCH_LEVEL, &part) == CUBLAS_STATUS_SUCCESS) v.cublas.patch = part;

  // cuDNN 9 encodes its version as 10000 * major + 100 * minor + patch.
  const auto cudnn = static_cast<int>(cudnnGetVersion());
  v.cudnn = Version{cudnn / 10000, (cudnn % 10000) / 100, cudnn % 100};

  std::uint32_t cupti = 0;
  if (cuptiGetVersion(&cupti) == CUPTI_SUCCESS) v.cupti_api = cupti;
  return v;
}

std::string to_string(const Version& v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
}

std::string describe(const LibraryVersions& v) {
  const bool has_driver = v.cuda_driver.major != 0;
  return "CUDA runtime " + to_string(v.cuda_runtime) + ", driver " +
         (has_driver ? to_string(v.cuda_driver) : std::string("none")) + ", cuBLAS " +
         to_string(v.cublas) + ", cuDNN " + to_string(v.cudnn) + ", CUPTI API " +
         std::to_string(v.cupti_api);
}

std::string describe(const DeviceStatus& s) {
  if (!s.available) return "no CUDA device: " + s.error;
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB",
                static_cast<double>(s.memory_bytes) / (1024.0 * 1024.0 * 1024.0));
  return s.name + ", compute capability " + std::to_string(s.compute_major) + "." +
         std::to_string(s.compute_minor) + ", " + std::to_string(s.multiprocessors) + " SMs, " +
         memory;
}

}  // namespace ampbench::kernels
