// Training and profiling on the GPU: train::train and profile_steps with the policies'
// steps on the device (training_ops.hpp) and, for training, the multiprecision reference on the
// CPU beside them, compared step by step exactly as on the CPU backend (harness/train/trainer.hpp).
#pragma once

#include <cstddef>
#include <functional>

#include "harness/train/data.hpp"
#include "harness/train/trainer.hpp"

namespace ampbench::train::cuda {

// The result's backend is "cuda" and its device the GPU's record (backends::cuda::device_record).
// The recipes run on the device too (recipe_on_device.hpp), their sensitivity over
// sensitivity_seeds as train() ranks it. Throws std::invalid_argument when the model or a policy
// cannot train on the device (backends::cuda::why_not_trainable), or a recipe
// (backends::cuda::why_no_recipe_training, or amp-bf16, the policy of its other ops),
// kernels::CudaError when a CUDA call fails.
TrainResult train_on_device(const TrainConfig& config, const Dataset& train_set,
                            const Dataset& eval_set,
                            const std::function<void(std::size_t step)>& progress = {});

// Both side by side beside one reference: each policy emulated on the CPU (RunResult::backend
// "cpu") and run on the device ("cuda"), in that order, then each recipe so; the result's backend
// is "all". With config.sensitivity each backend ranks a recipe's layers from its own runs
// (RecipeSensitivity::backend), over config.sensitivity_seeds seeds as train_over_seeds repeats.
TrainResult train_on_device_and_cpu(const TrainConfig& config, const Dataset& train_set,
                                    const Dataset& eval_set,
                                    const std::function<void(std::size_t step)>& progress = {});

// Each policy alone on the device, `warmup` untimed steps and config.steps timed ones: every phase
// an NVTX range, the timed steps traced by the CUPTI collector (kernels/cupti_collector.hpp), whose
// trace (kernels, API calls, copies, the phases as NVTX markers) each policy's attribution reads;
// the peak pool memory of the timed steps; the device's record; and the collector's own cost
// (kernels::measure_profiler_overhead, measured before anything is traced). Without CUPTI the
// trace holds the host phases and the attribution says why. With hardware_metrics, after each
// policy's timed steps the CUPTI range profiler (kernels/range_profiler.hpp) counts one more step
// per pass, its phases and ops as ranges (three levels: step, phase, op); a policy whose counters
// CUPTI refuses (privileges, an unsupported device) keeps the reason instead.
ProfileResult profile_on_device(const TrainConfig& config, const Dataset& train_set,
                                std::size_t warmup, bool hardware_metrics = false);

}  // namespace ampbench::train::cuda
