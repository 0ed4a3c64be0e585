// Ops computed as independent gemms: a bmm (one per batch) and the convolutions (one per group,
// lowered by im2col; convolution.hpp). Each part is a gemm with its shape MxNxK and operands A and
// B, and the place in the op's output of each of its M x N outputs (row-major).
#pragma once

#include <cstddef>
#include <vector>

#include "harness/ops/catalog.hpp"

namespace ampbench::ops {

struct GemmPart {
  Shape shape;
  Inputs inputs;
  std::vector<std::size_t> place;
};

}  // namespace ampbench::ops
