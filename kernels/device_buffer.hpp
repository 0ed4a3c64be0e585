// An owning, typed array in device memory: cudaMalloc in the constructor, cudaFree in the
// destructor (logged, never thrown), and synchronous copies from and to host spans.
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

  void copy_from(std::span<const T> host) {
    require_size(host.size());
    if (count_ != 0) {
      AMPBENCH_CUDA_CHECK(
          cudaMemcpy(data_, host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice));
    }
  }
  void copy_to(std::span<T> host) const {
    require_size(host.size());
    if (count_ != 0) {
      AMPBENCH_CUDA_CHECK(
          cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost));
    }
  }

 private:
  void require_size(std::size_t host) const {
    if (host != count_) throw std::invalid_argument("DeviceBuffer: host and device sizes differ");
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace ampbench::kernels
