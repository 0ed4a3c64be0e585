// Compiled with -fmad=false (kernels/CMakeLists.txt): the element functions say where a multiply
// and an add fuse (fused_multiply_add) and where they do not, and nvcc must not contract the rest,
// e.g. AdamW's param * decay_factor into the addcdiv that follows on the CPU-kernels path.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/train_kernels.hpp"

namespace ampbench::kernels {
namespace {

// PyTorch's multi-tensor kernels use 512 threads per chunk of 65536 elements.
constexpr unsigned kThreadsPerBlock = 512;
// The unscale reads and writes 16 bytes per access (4 binary32 or 8 16-bit elements), two accesses
// in flight per thread: enough bytes in flight per SM for the memory system's latency.
constexpr unsigned kVectorBytes = 16;
constexpr unsigned kVectorsInFlight = 2;
static_assert(kMultiTensorChunkElements * sizeof(std::uint16_t) % kVectorBytes == 0,
              "a chunk of the narrowest type must start a vector wherever its tensor does");

// Loads and stores of one element type in binary32 arithmetic (PyTorch's opmath_type), rounding to
// nearest even on the way back, as a tensor's store does.
template <typename T>
struct Element;
template <>
struct Element<float> {
  __device__ static float widen(float x) { return x; }
  __device__ static float narrow(float x) { return x; }
};
template <>
struct Element<__half> {
  __device__ static float widen(__half x) { return __half2float(x); }
  __device__ static __half narrow(float x) { return __float2half_rn(x); }
};
template <>
struct Element<__nv_bfloat16> {
  __device__ static float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
  __device__ static __nv_bfloat16 narrow(float x) { return __float2bfloat16_rn(x); }
};

template <typename T>
struct alignas(kVectorBytes) Vector {
  static constexpr unsigned kElements = kVectorBytes / sizeof(T);
  T element[kElements];
};

__device__ float unscale_one(float value, float inv_scale, bool& non_finite) {
  const train::UnscaledElement r = train::unscale_and_check(value, inv_scale);
  non_finite = non_finite || r.non_finite;
  return r.value;
}

template <typename T>
__device__ void unscale_vector(Vector<T>& x, float inv_scale, bool& non_finite) {
#pragma unroll
  for (unsigned j = 0; j < Vector<T>::kElements; ++j) {
    x.element[j] =
        Element<T>::narrow(unscale_one(Element<T>::widen(x.element[j]), inv_scale, non_finite));
  }
}

// Unscales count elements at data in place; whether any was inf or NaN. Vector accesses where the
// chunk is aligned for them (it starts where its tensor does, modulo the vector size), all loads
// of a round issued before any store, then the remaining elements one by one.
template <typename T>
__device__ bool unscale_chunk(T* data, std::uint64_t count, float inv_scale) {
  bool non_finite = false;
  const bool aligned = reinterpret_cast<std::uintptr_t>(data) % kVectorBytes == 0;
  const std::uint64_t vectors = aligned ? count / Vector<T>::kElements : 0;
  auto* vector_data = reinterpret_cast<Vector<T>*>(data);
  const std::uint64_t round = static_cast<std::uint64_t>(blockDim.x) * kVectorsInFlight;
  for (std::uint64_t first = threadIdx.x; first < vectors; first += round) {
    Vector<T> x[kVectorsInFlight];
#pragma unroll
    for (unsigned k = 0; k < kVectorsInFlight; ++k) {
      const std::uint64_t v = first + k * static_cast<std::uint64_t>(blockDim.x);
      if (v < vectors) x[k] = vector_data[v];
    }
#pragma unroll
    for (unsigned k = 0; k < kVectorsInFlight; ++k) {
      const std::uint64_t v = first + k * static_cast<std::uint64_t>(blockDim.x);
      if (v < vectors) {
        unscale_vector(x[k], inv_scale, non_finite);
        vector_data[v] = x[k];
      }
    }
  }
  for (std::uint64_t i = vectors * Vector<T>::kElements + threadIdx.x; i < count; i += blockDim.x) {
    data[i] = Element<T>::narrow(unscale_one(Element<T>::widen(data[i]), inv_scale, non_finite));
  }
  return non_finite;
}

__global__ void __launch_bounds__(kThreadsPerBlock)
    unscale_and_check_kernel(const ChunkTask* tasks, const GradientTensor* tensors,
                             const float* inv_scale, float* found_inf) {
  const ChunkTask task = tasks[blockIdx.x];
  const GradientTensor tensor = tensors[task.tensor];
  const ChunkRange range = chunk_range(task, tensor.size);
  const float scale = *inv_scale;
  bool non_finite = false;
  switch (tensor.type) {
    case DType::f32:
      non_finite =
          unscale_chunk(static_cast<float*>(tensor.data) + range.begin, range.count, scale);
      break;
    case DType::f16:
      non_finite =
          unscale_chunk(static_cast<__half*>(tensor.data) + range.begin, range.count, scale);
      break;
    case DType::bf16:
      non_finite =
          unscale_chunk(static_cast<__nv_bfloat16*>(tensor.data) + range.begin, range.count, scale);
      break;
  }
  // Every writer stores the same value, so the race is benign (as in PyTorch's kernel).
  if (non_finite) *found_inf = 1.0F;
}

// The sum over the block's threads of their values, in a fixed tree. Every launch that calls it
// has kThreadsPerBlock threads (a smaller block would read unwritten shared memory).
__device__ double block_sum(double value) {
  __shared__ double partial[kThreadsPerBlock];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (unsigned half = kThreadsPerBlock / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  return partial[0];
}

__global__ void __launch_bounds__(kThreadsPerBlock)
    clip_grad_norm_squares_kernel(const ChunkTask* tasks, const GradientTensor* tensors,
                                  double* chunk_sums) {
  const ChunkTask task = tasks[blockIdx.x];
  const GradientTensor tensor = tensors[task.tensor];
  const ChunkRange range = chunk_range(task, tensor.size);
  const float* data = static_cast<const float*>(tensor.data) + range.begin;
  double sum = 0.0;
  for (std::uint64_t i = threadIdx.x; i < range.count; i += blockDim.x) {
    const double g = data[i];
    sum += g * g;  // exact: a binary32 value's square fits binary64's significand
  }
  const double total = block_sum(sum);
  if (threadIdx.x == 0) chunk_sums[blockIdx.x] = total;
}

__global__ void __launch_bounds__(kThreadsPerBlock)
    clip_grad_norm_coefficient_kernel(const double* chunk_sums, std::size_t chunks, double max_norm,
                                      float* coefficient, double* total_norm) {
  double sum = 0.0;
  for (std::size_t i = threadIdx.x; i < chunks; i += blockDim.x) sum += chunk_sums[i];
  const double total = block_sum(sum);
  if (threadIdx.x == 0) {
    const double norm = sqrt(total);
    *coefficient = train::clip_coefficient(norm, max_norm);
    if (total_norm != nullptr) *total_norm = norm;
  }
}

__global__ void __launch_bounds__(kThreadsPerBlock)
    clip_grad_norm_scale_kernel(const ChunkTask* tasks, const GradientTensor* tensors,
                                const float* coefficient) {
  const ChunkTask task = tasks[blockIdx.x];
  const GradientTensor tensor = tensors[task.tensor];
  const ChunkRange range = chunk_range(task, tensor.size);
  float* data = static_cast<float*>(tensor.data) + range.begin;
  const float c = *coefficient;
  for (std::uint64_t i = threadIdx.x; i < range.count; i += blockDim.x) data[i] *= c;
}

__global__ void update_scale_kernel(float* scale, int* growth_tracker, const float* found_inf,
                                    train::ScaleRule rule) {
  const train::ScaleState next =
      train::update_scale({*scale, *growth_tracker}, *found_inf != 0.0F, rule);
  *scale = next.scale;
  *growth_tracker = next.growth_tracker;
}

__global__ void loss_scale_inverse_kernel(const float* scale, float* inv_scale) {
  *inv_scale = train::inverse_scale(*scale);
}

__device__ bool skipped(const float* found_inf) {
  return found_inf != nullptr && *found_inf != 0.0F;
}

__global__ void optimizer_advance_step_kernel(std::int64_t* count, const float* found_inf) {
  if (!skipped(found_inf)) ++*count;
}

__global__ void __launch_bounds__(kThreadsPerBlock)
    sgd_kernel(const ChunkTask* tasks, const SgdTensor* tensors, train::SgdScalars<float> scalars,
               const float* found_inf, const std::int64_t* steps) {
  if (skipped(found_inf)) return;
  const bool first_step = *steps == 0;
  const ChunkTask task = tasks[blockIdx.x];
  const SgdTensor tensor = tensors[task.tensor];
  const ChunkRange range = chunk_range(task, tensor.size);
  for (std::uint64_t i = range.begin + threadIdx.x; i < range.begin + range.count;
       i += blockDim.x) {
    float param = tensor.param[i];
    // Read only after the first step: before it the buffer holds whatever the caller left there.
    float buffer = scalars.use_momentum && !first_step ? tensor.momentum_buffer[i] : 0.0F;
    train::sgd_update(param, tensor.grad[i], buffer, first_step, scalars);
    tensor.param[i] = param;
    if (scalars.use_momentum) tensor.momentum_buffer[i] = buffer;
  }
}

__global__ void __launch_bounds__(kThreadsPerBlock)
    adamw_kernel(const ChunkTask* tasks, const AdamWTensor* tensors,
                 const train::AdamWScalars<float>* schedule, const float* found_inf,
                 const std::int64_t* steps) {
  if (skipped(found_inf)) return;
  // The host allows no more calls than the schedule has steps, and the count never exceeds calls.
  const train::AdamWScalars<float> scalars = schedule[*steps];
  const ChunkTask task = tasks[blockIdx.x];
  const AdamWTensor tensor = tensors[task.tensor];
  const ChunkRange range = chunk_range(task, tensor.size);
  for (std::uint64_t i = range.begin + threadIdx.x; i < range.begin + range.count;
       i += blockDim.x) {
    float param = tensor.param[i];
    float exp_avg = tensor.exp_avg[i];
    float exp_avg_sq = tensor.exp_avg_sq[i];
    float max_exp_avg_sq = scalars.amsgrad ? tensor.max_exp_avg_sq[i] : 0.0F;
    train::adamw_update(param, tensor.grad[i], exp_avg, exp_avg_sq, max_exp_avg_sq, scalars);
    tensor.param[i] = param;
    tensor.exp_avg[i] = exp_avg;
    tensor.exp_avg_sq[i] = exp_avg_sq;
    if (scalars.amsgrad) tensor.max_exp_avg_sq[i] = max_exp_avg_sq;
  }
}

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument(message);
}

// Plans the chunks of `tensors` and copies the table to the device.
template <typename Tensor>
detail::MultiTensorTable make_table(std::span<const Tensor> tensors) {
  std::vector<std::size_t> sizes;
  sizes.reserve(tensors.size());
  for (const Tensor& t : tensors) sizes.push_back(t.size);
  const std::vector<ChunkTask> tasks = plan_chunks(sizes);
  detail::MultiTensorTable table;
  table.blocks = tasks.size();
  if (tasks.empty()) return table;
  table.tasks = detail::DeviceCopy(tasks.data(), tasks.size() * sizeof(ChunkTask));
  table.tensors = detail::DeviceCopy(tensors.data(), tensors.size() * sizeof(Tensor));
  return table;
}

const ChunkTask* tasks_of(const detail::MultiTensorTable& table) {
  return static_cast<const ChunkTask*>(table.tasks.get());
}

template <typename Tensor>
const Tensor* tensors_of(const detail::MultiTensorTable& table) {
  return static_cast<const Tensor*>(table.tensors.get());
}

// plan_chunks keeps the task count within a grid's 2^31 - 1 blocks.
unsigned grid_of(const detail::MultiTensorTable& table) {
  return static_cast<unsigned>(table.blocks);
}

std::string tensor_name(const char* list, std::size_t index) {
  return std::string(list) + ": tensor " + std::to_string(index);
}

// The checks come before any CUDA call (the step count is made after the table).
detail::MultiTensorTable checked_sgd_table(std::span<const SgdTensor> tensors,
                                           const train::SgdScalars<float>& scalars) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const SgdTensor& t = tensors[i];
    if (t.size == 0) continue;
    require(t.param != nullptr && t.grad != nullptr,
            tensor_name("MultiTensorSgd", i) + " has no param or no grad");
    require(!scalars.use_momentum || t.momentum_buffer != nullptr,
            tensor_name("MultiTensorSgd", i) + " has no momentum buffer, and momentum is on");
  }
  return make_table(tensors);
}

detail::MultiTensorTable checked_adamw_table(std::span<const AdamWTensor> tensors,
                                             std::span<const train::AdamWScalars<float>> schedule) {
  require(!schedule.empty(), "MultiTensorAdamW: the schedule has no step");
  const bool amsgrad = std::any_of(schedule.begin(), schedule.end(),
                                   [](const train::AdamWScalars<float>& s) { return s.amsgrad; });
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const AdamWTensor& t = tensors[i];
    if (t.size == 0) continue;
    require(
        t.param != nullptr && t.grad != nullptr && t.exp_avg != nullptr && t.exp_avg_sq != nullptr,
        tensor_name("MultiTensorAdamW", i) + " lacks param, grad, exp_avg or exp_avg_sq");
    require(!amsgrad || t.max_exp_avg_sq != nullptr,
            tensor_name("MultiTensorAdamW", i) + " has no max_exp_avg_sq, and amsgrad is on");
  }
  return make_table(tensors);
}

}  // namespace

namespace detail {

DeviceCopy::DeviceCopy(const void* host, std::size_t bytes) {
  if (bytes == 0) return;
  AMPBENCH_CUDA_CHECK(cudaMalloc(&data_, bytes));
  try {
    AMPBENCH_CUDA_CHECK(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice));
    // From pageable memory cudaMemcpy may return before the DMA has landed, and it is ordered
    // only on the legacy stream: the kernels that read the table run on the caller's stream,
    // possibly a non-blocking one. Wait, so that the copy is complete as the headers promise.
    AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  } catch (...) {
    AMPBENCH_CUDA_CHECK_NOTHROW(cudaFree(data_));
    throw;
  }
}

DeviceCopy::~DeviceCopy() {
  if (data_ != nullptr) AMPBENCH_CUDA_CHECK_NOTHROW(cudaFree(data_));
}

DeviceCopy::DeviceCopy(DeviceCopy&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}

DeviceCopy& DeviceCopy::operator=(DeviceCopy&& other) noexcept {
  std::swap(data_, other.data_);
  return *this;
}

}  // namespace detail

GradientUnscaler::GradientUnscaler(std::span<const GradientTensor> gradients) {
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    const GradientTensor& g = gradients[i];
    require(g.size == 0 || g.data != nullptr,
            tensor_name("GradientUnscaler", i) + " has elements but no data");
    require(g.type == DType::f32 || g.type == DType::f16 || g.type == DType::bf16,
            tensor_name("GradientUnscaler", i) + " has an unknown element type");
  }
  table_ = make_table(gradients);
}

void GradientUnscaler::unscale_and_check(const float* inv_scale, float* found_inf,
                                         cudaStream_t stream) const {
  require(inv_scale != nullptr && found_inf != nullptr,
          "GradientUnscaler::unscale_and_check: inv_scale and found_inf must be device pointers");
  if (table_.blocks == 0) return;
  unscale_and_check_kernel<<<grid_of(table_), kThreadsPerBlock, 0, stream>>>(
      tasks_of(table_), tensors_of<GradientTensor>(table_), inv_scale, found_inf);
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
}

GradientClipper::GradientClipper(std::span<const GradientTensor> gradients) {
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    const GradientTensor& g = gradients[i];
    require(g.size == 0 || g.data != nullptr,
            tensor_name("GradientClipper", i) + " has elements but no data");
    require(g.type == DType::f32, tensor_name("GradientClipper", i) + " is not binary32");
  }
  table_ = make_table(gradients);
  if (table_.blocks == 0) return;
  const std::vector<double> zeros(table_.blocks);
  chunk_sums_ = detail::DeviceCopy(zeros.data(), zeros.size() * sizeof(double));
  const float one = 1.0F;
  coefficient_ = detail::DeviceCopy(&one, sizeof one);
}

void GradientClipper::clip(double max_norm, double* total_norm, cudaStream_t stream) const {
  if (table_.blocks == 0) {
    if (total_norm != nullptr) {
      AMPBENCH_CUDA_CHECK(cudaMemsetAsync(total_norm, 0, sizeof(double), stream));
    }
    return;
  }
  auto* sums = static_cast<double*>(chunk_sums_.get());
  auto* coefficient = static_cast<float*>(coefficient_.get());
  clip_grad_norm_squares_kernel<<<grid_of(table_), kThreadsPerBlock, 0, stream>>>(
      tasks_of(table_), tensors_of<GradientTensor>(table_), sums);
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
  clip_grad_norm_coefficient_kernel<<<1, kThreadsPerBlock, 0, stream>>>(
      sums, table_.blocks, max_norm, coefficient, total_norm);
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
  clip_grad_norm_scale_kernel<<<grid_of(table_), kThreadsPerBlock, 0, stream>>>(
      tasks_of(table_), tensors_of<GradientTensor>(table_), coefficient);
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
}

void update_scale(float* scale, int* growth_tracker, const float* found_inf,
                  const train::ScaleRule& rule, cudaStream_t stream) {
  require(scale != nullptr && growth_tracker != nullptr && found_inf != nullptr,
          "update_scale: scale, growth_tracker and found_inf must be device pointers");
  update_scale_kernel<<<1, 1, 0, stream>>>(scale, growth_tracker, found_inf, rule);
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
}

void inverse_scale(const float* scale, float* inv_scale, cudaStream_t stream) {
  require(scale != nullptr && inv_scale != nullptr,
          "inverse_scale: scale and inv_scale must be device pointers");
  loss_scale_inverse_kernel<<<1, 1, 0, stream>>>(scale, inv_scale);
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
}

DeviceStepCount::DeviceStepCount() {
  const std::int64_t zero = 0;
  count_ = detail::DeviceCopy(&zero, sizeof zero);
}

void DeviceStepCount::advance(const float* found_inf, cudaStream_t stream) {
  optimizer_advance_step_kernel<<<1, 1, 0, stream>>>(static_cast<std::int64_t*>(count_.get()),
                                                     found_inf);
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
}

MultiTensorSgd::MultiTensorSgd(std::span<const SgdTensor> tensors,
                               const train::SgdScalars<float>& scalars)
    : scalars_(scalars), table_(checked_sgd_table(tensors, scalars)) {}

void MultiTensorSgd::step(const float* found_inf, cudaStream_t stream) {
  if (table_.blocks != 0) {
    sgd_kernel<<<grid_of(table_), kThreadsPerBlock, 0, stream>>>(
        tasks_of(table_), tensors_of<SgdTensor>(table_), scalars_, found_inf, steps_.get());
    AMPBENCH_CUDA_CHECK(cudaGetLastError());
  }
  steps_.advance(found_inf, stream);
}

MultiTensorAdamW::MultiTensorAdamW(std::span<const AdamWTensor> tensors,
                                   std::span<const train::AdamWScalars<float>> schedule)
    : table_(checked_adamw_table(tensors, schedule)),
      schedule_(schedule.data(), schedule.size() * sizeof(train::AdamWScalars<float>)),
      schedule_steps_(schedule.size()) {}

void MultiTensorAdamW::step(const float* found_inf, cudaStream_t stream) {
  if (calls_ >= schedule_steps_) {
    throw std::out_of_range("MultiTensorAdamW::step: the schedule has " +
                            std::to_string(schedule_steps_) + " steps, all called");
  }
  if (table_.blocks != 0) {
    adamw_kernel<<<grid_of(table_), kThreadsPerBlock, 0, stream>>>(
        tasks_of(table_), tensors_of<AdamWTensor>(table_),
        static_cast<const train::AdamWScalars<float>*>(schedule_.get()), found_inf, steps_.get());
    AMPBENCH_CUDA_CHECK(cudaGetLastError());
  }
  ++calls_;  // a launch that failed used no step of the schedule
  steps_.advance(found_inf, stream);
}

}  // namespace ampbench::kernels
