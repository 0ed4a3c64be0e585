// The trainer's ops under an FP8 or microscaling recipe (quant/recipe.hpp, docs/training.md
// "Recipes"): a linear layer's three GEMMs (fprop y = x w, dgrad dx = dy w^T, wgrad dw = x^T dy)
// with their operands quantized as the recipe says and multiplied on a Tensor Core model (or
// exactly), or on a device (RecipeGemmDevice: cuBLASLt's scaled GEMMs, train/cuda), as
// Transformer Engine's te.Linear runs them under fp8_autocast; a convolution's three
// passes the same way, as the GEMMs they lower to (im2col, ops/convolution.hpp), each lowered
// operand quantized as that GEMM's operand; everything else (norms, softmax, activations,
// attention, the bias) as amp-bf16, as TE leaves it.
//
// The quantizers see the operands as they come (the activation in its own format, the weight as
// its binary32 master, the gradient in its format), not autocast's bf16 copies. A GEMM's result is
// binary32; the forward adds the bias (autocast's bf16 copy) in binary32, as cuBLASLt's epilogue
// does, and rounds to amp-bf16's output format; the gradients pass through that format on to
// their input's, as under amp-bf16.
//
// A dimension the recipe's tiles do not divide (or, for the Hadamard transform, not a multiple of
// 16; for a block-scaled MMA, of its instruction's K; on a device, of what its GEMM takes) is
// padded with zeros to the next multiple, as a GEMM library pads its operands: zeros change no
// amax, no scale and no product.
//
// The recipe's work is RecipeGemms, on host values; RecipeOpsOn<BaseOps> is a backend's ops
// (EmulatedOps, or the CUDA backend's CudaOps) with its layers' GEMMs handed to it: everything
// else, and a kept layer, runs on the backend as under amp-bf16. On a device the operands come to
// the host to be quantized, as the recipe audit's do (the reference quantizers), and the product
// goes back as a binary32 tensor.
//
// Delayed scaling keeps one state per layer and role (x, w, dy), shared by the GEMMs the tensor
// enters, as TE's FP8 metadata is: each quantization records the tensor's amax, the step uses the
// scale the state had when it started, and the history is updated after the step (finish_step).
// Stochastic rounding draws, for the n-th quantization of a layer's operand in a GEMM, from a
// stream of the seed, the layer, the GEMM, the role and n.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "harness/numeric/transpose.hpp"
#include "harness/ops/autocast.hpp"
#include "harness/ops/convolution.hpp"
#include "harness/quant/recipe.hpp"
#include "harness/quant/recipe_gemm.hpp"
#include "harness/quant/scaling.hpp"
#include "harness/train/ops.hpp"
#include "harness/train/trainer.hpp"

namespace ampbench::train {

// A device that multiplies a recipe's GEMMs (train::cuda::cublaslt_recipe_gemms): C = A B^T,
// A's rows x B's rows binary32 values, row-major, of operands quantized for GEMM `gemm`
// (quant::gemm_roles) as quant::recipe_product takes them. The trainer pads M and N to
// multiples of `rows_multiple`, K to one of `k_multiple`, beyond the recipe's tiles.
struct RecipeGemmDevice {
  std::string name;  // what the records say the GEMMs ran on (RunResult::recipe_arch)
  std::size_t rows_multiple = 1, k_multiple = 1;
  std::function<std::vector<double>(quant::Gemm gemm, const quant::Quantized& a,
                                    const quant::Quantized& b)>
      multiply;
};

// A recipe run's GEMMs, on host values: each operand quantized for its role (with the layer's
// delayed-scaling state and stochastic stream), multiplied on the model, exactly or on the
// device, and its scaled tensors recorded for the step.
class RecipeGemms {
 public:
  // The recipe's GEMMs on the Tensor Core model of `arch` ("hopper", "blackwell", ...; "exact":
  // the exact product of the quantized operands rounded once to binary32); stochastic rounding
  // draws from `seed`; the linear and convolution layers whose weights are the parameters at
  // `keep_bf16` (their positions) run as under amp-bf16. Throws std::invalid_argument when `arch`
  // has no model for one of the recipe's GEMMs (the reason quant::recipe_mma gives) or is not an
  // architecture.
  RecipeGemms(quant::Recipe recipe, std::string arch, std::uint64_t seed,
              std::vector<std::size_t> keep_bf16 = {});
  // The same with the GEMMs on `device` (whose name is then the arch).
  RecipeGemms(quant::Recipe recipe, RecipeGemmDevice device, std::uint64_t seed,
              std::vector<std::size_t> keep_bf16 = {});

  const quant::Recipe& recipe() const { return recipe_; }
  const std::string& arch() const { return arch_; }

  // The layers are told apart by their weights' storage: the parameters of the current pass, by
  // position, made one at a time (a parameter made after an op ran begins the next pass) or
  // given all at once.
  void parameter_made(const void* storage);
  void parameters_are(std::vector<const void*> storage);
  // The position of the weight stored at `w` among them; the pass's parameters are complete.
  // Throws std::logic_error for storage that is none of them.
  std::size_t layer_of(const void* w);
  bool kept(std::size_t p) const;  // the layer of parameter p runs as under amp-bf16

  // C = A B^T (m x n, binary32 values) for GEMM g of the layer whose weight is parameter p: A m x k
  // and B n x k, K along the row, each quantized for its role.
  std::vector<double> gemm(quant::Gemm g, std::vector<float> a, std::size_t m, std::vector<float> b,
                           std::size_t n, std::size_t k, std::size_t p);
  // Pass `pass` of a convolution of the layer whose weight is parameter p, as GEMM g of its
  // lowered operands (first and second in ops::convolution::operands order, binary32 values), in
  // binary32 values placed in the pass's output. A grouped convolution throws
  // std::invalid_argument (its per-tensor scales would span the groups' separate GEMMs; no model
  // here uses groups).
  std::vector<double> convolution(quant::Gemm g, ops::convolution::Pass pass,
                                  const ops::convolution::Geometry& geometry,
                                  const std::vector<float>& first, const std::vector<float>& second,
                                  std::size_t p);

  // After the step: the delayed-scaling histories updated, and the step's scaled tensors, ordered
  // by layer, GEMM and role.
  std::vector<ScaledTensorRecord> finish_step();

 private:
  using Key = std::tuple<std::size_t, quant::Gemm, quant::Role>;

  quant::DelayedScaling& delayed_state(std::size_t p, quant::Role role);
  void note(const Key& key, const quant::QuantizedOperand& q, double amax, std::size_t elements);

  quant::Recipe recipe_;
  std::string arch_;
  std::uint64_t seed_;
  std::vector<std::size_t> keep_bf16_;
  // Quantizations so far per layer, GEMM and role: each draws its stochastic rounding from a
  // stream of its own, so that keeping one layer in bf16 changes no other layer's draws.
  std::map<Key, std::uint64_t> draws_;
  std::array<std::optional<quant::RecipeMma>, 3> mma_{};  // by GEMM; none: exact or the device
  std::optional<RecipeGemmDevice> device_;
  std::vector<const void*> parameters_;  // this pass's parameters' storage
  bool parameters_done_ = true;          // an op ran since the last parameter
  std::map<std::pair<std::size_t, quant::Role>, quant::DelayedScaling> delayed_;
  std::map<Key, ScaledTensorRecord> step_;
};

// The values (of a binary32-representable format) as floats: exact.
inline std::vector<float> binary32_values(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

// A backend's training ops (EmulatedOps, CudaOps) under amp-bf16 with its linear and convolution
// layers' GEMMs run as a recipe says (RecipeGemms), on the host values of their operands.
template <class BaseOps>
class RecipeOpsOn : public BaseOps {
 public:
  using Tensor = typename BaseOps::Tensor;
  using Master = typename BaseOps::Master;
  using LinearGradients = typename BaseOps::LinearGradients;
  using ConvolutionGradients = typename BaseOps::ConvolutionGradients;

  // RecipeGemms' constructors: on a model (or exactly), or on a device. Throws what they throw,
  // and what BaseOps throws for amp-bf16.
  RecipeOpsOn(quant::Recipe recipe, std::string arch, std::uint64_t seed,
              std::vector<std::size_t> keep_bf16 = {})
      : BaseOps(base_policy()),
        gemms_(std::move(recipe), std::move(arch), seed, std::move(keep_bf16)) {}
  RecipeOpsOn(quant::Recipe recipe, RecipeGemmDevice device, std::uint64_t seed,
              std::vector<std::size_t> keep_bf16 = {})
      : BaseOps(base_policy()),
        gemms_(std::move(recipe), std::move(device), seed, std::move(keep_bf16)) {}

  // The policy of everything but the layers' GEMMs: amp-bf16.
  static policy::Policy base_policy() { return *policy::find_builtin("amp-bf16"); }

  const quant::Recipe& recipe() const { return gemms_.recipe(); }
  const std::string& arch() const { return gemms_.arch(); }

  // A parameter; the layers are told apart by their weights, the parameters of the current pass
  // (those made since the last op ran), by position.
  Tensor parameter(std::span<const Master> values) {
    Tensor t = BaseOps::parameter(values);
    gemms_.parameter_made(storage(t));  // moving the tensor keeps its storage
    return t;
  }
  // This pass's parameters, all at once (masters that keep their weights on the device).
  void parameters_are(std::span<const Tensor> parameters) {
    std::vector<const void*> storages;
    for (const Tensor& t : parameters) storages.push_back(storage(t));
    gemms_.parameters_are(std::move(storages));
  }

  Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, std::size_t rows, std::size_t in,
                std::size_t out) {
    const std::size_t p = gemms_.layer_of(storage(w));
    if (gemms_.kept(p)) return BaseOps::linear(x, w, b, rows, in, out);
    const auto range = this->op_range("linear");
    const ops::Autocast f = this->flow("linear", policy::Op::linear, {x.format});
    const std::vector<double> bias = BaseOps::to_doubles(this->operand(f, 2, b));
    // y = x w: A = x (rows x in), B = w^T (out x in), K = in.
    std::vector<double> y = gemms_.gemm(quant::Gemm::fprop, host(x), rows,
                                        numeric::transposed(host(w), in, out), out, in, p);
    // The bias added in binary32, as cuBLASLt's epilogue adds it.
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < out; ++j) {
        double& v = y[i * out + j];
        v = static_cast<double>(static_cast<float>(v) + static_cast<float>(bias[j]));
      }
    }
    return this->result(f, this->constant(y));
  }

  LinearGradients linear_backward(const Tensor& x, const Tensor& w, const Tensor& b,
                                  const Tensor& dy, std::size_t rows, std::size_t in,
                                  std::size_t out, bool need_dx) {
    const std::size_t p = gemms_.layer_of(storage(w));
    if (gemms_.kept(p)) return BaseOps::linear_backward(x, w, b, dy, rows, in, out, need_dx);
    const auto range = this->op_range("linear_backward");
    const std::initializer_list<numeric::Format> inputs{x.format};
    const ops::Autocast dx_flow = this->flow("gemm_backward_a", policy::Op::linear, inputs);
    const ops::Autocast dw_flow = this->flow("gemm_backward_b", policy::Op::linear, inputs);
    const ops::Autocast db_flow = this->flow("linear_backward_bias", policy::Op::linear, inputs);
    const std::vector<float> dyf = host(dy);
    LinearGradients g;
    if (need_dx) {
      // dx = dy w^T: A = dy (rows x out), B = w (in x out), K = out.
      g.dx = this->gradient(
          dx_flow, x,
          this->constant(gemms_.gemm(quant::Gemm::dgrad, dyf, rows, host(w), in, out, p)));
    }
    // dw = x^T dy, as TE's dw = dy^T x (out x in) transposed: A = dy^T, B = x^T, K = rows.
    const std::vector<double> dw =
        gemms_.gemm(quant::Gemm::wgrad, numeric::transposed(dyf, rows, out), out,
                    numeric::transposed(host(x), rows, in), in, rows, p);
    g.dw = this->gradient(dw_flow, w, this->constant(numeric::transposed(dw, out, in)));
    g.db =
        this->gradient(db_flow, b, this->run(db_flow, {rows, out}, this->operand(db_flow, 0, dy)));
    return g;
  }

  // Ungrouped convolutions only (RecipeGemms::convolution).
  Tensor conv2d(const Tensor& x, const Tensor& w, const ops::convolution::Geometry& g) {
    const std::size_t p = gemms_.layer_of(storage(w));
    if (gemms_.kept(p)) return BaseOps::conv2d(x, w, g);
    const auto range = this->op_range("conv2d");
    const ops::Autocast f = this->flow("conv2d", policy::Op::conv, {x.format});
    return this->result(
        f, this->constant(gemms_.convolution(quant::Gemm::fprop, ops::convolution::Pass::forward, g,
                                             host(x), host(w), p)));
  }
  ConvolutionGradients conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& dy,
                                       const ops::convolution::Geometry& g, bool need_dx) {
    const std::size_t p = gemms_.layer_of(storage(w));
    if (gemms_.kept(p)) return BaseOps::conv2d_backward(x, w, dy, g, need_dx);
    const auto range = this->op_range("conv2d_backward");
    const std::initializer_list<numeric::Format> inputs{x.format};
    const ops::Autocast dx_flow = this->flow("conv2d_backward_data", policy::Op::conv, inputs);
    const ops::Autocast dw_flow = this->flow("conv2d_backward_filter", policy::Op::conv, inputs);
    const std::vector<float> dyf = host(dy);
    ConvolutionGradients grads;
    if (need_dx) {
      grads.dx = this->gradient(
          dx_flow, x,
          this->constant(gemms_.convolution(
              quant::Gemm::dgrad, ops::convolution::Pass::backward_data, g, dyf, host(w), p)));
    }
    grads.dw = this->gradient(
        dw_flow, w,
        this->constant(gemms_.convolution(
            quant::Gemm::wgrad, ops::convolution::Pass::backward_filter, g, host(x), dyf, p)));
    return grads;
  }

  // After the step (RecipeGemms::finish_step).
  std::vector<ScaledTensorRecord> finish_step() { return gemms_.finish_step(); }

 private:
  static const void* storage(const Tensor& t) {
    if constexpr (requires { t.values.data(); }) {
      return t.values.data();
    } else {
      return t.data();
    }
  }
  // A tensor's values on the host, as floats (exact: its format is binary32's or narrower).
  static std::vector<float> host(const Tensor& t) {
    return binary32_values(BaseOps::to_doubles(t));
  }

  RecipeGemms gemms_;
};

// The CPU emulation under a recipe, compiled once in recipe_ops.cpp.
extern template class RecipeOpsOn<EmulatedOps>;
using RecipeOps = RecipeOpsOn<EmulatedOps>;
static_assert(ops::TrainingOps<RecipeOps>);

}  // namespace ampbench::train
