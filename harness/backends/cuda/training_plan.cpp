#include "harness/backends/cuda/training_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "harness/ops/catalog.hpp"

namespace ampbench::backends::cuda {
namespace {

using numeric::Format;
namespace formats = numeric::formats;

// Whether the CUDA backend runs an op of the model by a kernel of kernels/op_kernels.hpp or
// kernels/cnn_kernels.hpp (attention's softmax, its backward and its scale included; its products
// are checked apart: why_not_attention), not by cuBLASLt (the linear layers) or cuDNN (the
// convolutions).
bool runs_in_kernels(policy::Op precision) {
  return precision != policy::Op::linear && precision != policy::Op::conv;
}

// The policy ops the kernels run for the model's ops, each once, in the order the step first
// meets them.
std::vector<policy::Op> kernel_ops(std::span<const ops::ModelOp> model) {
  std::vector<policy::Op> out;
  for (const ops::ModelOp& m : model) {
    if (runs_in_kernels(m.precision) &&
        std::find(out.begin(), out.end(), m.precision) == out.end()) {
      out.push_back(m.precision);
    }
  }
  return out;
}

bool runs_under(std::span<const ops::ModelOp> model, policy::Op precision) {
  return std::any_of(model.begin(), model.end(),
                     [&](const ops::ModelOp& m) { return m.precision == precision; });
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

// Why the device cannot run attention as the policy's precision q says, or none: the audit's
// plan of attention (plan_attention in plan.cpp), which runs what the training ops run.
std::optional<std::string> why_not_attention(const policy::Policy& p,
                                             const policy::OpPrecision& q) {
  const Planning planned = plan(*ops::find_op("attention"), q);
  if (!planned.plan) return fmt::format("policy {}: {}", p.name, planned.reason);
  return std::nullopt;
}

}  // namespace

GemmPlan linear_plan(const policy::Policy& policy, const numeric::Format& input) {
  const policy::OpPrecision q =
      policy::resolve(policy.precision(policy::Op::linear), std::initializer_list<Format>{input});
  const Planning planned = plan(*ops::find_op("gemm"), q);
  if (!planned.plan) throw std::invalid_argument(planned.reason);
  return planned.plan->gemm;
}

GemmPlan attention_product_plan(const policy::OpPrecision& attention, const Format& inputs) {
  const Planning planned = plan(*ops::find_op("bmm"), attention_product(attention, inputs));
  if (!planned.plan) throw std::invalid_argument(planned.reason);
  return planned.plan->gemm;
}

GemmCall attention_call(std::string_view op, const ops::Shape& shape, std::size_t batch) {
  const ops::OpInfo& info = *ops::find_op(op);
  if (batch == 0 || batch > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    throw std::invalid_argument(
        fmt::format("attention: {} samples are not a cuBLASLt batch count", batch));
  }
  GemmCall call = gemm_call(info, shape);
  const std::vector<ops::Operand> operands = ops::operands(info, shape);
  call.batch = static_cast<std::int32_t>(batch);
  call.stride_a = static_cast<std::int64_t>(ops::element_count(operands.at(call.a.operand).shape));
  call.stride_b = static_cast<std::int64_t>(ops::element_count(operands.at(call.b.operand).shape));
  call.stride_d = static_cast<std::int64_t>(call.m * call.n);
  return call;
}

std::optional<std::string> why_not_trainable(const policy::Policy& p,
                                             std::span<const ops::ModelOp> model) {
  if (runs_under(model, policy::Op::linear)) {
    for (const Format& input : {formats::fp32, formats::fp16, formats::bf16}) {
      const policy::OpPrecision q =
          policy::resolve(p.precision(policy::Op::linear), std::initializer_list<Format>{input});
      const Planning planned = plan(*ops::find_op("gemm"), q);
      if (!planned.plan) return fmt::format("policy {}: linear: {}", p.name, planned.reason);
    }
  }
  // The convolutions' passes the model runs, through cuDNN as the audit plans them.
  for (const ops::ModelOp& m : model) {
    if (m.precision != policy::Op::conv) continue;
    for (const policy::OpPrecision& q : resolutions(p, policy::Op::conv)) {
      const Planning planned = plan(*m.op, q);
      if (!planned.plan) return fmt::format("policy {}: conv: {}", p.name, planned.reason);
    }
  }
  if (runs_under(model, policy::Op::attention)) {
    for (const policy::OpPrecision& q : resolutions(p, policy::Op::attention)) {
      if (auto why = why_not_attention(p, q)) return why;
    }
  }
  for (const policy::Op op : kernel_ops(model)) {
    for (const policy::OpPrecision& q : resolutions(p, op)) {
      const std::string_view name = policy::op_name(op);
      // Attention's kernels (softmax, its backward, the scale) read its compute format; its inputs
      // go to cuBLASLt (why_not_attention).
      const Format& read = op == policy::Op::attention ? q.compute : q.input;
      for (const Format* f : {&read, &q.output}) {
        if (!output_type(*f)) {
          return fmt::format(
              "policy {}: {} in {}: the GPU kernels take and give fp32, fp16 and bf16 tensors",
              p.name, name, f->name);
        }
      }
      // The training ops run each kernel in its input's type and cast the result to the output's:
      // one rounding only when the two are one format (as in every built-in policy).
      if (op != policy::Op::attention && !numeric::same_format(q.input, q.output)) {
        return fmt::format(
            "policy {}: {} reads {} and writes {}: the GPU training ops compute in their input's "
            "type, which would round the result twice",
            p.name, name, q.input.name, q.output.name);
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

std::optional<std::string> non_gemm_compute_note(const policy::Policy& p,
                                                 std::span<const ops::ModelOp> model) {
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
