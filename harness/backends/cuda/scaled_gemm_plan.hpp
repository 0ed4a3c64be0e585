// A recipe's GEMM as cuBLASLt's scaled GEMMs take it (issue 19; docs/cuda-backend.md "Scaled
// GEMMs"), decided on the host without a GPU or a CUDA header: which element type and scale mode
// each quantized operand is, its element codes packed as the device reads them, its scales in the
// mode's layout, and why a product cannot run on a device. Plain C++, so that the CPU tests check
// every layout.
//
// The layouts are cuBLAS's (the cuBLAS documentation, cuBLASLt API, "Scaling factors layouts"),
// for an operand of R rows (M for A, N for B) and K along the row, with L = ceil(K / block) scale
// blocks per row:
// - SCALAR_32F: one binary32 decode scale for the tensor.
// - VEC128_32F (1x128 tiles, sm_90): binary32, "M-major": the scale of row r, block b at b R + r.
// - BLK128x128_32F (128x128 tiles, sm_90): binary32, "K-major" with a column stride L4 = L
//   rounded up to a multiple of 4: the scale of row block p, block b at p L4 + b.
// - VEC32_UE8M0 (MX, blocks of 32) and VEC16_UE4M3 (NVFP4, blocks of 16), sm_100 on: one byte per
//   block in tiles of 128 rows x 4 blocks (512 bytes), the tiles row-major over rows padded to 128
//   and blocks padded to 4; within a tile the scale of (r, c) at (r % 32) 16 + (r / 32) 4 + c.
// Padding bytes are zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/quant/recipe.hpp"
#include "harness/quant/scaling.hpp"

namespace ampbench::backends::cuda {

// The element types of cuBLASLt's scaled GEMMs: CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, CUDA_R_4F_E2M1.
enum class ScaledElement : std::uint8_t { e4m3, e5m2, e2m1 };
std::string_view scaled_element_name(ScaledElement e);  // "8F_E4M3", "8F_E5M2", "4F_E2M1"

// cuBLASLt's scale modes (cublasLtMatmulMatrixScale_t) that the recipes' scales are.
enum class ScaleMode : std::uint8_t {
  scalar_32f,      // per tensor: fp8-delayed, fp8-current
  vec128_32f,      // 1x128 tiles: fp8-block's activations and gradients
  blk128x128_32f,  // 128x128 tiles: fp8-block's weights
  vec32_ue8m0,     // MX blocks of 32 along K
  vec16_ue4m3,     // NVFP4 blocks of 16 along K (16x16 weight tiles as 1x16 blocks)
};
std::string_view scale_mode_name(
    ScaleMode m);  // the enumerator without CUBLASLT_MATMUL_MATRIX_SCALE_

// The scale buffer of an operand of `rows` x `k` in mode `m`: how many entries it holds, padding
// included (binary32 entries for the 32F modes, bytes for the others; 1 for scalar_32f), and the
// entry of row r's scale block b (b counts blocks of the mode's length along K: 128, 32 or 16).
std::size_t scale_entries(ScaleMode m, std::size_t rows, std::size_t k);
std::size_t scale_index(ScaleMode m, std::size_t rows, std::size_t k, std::size_t r, std::size_t b);
// The block length along K of a mode (128, 32, 16; the whole row for scalar_32f).
std::size_t scale_block(ScaleMode m, std::size_t k);

// What a scaled GEMM's operand is: its element type and scale mode, `rows` x `k`, K along the row.
struct ScaledShape {
  ScaledElement element = ScaledElement::e4m3;
  ScaleMode mode = ScaleMode::scalar_32f;
  std::size_t rows = 0, k = 0;
};

// An operand quantized by a recipe as a cuBLASLt scaled GEMM takes it.
struct ScaledOperand {
  ScaledShape shape;
  // Row-major element codes: a byte each (FP8), or two elements a byte (FP4, the first in the low
  // nibble, as cuda_fp4.h's __nv_fp4x2 packs them).
  std::vector<std::uint8_t> codes;
  // The scale buffer in the mode's layout, its bytes as the device reads them: binary32 decode
  // scales (little-endian) or E8M0/UE4M3 patterns.
  std::vector<std::uint8_t> scales;
  // NVFP4's fp32 tensor decode scale S_dec (1 otherwise); cuBLASLt takes it in alpha.
  float tensor_decode = 1;
};

// `q`, quantized with its recipe operand's `granularity`, as a scaled GEMM's operand, or why it
// is none: an element format cuBLASLt has no type for (the FP6 formats), tiles no scale mode holds
// (fp32 scales on tiles other than the tensor, 1x128 and 128x128; MX blocks other than 1x32;
// NVFP4 blocks other than 1x16 and 16x16), FP4 elements without NVFP4's UE4M3 scales (cuBLASLt
// has no MXFP4 GEMM). The granularity decides per tensor: a 128 x 128 tensor with one fp32 scale
// is SCALAR_32F, fp8-block's one 128 x 128 tile BLK128x128_32F.
struct OperandPacking {
  std::optional<ScaledOperand> operand;
  std::string reason;
};
OperandPacking pack_operand(const quant::Quantized& q, quant::Granularity granularity);

// Why cuBLASLt cannot run D = A B^T (A m x k, B n x k, D m x n binary32) from these operands on a
// device of compute capability `cc` (major * 10 + minor), or nothing. Its rules (cuBLAS
// documentation, cublasLtMatmul and "Scaling Mode Support Overview"): FP8 from sm_89, per-tensor
// scales only there; 1x128 and 128x128 fp32 tiles on sm_90 alone, not both operands 128x128, and
// (Transformer Engine's and PyTorch's rule) without fast accumulation; MX and NVFP4 block scales
// from sm_100; both operands scaled alike (per tensor, fp32 tiles, or the same block scale); FP4
// only by FP4 and with NVFP4's UE4M3 scales (cuBLASLt has no MXFP4 GEMM); A and B not both e5m2;
// the same K; and, stricter than its 16-byte alignment, m, n and k positive multiples of 16 (of 32
// for FP4: two elements a byte).
std::optional<std::string> why_no_scaled_gemm(const ScaledShape& a, const ScaledShape& b, int cc,
                                              bool fast_accum);

// Why a recipe's GEMM `gemm` (A rows x k and B cols x k, quant::gemm_roles) cannot run on such a
// device as cuBLASLt's scaled GEMM, naming the recipe, the GEMM and the operand: pack_operand's
// refusals of its operands' formats and tiles, then why_no_scaled_gemm's. Nothing when it can.
std::optional<std::string> why_no_recipe_gemm(const quant::Recipe& recipe, quant::Gemm gemm,
                                              std::size_t rows, std::size_t cols, std::size_t k,
                                              int cc, bool fast_accum);

// Why the device trainer cannot multiply a recipe's GEMMs on such a device: the first of fprop,
// dgrad and wgrad that why_no_recipe_gemm refuses, with fast accumulation where the recipe never
// promotes (promote_interval 0). The trainer pads every dimension to the recipe's tiles and to
// cuBLASLt's multiples, so no layer's shape is refused: the GEMMs are asked at a shape that is a
// multiple of every tile (256 and the operands' blocks). Nothing when it can.
std::optional<std::string> why_no_recipe_training(const quant::Recipe& recipe, int cc);

}  // namespace ampbench::backends::cuda
