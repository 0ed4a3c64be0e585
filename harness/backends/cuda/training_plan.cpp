#include "harness/backends/cuda/training_plan.hpp"

#include <fmt/format.h>

#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string_view>

#include "harness/ops/catalog.hpp"

namespace ampbench::backends::cuda {
namespace {

using numeric::Format;
namespace formats = numeric::formats;

// The ops of each model besides its linear layers and convolutions, each run by a kernel of
// kernels/op_kernels.hpp or kernels/cnn_kernels.hpp.
constexpr policy::Op kMlpKernelOps[] = {policy::Op::gelu, policy::Op::layer_norm,
                                        policy::Op::cross_entropy};
constexpr policy::Op kCnnKernelOps[] = {policy::Op::batch_norm, policy::Op::relu, policy::Op::mean,
                                        policy::Op::cross_entropy};
// The cnn's convolutions: the catalog's three cuDNN passes.
constexpr std::string_view kConvolutionPasses[] = {"conv2d", "conv2d_backward_data",
                                                   "conv2d_backward_filter"};

// The kernel ops of a model the CUDA backend trains; none for the others.
std::span<const policy::Op> kernel_ops(std::string_view model) {
  if (model == "mlp") return kMlpKernelOps;
  if (model == "cnn") return kCnnKernelOps;
  return {};
}

// Every format an op meets in a step: the policy's formats resolved for binary32 inputs and for
// inputs in the formats the policy's other ops produce (autocast's promote entries).
std::vector<policy::OpPrecision> resolutions(const policy::Policy& p, policy::Op op) {
  std::vector<policy::OpPrecision> out;
  for (const Format& input : {formats::fp32, formats::fp16, formats::bf16}) {
    out.push_back(policy::resolve(p.precision(op), std::initializer_list<Format>{input}));
  }
  return out;
}

}  // namespace

std::string trainable_models() {
  return "mlp, cnn";
}

GemmPlan linear_plan(const policy::Policy& policy, const numeric::Format& input) {
  const policy::OpPrecision q =
      policy::resolve(policy.precision(policy::Op::linear), std::initializer_list<Format>{input});
  const Planning planned = plan(*ops::find_op("gemm"), q);
  if (!planned.plan) throw std::invalid_argument(planned.reason);
  return planned.plan->gemm;
}

std::optional<std::string> why_not_trainable(const policy::Policy& p, std::string_view model) {
  const std::span<const policy::Op> kernels = kernel_ops(model);
  if (kernels.empty()) {
    return fmt::format(
        "model {}: the CUDA backend trains {} so far (the transformer needs attention on the "
        "device)",
        model, trainable_models());
  }
  for (const Format& input : {formats::fp32, formats::fp16, formats::bf16}) {
    const policy::OpPrecision q =
        policy::resolve(p.precision(policy::Op::linear), std::initializer_list<Format>{input});
    const Planning planned = plan(*ops::find_op("gemm"), q);
    if (!planned.plan) return fmt::format("policy {}: linear: {}", p.name, planned.reason);
  }
  if (model == "cnn") {
    for (const policy::OpPrecision& q : resolutions(p, policy::Op::conv)) {
      for (const std::string_view pass : kConvolutionPasses) {
        const Planning planned = plan(*ops::find_op(pass), q);
        if (!planned.plan) return fmt::format("policy {}: conv: {}", p.name, planned.reason);
      }
    }
  }
  for (const policy::Op op : kernels) {
    for (const policy::OpPrecision& q : resolutions(p, op)) {
      const std::string_view name = policy::op_name(op);
      for (const Format* f : {&q.input, &q.output}) {
        if (!output_type(*f)) {
          return fmt::format(
              "policy {}: {} in {}: the GPU kernels take and give fp32, fp16 and bf16 tensors",
              p.name, name, f->name);
        }
      }
      for (const numeric::Rounding mode : {q.mode, q.input_mode}) {
        if (mode != numeric::Rounding::nearest_even) {
          return fmt::format("policy {}: {} rounds {}: the GPU kernels round to nearest even only",
                             p.name, name, numeric::rounding_name(mode));
        }
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> non_gemm_compute_note(const policy::Policy& p, std::string_view model) {
  for (const policy::Op op : kernel_ops(model)) {
    for (const policy::OpPrecision& q : resolutions(p, op)) {
      if (q.compute.precision < formats::fp32.precision ||
          q.accumulate.precision < formats::fp32.precision) {
        return fmt::format(
            "policy {} computes {} in {}; the GPU kernels compute it in fp32 and round the result "
            "to {} once",
            p.name, policy::op_name(op), q.compute.name, q.output.name);
      }
    }
  }
  return std::nullopt;
}

}  // namespace ampbench::backends::cuda
