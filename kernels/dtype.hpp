// The element types of tensors on the device as the backend's own kernels take them: plain data,
// no CUDA header, so that plain C++ plans can name them.
#pragma once

namespace ampbench::kernels {

enum class DType { f32, f16, bf16 };

}  // namespace ampbench::kernels
