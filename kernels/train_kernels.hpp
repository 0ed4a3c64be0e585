// The GPU side of a mixed-precision training step's bookkeeping: the fused unscale-and-check of
// the gradients, clipping by their global norm, the loss scale's update, and multi-tensor SGD and
// AdamW on binary32 master weights. Each kernel calls the element function of the host
// implementation (harness/numeric/scaler_math.hpp, clip_math.hpp, optimizer_math.hpp), so device
// and host agree bit for bit (clipping: given the same norm, see GradientClipper).
// docs/scaler.md and docs/optimizers.md ("On the GPU") describe them.
//
// A trainer's step, with every value in device memory and no host synchronisation:
//   cudaMemsetAsync(found_inf, 0, sizeof(float), stream);
//   unscaler.unscale_and_check(inv_scale, found_inf, stream);   // one launch for all gradients
//   optimizer.step(found_inf, stream);                          // a no-op on the device when set
//   update_scale(scale, growth_tracker, found_inf, rule, stream);
//   inverse_scale(scale, inv_scale, stream);                    // for the next step
//
// The tensor lists are fixed when the objects are made: their tables are planned on the host
// (multi_tensor_plan.hpp) and copied to the device once, so each call is a single launch. All
// launchers enqueue on `stream` and return; pointers are device memory, and must stay valid while
// work that uses them is in flight. Invalid arguments throw std::invalid_argument before anything
// is enqueued; failed CUDA calls throw CudaError.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "harness/numeric/clip_math.hpp"
#include "harness/numeric/optimizer_math.hpp"
#include "harness/numeric/scaler_math.hpp"
#include "kernels/multi_tensor_plan.hpp"
#include "kernels/op_kernels.hpp"

namespace ampbench::kernels {

// A gradient tensor of `size` elements of type `type`, flattened and contiguous.
struct GradientTensor {
  void* data;
  std::size_t size;
  DType type;
};

namespace detail {

// Device memory holding a copy of host bytes, made synchronously and freed in the destructor
// (a failure there is logged, never thrown). Kept out of device_buffer.hpp's reach so that this
// header needs no CUDA header but the runtime API's.
class DeviceCopy {
 public:
  DeviceCopy() = default;
  DeviceCopy(const void* host, std::size_t bytes);
  ~DeviceCopy();
  DeviceCopy(DeviceCopy&& other) noexcept;
  DeviceCopy& operator=(DeviceCopy&& other) noexcept;
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;

  void* get() const { return data_; }

 private:
  void* data_ = nullptr;
};

// A tensor list as the kernels read it: the chunk tasks (one block each) and one record per
// tensor.
struct MultiTensorTable {
  DeviceCopy tasks;    // ChunkTask[blocks]
  DeviceCopy tensors;  // the tensor records
  std::size_t blocks = 0;
};

}  // namespace detail

// PyTorch's torch._amp_foreach_non_finite_check_and_unscale_ for a fixed list of gradients of
// mixed types (fp32, fp16, bf16, as the GradScaler of bf16 or fp16 models meets them), in place.
class GradientUnscaler {
 public:
  // Throws std::invalid_argument for a null pointer in a non-empty tensor or an unknown type,
  // std::length_error when the list does not fit one launch (plan_chunks). Copies the table to the
  // device (synchronous).
  explicit GradientUnscaler(std::span<const GradientTensor> gradients);

  // Each element g becomes train::unscale_and_check(g, *inv_scale).value, computed in binary32
  // and rounded to the tensor's type to nearest even; where an element was inf or NaN,
  // *found_inf = 1 (it is never reset to 0: the caller zeroes it per step, as GradScaler makes a
  // new zero tensor). One launch; none when every tensor is empty.
  void unscale_and_check(const float* inv_scale, float* found_inf, cudaStream_t stream) const;

  std::size_t blocks() const { return table_.blocks; }  // of each launch

 private:
  detail::MultiTensorTable table_;
};

// torch.nn.utils.clip_grad_norm_ (norm_type 2, error_if_nonfinite=False) over a fixed list of
// binary32 gradients, in place, without a host synchronisation, as train::clip_grad_norm defines
// it: the sum of squares in binary64 (each square of a binary32 value exact), the norm its square
// root, the coefficient train::clip_coefficient (clip_math.hpp) formed on the device, and every
// element multiplied by it in binary32. The host sums element by element, the device per chunk
// and then over the chunks in block order: the sums may differ in their last binary64 bits, and
// the coefficients only where the norm lies that close to a binary32 rounding boundary.
class GradientClipper {
 public:
  // Throws std::invalid_argument for a null pointer in a non-empty tensor or a type other than
  // f32, std::length_error when the list does not fit one launch (plan_chunks). Copies the table
  // to the device (synchronous).
  explicit GradientClipper(std::span<const GradientTensor> gradients);

  // Three launches: the chunks' sums of squares, their total with the norm and the coefficient
  // (one block), and the multiply. total_norm (device memory, may be null) receives the norm. When
  // every tensor is empty nothing is launched and *total_norm becomes 0. The calls share scratch
  // memory: calls on different streams must not overlap.
  void clip(double max_norm, double* total_norm, cudaStream_t stream) const;

  std::size_t blocks() const { return table_.blocks; }  // of the first and last launch

 private:
  detail::MultiTensorTable table_;
  detail::DeviceCopy chunk_sums_;   // double[blocks]
  detail::DeviceCopy coefficient_;  // float
};

// PyTorch's torch._amp_update_scale_ (one thread): the loss scale's backoff after a step with a
// non-finite gradient (*found_inf != 0), or its growth after rule.growth_interval clean steps, by
// train::update_scale. scale and growth_tracker are read and written in place.
void update_scale(float* scale, int* growth_tracker, const float* found_inf,
                  const train::ScaleRule& rule, cudaStream_t stream);

// *inv_scale = train::inverse_scale(*scale) (one thread): 1 / scale in binary64, rounded once to
// binary32, as GradScaler does before unscaling.
void inverse_scale(const float* scale, float* inv_scale, cudaStream_t stream);

// The binary32 tensors of one SGD parameter: momentum_buffer may be null without momentum.
struct SgdTensor {
  float* param;
  const float* grad;
  float* momentum_buffer;
  std::size_t size;
};

// The tensors of one AdamW parameter: max_exp_avg_sq may be null without amsgrad. The caller
// zeroes exp_avg, exp_avg_sq and max_exp_avg_sq before the first step, as PyTorch's lazily made
// state starts.
struct AdamWTensor {
  float* param;
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  float* max_exp_avg_sq;
  std::size_t size;
};

// The number of steps an optimizer took, in device memory, so that a step skipped on the device
// is not counted without the host knowing it: the count PyTorch keeps in state["step"].
class DeviceStepCount {
 public:
  DeviceStepCount();  // 0, synchronous
  const std::int64_t* get() const { return static_cast<const std::int64_t*>(count_.get()); }
  // One thread: ++count unless *found_inf != 0 (found_inf may be null: never skipped).
  void advance(const float* found_inf, cudaStream_t stream);

 private:
  detail::DeviceCopy count_;
};

// torch.optim.SGD (fp32, single-tensor rounding, train::sgd_update) over a fixed parameter list,
// one launch updating the whole list per step, skipped on the device when *found_inf != 0 as
// PyTorch's fused optimizers do with the GradScaler's found_inf. The first step that runs copies
// d_p into the momentum buffer, so a skipped first step leaves the buffer unused.
class MultiTensorSgd {
 public:
  // Throws std::invalid_argument for a null param or grad in a non-empty tensor, or a null
  // momentum buffer when scalars.use_momentum.
  MultiTensorSgd(std::span<const SgdTensor> tensors, const train::SgdScalars<float>& scalars);

  // found_inf may be null: the step always runs. Two launches: the update, then the step count.
  void step(const float* found_inf, cudaStream_t stream);

  // The steps that ran (not skipped), in device memory.
  const std::int64_t* steps() const { return steps_.get(); }

 private:
  train::SgdScalars<float> scalars_;
  detail::MultiTensorTable table_;
  DeviceStepCount steps_;
};

// torch.optim.AdamW (fp32, train::adamw_update) over a fixed parameter list, skipped on the
// device like MultiTensorSgd. The step-dependent scalars (bias corrections) are formed on the host
// by train::make_adamw_scalars, whose binary64 pow the device need not reproduce: the schedule
// holds those of steps 1, 2, ..., and the kernel takes the one of the device's step count.
class MultiTensorAdamW {
 public:
  // schedule[i]: make_adamw_scalars<float>(..., step = i + 1, kernels). Throws
  // std::invalid_argument for a null pointer in a non-empty tensor, a null max_exp_avg_sq when
  // the schedule uses amsgrad, or an empty schedule.
  MultiTensorAdamW(std::span<const AdamWTensor> tensors,
                   std::span<const train::AdamWScalars<float>> schedule);

  // Throws std::out_of_range when called more times than the schedule has steps (skipped steps
  // are counted too: the host cannot know them). found_inf may be null.
  void step(const float* found_inf, cudaStream_t stream);

  const std::int64_t* steps() const { return steps_.get(); }

 private:
  detail::MultiTensorTable table_;
  detail::DeviceCopy schedule_;  // train::AdamWScalars<float>[schedule_steps_]
  std::size_t schedule_steps_ = 0;
  std::size_t calls_ = 0;
  DeviceStepCount steps_;
};

}  // namespace ampbench::kernels
