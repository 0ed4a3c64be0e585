// A recipe GEMM's product on the device (issue 19; docs/scaling.md "Scaled GEMMs on cuBLASLt"):
// two operands packed by pack_operand (scaled_gemm_plan.hpp) copied to the current device and
// multiplied by cuBLASLt's scaled GEMM (LtMatmul::run_scaled). Needs the CUDA toolkit; running
// needs a device.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "harness/backends/cuda/scaled_gemm_plan.hpp"

namespace ampbench::backends::cuda {

// D = alpha A B^T, m x n binary32 values row-major (m = a's rows, n = b's), alpha = fl32(S_dec(A)
// S_dec(B)) (NVFP4's tensor decode scales; 1 otherwise); synchronous. Writes what ran (LtMatmul's
// record) into `ran` when it is not null. Throws as LtMatmul::run_scaled does.
std::vector<float> scaled_product(const ScaledOperand& a, const ScaledOperand& b, bool fast_accum,
                                  nlohmann::json* ran);

// The same product as an FP8 D: the codes of fl(d_scale D) in `d_type` (e4m3 or e5m2), and the
// largest |D| before d_scale, which cuBLASLt computes for FP8 outputs (CUBLASLT_MATMUL_DESC_AMAX_D_
// POINTER; the amax a delayed-scaling recipe keeps of a GEMM's output).
struct Fp8Product {
  std::vector<std::uint8_t> codes;
  float amax = 0;
};
Fp8Product scaled_product_fp8(const ScaledOperand& a, const ScaledOperand& b, ScaledElement d_type,
                              float d_scale, bool fast_accum, nlohmann::json* ran);

class LtMatmul;

// Scaled GEMMs one after another on one cuBLASLt handle and workspace (LtMatmul, made at the first
// product), as a training run multiplies its recipe's GEMMs step after step; scaled_product makes
// both for each product.
class ScaledGemms {
 public:
  ScaledGemms();
  ~ScaledGemms();
  ScaledGemms(const ScaledGemms&) = delete;
  ScaledGemms& operator=(const ScaledGemms&) = delete;

  // scaled_product's product, on this handle.
  std::vector<float> product(const ScaledOperand& a, const ScaledOperand& b, bool fast_accum,
                             nlohmann::json* ran);
  // A recipe GEMM's product on the device (the recipe audit's audit::RecipeDevice, the device
  // trainer's train::RecipeGemmDevice): C = A B^T, A's rows x B's rows binary32 values, of
  // operands quantized as `recipe` quantizes the roles of `gemm`, each packed with its recipe
  // operand's granularity (pack_operand; std::invalid_argument with its reason, naming A or B,
  // where one cannot be) and multiplied as product() multiplies.
  std::vector<double> recipe_product(const quant::Recipe& recipe, quant::Gemm gemm,
                                     const quant::Quantized& a, const quant::Quantized& b,
                                     bool fast_accum, nlohmann::json* ran);

 private:
  std::unique_ptr<LtMatmul> lt_;
};

}  // namespace ampbench::backends::cuda
