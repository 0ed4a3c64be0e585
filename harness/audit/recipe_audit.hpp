// The audit under an FP8 or microscaling recipe (issue 19, docs/scaling.md "The audit under a
// recipe"): a linear layer's three GEMMs (fprop y = x w^T, dgrad dx = dy w, wgrad dw = dy^T x), or
// a convolution's three passes as the GEMMs they lower to (im2col, ops/convolution.hpp), each
// operand quantized as the recipe quantizes its role for that GEMM, multiplied on a Tensor
// Core model with the recipe's promotion interval, or exactly; judged against the exact product of
// the unquantized inputs, with the error split into what quantization lost (the exact product of
// the dequantized operands against the exact product) and what the accumulation lost (the result
// against the exact product of the dequantized operands).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/ops/convolution.hpp"
#include "harness/quant/recipe.hpp"
#include "harness/quant/scaling.hpp"

namespace ampbench::audit {

struct RecipeCase {
  quant::Recipe recipe;
  // linear's MxNxK: x is m x k, the weight w n x k (PyTorch's layout, y = x w^T), dy m x n.
  std::size_t m = 64, n = 64, k = 256;
  // A convolution instead (m, n and k are then ignored; groups must be 1): x N x C x H x W, w
  // O x C x R x S, dy N x O x OH x OW, and its passes as the GEMMs they lower to, K along the row:
  // fprop im2col(x) (N OH OW x C R S) times w (O x C R S), dgrad the lowered dy (N H W x O R S)
  // times the lowered w^T (C x O R S), wgrad dy^T (O x N OH OW) times im2col(x)^T (C R S x N OH
  // OW).
  std::optional<ops::convolution::Geometry> conv;
  // A batch of linear layers' GEMMs instead (bmm; groups of `*batch` matrices): x B x m x k, w
  // B x n x k, dy B x m x n; each GEMM's operands stacked over the batch and quantized as one
  // tensor (a per-tensor scale, amax or NVFP4 tensor scale spans the batch, as Transformer
  // Engine scales its FP8 attention's tensors), each matrix's product apart.
  std::optional<std::size_t> batch;
  std::string distribution = "normal";  // of x, w and dy (harness/inputs)
  std::uint64_t seed = 1;
  // "exact": the dequantized operands' exact product, rounded once to binary32; "ada", "hopper",
  // "blackwell": the Tensor Core model of the recipe's element formats (quant::recipe_mma).
  std::string arch = "hopper";
  std::optional<std::size_t> promote_interval;  // the recipe's when absent
  std::vector<quant::Gemm> gemms = {quant::Gemm::fprop, quant::Gemm::dgrad, quant::Gemm::wgrad};
};

// Errors over a GEMM's outputs, each output's error divided by sum_l |a_l b_l| of its unquantized
// inputs (the dot product's condition scale: a normwise error of 2^-8 is what one e4m3-sized
// relative error per product gives at most).
struct ErrorStats {
  double max_normwise = 0;   // the largest |error| / sum |a b|
  double mean_normwise = 0;  // its mean over the outputs
  double frobenius = 0;      // ||error||_F / ||exact||_F
};

struct OperandQuantization {
  std::string role;          // "x", "w", "dy"
  std::string layout;        // "dy^T": as the GEMM reads it, K along the row
  std::string element;       // the element format
  std::string tiles;         // "1x128", "128x128", "tensor"
  bool transformed = false;  // the Hadamard transform was applied first
  double scale = 1;          // a per-tensor operand's scale (1 for tiled ones)
  quant::QuantEvents events;
};

struct RecipeGemmResult {
  quant::Gemm gemm = quant::Gemm::fprop;
  std::size_t rows = 0, cols = 0, k = 0;  // the output rows x cols, the reduction length
  std::string multiplied_on;              // "exact" or the Tensor Core model's name
  std::size_t promote_interval = 0;
  std::size_t chunks = 0;  // per output: the partial products promoted to fp32
  OperandQuantization a, b;
  ErrorStats total;           // the result against the exact product of the inputs
  ErrorStats quantization;    // the exact product of the dequantized operands against it
  ErrorStats accumulation;    // the result against the exact product of the dequantized operands
  std::size_t nonfinite = 0;  // outputs that are NaN or infinite where the exact product is finite
  // On a device (a RecipeDevice multiplied): what ran there, one record per matrix (one but for
  // a batch), and how the device's product compares with the Tensor Core model's (the case's
  // arch) output by output; null and empty on the CPU, and `vs_model` empty where the arch is
  // "exact".
  nlohmann::json device;
  struct ModelAgreement {
    std::string model;          // the model's name
    std::size_t differing = 0;  // outputs whose values differ (+0 and -0 agree, as do two NaNs)
    std::size_t outputs = 0;
    // The largest |device - model| / sum |a b| over the differing outputs; infinite where one
    // of them is not finite, or where sum |a b| is 0.
    double max_normwise = 0;
  };
  std::optional<ModelAgreement> vs_model;
};

struct RecipeCaseResult {
  std::string recipe;
  std::string arch;
  std::string op;     // "linear", "bmm" or "conv2d"
  std::string shape;  // "MxNxK", bmm's "BxMxNxK", or the convolution's (ops::convolution)
  std::string distribution;
  std::uint64_t seed = 0;
  std::vector<RecipeGemmResult> gemms;
  std::vector<std::string> breaches;  // a non-finite output where the exact product is finite
  bool pass() const { return breaches.empty(); }
};

// The ops the audit under a recipe takes, and the case's: "linear", "bmm" or "conv2d".
inline constexpr std::string_view kRecipeOps[] = {"linear", "bmm", "conv2d"};
std::string_view op_of(const RecipeCase& c);
// Sets the case's op and sizes from a shape as the op ("linear", "bmm", "conv2d") parses it:
// linear's MxNxK, bmm's BxMxNxK, conv2d's; std::invalid_argument for another op.
void set_shape(RecipeCase& c, std::string_view op, const ops::Shape& shape);

// The default batch (bmm): 4 matrices of 128 x 128 x 128, whose Ks every built-in recipe's tiles
// divide.
inline constexpr std::string_view kRecipeBmmShape = "4x128x128x128";
// The default convolution of the audit under a recipe (audit --recipe --op conv2d, [[recipe]] op
// = "conv2d"): every lowered K (C R S = 1152, O R S = 1152, N OH OW = 128) a multiple of 128, so
// that every built-in recipe's tiles divide it; about as much work as linear's default.
inline constexpr std::string_view kRecipeConvShape = "2x128x8x8:128x3x3,pad=1";

// Why the case cannot run, or nothing: a block that does not divide the dimension it tiles (a
// role's 1xN tiles run along K of each GEMM it enters, so x's tiles must divide k for fprop and m
// for wgrad), a Hadamard transform on a length that is not a multiple of 16, an architecture
// without a model for the recipe's formats (quant::recipe_mma), a zero size, a grouped
// convolution.
std::optional<std::string> why_not_runnable(const RecipeCase& c);

// A GEMM's operands and the output's size (rows x cols, K along the rows of both operands) as the
// case multiplies them: each matrix's, for a batch.
struct RecipeGemmDims {
  std::size_t rows = 0, cols = 0, k = 0;
};
RecipeGemmDims gemm_dims(const RecipeCase& c, quant::Gemm g);

// A device that multiplies a recipe's quantized operands (runtime::cuda_runners: cuBLASLt's
// scaled GEMMs): C = A B^T, rows x cols binary32 values, row-major, from A (rows x k) and B
// (cols x k) quantized as `recipe` quantizes the roles of `gemm` (quant::gemm_roles), as
// quant::recipe_product takes them; `fast_accum` when the case promotes never (promote_interval
// 0). Writes what ran into `ran`. Throws std::invalid_argument for operands the device cannot
// take.
using RecipeDevice = std::function<std::vector<double>(
    const quant::Recipe& recipe, quant::Gemm gemm, const quant::Quantized& a,
    const quant::Quantized& b, bool fast_accum, nlohmann::json* ran)>;

// Runs the case; throws std::invalid_argument for what why_not_runnable reports, and what the
// inputs throw (io::InputError, inputs::SpecError) for a bad distribution. With a `device`, each
// GEMM's product is the device's (RecipeGemmResult::device, vs_model), judged the same way.
//
// A delayed-scaling operand is quantized with the scale its DelayedScaling state has after one
// update on the same tensor (TE's scale once the history holds this tensor's amax: stationary
// inputs); stochastic rounding draws from the case's seed.
RecipeCaseResult run_recipe_case(const RecipeCase& c, const RecipeDevice& device = {});

// The record ("ampbench.audit-recipe/1" case) the audit's --json writes.
nlohmann::json to_json(const RecipeCaseResult& r);

}  // namespace ampbench::audit
