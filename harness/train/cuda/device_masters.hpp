// Where a policy training on the GPU keeps its master weights, their gradients and its optimizer:
// in device memory, as a framework training on a GPU does (train::steps::MastersOf<CudaOps>, the
// interface of train::steps::HostMasters in harness/train/trainer_steps.hpp). A step runs on the
// device without copying a weight or a gradient to the host:
//   - each micro-batch's parameter gradients (binary32) are copied into the master gradients, and
//     later micro-batches' added to them (kernels::add, a binary32 addition per element);
//   - unscale: kernels::GradientUnscaler, one launch for every gradient, with the loss scaler's
//     1/scale, its found_inf in device memory;
//   - clip: kernels::GradientClipper, the global norm and the coefficient formed on the device;
//   - the scaler's step reads found_inf back (one synchronisation, where GradScaler.step reads
//     found_inf.item() for an optimizer without fused scaling) and the host's LossScaler decides,
//     so that its state machine, minimum scale and collapse warnings are those of the CPU backend;
//   - optimizer: kernels::MultiTensorSgd or MultiTensorAdamW on the binary32 master weights, with
//     the rounding of PyTorch's CUDA kernels (train::TorchKernels::cuda).
// Only the metrics copy gradients (gradients()) and weights (weights_as_doubles()) back.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "harness/backends/cuda/training_ops.hpp"
#include "harness/train/optimizer.hpp"
#include "harness/train/scaler.hpp"
#include "harness/train/trainer_steps.hpp"

namespace ampbench::train::cuda {

using backends::cuda::CudaOps;
using backends::cuda::CudaTensor;

class DeviceMasters {
 public:
  // The initial weights (binary32 values) uploaded to memory of ops' stream, the optimizer's state
  // zeroed, and its step scalars for at most `steps` steps. Throws std::invalid_argument for
  // invalid optimizer options, kernels::CudaError when a CUDA call fails. Waits for the stream.
  DeviceMasters(CudaOps& ops, const std::vector<std::vector<double>>& initial,
                const OptimizerOptions& options, std::size_t steps);
  ~DeviceMasters();
  DeviceMasters(DeviceMasters&&) noexcept;
  DeviceMasters& operator=(DeviceMasters&&) noexcept;

  // The master weights as binary32 tensors of the ops, without a copy.
  std::vector<CudaTensor> parameters(CudaOps& ops) const;
  // Parameter i's binary32 gradient from a micro-batch: the first of a step replaces the master
  // gradient, later ones are added to it. Throws std::logic_error for a gradient that is not
  // binary32 or not of the parameter's size.
  void accumulate(CudaOps& ops, std::size_t i, const CudaTensor& gradient, bool first);
  // Enqueues the unscale and inf check of every master gradient by scaler.inverse_scale(). Throws
  // std::logic_error, before anything changes, unless the scaler is ready to unscale and the last
  // unscale was stepped.
  void unscale(const LossScaler& scaler);
  // The master gradients as they stand (waits for the stream).
  std::vector<std::vector<double>> gradients() const;
  // Enqueues clipping by the global norm.
  void clip(double max_norm);
  // Reads the inf check back (waits for the stream), records it in the scaler
  // (LossScaler::record_unscaled) and takes the scaler's step: optimizer_step runs unless a
  // gradient was inf or NaN. Throws std::logic_error without an unscale before it.
  bool step(LossScaler& scaler, const std::function<void()>& optimizer_step);
  // Enqueues one optimizer step. Throws std::out_of_range beyond the steps it was made for.
  void optimizer_step();
  // The master weights (waits for the stream).
  std::vector<std::vector<double>> weights_as_doubles() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ampbench::train::cuda

namespace ampbench::train::steps {
// A training run on the CUDA backend keeps its masters on the device.
template <>
struct MastersOf<backends::cuda::CudaOps> {
  using type = cuda::DeviceMasters;
};
}  // namespace ampbench::train::steps
