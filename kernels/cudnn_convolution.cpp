#include "kernels/cudnn_convolution.hpp"

#include <cudnn.h>

#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/device_buffer.hpp"

namespace ampbench::kernels {
namespace {

// An owned cuDNN descriptor: created in the constructor, destroyed once; a failure to destroy is
// logged, never thrown.
template <typename Descriptor, cudnnStatus_t (*Create)(Descriptor*),
          cudnnStatus_t (*Destroy)(Descriptor)>
class CudnnDescriptor {
 public:
  CudnnDescriptor() { AMPBENCH_CUDNN_CHECK(Create(&descriptor_)); }
  ~CudnnDescriptor() {
    if (descriptor_ != nullptr) AMPBENCH_CUDNN_CHECK_NOTHROW(Destroy(descriptor_));
  }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;

  Descriptor get() const { return descriptor_; }

 private:
  Descriptor descriptor_ = nullptr;
};
using TensorDescriptor = CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                                         cudnnDestroyTensorDescriptor>;
using FilterDescriptor = CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                                         cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                    cudnnDestroyConvolutionDescriptor>;

cudnnDataType_t data_type(DType type) {
  switch (type) {
    case DType::f32: return CUDNN_DATA_FLOAT;
    case DType::f16: return CUDNN_DATA_HALF;
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
  }
  throw std::logic_error("unknown element type");
}

cudnnMathType_t to_cudnn(ConvolutionMath math) {
  switch (math) {
    case ConvolutionMath::default_math: return CUDNN_DEFAULT_MATH;
    case ConvolutionMath::tensor_op: return CUDNN_TENSOR_OP_MATH;
    case ConvolutionMath::tensor_op_allow_conversion: return CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    case ConvolutionMath::fma: return CUDNN_FMA_MATH;
  }
  throw std::logic_error("unknown math type");
}

// None for a math type newer than this code: never permitted, so never run.
std::optional<ConvolutionMath> from_cudnn(cudnnMathType_t math) {
  for (const ConvolutionMath m : kConvolutionMaths) {
    if (to_cudnn(m) == math) return m;
  }
  return std::nullopt;
}

std::string math_text(cudnnMathType_t math) {
  const std::optional<ConvolutionMath> known = from_cudnn(math);
  return known ? std::string(math_enumerator(*known))
               : "math type " + std::to_string(static_cast<int>(math));
}

// The descriptors of one call and the handle they are used with.
struct Call {
  cudnnHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  TensorDescriptor x;
  FilterDescriptor w;
  TensorDescriptor y;
  ConvolutionDescriptor convolution;
};

// What differs between the three passes: the heuristic, the workspace query, the call, the
// algorithm enumeration. The rest (choice, workspace, launch) is run_pass's.
struct Forward {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  using Algorithm = cudnnConvolutionFwdAlgo_t;
  static constexpr std::string_view kPrefix = "CUDNN_CONVOLUTION_FWD_ALGO_";
  static constexpr std::array<std::string_view, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> kNames = {
      "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
      "WINOGRAD",      "WINOGRAD_NONFUSED"};
  static constexpr std::string_view kWhat = "forward";

  static std::vector<Perf> heuristic(const Call& c) {
    int count = 0;
    AMPBENCH_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(c.handle, &count));
    std::vector<Perf> perf(static_cast<std::size_t>(count));
    int returned = 0;
    AMPBENCH_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(c.handle, c.x.get(), c.w.get(),
                                                                c.convolution.get(), c.y.get(),
                                                                count, &returned, perf.data()));
    perf.resize(static_cast<std::size_t>(returned));
    return perf;
  }
  static std::size_t workspace(const Call& c, Algorithm algorithm) {
    std::size_t bytes = 0;
    AMPBENCH_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
        c.handle, c.x.get(), c.w.get(), c.convolution.get(), c.y.get(), algorithm, &bytes));
    return bytes;
  }
  // (first, second, out) = (x, w, y)
  static void run(const Call& c, Algorithm algorithm, void* workspace, std::size_t bytes,
                  const void* first, const void* second, void* out) {
    const float one = 1.0F, zero = 0.0F;  // cuDNN's scaling factors are float for all but double
    AMPBENCH_CUDNN_CHECK(cudnnConvolutionForward(c.handle, &one, c.x.get(), first, c.w.get(),
                                                 second, c.convolution.get(), algorithm, workspace,
                                                 bytes, &zero, c.y.get(), out));
  }
};

struct BackwardData {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  using Algorithm = cudnnConvolutionBwdDataAlgo_t;
  static constexpr std::string_view kPrefix = "CUDNN_CONVOLUTION_BWD_DATA_ALGO_";
  static constexpr std::array<std::string_view, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> kNames = {
      "0", "1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static constexpr std::string_view kWhat = "backward data";

  static std::vector<Perf> heuristic(const Call& c) {
    int count = 0;
    AMPBENCH_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(c.handle, &count));
    std::vector<Perf> perf(static_cast<std::size_t>(count));
    int returned = 0;
    AMPBENCH_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        c.handle, c.w.get(), c.y.get(), c.convolution.get(), c.x.get(), count, &returned,
        perf.data()));
    perf.resize(static_cast<std::size_t>(returned));
    return perf;
  }
  static std::size_t workspace(const Call& c, Algorithm algorithm) {
    std::size_t bytes = 0;
    AMPBENCH_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
        c.handle, c.w.get(), c.y.get(), c.convolution.get(), c.x.get(), algorithm, &bytes));
    return bytes;
  }
  // (first, second, out) = (dy, w, dx)
  static void run(const Call& c, Algorithm algorithm, void* workspace, std::size_t bytes,
                  const void* first, const void* second, void* out) {
    const float one = 1.0F, zero = 0.0F;
    AMPBENCH_CUDNN_CHECK(cudnnConvolutionBackwardData(c.handle, &one, c.w.get(), second, c.y.get(),
                                                      first, c.convolution.get(), algorithm,
                                                      workspace, bytes, &zero, c.x.get(), out));
  }
};

struct BackwardFilter {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  using Algorithm = cudnnConvolutionBwdFilterAlgo_t;
  static constexpr std::string_view kPrefix = "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_";
  static constexpr std::array<std::string_view, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT> kNames = {
      "0", "1", "FFT", "3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};
  static constexpr std::string_view kWhat = "backward filter";

  static std::vector<Perf> heuristic(const Call& c) {
    int count = 0;
    AMPBENCH_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(c.handle, &count));
    std::vector<Perf> perf(static_cast<std::size_t>(count));
    int returned = 0;
    AMPBENCH_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        c.handle, c.x.get(), c.y.get(), c.convolution.get(), c.w.get(), count, &returned,
        perf.data()));
    perf.resize(static_cast<std::size_t>(returned));
    return perf;
  }
  static std::size_t workspace(const Call& c, Algorithm algorithm) {
    std::size_t bytes = 0;
    AMPBENCH_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        c.handle, c.x.get(), c.y.get(), c.convolution.get(), c.w.get(), algorithm, &bytes));
    return bytes;
  }
  // (first, second, out) = (x, dy, dw)
  static void run(const Call& c, Algorithm algorithm, void* workspace, std::size_t bytes,
                  const void* first, const void* second, void* out) {
    const float one = 1.0F, zero = 0.0F;
    AMPBENCH_CUDNN_CHECK(cudnnConvolutionBackwardFilter(c.handle, &one, c.x.get(), first, c.y.get(),
                                                        second, c.convolution.get(), algorithm,
                                                        workspace, bytes, &zero, c.w.get(), out));
  }
};

template <class Pass>
std::string algorithm_name(int algorithm) {
  const auto index = static_cast<std::size_t>(algorithm);
  return std::string(Pass::kPrefix) + (index < Pass::kNames.size()
                                           ? std::string(Pass::kNames[index])
                                           : "UNKNOWN_" + std::to_string(algorithm));
}

// The heuristic's list as the error message shows it.
template <class Pass>
std::string describe(const std::vector<typename Pass::Perf>& offered) {
  std::string text;
  for (const auto& p : offered) {
    text += (text.empty() ? "" : "; ") + algorithm_name<Pass>(static_cast<int>(p.algo)) + " (" +
            cudnnGetErrorString(p.status) + ", " + math_text(p.mathType) + ", " +
            std::to_string(p.memory) + " bytes)";
  }
  return text.empty() ? "nothing" : text;
}

template <class Pass>
ConvolutionRun run_pass(const Call& c, const ConvolutionConfig& config, const void* first,
                        const void* second, void* out) {
  const std::vector<typename Pass::Perf> offered = Pass::heuristic(c);
  for (std::size_t rank = 0; rank < offered.size(); ++rank) {
    const typename Pass::Perf& p = offered[rank];
    const std::optional<ConvolutionMath> math = from_cudnn(p.mathType);
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > config.max_workspace_bytes || !math ||
        !math_permits(config.math, *math)) {
      continue;
    }
    ConvolutionRun run;
    run.algorithm = static_cast<int>(p.algo);
    run.algorithm_name = algorithm_name<Pass>(run.algorithm);
    run.heuristic_rank = static_cast<int>(rank);
    run.requested_math = config.math;
    run.math = *math;
    run.tensor_op_math = run.math == ConvolutionMath::tensor_op ||
                         run.math == ConvolutionMath::tensor_op_allow_conversion;
    run.deterministic = p.determinism == CUDNN_DETERMINISTIC;
    // cuDNN 7.4 and later pick the kernel from the algorithm and the descriptor's math type
    // together: the entry's math type goes on the descriptor (PyTorch's Conv_v7.cpp does the same,
    // "Note [behavior of cudnnFind and cudnnGet]").
    AMPBENCH_CUDNN_CHECK(cudnnSetConvolutionMathType(c.convolution.get(), p.mathType));
    run.workspace_bytes = Pass::workspace(c, p.algo);
    if (run.workspace_bytes > config.max_workspace_bytes) {
      throw std::runtime_error(run.algorithm_name + " needs " +
                               std::to_string(run.workspace_bytes) +
                               " bytes of workspace, more than the heuristic said (" +
                               std::to_string(p.memory) + ") and the limit allows");
    }
    const DeviceBuffer<std::byte> workspace(run.workspace_bytes);
    Pass::run(c, p.algo, workspace.data(), run.workspace_bytes, first, second, out);
    // Synchronous: the workspace is freed on return, and a fault surfaces here, at this call.
    AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(c.stream));
    return run;
  }
  throw std::runtime_error("cuDNN offers no " + std::string(Pass::kWhat) +
                           " convolution algorithm that succeeds with a math type " +
                           std::string(math_enumerator(config.math)) + " permits within " +
                           std::to_string(config.max_workspace_bytes) +
                           " bytes of workspace; it offered " + describe<Pass>(offered));
}

}  // namespace

CudnnHandle::CudnnHandle(cudaStream_t stream) : stream_(stream) {
  AMPBENCH_CUDNN_CHECK(cudnnCreate(&handle_));
  try {
    AMPBENCH_CUDNN_CHECK(cudnnSetStream(handle_, stream));
  } catch (...) {
    AMPBENCH_CUDNN_CHECK_NOTHROW(cudnnDestroy(handle_));
    throw;
  }
}

CudnnHandle::~CudnnHandle() {
  if (handle_ != nullptr) AMPBENCH_CUDNN_CHECK_NOTHROW(cudnnDestroy(handle_));
}

ConvolutionRun run_convolution(const CudnnHandle& handle, const ConvolutionConfig& config,
                               const void* first, const void* second, void* out) {
  const ConvolutionShape& s = config.shape;
  const cudnnDataType_t type = data_type(config.data);
  Call c;
  c.handle = handle.get();
  c.stream = handle.stream();
  AMPBENCH_CUDNN_CHECK(cudnnSetTensor4dDescriptor(c.x.get(), CUDNN_TENSOR_NCHW, type, s.x[0],
                                                  s.x[1], s.x[2], s.x[3]));
  AMPBENCH_CUDNN_CHECK(cudnnSetFilter4dDescriptor(c.w.get(), type, CUDNN_TENSOR_NCHW, s.w[0],
                                                  s.w[1], s.w[2], s.w[3]));
  AMPBENCH_CUDNN_CHECK(cudnnSetTensor4dDescriptor(c.y.get(), CUDNN_TENSOR_NCHW, type, s.y[0],
                                                  s.y[1], s.y[2], s.y[3]));
  AMPBENCH_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      c.convolution.get(), s.pad[0], s.pad[1], s.stride[0], s.stride[1], s.dilation[0],
      s.dilation[1], CUDNN_CROSS_CORRELATION, data_type(config.compute)));
  AMPBENCH_CUDNN_CHECK(cudnnSetConvolutionGroupCount(c.convolution.get(), s.groups));
  AMPBENCH_CUDNN_CHECK(cudnnSetConvolutionMathType(c.convolution.get(), to_cudnn(config.math)));

  // The caller's y must be the one cuDNN computes for x, w and the convolution: a mismatch is a
  // planning mistake, never something to run with.
  std::array<int, 4> y{};
  AMPBENCH_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(
      c.convolution.get(), c.x.get(), c.w.get(), &y[0], &y[1], &y[2], &y[3]));
  if (y != s.y) {
    throw std::logic_error("cuDNN's output is " + std::to_string(y[0]) + "x" +
                           std::to_string(y[1]) + "x" + std::to_string(y[2]) + "x" +
                           std::to_string(y[3]) + ", not the planned " + std::to_string(s.y[0]) +
                           "x" + std::to_string(s.y[1]) + "x" + std::to_string(s.y[2]) + "x" +
                           std::to_string(s.y[3]));
  }
  switch (config.pass) {
    case ConvolutionPass::forward: return run_pass<Forward>(c, config, first, second, out);
    case ConvolutionPass::backward_data:
      return run_pass<BackwardData>(c, config, first, second, out);
    case ConvolutionPass::backward_filter:
      return run_pass<BackwardFilter>(c, config, first, second, out);
  }
  throw std::logic_error("unknown convolution pass");
}

}  // namespace ampbench::kernels
