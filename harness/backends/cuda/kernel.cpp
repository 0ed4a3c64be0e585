#include "harness/backends/cuda/kernel.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "harness/backends/cuda/conv_kernel.hpp"
#include "harness/backends/cuda/lt_matmul.hpp"
#include "harness/numeric/options.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device_buffer.hpp"
#include "kernels/rounding_kernels.cuh"

namespace ampbench::backends::cuda {
namespace {

kernels::DeviceBuffer<std::byte> on_device(const std::vector<std::byte>& host) {
  kernels::DeviceBuffer<std::byte> buffer(host.size());
  buffer.copy_from(host);
  return buffer;
}

std::vector<double> run_gemm(const GemmCall& call, const GemmPlan& plan, const ops::Inputs& in,
                             nlohmann::json* detail) {
  const kernels::DeviceBuffer<std::byte> a =
      on_device(to_device(in.values.at(call.a.operand), plan.inputs));
  const kernels::DeviceBuffer<std::byte> b =
      on_device(to_device(in.values.at(call.b.operand), plan.inputs));
  kernels::DeviceBuffer<std::byte> d(call.m * call.n * static_cast<std::uint64_t>(call.batch) *
                                     device_type_bytes(plan.output));

  // A handle and workspace per case: the audit runs one product per case, not in a loop.
  LtMatmul matmul;
  nlohmann::json ran = matmul.run(plan, call, a.data(), b.data(), d.data(), nullptr, nullptr);
  std::vector<std::byte> out(d.size());
  d.copy_to(out);  // on the default stream: waits for the matmul and reports its faults
  if (detail != nullptr) *detail = std::move(ran);
  return from_device(out, plan.output);
}

std::vector<double> run_cast(const CastPlan& plan, const ops::Inputs& in, nlohmann::json* detail) {
  const std::vector<double>& x = in.values.at(0);
  std::vector<float> binary32(x.size());  // the cast's inputs are fp32 values: exact
  for (std::size_t i = 0; i < x.size(); ++i) binary32[i] = static_cast<float>(x[i]);
  std::vector<std::uint64_t> bits(x.size());
  std::vector<float> values(x.size());
  kernels::round_on_device({plan.format, plan.mode}, binary32, bits, values);
  if (detail != nullptr) {
    *detail = {{"kernel", "ampbench::kernels::round_kernel"},
               {"format", plan.format.name},
               {"mode", numeric::rounding_name(plan.mode)}};
  }
  std::vector<double> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return out;
}

}  // namespace

audit::Kernel make_kernel(const ops::OpInfo& op, const ops::Shape& shape, const Plan& plan,
                          nlohmann::json* detail) {
  if (plan.kind == Plan::Kind::cast) {
    return [cast = plan.cast, detail](const ops::Inputs& in) { return run_cast(cast, in, detail); };
  }
  if (plan.kind == Plan::Kind::convolution) {
    return make_convolution_kernel(shape, plan.convolution, detail);
  }
  return [call = gemm_call(op, shape), gemm = plan.gemm, detail](const ops::Inputs& in) {
    return run_gemm(call, gemm, in, detail);
  };
}

}  // namespace ampbench::backends::cuda
