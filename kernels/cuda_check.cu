#include <cstdio>
#include <exception>
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

// A CUDA error pending in the runtime when a cuBLAS or cuDNN call failed, as words to append to
// that failure's description ("" when none): often the real cause (a kernel's fault reported by
// the next call), so it is reported with the library's status rather than silently cleared. It is
// taken (cudaGetLastError), so that it does not surface again as some later call's failure.
std::string pending_cuda_error() {
  const cudaError_t pending = cudaGetLastError();
  if (pending == cudaSuccess) return "";
  return std::string(" (pending CUDA error: ") + or_unknown(cudaGetErrorName(pending)) + ": " +
         or_unknown(cudaGetErrorString(pending)) + ")";
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
  throw CudaError("cuBLAS", static_cast<int>(status), or_unknown(cublasGetStatusName(status)),
                  or_unknown(cublasGetStatusString(status)) + pending_cuda_error(), call, file,
                  line);
}

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  // cudnnGetErrorString gives the status's name; the last error string says what was wrong.
  char detail[1024] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string text = detail[0] != '\0' ? detail : "no further detail from cuDNN";
  throw CudaError("cuDNN", static_cast<int>(status), or_unknown(cudnnGetErrorString(status)),
                  text + pending_cuda_error(), call, file, line);
}

void log_cuda_error(cudaError_t status, const char* call, const char* file, int line) noexcept {
  (void)cudaGetLastError();
  std::fprintf(stderr, "ampbench: %s:%d: %s failed: %s: %s\n", file, line, call,
               or_unknown(cudaGetErrorName(status)), or_unknown(cudaGetErrorString(status)));
}

void log_cublas_error(cublasStatus_t status, const char* call, const char* file,
                      int line) noexcept {
  std::string pending;
  try {
    pending = pending_cuda_error();
  } catch (const std::exception&) {  // out of memory for the words: the status alone
  }
  std::fprintf(stderr, "ampbench: %s:%d: %s failed: %s: %s%s\n", file, line, call,
               or_unknown(cublasGetStatusName(status)), or_unknown(cublasGetStatusString(status)),
               pending.c_str());
}

void log_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) noexcept {
  std::string pending;
  try {
    pending = pending_cuda_error();
  } catch (const std::exception&) {  // likewise
  }
  std::fprintf(stderr, "ampbench: %s:%d: %s failed: %s%s\n", file, line, call,
               or_unknown(cudnnGetErrorString(status)), pending.c_str());
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
