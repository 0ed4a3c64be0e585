// The error macros need no device: they are fed failing statuses directly.
#include "kernels/cuda_check.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace ampbench::kernels {
namespace {

using ::testing::HasSubstr;

TEST(CudaCheck, SuccessDoesNothing) {
  EXPECT_NO_THROW(AMPBENCH_CUDA_CHECK(cudaSuccess));
  EXPECT_NO_THROW(AMPBENCH_CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS));
  EXPECT_NO_THROW(AMPBENCH_CUDNN_CHECK(CUDNN_STATUS_SUCCESS));
  EXPECT_TRUE(AMPBENCH_CUPTI_CHECK(CUPTI_SUCCESS));
}

TEST(CudaCheck, CudaErrorCarriesWhereWhatAndWhy) {
  try {
    AMPBENCH_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "no exception";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.library(), "CUDA");
    EXPECT_EQ(e.code(), static_cast<int>(cudaErrorInvalidValue));
    EXPECT_EQ(e.name(), "cudaErrorInvalidValue");
    EXPECT_EQ(e.text(), "invalid argument");
    EXPECT_EQ(e.call(), "cudaErrorInvalidValue");
    EXPECT_THAT(e.file(), HasSubstr("cuda_check_test.cpp"));
    EXPECT_GT(e.line(), 0);
    const std::string what = e.what();
    EXPECT_THAT(what, HasSubstr("cuda_check_test.cpp:" + std::to_string(e.line()) + ": "));
    EXPECT_THAT(what, HasSubstr("cudaErrorInvalidValue: invalid argument"));
  }
}

TEST(CudaCheck, IsAStdRuntimeError) {
  EXPECT_THROW(AMPBENCH_CUDA_CHECK(cudaErrorMemoryAllocation), std::runtime_error);
}

TEST(CudaCheck, CublasErrorNamesTheStatus) {
  try {
    AMPBENCH_CUBLAS_CHECK(CUBLAS_STATUS_NOT_INITIALIZED);
    FAIL() << "no exception";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.library(), "cuBLAS");
    EXPECT_EQ(e.name(), "CUBLAS_STATUS_NOT_INITIALIZED");
    EXPECT_FALSE(e.text().empty());
  }
}

TEST(CudaCheck, CudnnErrorNamesTheStatus) {
  try {
    AMPBENCH_CUDNN_CHECK(CUDNN_STATUS_BAD_PARAM);
    FAIL() << "no exception";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.library(), "cuDNN");
    EXPECT_EQ(e.name(), "CUDNN_STATUS_BAD_PARAM");
    EXPECT_FALSE(e.text().empty());
  }
}

// A CUDA error pending when a cuBLAS or cuDNN call fails is often its cause (a faulting kernel
// reported by the next call): it is reported with the library's status, not silently cleared.
// The pending error is made by an allocation no device can satisfy (out of memory on a GPU; no
// driver here, which the runtime keeps reporting).
TEST(CudaCheck, LibraryErrorsReportAPendingCudaError) {
  for (const char* library : {"cuBLAS", "cuDNN"}) {
    SCOPED_TRACE(library);
    void* p = nullptr;
    const cudaError_t made = cudaMalloc(&p, std::numeric_limits<std::size_t>::max());
    ASSERT_NE(made, cudaSuccess);
    try {
      if (std::string_view(library) == "cuBLAS") {
        AMPBENCH_CUBLAS_CHECK(CUBLAS_STATUS_EXECUTION_FAILED);
      } else {
        AMPBENCH_CUDNN_CHECK(CUDNN_STATUS_EXECUTION_FAILED);
      }
      FAIL() << "no exception";
    } catch (const CudaError& e) {
      EXPECT_EQ(e.library(), library);
      EXPECT_THAT(e.text(),
                  HasSubstr(std::string("pending CUDA error: ") + cudaGetErrorName(made)));
    }
    // Taken, not left to surface as a later call's failure (the missing driver stays: it is
    // sticky).
    if (made == cudaErrorMemoryAllocation) {
      EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    }
  }
  void* p = nullptr;
  const cudaError_t made = cudaMalloc(&p, std::numeric_limits<std::size_t>::max());
  ::testing::internal::CaptureStderr();
  AMPBENCH_CUBLAS_CHECK_NOTHROW(CUBLAS_STATUS_EXECUTION_FAILED);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr(std::string("pending CUDA error: ") + cudaGetErrorName(made)));
}

TEST(CudaCheck, NoThrowVariantOnlyLogs) {
  EXPECT_NO_THROW(AMPBENCH_CUDA_CHECK_NOTHROW(cudaErrorInvalidValue));
}

TEST(CudaCheck, CublasNoThrowVariantLogsTheCallAndStatus) {
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(AMPBENCH_CUBLAS_CHECK_NOTHROW(CUBLAS_STATUS_INVALID_VALUE));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("cuda_check_test.cpp:"));
  EXPECT_THAT(log, HasSubstr("CUBLAS_STATUS_INVALID_VALUE failed: CUBLAS_STATUS_INVALID_VALUE"));
}

TEST(CudaCheck, CudnnNoThrowVariantLogsTheCallAndStatus) {
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(AMPBENCH_CUDNN_CHECK_NOTHROW(CUDNN_STATUS_BAD_PARAM));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("cuda_check_test.cpp:"));
  EXPECT_THAT(log, HasSubstr("CUDNN_STATUS_BAD_PARAM failed: CUDNN_STATUS_BAD_PARAM"));
}

TEST(CudaCheck, CuptiFailureIsFalseNotAnException) {
  bool ok = true;
  EXPECT_NO_THROW(ok = AMPBENCH_CUPTI_CHECK(CUPTI_ERROR_INVALID_PARAMETER));
  EXPECT_FALSE(ok);
}

}  // namespace
}  // namespace ampbench::kernels
