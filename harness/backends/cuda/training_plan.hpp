// What the GPU training ops (training_ops.hpp) run under a policy, decided on the host without a
// GPU: whether a model's ops can train on the CUDA backend under the policy, and why not. Plain
// C++, built in every configuration, so that the command line refuses a run before any work and the
// CPU tests check every rule.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "harness/backends/cuda/plan.hpp"
#include "harness/ops/training_ops.hpp"
#include "harness/policy/policy.hpp"

namespace ampbench::backends::cuda {

// Why the GPU cannot run a model's ops (train::model_ops) as the policy says, as one sentence that
// names the op, the formats and the reason; none when every op can run. The linear layers are
// checked first (cuBLASLt, as the audit plans gemm), then the convolutions' passes (cuDNN, as the
// audit plans each), then attention's products, then the ops the GPU's own kernels run, in the
// order the step first meets them. Those kernels compute in binary32 and round their results
// once (kernels/op_kernels.hpp): a policy whose non-GEMM ops compute in a narrower format runs
// them wider on the device, which the caller must say (non_gemm_compute_note).
std::optional<std::string> why_not_trainable(const policy::Policy& policy,
                                             std::span<const ops::ModelOp> model);

// The policy's linear layer as cuBLASLt runs it, for inputs of format `input`.
GemmPlan linear_plan(const policy::Policy& policy, const numeric::Format& input);

// One matrix product of attention under its resolved precision `attention` as cuBLASLt runs it:
// A and B of format `inputs` (the attention's input format, or its compute format for the products
// that read the probabilities or score gradients), written in the compute format (binary32 under
// fp32 and autocast), as the emulation keeps scores, probabilities and unscaled gradients.
// std::invalid_argument when cuBLASLt cannot run it (why_not_trainable says so first).
GemmPlan attention_product_plan(const policy::OpPrecision& attention,
                                const numeric::Format& inputs);

// The strided-batched cuBLASLt call of one product of attention: the catalog's gemm,
// gemm_backward_a or gemm_backward_b of `shape` (M x N x K) for each of `batch` samples, whose
// operands and results lie one after another. std::invalid_argument beyond cuBLASLt's 32-bit
// batch count.
GemmCall attention_call(std::string_view op, const ops::Shape& shape, std::size_t batch);

// When the policy asks for non-GEMM arithmetic narrower than binary32 (pure fp16 and bf16) in an
// op of the model (train::model_ops), the sentence that says the GPU's kernels compute those ops
// in binary32; none otherwise.
std::optional<std::string> non_gemm_compute_note(const policy::Policy& policy,
                                                 std::span<const ops::ModelOp> model);

}  // namespace ampbench::backends::cuda
