// The trainer's ops under an FP8 or microscaling recipe (quant/recipe.hpp, docs/training.md
// "Recipes"): a linear layer's three GEMMs (fprop y = x w, dgrad dx = dy w^T, wgrad dw = x^T dy)
// with their operands quantized as the recipe says and multiplied on a Tensor Core model (or
// exactly), as Transformer Engine's te.Linear runs them under fp8_autocast; a convolution's three
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
// 16; for a block-scaled MMA, of its instruction's K) is padded with zeros to the next multiple,
// as a GEMM library pads its operands: zeros change no amax, no scale and no product.
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
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "harness/quant/recipe.hpp"
#include "harness/quant/recipe_gemm.hpp"
#include "harness/quant/scaling.hpp"
#include "harness/train/ops.hpp"
#include "harness/train/trainer.hpp"

namespace ampbench::train {

class RecipeOps : public EmulatedOps {
 public:
  // The recipe's GEMMs on the Tensor Core model of `arch` ("hopper", "blackwell", ...; "exact":
  // the exact product of the quantized operands rounded once to binary32); stochastic rounding
  // draws from `seed`; the linear and convolution layers whose weights are the parameters at
  // `keep_bf16` (their positions) run as under amp-bf16. Throws std::invalid_argument when `arch`
  // has no model for one of the recipe's GEMMs (the reason quant::recipe_mma gives) or is not an
  // architecture.
  RecipeOps(quant::Recipe recipe, std::string arch, std::uint64_t seed,
            std::vector<std::size_t> keep_bf16 = {});

  // The policy of everything but the layers' GEMMs: amp-bf16.
  static policy::Policy base_policy();

  const quant::Recipe& recipe() const { return recipe_; }
  const std::string& arch() const { return arch_; }

  // A parameter; the layers are told apart by their weights, the parameters of the current pass
  // (those made since the last op ran), by position.
  Tensor parameter(std::span<const Master> values);

  Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, std::size_t rows, std::size_t in,
                std::size_t out);
  LinearGradients linear_backward(const Tensor& x, const Tensor& w, const Tensor& b,
                                  const Tensor& dy, std::size_t rows, std::size_t in,
                                  std::size_t out, bool need_dx);
  // Ungrouped convolutions only: a grouped one throws std::invalid_argument (its per-tensor
  // scales would span the groups' separate GEMMs; no model here uses groups).
  Tensor conv2d(const Tensor& x, const Tensor& w, const ops::convolution::Geometry& g);
  ConvolutionGradients conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& dy,
                                       const ops::convolution::Geometry& g, bool need_dx);

  // After the step: the delayed-scaling histories updated, and the step's scaled tensors, ordered
  // by layer, GEMM and role.
  std::vector<ScaledTensorRecord> finish_step();

 private:
  using Key = std::tuple<std::size_t, quant::Gemm, quant::Role>;

  // C = A B^T (m x n, binary32 values) for GEMM g of the layer whose weight is parameter p: A m x k
  // and B n x k, K along the row, each quantized for its role.
  std::vector<double> gemm(quant::Gemm g, std::vector<float> a, std::size_t m, std::vector<float> b,
                           std::size_t n, std::size_t k, std::size_t p);
  // Pass `pass` of a convolution of the layer whose weight is parameter p, as GEMM g of its
  // lowered operands (first and second in ops::convolution::operands order), in binary32 values
  // placed in the pass's output.
  std::vector<double> convolution(quant::Gemm g, ops::convolution::Pass pass,
                                  const ops::convolution::Geometry& geometry, const Tensor& first,
                                  const Tensor& second, std::size_t p);
  quant::DelayedScaling& delayed_state(std::size_t p, quant::Role role);
  std::size_t parameter_of(const Tensor& w) const;
  bool kept(std::size_t p) const;  // the layer of parameter p runs as under amp-bf16
  void note(const Key& key, const quant::QuantizedOperand& q, double amax, std::size_t elements);

  quant::Recipe recipe_;
  std::string arch_;
  std::uint64_t seed_;
  std::vector<std::size_t> keep_bf16_;
  // Quantizations so far per layer, GEMM and role: each draws its stochastic rounding from a
  // stream of its own, so that keeping one layer in bf16 changes no other layer's draws.
  std::map<Key, std::uint64_t> draws_;
  std::array<std::optional<quant::RecipeMma>, 3> mma_{};  // by GEMM; none: exact
  std::vector<const double*> parameters_;                 // this pass's parameters' storage
  bool parameters_done_ = true;                           // an op ran since the last parameter
  std::map<std::pair<std::size_t, quant::Role>, quant::DelayedScaling> delayed_;
  std::map<Key, ScaledTensorRecord> step_;
};

static_assert(ops::TrainingOps<RecipeOps>);

}  // namespace ampbench::train
