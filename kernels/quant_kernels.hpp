// The FP8 and microscaling quantizers on the GPU (issue 19): per-tensor and per-tile fp32 scales
// (fp8-delayed, fp8-current, fp8-block), OCP MX blocks with E8M0 scales (OCP's rule and Transformer
// Engine's round-up rule) and NVFP4's two-level scales, each element rounded in nearest-even or
// stochastic (proportional) mode. Three kernels: each tile's amax and NaN flag (a block per tile),
// the tensor's amax and every tile's scale, every element's code. Their arithmetic is
// harness/numeric/scale_math.hpp and numeric::round_to, the functions the host runs in
// quant_scaling_fast_test against the reference quantizers (harness/quant/scaling.hpp); the GPU
// test (kernels/test/quant_kernels_test.cpp) checks the device's codes and scales against the same
// reference, bit for bit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/scale_math.hpp"
#include "harness/quant/scaling.hpp"

namespace ampbench::kernels {

// A quantized tensor as the device computed it: one element code per element (the low bits of a
// 64-bit pattern, as quant::Quantized::bits), row-major, and per tile (row-major over the tiles)
// the stored scale pattern (quant::Tile::scale_bits: the fp32 scale's bits, E8M0, UE4M3) and the
// amax; NVFP4's tensor scales S_enc and S_dec (1 for the other rules).
struct DeviceQuantized {
  std::vector<std::uint64_t> bits;
  std::vector<std::uint64_t> scale_bits;
  std::vector<float> tile_amax;
  float global_scale = 1, global_decode = 1;
};

// Quantizes x (layout.rows x layout.cols in layout's tiles, rounded in layout.mode with draw k of
// stream layout.seed for element k) to `element` (saturating) under `rule` on the current device;
// `given` is the fp32_given rule's scale. NVFP4 takes e2m1 whatever `element` says. Synchronous.
// Throws std::invalid_argument for what quant::detail::check_layout refuses, a mode other than
// nearest_even or stochastic_proportional, a given scale that is not positive and finite or whose
// layout is not one tile;
// CudaError when a CUDA call fails.
DeviceQuantized quantize_on_device(std::span<const float> x, const quant::Layout& layout,
                                   const numeric::Format& element,
                                   numeric::scale_math::TileRule rule, float given = 1);

}  // namespace ampbench::kernels
