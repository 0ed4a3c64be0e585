#include <cstdio>
#include <string>
#include <utility>

#include "kernels/cuda_check.hpp"

namespace ampbench::kernels {
namespace {

std::string message(const std::string& file, int line, const std::string& call,
                    const std::string& name, const std::string& text) {
  return file + ":" + std::to_string(line) + ": " + call + " failed: " + name + ": " + text;
}

const char* or_unknown(const char* s) {
  return s != nullptr ? s : "(unknown)";
}

}  // namespace

std::string cupti_status_text(CUptiResult status) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuptiGetResultString(status, &name) != CUPTI_SUCCESS) name = nullptr;
  if (cuptiGetErrorMessage(status, &text) != CUPTI_SUCCESS) text = nullptr;
  return std::string(name != nullptr ? name : "unknown CUPTI status") +
         (text != nullptr ? std::string(": ") + text : std::string());
}

CudaError::CudaError(std::string library, int code, std::string name, std::string text,
                     std::string call, std::string file, int line)
    : std::runtime_error(message(file, line, call, name, text)),
      library_(std::move(library)),
      code_(code),
      name_(std::move(name)),
      text_(std::move(text)),
      call_(std::move(call)),
      file_(std::move(file)),
      line_(line) {}

namespace detail {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  // Reset the runtime's last-error state, so that a later cudaGetLastError (the check after a
  // kernel launch) does not report this failure a second time. Errors that corrupt the context
  // (an illegal address in a kernel, say) stay: every later call returns them.
  (void)cudaGetLastError();
  throw CudaError("CUDA", static_cast<int>(status), or_unknown(cudaGetErrorName(status)),
                  or_unknown(cudaGetErrorString(status)), call, file, line);
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  (void)cudaGetLastError();
  throw CudaError("cuBLAS", static_cast<int>(status), or_unknown(cublasGetStatusName(status)),
                  or_unknown(cublasGetStatusString(status)), call, file, line);
}

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  (void)cudaGetLastError();
  // cudnnGetErrorString gives the status's name; the last error string says what was wrong.
  std::string text;
  char detail[1024] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  text = detail[0] != '\0' ? detail : "no further detail from cuDNN";
  throw CudaError("cuDNN", static_cast<int>(status), or_unknown(cudnnGetErrorString(status)),
                  std::move(text), call, file, line);
}

void log_cuda_error(cudaError_t status, const char* call, const char* file, int line) noexcept {
  (void)cudaGetLastError();
  std::fprintf(stderr, "ampbench: %s:%d: %s failed: %s: %s\n", file, line, call,
               or_unknown(cudaGetErrorName(status)), or_unknown(cudaGetErrorString(status)));
}

void log_cublas_error(cublasStatus_t status, const char* call, const char* file,
                      int line) noexcept {
  std::fprintf(stderr, "ampbench: %s:%d: %s failed: %s: %s\n", file, line, call,
               or_unknown(cublasGetStatusName(status)), or_unknown(cublasGetStatusString(status)));
}

void log_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) noexcept {
  std::fprintf(stderr, "ampbench: %s:%d: %s failed: %s\n", file, line, call,
               or_unknown(cudnnGetErrorString(status)));
}

void log_cupti_error(CUptiResult status, const char* call, const char* file, int line) noexcept {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuptiGetResultString(status, &name) != CUPTI_SUCCESS) name = nullptr;
  if (cuptiGetErrorMessage(status, &text) != CUPTI_SUCCESS) text = nullptr;
  std::fprintf(stderr, "ampbench: %s:%d: %s failed (profiling continues without it): %s: %s\n",
               file, line, call, or_unknown(name), or_unknown(text));
}

}  // namespace detail
}  // namespace ampbench::kernels
