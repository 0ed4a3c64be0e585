// The element types of tensors on the device as the backend's own kernels take them: plain data,
// no CUDA header, so that plain C++ plans can name them.
#pragma once

#include <stdexcept>

#include "harness/numeric/format.hpp"

namespace ampbench::kernels {

enum class DType { f32, f16, bf16 };

// The format whose values a DType holds.
inline const numeric::Format& dtype_format(DType type) {
  switch (type) {
    case DType::f32: return numeric::formats::fp32;
    case DType::f16: return numeric::formats::fp16;
    case DType::bf16: return numeric::formats::bf16;
  }
  throw std::logic_error("unknown DType");
}

}  // namespace ampbench::kernels
