// An owning, typed array in device memory: cudaMalloc in the constructor, cudaFree in the
// destructor (logged, never thrown), and copies from and to host spans that have landed when they
// return.
//
// Each copy names the stream it is ordered on. A plain cudaMemcpy from pageable memory is ordered
// with the legacy default stream only, and may return once the source is staged, before the DMA
// has written the buffer: a kernel on one of the project's non-blocking streams (CudaStream) could
// then read the old contents. So a copy here is enqueued on `stream` after the work already there,
// and waits for that stream: when copy_from returns, the data is on the device for every stream;
// when copy_to returns, the host holds what the stream's earlier work wrote.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <stdexcept>
#include <utility>

#include "kernels/cuda_check.hpp"

namespace ampbench::kernels {

template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count == 0) return;
    void* p = nullptr;
    AMPBENCH_CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
    data_ = static_cast<T*>(p);
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) AMPBENCH_CUDA_CHECK_NOTHROW(cudaFree(data_));
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() const { return data_; }
  std::size_t size() const { return count_; }

  // `stream` may be null: the legacy default stream, which waits for the blocking streams.
  void copy_from(std::span<const T> host, cudaStream_t stream) {
    require_size(host.size());
    if (count_ == 0) return;
    AMPBENCH_CUDA_CHECK(
        cudaMemcpyAsync(data_, host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice, stream));
    AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  void copy_to(std::span<T> host, cudaStream_t stream) const {
    require_size(host.size());
    if (count_ == 0) return;
    AMPBENCH_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost, stream));
    AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

 private:
  void require_size(std::size_t host) const {
    if (host != count_) throw std::invalid_argument("DeviceBuffer: host and device sizes differ");
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace ampbench::kernels
