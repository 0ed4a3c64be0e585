#include "harness/backends/cuda/scaled_gemm.hpp"

#include <memory>
#include <stdexcept>
#include <utility>

#include "harness/backends/cuda/lt_matmul.hpp"
#include "harness/quant/recipe_gemm.hpp"
#include "kernels/device_buffer.hpp"

namespace ampbench::backends::cuda {
namespace {

// An operand's codes and scales on the device.
struct OnDevice {
  explicit OnDevice(const ScaledOperand& o)
      : shape(o.shape), codes(o.codes.size()), scales(o.scales.size()) {
    codes.copy_from(o.codes, nullptr);
    scales.copy_from(o.scales, nullptr);
  }
  LtMatmul::DeviceOperand operand() const { return {shape, codes.data(), scales.data()}; }

  ScaledShape shape;
  kernels::DeviceBuffer<std::uint8_t> codes, scales;
};

void keep(nlohmann::json&& record, nlohmann::json* ran) {
  if (ran != nullptr) *ran = std::move(record);
}

}  // namespace

std::vector<float> scaled_product(const ScaledOperand& a, const ScaledOperand& b, bool fast_accum,
                                  nlohmann::json* ran) {
  return ScaledGemms().product(a, b, fast_accum, ran);
}

ScaledGemms::ScaledGemms() = default;
ScaledGemms::~ScaledGemms() = default;

std::vector<float> ScaledGemms::product(const ScaledOperand& a, const ScaledOperand& b,
                                        bool fast_accum, nlohmann::json* ran) {
  const OnDevice da(a), db(b);
  kernels::DeviceBuffer<float> d(a.shape.rows * b.shape.rows);
  LtMatmul::Output out;
  out.d = d.data();
  if (!lt_) lt_ = std::make_unique<LtMatmul>();
  keep(lt_->run_scaled(da.operand(), db.operand(), a.tensor_decode * b.tensor_decode, out,
                       fast_accum, nullptr),
       ran);
  std::vector<float> values(d.size());
  d.copy_to(values, nullptr);  // waits for the product
  return values;
}

std::vector<double> ScaledGemms::recipe_product(const quant::Recipe& recipe, quant::Gemm gemm,
                                                const quant::Quantized& a,
                                                const quant::Quantized& b, bool fast_accum,
                                                nlohmann::json* ran) {
  const auto [ra, rb] = quant::gemm_roles(gemm);
  const OperandPacking pa = pack_operand(a, recipe.operand(ra).granularity);
  if (!pa.operand) throw std::invalid_argument("A: " + pa.reason);
  const OperandPacking pb = pack_operand(b, recipe.operand(rb).granularity);
  if (!pb.operand) throw std::invalid_argument("B: " + pb.reason);
  const std::vector<float> d = product(*pa.operand, *pb.operand, fast_accum, ran);
  return {d.begin(), d.end()};
}

Fp8Product scaled_product_fp8(const ScaledOperand& a, const ScaledOperand& b, ScaledElement d_type,
                              float d_scale, bool fast_accum, nlohmann::json* ran) {
  const OnDevice da(a), db(b);
  kernels::DeviceBuffer<std::uint8_t> d(a.shape.rows * b.shape.rows);
  kernels::DeviceBuffer<float> scalars(2);  // the D scale, the amax
  const std::vector<float> given{d_scale, 0.0F};
  scalars.copy_from(given, nullptr);
  LtMatmul::Output out;
  out.d = d.data();
  out.fp8 = d_type;
  out.d_scale = scalars.data();
  out.amax = scalars.data() + 1;
  LtMatmul lt;
  keep(lt.run_scaled(da.operand(), db.operand(), a.tensor_decode * b.tensor_decode, out, fast_accum,
                     nullptr),
       ran);
  Fp8Product product;
  product.codes.resize(d.size());
  d.copy_to(product.codes, nullptr);
  std::vector<float> back(2);
  scalars.copy_to(back, nullptr);
  product.amax = back[1];
  return product;
}

}  // namespace ampbench::backends::cuda
