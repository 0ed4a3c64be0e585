// The training-step launchers refuse what they cannot run before any CUDA call, so these run
// without a device.
#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>
#include <vector>

#include "harness/numeric/optimizer_math.hpp"
#include "kernels/train_kernels.hpp"

namespace ampbench::kernels {
namespace {

TEST(TrainKernelArguments, UnscalerRefusesATensorWithoutDataOrType) {
  const std::vector<GradientTensor> no_data{{nullptr, 3, DType::f16}};
  EXPECT_THROW(GradientUnscaler{no_data}, std::invalid_argument);
  float x = 0;
  const std::vector<GradientTensor> no_type{{&x, 1, static_cast<DType>(7)}};
  EXPECT_THROW(GradientUnscaler{no_type}, std::invalid_argument);
}

TEST(TrainKernelArguments, AnAllEmptyListLaunchesNothing) {
  const std::vector<GradientTensor> empty{{nullptr, 0, DType::f32}, {nullptr, 0, DType::bf16}};
  const GradientUnscaler unscaler(empty);
  EXPECT_EQ(unscaler.blocks(), 0u);
  // No kernel is launched, so host addresses are never touched.
  float inv_scale = 1, found_inf = 0;
  EXPECT_NO_THROW(unscaler.unscale_and_check(&inv_scale, &found_inf, nullptr));
  EXPECT_THROW(unscaler.unscale_and_check(nullptr, &found_inf, nullptr), std::invalid_argument);
}

TEST(TrainKernelArguments, ClipperTakesBinary32TensorsWithData) {
  const std::vector<GradientTensor> no_data{{nullptr, 3, DType::f32}};
  EXPECT_THROW(GradientClipper{no_data}, std::invalid_argument);
  float x = 0;
  const std::vector<GradientTensor> half{{&x, 1, DType::f16}};
  EXPECT_THROW(GradientClipper{half}, std::invalid_argument);
  // An all-empty list launches nothing and needs no device memory.
  const std::vector<GradientTensor> empty{{nullptr, 0, DType::f32}};
  const GradientClipper clipper(empty);
  EXPECT_EQ(clipper.blocks(), 0u);
  EXPECT_NO_THROW(clipper.clip(1.0, nullptr, nullptr));
}

TEST(TrainKernelArguments, ScaleKernelsRefuseNullState) {
  const train::ScaleRule rule{2.0, 0.5, 2000, 0.0F};
  float scale = 1, found_inf = 0;
  int tracker = 0;
  EXPECT_THROW(update_scale(nullptr, &tracker, &found_inf, rule, nullptr), std::invalid_argument);
  EXPECT_THROW(update_scale(&scale, nullptr, &found_inf, rule, nullptr), std::invalid_argument);
  EXPECT_THROW(update_scale(&scale, &tracker, nullptr, rule, nullptr), std::invalid_argument);
  EXPECT_THROW(inverse_scale(&scale, nullptr, nullptr), std::invalid_argument);
}

TEST(TrainKernelArguments, SgdNeedsItsBuffers) {
  float p = 0, g = 0;
  const auto momentum = train::make_sgd_scalars<float>(0.1, 0.9, 0, 0, false);
  const std::vector<SgdTensor> no_buffer{{&p, &g, nullptr, 1}};
  EXPECT_THROW(MultiTensorSgd(no_buffer, momentum), std::invalid_argument);
  const std::vector<SgdTensor> no_grad{{&p, nullptr, &p, 1}};
  EXPECT_THROW(MultiTensorSgd(no_grad, momentum), std::invalid_argument);
}

TEST(TrainKernelArguments, AdamWNeedsASchedule) {
  float p = 0, g = 0, m = 0, v = 0;
  const std::vector<AdamWTensor> tensors{{&p, &g, &m, &v, nullptr, 1}};
  EXPECT_THROW(MultiTensorAdamW(tensors, {}), std::invalid_argument);
  const std::vector<train::AdamWScalars<float>> amsgrad{train::make_adamw_scalars<float>(
      1e-3, 0.9, 0.999, 1e-8, 0.01, true, 1, train::TorchKernels::cuda)};
  EXPECT_THROW(MultiTensorAdamW(tensors, amsgrad), std::invalid_argument);
  const std::vector<AdamWTensor> no_moment{{&p, &g, nullptr, &v, nullptr, 1}};
  EXPECT_THROW(MultiTensorAdamW(no_moment, amsgrad), std::invalid_argument);
}

}  // namespace
}  // namespace ampbench::kernels
