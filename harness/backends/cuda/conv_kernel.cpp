#include "harness/backends/cuda/conv_kernel.hpp"

#include <array>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "harness/backends/cuda/conv_plan.hpp"
#include "kernels/cudnn_convolution.hpp"
#include "kernels/device_buffer.hpp"

namespace ampbench::backends::cuda {
namespace {

// cudnnDataType_t's enumerator of a device type, for the records.
std::string_view cudnn_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::f32: return "CUDNN_DATA_FLOAT";
    case DeviceType::f16: return "CUDNN_DATA_HALF";
    case DeviceType::bf16: return "CUDNN_DATA_BFLOAT16";
  }
  return "?";
}

std::string_view pass_name(kernels::ConvolutionPass pass) {
  switch (pass) {
    case kernels::ConvolutionPass::forward: return "cudnnConvolutionForward";
    case kernels::ConvolutionPass::backward_data: return "cudnnConvolutionBackwardData";
    case kernels::ConvolutionPass::backward_filter: return "cudnnConvolutionBackwardFilter";
  }
  return "?";
}

kernels::DeviceBuffer<std::byte> operand_on_device(std::span<const double> values,
                                                   DeviceType type) {
  const std::vector<std::byte> bytes = to_device(values, type);
  kernels::DeviceBuffer<std::byte> buffer(bytes.size());
  buffer.copy_from(bytes, nullptr);
  return buffer;
}

std::vector<double> run(const kernels::ConvolutionShape& shape, const ConvPlan& plan,
                        const ops::Inputs& in, nlohmann::json* detail) {
  const kernels::DeviceBuffer<std::byte> first = operand_on_device(in.values.at(0), plan.data);
  const kernels::DeviceBuffer<std::byte> second = operand_on_device(in.values.at(1), plan.data);
  kernels::DeviceBuffer<std::byte> out(
      kernels::element_count(kernels::output_dims(plan.pass, shape)) *
      device_type_bytes(plan.data));
  kernels::ConvolutionConfig config;
  config.pass = plan.pass;
  config.shape = shape;
  config.data = dtype_of(plan.data);
  config.compute = dtype_of(plan.compute);
  config.math = plan.math;
  const kernels::CudnnHandle handle;
  const kernels::ConvolutionRun ran =
      kernels::run_convolution(handle, config, first.data(), second.data(), out.data());
  std::vector<std::byte> bytes(out.size());
  out.copy_to(bytes, handle.stream());  // waits for the convolution

  if (detail != nullptr) {
    *detail = {{"library", "cuDNN"},
               {"call", pass_name(plan.pass)},
               {"data_type", cudnn_type_name(plan.data)},
               {"compute_type", cudnn_type_name(plan.compute)},
               {"rule", plan.rule},
               {"algorithm",
                {{"id", ran.algorithm},
                 {"name", ran.algorithm_name},
                 {"heuristic_rank", ran.heuristic_rank},
                 {"requested_math", kernels::math_enumerator(ran.requested_math)},
                 {"math", kernels::math_enumerator(ran.math)},
                 {"tensor_op_math", ran.tensor_op_math},
                 {"deterministic", ran.deterministic},
                 {"workspace_bytes", ran.workspace_bytes}}}};
  }
  return from_device(bytes, plan.data);
}

}  // namespace

ops::Kernel make_convolution_kernel(const ops::Shape& shape, const ConvPlan& plan,
                                    nlohmann::json* detail) {
  return [s = convolution_shape(ops::convolution::geometry(shape)), plan,
          detail](const ops::Inputs& in) { return run(s, plan, in, detail); };
}

}  // namespace ampbench::backends::cuda
