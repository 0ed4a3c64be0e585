// The batch-norm and pooling launchers refuse what they cannot run before any CUDA call, and launch
// nothing for no channels or rows, so these run without a device.
#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>

#include "kernels/cnn_kernels.hpp"

namespace ampbench::kernels {
namespace {

// Host addresses stand for device memory: no kernel may be launched with them.
float host[4];

TEST(CnnKernelArguments, BatchNormRefusesChannelsOfNoValuesAndNullTensors) {
  EXPECT_THROW(batch_norm(DType::f32, host, host, host, host, 0, 2, 3, 1e-5F, nullptr),
               std::invalid_argument);
  EXPECT_THROW(batch_norm(DType::f16, host, host, host, host, 2, 2, 0, 1e-5F, nullptr),
               std::invalid_argument);
  EXPECT_THROW(batch_norm(DType::f32, host, nullptr, host, host, 1, 1, 1, 1e-5F, nullptr),
               std::invalid_argument);
  EXPECT_THROW(batch_norm_backward(DType::bf16, host, host, host, host, host, nullptr, 1, 1, 1,
                                   1e-5F, nullptr),
               std::invalid_argument);
  EXPECT_THROW(
      batch_norm_backward(DType::f32, host, host, host, host, host, host, 0, 1, 1, 1e-5F, nullptr),
      std::invalid_argument);
}

TEST(CnnKernelArguments, PoolingRefusesRowsOfNoColumnsAndNullTensors) {
  EXPECT_THROW(mean_rows(DType::f32, host, host, 2, 0, nullptr), std::invalid_argument);
  EXPECT_THROW(mean_rows(DType::f32, nullptr, host, 2, 2, nullptr), std::invalid_argument);
  EXPECT_THROW(mean_rows_backward(DType::f16, host, host, 2, 0, nullptr), std::invalid_argument);
  EXPECT_THROW(mean_rows_backward(DType::f16, host, nullptr, 2, 2, nullptr), std::invalid_argument);
}

TEST(CnnKernelArguments, UnknownElementTypesAreRefused) {
  const auto unknown = static_cast<DType>(7);
  EXPECT_THROW(batch_norm(unknown, host, host, host, host, 1, 1, 1, 1e-5F, nullptr),
               std::invalid_argument);
  EXPECT_THROW(mean_rows(unknown, host, host, 1, 1, nullptr), std::invalid_argument);
}

TEST(CnnKernelArguments, NoChannelsOrRowsLaunchNothing) {
  EXPECT_NO_THROW(
      batch_norm(DType::f32, nullptr, nullptr, nullptr, nullptr, 2, 0, 3, 1e-5F, nullptr));
  EXPECT_NO_THROW(batch_norm_backward(DType::f32, nullptr, nullptr, nullptr, nullptr, nullptr,
                                      nullptr, 2, 0, 3, 1e-5F, nullptr));
  EXPECT_NO_THROW(mean_rows(DType::f32, nullptr, nullptr, 0, 4, nullptr));
  EXPECT_NO_THROW(mean_rows_backward(DType::f32, nullptr, nullptr, 0, 4, nullptr));
}

}  // namespace
}  // namespace ampbench::kernels
