// kernels::run_convolution on the device: a planned output cuDNN disagrees with is refused before
// anything runs, and each pass of an all-ones convolution counts the taps that fall inside the
// image (what a wrong padding, stride or dimension order changes). The audit's GPU tests
// (harness/backends/cuda/test/conv_kernel_test.cpp) judge the values against the reference.
#include "kernels/cudnn_convolution.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <vector>

#include "kernels/device_buffer.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::kernels {
namespace {

class CudnnConvolution : public test::GpuTest {};

// One image, one channel, one filter: for each tap of each output position inside the image, one
// count to the pass's output (y for forward, dx for backward data, dw for backward filter).
std::vector<float> tap_counts(ConvolutionPass pass, const ConvolutionShape& s) {
  std::vector<float> counts(element_count(output_dims(pass, s)), 0.0F);
  for (int p = 0; p < s.y[2]; ++p) {
    for (int q = 0; q < s.y[3]; ++q) {
      for (int r = 0; r < s.w[2]; ++r) {
        for (int t = 0; t < s.w[3]; ++t) {
          const int h = p * s.stride[0] - s.pad[0] + r * s.dilation[0];
          const int w = q * s.stride[1] - s.pad[1] + t * s.dilation[1];
          if (h < 0 || h >= s.x[2] || w < 0 || w >= s.x[3]) continue;
          const int at = pass == ConvolutionPass::forward         ? p * s.y[3] + q
                         : pass == ConvolutionPass::backward_data ? h * s.x[3] + w
                                                                  : r * s.w[3] + t;
          counts[static_cast<std::size_t>(at)] += 1.0F;
        }
      }
    }
  }
  return counts;
}

TEST_F(CudnnConvolution, EachPassOfAnAllOnesConvolutionCountsTheTapsInsideTheImage) {
  ConvolutionShape s;
  s.x = {1, 1, 7, 5};
  s.w = {1, 1, 3, 2};
  s.pad = {1, 0};
  s.stride = {2, 1};
  s.dilation = {1, 2};
  s.y = {1, 1, 1 + (7 + 2 - 3) / 2, 1 + (5 - 3) / 1};
  for (const ConvolutionPass pass : {ConvolutionPass::forward, ConvolutionPass::backward_data,
                                     ConvolutionPass::backward_filter}) {
    const std::array<int, 4>& first_dims = pass == ConvolutionPass::backward_data ? s.y : s.x;
    const std::array<int, 4>& second_dims = pass == ConvolutionPass::backward_filter ? s.y : s.w;
    const std::vector<float> ones_first(element_count(first_dims), 1.0F);
    const std::vector<float> ones_second(element_count(second_dims), 1.0F);
    DeviceBuffer<float> first(ones_first.size()), second(ones_second.size());
    first.copy_from(ones_first, nullptr);
    second.copy_from(ones_second, nullptr);
    const std::vector<float> want = tap_counts(pass, s);
    DeviceBuffer<float> out(want.size());
    ConvolutionConfig config;
    config.pass = pass;
    config.shape = s;
    config.math = ConvolutionMath::fma;
    const CudnnHandle handle;
    const ConvolutionRun ran =
        run_convolution(handle, config, first.data(), second.data(), out.data());
    std::vector<float> got(want.size());
    out.copy_to(got, handle.stream());
    EXPECT_EQ(ran.math, ConvolutionMath::fma) << ran.algorithm_name;
    EXPECT_FALSE(ran.tensor_op_math);
    for (std::size_t i = 0; i < want.size(); ++i) {
      // Exact for direct sums of ones; FFT and Winograd algorithms round a little.
      EXPECT_NEAR(got[i], want[i], 1e-4) << ran.algorithm_name << " element " << i;
    }
  }
}

TEST_F(CudnnConvolution, APlannedOutputCudnnDisagreesWithIsALogicError) {
  ConvolutionConfig config;
  config.shape.x = {1, 1, 4, 4};
  config.shape.w = {1, 1, 3, 3};
  config.shape.y = {1, 1, 4, 4};  // no padding: cuDNN's is 2 x 2
  config.shape.stride = {1, 1};
  config.shape.dilation = {1, 1};
  const CudnnHandle handle;
  EXPECT_THROW(run_convolution(handle, config, nullptr, nullptr, nullptr), std::logic_error);
}

}  // namespace
}  // namespace ampbench::kernels
