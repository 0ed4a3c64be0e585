#include "harness/backends/cuda/train.hpp"

#include <stdexcept>
#include <type_traits>

#include "harness/backends/cuda/training_ops.hpp"
#include "harness/backends/cuda/training_plan.hpp"
#include "harness/train/trainer_steps.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device.hpp"

namespace ampbench::backends::cuda {
namespace {

// Throws what why_not_trainable says for the first policy that cannot train on the device.
void require_trainable(const train::TrainConfig& config) {
  for (const auto& p : config.policies) {
    if (auto why = why_not_trainable(p, config.model)) throw std::invalid_argument(*why);
  }
}

// `run(model)` for the models the device trains; the others were refused by require_trainable.
template <class Call>
auto with_device_model(const train::TrainConfig& config, const train::Dataset& train_set,
                       Call run) {
  return train::steps::with_model(config, train_set, [&](const auto& model) {
    using Model = std::decay_t<decltype(model)>;
    if constexpr (std::is_same_v<Model, train::Mlp>) {
      return run(model);
    } else {
      throw std::invalid_argument(
          why_not_trainable(config.policies.front(), config.model).value_or(config.model));
      return decltype(run(std::declval<const train::Mlp&>())){};
    }
  });
}

}  // namespace

train::TrainResult train_on_device(const train::TrainConfig& config,
                                   const train::Dataset& train_set, const train::Dataset& eval_set,
                                   const std::function<void(std::size_t)>& progress) {
  require_trainable(config);
  train::TrainResult result = with_device_model(config, train_set, [&](const auto& model) {
    return train::steps::run_training<CudaOps>(model, config, train_set, eval_set, progress);
  });
  result.backend = "cuda";
  result.device = device_record(kernels::probe_device(), kernels::library_versions());
  return result;
}

train::ProfileResult profile_on_device(const train::TrainConfig& config,
                                       const train::Dataset& train_set, std::size_t warmup,
                                       profile::RangeHooks hooks) {
  require_trainable(config);
  train::steps::ProfileHooks profile_hooks;
  profile_hooks.ranges = hooks;
  profile_hooks.begin_timed = [] {
    AMPBENCH_CUDA_CHECK(cudaDeviceSynchronize());
    reset_peak_pool_bytes();
  };
  profile_hooks.end_timed = [](train::PolicyProfile& p) {
    AMPBENCH_CUDA_CHECK(cudaDeviceSynchronize());
    p.peak_device_bytes = peak_pool_bytes();
  };
  return with_device_model(config, train_set, [&](const auto& model) {
    return train::steps::run_profile<CudaOps>(model, config, train_set, warmup, profile_hooks);
  });
}

}  // namespace ampbench::backends::cuda
