// The catalog ops a training model runs, derived from the model's code: one training step (forward,
// loss, backward) of the model at its default shape runs on ops::AutocastOps over kernels that hold
// sizes only, and each type flow its methods find (the flows EmulatedOps and CudaOps find, the
// same code) notes the catalog op and the policy op whose precision it runs under. What a backend
// needs to train a model (the CUDA backend's planner: backends::cuda::why_not_trainable) is then
// decided from the model's ops, not from a list kept beside the model.
#pragma once

#include <string_view>
#include <vector>

#include "harness/ops/training_ops.hpp"

namespace ampbench::train {

// The model's ops in the order a step first runs them, each once (an op the step runs under two
// precisions would appear twice; none does). std::invalid_argument naming the model and the
// models there are when `model` is none of model_names().
std::vector<ops::ModelOp> model_ops(std::string_view model);

}  // namespace ampbench::train
