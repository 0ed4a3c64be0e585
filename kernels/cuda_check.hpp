// Checking the status of CUDA runtime, cuBLAS, cuDNN and CUPTI calls: one family of macros.
//
//   AMPBENCH_CUDA_CHECK(cudaMalloc(&p, bytes));      throws CudaError when the call fails
//   AMPBENCH_CUBLAS_CHECK(cublasCreate(&handle));     likewise for cuBLAS
//   AMPBENCH_CUDNN_CHECK(cudnnCreate(&handle));       likewise for cuDNN
//   AMPBENCH_CUDA_CHECK_NOTHROW(cudaFree(p));         logs to stderr: for destructors
//   AMPBENCH_CUBLAS_CHECK_NOTHROW(cublasLtDestroy(h)); likewise for cuBLAS
//   AMPBENCH_CUDNN_CHECK_NOTHROW(cudnnDestroy(h));    likewise for cuDNN
//   if (!AMPBENCH_CUPTI_CHECK(cuptiActivityFlushAll(0))) return;   logs, evaluates to false
//
// Profiling must degrade rather than abort, hence CUPTI failures are not exceptions. The macros
// only test the status; building the message and throwing happen out of line, in cuda_check.cu.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cudnn_graph.h>
#include <cupti_result.h>

#include <stdexcept>
#include <string>

namespace ampbench::kernels {

// A failed call to a CUDA library. what() reads
//   "kernels/device.cu:42: cudaMalloc(&p, bytes) failed: cudaErrorMemoryAllocation: out of memory"
class CudaError : public std::runtime_error {
 public:
  CudaError(std::string library, int code, std::string name, std::string text, std::string call,
            std::string file, int line);

  const std::string& library() const { return library_; }  // "CUDA", "cuBLAS", "cuDNN"
  int code() const { return code_; }                       // the status as an integer
  const std::string& name() const { return name_; }        // e.g. "cudaErrorMemoryAllocation"
  const std::string& text() const { return text_; }        // the library's description
  const std::string& call() const { return call_; }        // the failing call, as written
  const std::string& file() const { return file_; }
  int line() const { return line_; }

 private:
  std::string library_;
  int code_;
  std::string name_;
  std::string text_;
  std::string call_;
  std::string file_;
  int line_;
};

// A CUPTI status as words: its name and CUPTI's message, e.g.
// "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: ...".
std::string cupti_status_text(CUptiResult status);

namespace detail {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                   int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file,
                                     int line);
[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file,
                                    int line);
void log_cuda_error(cudaError_t status, const char* call, const char* file, int line) noexcept;
void log_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) noexcept;
void log_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) noexcept;
void log_cupti_error(CUptiResult status, const char* call, const char* file, int line) noexcept;

inline bool cupti_ok(CUptiResult status, const char* call, const char* file, int line) noexcept {
  if (status == CUPTI_SUCCESS) return true;
  log_cupti_error(status, call, file, line);
  return false;
}

}  // namespace detail
}  // namespace ampbench::kernels

#define AMPBENCH_CUDA_CHECK(call)                                                            \
  do {                                                                                       \
    const cudaError_t ampbench_check_status_ = (call);                                       \
    if (ampbench_check_status_ != cudaSuccess) {                                             \
      ::ampbench::kernels::detail::throw_cuda_error(ampbench_check_status_, #call, __FILE__, \
                                                    __LINE__);                               \
    }                                                                                        \
  } while (false)

#define AMPBENCH_CUBLAS_CHECK(call)                                                            \
  do {                                                                                         \
    const cublasStatus_t ampbench_check_status_ = (call);                                      \
    if (ampbench_check_status_ != CUBLAS_STATUS_SUCCESS) {                                     \
      ::ampbench::kernels::detail::throw_cublas_error(ampbench_check_status_, #call, __FILE__, \
                                                      __LINE__);                               \
    }                                                                                          \
  } while (false)

#define AMPBENCH_CUDNN_CHECK(call)                                                            \
  do {                                                                                        \
    const cudnnStatus_t ampbench_check_status_ = (call);                                      \
    if (ampbench_check_status_ != CUDNN_STATUS_SUCCESS) {                                     \
      ::ampbench::kernels::detail::throw_cudnn_error(ampbench_check_status_, #call, __FILE__, \
                                                     __LINE__);                               \
    }                                                                                         \
  } while (false)

// For destructors and other places that must not throw: logs the failure to stderr.
#define AMPBENCH_CUDA_CHECK_NOTHROW(call)                                                  \
  do {                                                                                     \
    const cudaError_t ampbench_check_status_ = (call);                                     \
    if (ampbench_check_status_ != cudaSuccess) {                                           \
      ::ampbench::kernels::detail::log_cuda_error(ampbench_check_status_, #call, __FILE__, \
                                                  __LINE__);                               \
    }                                                                                      \
  } while (false)

#define AMPBENCH_CUBLAS_CHECK_NOTHROW(call)                                                  \
  do {                                                                                       \
    const cublasStatus_t ampbench_check_status_ = (call);                                    \
    if (ampbench_check_status_ != CUBLAS_STATUS_SUCCESS) {                                   \
      ::ampbench::kernels::detail::log_cublas_error(ampbench_check_status_, #call, __FILE__, \
                                                    __LINE__);                               \
    }                                                                                        \
  } while (false)

#define AMPBENCH_CUDNN_CHECK_NOTHROW(call)                                                  \
  do {                                                                                      \
    const cudnnStatus_t ampbench_check_status_ = (call);                                    \
    if (ampbench_check_status_ != CUDNN_STATUS_SUCCESS) {                                   \
      ::ampbench::kernels::detail::log_cudnn_error(ampbench_check_status_, #call, __FILE__, \
                                                   __LINE__);                               \
    }                                                                                       \
  } while (false)

// An expression: true when the CUPTI call succeeded; otherwise logs to stderr and gives false.
#define AMPBENCH_CUPTI_CHECK(call) \
  (::ampbench::kernels::detail::cupti_ok((call), #call, __FILE__, __LINE__))
