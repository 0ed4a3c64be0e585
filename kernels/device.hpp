// The GPU this process would use and the CUDA libraries it loaded, as plain data: callable from
// plain C++ (no CUDA header), and safe on a machine with no GPU or no driver.
#pragma once

#include <cstddef>
#include <string>

namespace ampbench::kernels {

struct DeviceStatus {
  bool available = false;  // a device exists and a context could be made on it
  std::string error;       // why none is usable: the CUDA error's text and name; empty if usable
  int device_count = 0;
  // The rest describe the current device (0 unless the process chose another) when available.
  int device = 0;
  std::string name;       // e.g. "NVIDIA H200"
  int compute_major = 0;  // compute capability, e.g. 9.0
  int compute_minor = 0;
  int multiprocessors = 0;
  std::size_t memory_bytes = 0;  // global memory
  int clock_khz = 0;             // the SM clock's peak (cudaDevAttrClockRate), 0 when not given
  int memory_clock_khz = 0;      // the memory clock's peak (cudaDevAttrMemoryClockRate)
  int driver_version = 0;        // CUDA version the driver supports, 1000*major + 10*minor
  int runtime_version = 0;       // the loaded CUDA runtime's version, same encoding
};

// Looks for a usable CUDA device. Never throws: a missing GPU or driver is reported in `error`.
// Makes the device's primary context (the first CUDA call's cost, a fraction of a second).
DeviceStatus probe_device() noexcept;

struct Version {
  int major = 0;
  int minor = 0;
  int patch = 0;
};

// Versions of the CUDA libraries this process loaded (not the headers it was built with). All
// are read without a GPU; cuda_driver is 0.0 where no driver is installed.
struct LibraryVersions {
  Version cuda_runtime;    // cudaRuntimeGetVersion
  Version cuda_driver;     // cudaDriverGetVersion: the newest CUDA version the driver supports
  Version cublas;          // cublasGetProperty
  Version cudnn;           // cudnnGetVersion
  unsigned cupti_api = 0;  // cuptiGetVersion: CUPTI's API version (e.g. 130001), not a release
};

LibraryVersions library_versions() noexcept;

std::string to_string(const Version& v);  // "13.0.2"
// One line for `ampbench --version`, e.g.
//   "CUDA runtime 13.0.0, driver 13.0.0, cuBLAS 13.1.0, cuDNN 9.19.0, CUPTI API 130001"
// ("driver none" where no driver is installed).
std::string describe(const LibraryVersions& versions);
// One line: "NVIDIA H200, compute capability 9.0, 132 SMs, 139.8 GiB" or "no CUDA device: ...".
std::string describe(const DeviceStatus& status);

}  // namespace ampbench::kernels
