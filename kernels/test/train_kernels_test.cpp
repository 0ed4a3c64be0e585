// The training-step kernels against the host implementations they share their element math with:
// the unscale-and-check bit for bit on mixed lists (odd sizes, many small tensors, misaligned
// starts, subnormals, inf and NaN), the scale update step by step against train::LossScaler,
// clipping against train::clip_grad_norm, and SGD and AdamW against train::Sgd and train::AdamW,
// with steps skipped on the device.
#include "kernels/train_kernels.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"
#include "harness/train/clip.hpp"
#include "harness/train/optimizer.hpp"
#include "harness/train/scaler.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device_buffer.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::kernels {
namespace {

using TrainKernelsTest = test::GpuTest;

constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- element types on the host ------------------------------------------------------------------

float value_of(DType type, std::uint32_t bits) {
  if (type == DType::f32) return std::bit_cast<float>(bits);
  return static_cast<float>(numeric::decode(dtype_format(type), bits));
}

// A binary32 value stored as `type`: rounded to nearest even, as the kernel's store.
std::uint32_t store(DType type, float x) {
  if (type == DType::f32) return std::bit_cast<std::uint32_t>(x);
  return static_cast<std::uint32_t>(
      numeric::round_to(dtype_format(type), numeric::Rounding::nearest_even, x).bits);
}

bool is_nan(DType type, std::uint32_t bits) {
  return std::isnan(value_of(type, bits));
}

// ---- gradient lists
// -------------------------------------------------------------------------------

struct HostGradient {
  DType type;
  std::vector<std::uint32_t> bits;  // one pattern per element, in the low bits for 16-bit types
  bool misaligned;                  // starts one element into its allocation
};

// Random patterns of the type: every class of value, subnormals included; non-finite ones are
// replaced by finite ones unless allowed.
std::uint32_t random_bits(DType type, bool allow_non_finite, std::mt19937_64& rng) {
  const std::uint32_t bits = type == DType::f32 ? static_cast<std::uint32_t>(rng())
                                                : static_cast<std::uint32_t>(rng() & 0xFFFFu);
  if (allow_non_finite || std::isfinite(value_of(type, bits))) return bits;
  // Clearing the exponent's top bit makes it finite, keeping sign and fraction.
  return bits & ~(type == DType::f32 ? 0x40000000u : 0x4000u);
}

// Odd sizes around the chunk and vector boundaries, in each type, then many small tensors.
std::vector<HostGradient> make_gradients(bool allow_non_finite, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> sizes{0,     1,     3,     4,     5,      4095,
                                 65535, 65536, 65537, 65541, 200003, 2 * 65536};
  for (std::size_t i = 0; i < 200; ++i) sizes.push_back(1 + i % 37);
  std::vector<HostGradient> list;
  const DType types[] = {DType::f32, DType::f16, DType::bf16};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    HostGradient g{types[i % 3], std::vector<std::uint32_t>(sizes[i]), i % 4 == 1};
    for (auto& b : g.bits) b = random_bits(g.type, allow_non_finite, rng);
    list.push_back(std::move(g));
  }
  return list;
}

class DeviceGradients {
 public:
  explicit DeviceGradients(const std::vector<HostGradient>& host) {
    for (const HostGradient& g : host) {
      const std::size_t offset = g.misaligned ? dtype_bytes(g.type) : 0;
      std::vector<std::byte> bytes(offset + g.bits.size() * dtype_bytes(g.type));
      for (std::size_t i = 0; i < g.bits.size(); ++i) {
        std::memcpy(bytes.data() + offset + i * dtype_bytes(g.type), &g.bits[i],
                    dtype_bytes(g.type));
      }
      buffers_.emplace_back(bytes.size());
      buffers_.back().copy_from(bytes, nullptr);
      tensors_.push_back(
          {bytes.empty() ? nullptr : buffers_.back().data() + offset, g.bits.size(), g.type});
    }
  }

  std::span<const GradientTensor> tensors() const { return tensors_; }

  std::vector<std::uint32_t> bits(std::size_t index) const {
    const DeviceBuffer<std::byte>& buffer = buffers_[index];
    std::vector<std::byte> bytes(buffer.size());
    buffer.copy_to(bytes, nullptr);
    const GradientTensor& t = tensors_[index];
    const std::size_t offset = bytes.size() - t.size * dtype_bytes(t.type);
    std::vector<std::uint32_t> out(t.size, 0);
    for (std::size_t i = 0; i < t.size; ++i) {
      std::memcpy(&out[i], bytes.data() + offset + i * dtype_bytes(t.type), dtype_bytes(t.type));
    }
    return out;
  }

 private:
  std::vector<DeviceBuffer<std::byte>> buffers_;  // moved into place: pointers stay valid
  std::vector<GradientTensor> tensors_;
};

template <typename T>
T from_device(const DeviceBuffer<T>& buffer) {
  T value{};
  buffer.copy_to(std::span<T>(&value, 1), nullptr);
  return value;
}

template <typename T>
DeviceBuffer<T> on_device(T value) {
  DeviceBuffer<T> buffer(1);
  buffer.copy_from(std::span<const T>(&value, 1), nullptr);
  return buffer;
}

// Runs the fused unscale on `host` and checks every element against train::unscale_and_check and
// found_inf against whether any element was inf or NaN.
void check_unscale(const std::vector<HostGradient>& host, float inv_scale) {
  DeviceGradients device(host);
  const GradientUnscaler unscaler(device.tensors());
  const DeviceBuffer<float> d_inv_scale = on_device(inv_scale);
  const DeviceBuffer<float> d_found_inf = on_device(0.0F);
  unscaler.unscale_and_check(d_inv_scale.data(), d_found_inf.data(), nullptr);
  AMPBENCH_CUDA_CHECK(cudaDeviceSynchronize());

  bool any_non_finite = false;
  for (std::size_t t = 0; t < host.size(); ++t) {
    const DType type = host[t].type;
    const std::vector<std::uint32_t> got = device.bits(t);
    int mismatches = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const train::UnscaledElement r =
          train::unscale_and_check(value_of(type, host[t].bits[i]), inv_scale);
      any_non_finite = any_non_finite || r.non_finite;
      const std::uint32_t want = store(type, r.value);
      // NaN payloads are the hardware's: only NaN-ness is compared.
      const bool same = is_nan(type, want) ? is_nan(type, got[i]) : got[i] == want;
      if (!same && ++mismatches <= 3) {
        ADD_FAILURE() << dtype_format(type).name << " tensor " << t << " element " << i << " of "
                      << got.size() << ": input 0x" << std::hex << host[t].bits[i] << " inv_scale "
                      << inv_scale << ": got 0x" << got[i] << ", want 0x" << want;
      }
    }
  }
  EXPECT_EQ(from_device(d_found_inf), any_non_finite ? 1.0F : 0.0F);
}

TEST_F(TrainKernelsTest, UnscaleOfFiniteListsMatchesTheHostBitForBit) {
  // 2^-16 (exact), 1/3 (rounded), 1 (no multiply), 2^20 (gradients overflow, yet no inf found) and
  // +inf (the inverse of a scale at or below 2^-128): finite gradients never set found_inf.
  for (const float scale : {65536.0F, 3.0F, 1.0F, 0x1p-20F, 0x1p-130F}) {
    SCOPED_TRACE("scale " + std::to_string(scale));
    check_unscale(make_gradients(false, 1), train::inverse_scale(scale));
  }
}

TEST_F(TrainKernelsTest, UnscaleFindsInfAndNanWhereverTheyAre) {
  const float inv_scale = train::inverse_scale(65536.0F);
  const std::vector<HostGradient> clean = make_gradients(false, 2);
  // In the first element, in a vector of a large tensor, in the scalar tail of a misaligned one,
  // in the last element of the list; both signs of inf, and NaN.
  struct Place {
    std::size_t tensor, element;
  };
  for (const Place place :
       {Place{1, 0}, Place{10, 70001}, Place{5, 4093}, Place{13, 0}, Place{clean.size() - 1, 0}}) {
    for (const float bad : {kInf, -kInf, std::numeric_limits<float>::quiet_NaN()}) {
      std::vector<HostGradient> list = clean;
      HostGradient& g = list.at(place.tensor);
      g.bits.at(place.element) = store(g.type, bad);
      SCOPED_TRACE(std::string(dtype_format(g.type).name) + " tensor " +
                   std::to_string(place.tensor) + " element " + std::to_string(place.element) +
                   " = " + std::to_string(bad));
      check_unscale(list, inv_scale);
    }
  }
}

TEST_F(TrainKernelsTest, UnscaleOfRandomPatternsIncludingNonFinite) {
  for (const float scale : {65536.0F, 1.0F, 0.75F}) {
    check_unscale(make_gradients(true, 3), train::inverse_scale(scale));
  }
}

// ---- the scale update --------------------------------------------------------------------------

// Steps the device's scale state and train::LossScaler through the same found_inf sequence and
// compares scale, growth tracker and inverse scale after every update.
void check_scale_sequence(const train::LossScalerOptions& options,
                          const std::vector<bool>& found_inf) {
  train::LossScaler scaler(options);
  const DeviceBuffer<float> d_scale = on_device(scaler.scale());
  const DeviceBuffer<int> d_tracker = on_device(0);
  DeviceBuffer<float> d_found_inf(1);
  const DeviceBuffer<float> d_inv_scale(1);
  for (std::size_t step = 0; step < found_inf.size(); ++step) {
    std::vector<float> gradient{found_inf[step] ? kInf : 1.0F};
    const std::span<float> tensor(gradient);
    scaler.step(train::GradientList(&tensor, 1), [] {});
    scaler.update();

    const float flag = found_inf[step] ? 1.0F : 0.0F;
    d_found_inf.copy_from(std::span<const float>(&flag, 1), nullptr);
    update_scale(d_scale.data(), d_tracker.data(), d_found_inf.data(), scaler.rule(), nullptr);
    inverse_scale(d_scale.data(), d_inv_scale.data(), nullptr);
    AMPBENCH_CUDA_CHECK(cudaDeviceSynchronize());
    ASSERT_EQ(std::bit_cast<std::uint32_t>(from_device(d_scale)),
              std::bit_cast<std::uint32_t>(scaler.scale()))
        << "step " << step << ": device scale " << from_device(d_scale) << ", host "
        << scaler.scale();
    ASSERT_EQ(from_device(d_tracker), scaler.growth_tracker()) << "step " << step;
    ASSERT_EQ(std::bit_cast<std::uint32_t>(from_device(d_inv_scale)),
              std::bit_cast<std::uint32_t>(scaler.inverse_scale()))
        << "step " << step;
  }
}

TEST_F(TrainKernelsTest, ScaleUpdateFollowsTheLossScaler) {
  std::mt19937_64 rng(4);
  std::bernoulli_distribution inf(0.2);
  std::vector<bool> random(400);
  for (std::size_t i = 0; i < random.size(); ++i) random[i] = inf(rng);

  train::LossScalerOptions frequent_growth;
  frequent_growth.growth_interval = 3;
  check_scale_sequence(frequent_growth, random);

  // Growth to overflow keeps the scale; odd factors round in binary64 then binary32.
  train::LossScalerOptions near_overflow;
  near_overflow.init_scale = 0x1p120;
  near_overflow.growth_factor = 3.0;
  near_overflow.backoff_factor = 0.3;
  near_overflow.growth_interval = 1;
  check_scale_sequence(near_overflow, std::vector<bool>(20, false));
  check_scale_sequence(near_overflow, random);

  // Repeated backoff: to 0 without a floor, pinned at min_scale with one.
  train::LossScalerOptions collapse;
  collapse.init_scale = 1.0;
  check_scale_sequence(collapse, std::vector<bool>(160, true));
  collapse.min_scale = 0x1p-10;
  check_scale_sequence(collapse, std::vector<bool>(40, true));
}

// ---- the optimizers ----------------------------------------------------------------------------

// Binary32 values over a wide range: magnitudes from 2^-140 (subnormal) to 2^4, both signs.
std::vector<float> random_values(std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> unit(-1.0F, 1.0F);
  std::uniform_int_distribution<int> exponent(-140, 4);
  std::vector<float> v(n);
  for (float& x : v) x = std::ldexp(unit(rng), exponent(rng));
  return v;
}

const std::vector<std::size_t> kParameterSizes = [] {
  std::vector<std::size_t> sizes{1, 3, 65537, 0, 5, 2 * 65536 + 7};
  for (std::size_t i = 0; i < 60; ++i) sizes.push_back(1 + i % 13);
  return sizes;
}();

// Device copies of a list of binary32 tensors, one allocation each.
class DeviceTensors {
 public:
  explicit DeviceTensors(const std::vector<std::vector<float>>& host) {
    for (const auto& t : host) {
      buffers_.emplace_back(t.size());
      buffers_.back().copy_from(t, nullptr);
    }
  }
  float* data(std::size_t i) const { return buffers_[i].data(); }
  void upload(const std::vector<std::vector<float>>& host) {
    for (std::size_t i = 0; i < host.size(); ++i) buffers_[i].copy_from(host[i], nullptr);
  }
  std::vector<float> download(std::size_t i) const {
    std::vector<float> out(buffers_[i].size());
    buffers_[i].copy_to(out, nullptr);
    return out;
  }

 private:
  std::vector<DeviceBuffer<float>> buffers_;
};

std::vector<std::vector<float>> random_tensors(std::mt19937_64& rng) {
  std::vector<std::vector<float>> tensors;
  for (const std::size_t n : kParameterSizes) tensors.push_back(random_values(n, rng));
  return tensors;
}

// NaN-filled tensors: state the kernels must not read before writing it.
std::vector<std::vector<float>> poisoned_tensors() {
  std::vector<std::vector<float>> tensors;
  for (const std::size_t n : kParameterSizes) {
    tensors.emplace_back(n, std::numeric_limits<float>::quiet_NaN());
  }
  return tensors;
}

std::vector<std::vector<float>> zero_tensors() {
  std::vector<std::vector<float>> tensors;
  for (const std::size_t n : kParameterSizes) tensors.emplace_back(n, 0.0F);
  return tensors;
}

void expect_same_bits(const DeviceTensors& device, const std::vector<std::vector<float>>& host,
                      const std::string& what) {
  for (std::size_t t = 0; t < host.size(); ++t) {
    const std::vector<float> got = device.download(t);
    int mismatches = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      // NaN payloads are the hardware's: two NaNs agree.
      const bool same = std::isnan(host[t][i]) ? std::isnan(got[i])
                                               : std::bit_cast<std::uint32_t>(got[i]) ==
                                                     std::bit_cast<std::uint32_t>(host[t][i]);
      if (!same && ++mismatches <= 3) {
        ADD_FAILURE() << what << " tensor " << t << " element " << i << ": device " << got[i]
                      << ", host " << host[t][i];
      }
    }
  }
}

// Which of the calls the device skips (found_inf = 1): the first one, and one later.
const std::vector<bool> kSkipped{true, false, false, true, false, false};

// The calls of kSkipped with fresh random gradients each: the device skips by found_inf, the host
// by not stepping, as GradScaler.step does.
template <typename DeviceOptimizer, typename HostOptimizer>
void run_steps(DeviceOptimizer& device, HostOptimizer& host,
               std::vector<std::vector<float>>& params, DeviceTensors& d_grads,
               std::mt19937_64& rng) {
  DeviceBuffer<float> d_found_inf(1);
  for (const bool skip : kSkipped) {
    const std::vector<std::vector<float>> grads = random_tensors(rng);
    d_grads.upload(grads);
    const float flag = skip ? 1.0F : 0.0F;
    d_found_inf.copy_from(std::span<const float>(&flag, 1), nullptr);
    device.step(d_found_inf.data(), nullptr);
    if (!skip) host.step(params, grads);
  }
  AMPBENCH_CUDA_CHECK(cudaDeviceSynchronize());
}

std::int64_t device_steps(const std::int64_t* count) {
  std::int64_t value = 0;
  AMPBENCH_CUDA_CHECK(cudaMemcpy(&value, count, sizeof value, cudaMemcpyDeviceToHost));
  return value;
}

TEST_F(TrainKernelsTest, SgdMatchesTheHostOptimizerAcrossSkippedSteps) {
  const train::SgdOptions configurations[] = {
      {.lr = 0.1, .momentum = 0.9},
      {.lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 1e-2},
      {.lr = 0.01, .momentum = 0.8, .weight_decay = 1e-3, .nesterov = true},
      {.lr = 0.1, .momentum = 0, .weight_decay = 0.01},
  };
  for (const train::SgdOptions& options : configurations) {
    SCOPED_TRACE("lr " + std::to_string(options.lr) + " momentum " +
                 std::to_string(options.momentum) + " nesterov " +
                 std::to_string(options.nesterov));
    std::mt19937_64 rng(5);
    std::vector<std::vector<float>> params = random_tensors(rng);
    DeviceTensors d_params(params), d_grads(zero_tensors()), d_buffers(poisoned_tensors());
    std::vector<SgdTensor> tensors;
    for (std::size_t i = 0; i < params.size(); ++i) {
      tensors.push_back({d_params.data(i), d_grads.data(i), d_buffers.data(i), params[i].size()});
    }
    const auto scalars = train::make_sgd_scalars<float>(
        options.lr, options.momentum, options.dampening, options.weight_decay, options.nesterov);
    MultiTensorSgd device(tensors, scalars);
    train::Sgd<float> host(options);
    run_steps(device, host, params, d_grads, rng);
    expect_same_bits(d_params, params, "param");
    if (options.momentum != 0) expect_same_bits(d_buffers, host.momentum_buffers(), "buffer");
    EXPECT_EQ(device_steps(device.steps()), host.steps());
  }
}

// Random gradients with inf, -inf and NaN in a few places: what a step without a loss scaler
// meets when it overflows.
std::vector<std::vector<float>> gradients_with_non_finite(std::mt19937_64& rng) {
  std::vector<std::vector<float>> grads = random_tensors(rng);
  grads[0][0] = kInf;
  grads[2][40000] = -kInf;
  grads[2][40001] = std::numeric_limits<float>::quiet_NaN();
  grads.back().back() = std::numeric_limits<float>::quiet_NaN();
  return grads;
}

// Without found_inf every call steps, and non-finite gradients reach the parameters and the state
// as on the host.
TEST_F(TrainKernelsTest, WithoutFoundInfEveryCallStepsAndNonFiniteValuesPropagate) {
  std::mt19937_64 rng(6);
  std::vector<std::vector<float>> sgd_params = random_tensors(rng);
  std::vector<std::vector<float>> adamw_params = sgd_params;
  const std::vector<std::vector<float>> grads = gradients_with_non_finite(rng);
  DeviceTensors d_sgd_params(sgd_params), d_adamw_params(adamw_params), d_grads(grads),
      d_buffers(poisoned_tensors()), d_exp_avg(zero_tensors()), d_exp_avg_sq(zero_tensors());
  std::vector<SgdTensor> sgd_tensors;
  std::vector<AdamWTensor> adamw_tensors;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    sgd_tensors.push_back(
        {d_sgd_params.data(i), d_grads.data(i), d_buffers.data(i), grads[i].size()});
    adamw_tensors.push_back({d_adamw_params.data(i), d_grads.data(i), d_exp_avg.data(i),
                             d_exp_avg_sq.data(i), nullptr, grads[i].size()});
  }
  constexpr int kSteps = 3;
  const train::SgdOptions sgd_options{.lr = 0.1, .momentum = 0.9};
  MultiTensorSgd device_sgd(sgd_tensors, train::make_sgd_scalars<float>(0.1, 0.9, 0, 0, false));
  train::Sgd<float> host_sgd(sgd_options);
  const train::AdamWOptions adamw_options;
  std::vector<train::AdamWScalars<float>> schedule;
  for (std::int64_t step = 1; step <= kSteps; ++step) {
    schedule.push_back(train::make_adamw_scalars<float>(
        adamw_options.lr, adamw_options.beta1, adamw_options.beta2, adamw_options.eps,
        adamw_options.weight_decay, false, step, train::TorchKernels::cuda));
  }
  MultiTensorAdamW device_adamw(adamw_tensors, schedule);
  train::AdamW<float> host_adamw(adamw_options, train::TorchKernels::cuda);
  for (int step = 0; step < kSteps; ++step) {
    device_sgd.step(nullptr, nullptr);
    device_adamw.step(nullptr, nullptr);
    host_sgd.step(sgd_params, grads);
    host_adamw.step(adamw_params, grads);
  }
  AMPBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  expect_same_bits(d_sgd_params, sgd_params, "sgd param");
  expect_same_bits(d_buffers, host_sgd.momentum_buffers(), "sgd buffer");
  expect_same_bits(d_adamw_params, adamw_params, "adamw param");
  expect_same_bits(d_exp_avg, host_adamw.exp_avg(), "exp_avg");
  expect_same_bits(d_exp_avg_sq, host_adamw.exp_avg_sq(), "exp_avg_sq");
  EXPECT_EQ(device_steps(device_sgd.steps()), kSteps);
  EXPECT_EQ(device_steps(device_adamw.steps()), kSteps);
  EXPECT_TRUE(std::isnan(sgd_params[0][0]) || std::isinf(sgd_params[0][0]));
}

TEST_F(TrainKernelsTest, AdamWMatchesTheHostOptimizerAcrossSkippedSteps) {
  struct Configuration {
    train::AdamWOptions options;
    train::TorchKernels kernels;
  };
  const Configuration configurations[] = {
      {{}, train::TorchKernels::cuda},
      {{}, train::TorchKernels::cpu},
      {{.lr = 1e-2, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1, .amsgrad = true},
       train::TorchKernels::cuda},
      {{.lr = 3e-4, .weight_decay = 0, .amsgrad = true}, train::TorchKernels::cpu},
  };
  for (const Configuration& c : configurations) {
    const train::AdamWOptions& o = c.options;
    SCOPED_TRACE("lr " + std::to_string(o.lr) + " amsgrad " + std::to_string(o.amsgrad) +
                 (c.kernels == train::TorchKernels::cuda ? " cuda" : " cpu") + " kernels");
    std::mt19937_64 rng(7);
    std::vector<std::vector<float>> params = random_tensors(rng);
    DeviceTensors d_params(params), d_grads(zero_tensors()), d_exp_avg(zero_tensors()),
        d_exp_avg_sq(zero_tensors()), d_max(zero_tensors());
    std::vector<AdamWTensor> tensors;
    for (std::size_t i = 0; i < params.size(); ++i) {
      tensors.push_back({d_params.data(i), d_grads.data(i), d_exp_avg.data(i), d_exp_avg_sq.data(i),
                         o.amsgrad ? d_max.data(i) : nullptr, params[i].size()});
    }
    std::vector<train::AdamWScalars<float>> schedule;
    for (std::int64_t step = 1; step <= static_cast<std::int64_t>(kSkipped.size()); ++step) {
      schedule.push_back(train::make_adamw_scalars<float>(
          o.lr, o.beta1, o.beta2, o.eps, o.weight_decay, o.amsgrad, step, c.kernels));
    }
    MultiTensorAdamW device(tensors, schedule);
    train::AdamW<float> host(o, c.kernels);
    run_steps(device, host, params, d_grads, rng);
    expect_same_bits(d_params, params, "param");
    expect_same_bits(d_exp_avg, host.exp_avg(), "exp_avg");
    expect_same_bits(d_exp_avg_sq, host.exp_avg_sq(), "exp_avg_sq");
    if (o.amsgrad) expect_same_bits(d_max, host.max_exp_avg_sq(), "max_exp_avg_sq");
    EXPECT_EQ(device_steps(device.steps()), host.steps());
    // Every scheduled step was called, skipped ones too: one more has no scalars.
    EXPECT_THROW(device.step(nullptr, nullptr), std::out_of_range);
  }
}

// Clipping against train::clip_grad_norm on the same gradients: the norm within the binary64
// summation's error (the device sums in another order), every element the gradient times the
// coefficient that train::clip_coefficient gives for the device's norm, and that coefficient the
// host's. Large gradients (clipped), small ones (coefficient 1: untouched), and inf and NaN.
TEST_F(TrainKernelsTest, ClippingMatchesClipGradNorm) {
  std::mt19937_64 rng(11);
  struct ClipCase {
    const char* name;
    float multiplier;
    float poison;  // put into one element; 0: none
  };
  const ClipCase cases[] = {{"clipped", 1.0F, 0.0F},
                            {"unclipped", 0x1p-20F, 0.0F},
                            {"inf", 1.0F, kInf},
                            {"nan", 1.0F, std::numeric_limits<float>::quiet_NaN()}};
  for (const ClipCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::vector<float>> grads = random_tensors(rng);
    for (auto& t : grads) {
      for (float& g : t) g *= c.multiplier;
    }
    // Tensor 5 (131079 elements): the poison sits in its second chunk.
    if (c.poison != 0.0F) grads.at(5).at(70000) = c.poison;
    DeviceTensors d_grads(grads);
    std::vector<GradientTensor> tensors;
    for (std::size_t i = 0; i < grads.size(); ++i) {
      tensors.push_back({d_grads.data(i), grads[i].size(), DType::f32});
    }
    const GradientClipper clipper(tensors);
    const DeviceBuffer<double> d_norm(1);
    const double max_norm = 1.0;
    clipper.clip(max_norm, d_norm.data(), nullptr);
    AMPBENCH_CUDA_CHECK(cudaDeviceSynchronize());

    const std::vector<std::vector<float>> original = grads;
    std::vector<std::span<float>> spans(grads.begin(), grads.end());
    const double host_norm = train::clip_grad_norm(spans, max_norm);
    const double device_norm = from_device(d_norm);
    if (std::isfinite(host_norm)) {
      EXPECT_NEAR(device_norm, host_norm, host_norm * 1e-12);
    } else {
      EXPECT_EQ(std::isnan(device_norm), std::isnan(host_norm));
      EXPECT_EQ(std::isinf(device_norm), std::isinf(host_norm));
    }
    const float coefficient = train::clip_coefficient(device_norm, max_norm);
    const float host_coefficient = train::clip_coefficient(host_norm, max_norm);
    EXPECT_EQ(std::isnan(coefficient), std::isnan(host_coefficient));
    if (!std::isnan(coefficient)) {
      EXPECT_EQ(coefficient, host_coefficient);
    }
    std::vector<std::vector<float>> want = original;
    for (auto& t : want) {
      for (float& g : t) g *= coefficient;
    }
    expect_same_bits(d_grads, want, "clipped grad");
  }
}

// A whole mixed-precision step as a trainer enqueues it, with no host synchronisation between the
// kernels: zero found_inf, unscale, SGD (skipped on the device), scale update, inverse scale. The
// host runs the same steps through LossScaler and Sgd; gradients, parameters, momentum, scale and
// tracker must agree bit for bit after every step.
TEST_F(TrainKernelsTest, ATrainingStepOnTheDeviceMatchesTheScalerAndOptimizer) {
  std::mt19937_64 rng(8);
  std::vector<std::vector<float>> params = random_tensors(rng);
  DeviceTensors d_params(params), d_grads(zero_tensors()), d_buffers(poisoned_tensors());
  std::vector<SgdTensor> sgd_tensors;
  std::vector<GradientTensor> gradients;
  for (std::size_t i = 0; i < params.size(); ++i) {
    sgd_tensors.push_back({d_params.data(i), d_grads.data(i), d_buffers.data(i), params[i].size()});
    gradients.push_back({d_grads.data(i), params[i].size(), DType::f32});
  }
  const train::SgdOptions options{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3};
  MultiTensorSgd device_sgd(sgd_tensors, train::make_sgd_scalars<float>(0.05, 0.9, 0, 1e-3, false));
  const GradientUnscaler unscaler(gradients);
  train::LossScalerOptions scaler_options;
  scaler_options.init_scale = 0x1p10;
  scaler_options.growth_interval = 2;
  train::LossScaler scaler(scaler_options);
  train::Sgd<float> host_sgd(options);

  const DeviceBuffer<float> d_scale = on_device(scaler.scale());
  const DeviceBuffer<float> d_inv_scale = on_device(scaler.inverse_scale());
  const DeviceBuffer<int> d_tracker = on_device(0);
  const DeviceBuffer<float> d_found_inf(1);
  for (int step = 0; step < 8; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    std::vector<std::vector<float>> grads = random_tensors(rng);
    if (step % 3 == 1) grads[2][step * 1000] = step % 2 == 0 ? kInf : -kInf;
    if (step == 6) grads.back()[0] = std::numeric_limits<float>::quiet_NaN();
    d_grads.upload(grads);

    AMPBENCH_CUDA_CHECK(cudaMemsetAsync(d_found_inf.data(), 0, sizeof(float), nullptr));
    unscaler.unscale_and_check(d_inv_scale.data(), d_found_inf.data(), nullptr);
    device_sgd.step(d_found_inf.data(), nullptr);
    update_scale(d_scale.data(), d_tracker.data(), d_found_inf.data(), scaler.rule(), nullptr);
    inverse_scale(d_scale.data(), d_inv_scale.data(), nullptr);

    std::vector<std::span<float>> spans(grads.begin(), grads.end());
    const bool ran = scaler.step(spans, [&] { host_sgd.step(params, grads); });
    scaler.update();
    AMPBENCH_CUDA_CHECK(cudaDeviceSynchronize());

    EXPECT_EQ(from_device(d_found_inf), ran ? 0.0F : 1.0F);
    expect_same_bits(d_grads, grads, "unscaled grad");
    expect_same_bits(d_params, params, "param");
    if (host_sgd.steps() > 0) expect_same_bits(d_buffers, host_sgd.momentum_buffers(), "buffer");
    EXPECT_EQ(device_steps(device_sgd.steps()), host_sgd.steps());
    ASSERT_EQ(std::bit_cast<std::uint32_t>(from_device(d_scale)),
              std::bit_cast<std::uint32_t>(scaler.scale()));
    ASSERT_EQ(from_device(d_tracker), scaler.growth_tracker());
  }
  EXPECT_FALSE(scaler.skipped_steps().empty());
}

}  // namespace
}  // namespace ampbench::kernels
