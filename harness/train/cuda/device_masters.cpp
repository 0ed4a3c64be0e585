#include "harness/train/cuda/device_masters.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "kernels/cuda_check.hpp"
#include "kernels/train_kernels.hpp"

namespace ampbench::train::cuda {
namespace {

using backends::cuda::DeviceArray;
using backends::cuda::SharedStream;

using Storage = std::shared_ptr<DeviceArray>;

Storage allocate_floats(std::size_t count, const SharedStream& stream) {
  return std::make_shared<DeviceArray>(count * sizeof(float), stream);
}

Storage zeros(std::size_t count, const SharedStream& stream) {
  Storage s = allocate_floats(count, stream);
  if (count != 0) {
    AMPBENCH_CUDA_CHECK(cudaMemsetAsync(s->data(), 0, count * sizeof(float), stream->get()));
  }
  return s;
}

float* floats(const Storage& s) {
  return static_cast<float*>(s->data());
}

// Every tensor's values: the copies enqueued together, one wait for all of them.
std::vector<std::vector<double>> download(const std::vector<Storage>& tensors,
                                          const std::vector<std::size_t>& sizes,
                                          cudaStream_t stream) {
  std::vector<std::vector<float>> host(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    host[i].resize(sizes[i]);
    if (sizes[i] == 0) continue;
    AMPBENCH_CUDA_CHECK(cudaMemcpyAsync(host[i].data(), tensors[i]->data(),
                                        sizes[i] * sizeof(float), cudaMemcpyDeviceToHost, stream));
  }
  AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<std::vector<double>> values;
  for (const auto& h : host) values.emplace_back(h.begin(), h.end());
  return values;
}

}  // namespace

struct DeviceMasters::State {
  // One binary32 value in page-locked host memory.
  class PinnedFloat {
   public:
    PinnedFloat() {
      void* p = nullptr;
      AMPBENCH_CUDA_CHECK(cudaMallocHost(&p, sizeof(float)));
      value_ = static_cast<float*>(p);
      *value_ = 1.0F;
    }
    ~PinnedFloat() { AMPBENCH_CUDA_CHECK_NOTHROW(cudaFreeHost(value_)); }
    PinnedFloat(const PinnedFloat&) = delete;
    PinnedFloat& operator=(const PinnedFloat&) = delete;

    float* get() const { return value_; }
    float& operator*() const { return *value_; }

   private:
    float* value_ = nullptr;
  };

  SharedStream owned_stream;      // the ops' stream, which the arrays below keep alive
  cudaStream_t stream = nullptr;  // owned_stream's
  std::vector<std::size_t> sizes;
  std::vector<Storage> weights, grads;
  std::vector<Storage> optimizer_state;  // momentum buffers, or exp_avg and the like
  std::optional<kernels::GradientUnscaler> unscaler;
  std::optional<kernels::GradientClipper> clipper;
  std::variant<std::monostate, kernels::MultiTensorSgd, kernels::MultiTensorAdamW> optimizer;
  Storage check;  // float[2]: found_inf, inv_scale
  // The source of the inv_scale upload: pinned, so that the copy is asynchronous (from pageable
  // memory the driver may wait for the stream); rewritten only after step() has synchronised.
  PinnedFloat inv_scale_host;
  bool check_pending = false;

  float* found_inf() const { return floats(check); }
  float* inv_scale() const { return floats(check) + 1; }

  Storage zeroed_state(std::size_t count) {
    optimizer_state.push_back(zeros(count, owned_stream));
    return optimizer_state.back();
  }

  void make_optimizer(const SgdOptions& o) {
    validate(o);
    const auto scalars =
        make_sgd_scalars<float>(o.lr, o.momentum, o.dampening, o.weight_decay, o.nesterov);
    std::vector<kernels::SgdTensor> tensors;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      float* buffer = scalars.use_momentum ? floats(zeroed_state(sizes[i])) : nullptr;
      tensors.push_back({floats(weights[i]), floats(grads[i]), buffer, sizes[i]});
    }
    optimizer.emplace<kernels::MultiTensorSgd>(tensors, scalars);
  }

  void make_optimizer(const AdamWOptions& o, std::size_t steps) {
    validate(o);
    std::vector<AdamWScalars<float>> schedule;
    for (std::size_t step = 1; step <= std::max<std::size_t>(steps, 1); ++step) {
      schedule.push_back(make_adamw_scalars<float>(o.lr, o.beta1, o.beta2, o.eps, o.weight_decay,
                                                   o.amsgrad, static_cast<std::int64_t>(step),
                                                   TorchKernels::cuda));
    }
    std::vector<kernels::AdamWTensor> tensors;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      float* exp_avg = floats(zeroed_state(sizes[i]));
      float* exp_avg_sq = floats(zeroed_state(sizes[i]));
      float* max_exp_avg_sq = o.amsgrad ? floats(zeroed_state(sizes[i])) : nullptr;
      tensors.push_back(
          {floats(weights[i]), floats(grads[i]), exp_avg, exp_avg_sq, max_exp_avg_sq, sizes[i]});
    }
    optimizer.emplace<kernels::MultiTensorAdamW>(tensors, schedule);
  }
};

DeviceMasters::DeviceMasters(CudaOps& ops, const std::vector<std::vector<double>>& initial,
                             const OptimizerOptions& options, std::size_t steps)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.owned_stream = ops.shared_stream();
  s.stream = s.owned_stream->get();
  std::vector<kernels::GradientTensor> gradients;
  // The uploads' sources, alive until the wait below.
  std::vector<std::vector<float>> binary32;
  for (const auto& w : initial) {
    binary32.emplace_back(w.begin(), w.end());  // exact: the values are binary32
    s.sizes.push_back(w.size());
    s.weights.push_back(allocate_floats(w.size(), s.owned_stream));
    if (!w.empty()) {
      AMPBENCH_CUDA_CHECK(cudaMemcpyAsync(s.weights.back()->data(), binary32.back().data(),
                                          w.size() * sizeof(float), cudaMemcpyHostToDevice,
                                          s.stream));
    }
    s.grads.push_back(zeros(w.size(), s.owned_stream));
    gradients.push_back({floats(s.grads.back()), w.size(), kernels::DType::f32});
  }
  s.check = zeros(2, s.owned_stream);
  // The uploads have left their sources, and the pool's memory the multi-tensor tables point to
  // (copied synchronously, on the legacy stream) is allocated.
  AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  s.unscaler.emplace(gradients);
  s.clipper.emplace(gradients);
  if (const auto* sgd = std::get_if<SgdOptions>(&options)) {
    s.make_optimizer(*sgd);
  } else {
    s.make_optimizer(std::get<AdamWOptions>(options), steps);
  }
  AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(s.stream));  // the optimizer's zeroed state
}

DeviceMasters::~DeviceMasters() = default;
DeviceMasters::DeviceMasters(DeviceMasters&&) noexcept = default;
DeviceMasters& DeviceMasters::operator=(DeviceMasters&&) noexcept = default;

std::vector<CudaTensor> DeviceMasters::parameters(CudaOps& /*ops*/) const {
  std::vector<CudaTensor> params;
  for (std::size_t i = 0; i < state_->sizes.size(); ++i) {
    params.push_back(
        {state_->weights[i], state_->sizes[i], kernels::DType::f32, numeric::formats::fp32});
  }
  return params;
}

void DeviceMasters::accumulate(CudaOps& /*ops*/, std::size_t i, const CudaTensor& gradient,
                               bool first) {
  State& s = *state_;
  if (gradient.type != kernels::DType::f32 || gradient.size != s.sizes.at(i)) {
    throw std::logic_error("parameter " + std::to_string(i) + "'s gradient is not binary32 of " +
                           std::to_string(s.sizes[i]) + " elements");
  }
  if (gradient.size == 0) return;
  if (first) {
    AMPBENCH_CUDA_CHECK(cudaMemcpyAsync(s.grads[i]->data(), gradient.data(),
                                        gradient.size * sizeof(float), cudaMemcpyDeviceToDevice,
                                        s.stream));
  } else {
    kernels::add(kernels::DType::f32, s.grads[i]->data(), gradient.data(), s.grads[i]->data(),
                 gradient.size, s.stream);
  }
}

void DeviceMasters::unscale(const LossScaler& scaler) {
  State& s = *state_;
  // Refused before the gradients change, as LossScaler::unscale refuses.
  if (s.check_pending || scaler.stage() != ScalerStage::ready) {
    throw std::logic_error(
        "DeviceMasters::unscale: the gradients were unscaled or stepped in this iteration");
  }
  *s.inv_scale_host = scaler.inverse_scale();
  AMPBENCH_CUDA_CHECK(cudaMemsetAsync(s.found_inf(), 0, sizeof(float), s.stream));
  AMPBENCH_CUDA_CHECK(cudaMemcpyAsync(s.inv_scale(), s.inv_scale_host.get(), sizeof(float),
                                      cudaMemcpyHostToDevice, s.stream));
  s.unscaler->unscale_and_check(s.inv_scale(), s.found_inf(), s.stream);
  s.check_pending = true;
}

std::vector<std::vector<double>> DeviceMasters::gradients() const {
  return download(state_->grads, state_->sizes, state_->stream);
}

void DeviceMasters::clip(double max_norm) {
  state_->clipper->clip(max_norm, nullptr, state_->stream);
}

bool DeviceMasters::step(LossScaler& scaler, const std::function<void()>& optimizer_step) {
  State& s = *state_;
  if (!s.check_pending) {
    throw std::logic_error("DeviceMasters::step: the gradients were not unscaled on the device");
  }
  float found_inf = 0.0F;
  AMPBENCH_CUDA_CHECK(
      cudaMemcpyAsync(&found_inf, s.found_inf(), sizeof(float), cudaMemcpyDeviceToHost, s.stream));
  AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  s.check_pending = false;
  scaler.record_unscaled(found_inf != 0.0F);
  // Unscaled already: the scaler's step only decides, and touches no gradient.
  return scaler.step(GradientList{}, optimizer_step);
}

void DeviceMasters::optimizer_step() {
  State& s = *state_;
  std::visit(
      [&](auto& optimizer) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(optimizer)>, std::monostate>) {
          optimizer.step(nullptr, s.stream);
        }
      },
      s.optimizer);
}

std::vector<std::vector<double>> DeviceMasters::weights_as_doubles() const {
  return download(state_->weights, state_->sizes, state_->stream);
}

}  // namespace ampbench::train::cuda
