// FP8 and microscaling training recipes as plain values (issue 19, docs/scaling.md): for each GEMM
// operand role (x and w in the forward GEMM; dy, and x as saved for the weight gradient, in the
// backward ones) the element format, the scaling granularity, how the scale is chosen and stored,
// the rounding, and whether the weight-gradient GEMM's inputs get the 16x16 random Hadamard
// transform; for the recipe, the GEMM's promotion interval and TE's delayed-scaling parameters.
// The built-in recipes, and user recipes in TOML that start from one of them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"
#include "harness/policy/policy.hpp"
#include "harness/quant/scaling.hpp"

namespace ampbench::quant {

// A GEMM operand: the activation x, the weight w, the output gradient dy.
enum class Role : std::uint8_t { x, w, dy };
// The GEMMs of a linear layer: fprop y = x w^T, dgrad dx = dy w, wgrad dw = dy^T x.
enum class Gemm : std::uint8_t { fprop, dgrad, wgrad };

// How a tensor is cut into scaling tiles (K, the GEMM's reduction dimension, along the row).
enum class Granularity : std::uint8_t {
  tensor,  // one scale for the tensor
  tile,    // 1 x N along K (fp8-block's 1x128, MX's 1x32, NVFP4's 1x16)
  block,   // N x N (fp8-block's 128x128 weights, NVFP4's 16x16 weights)
};

// How a tile's scale is chosen.
enum class ScaleChoice : std::uint8_t {
  delayed,  // TE DelayedScaling: fp32, fp8_max / amax of the history / 2^margin
  current,  // fp32 from the tile's own amax (TE Float8CurrentScaling; fp8-block with fp32 scales)
  pow2,     // the same rounded down to a power of two (fp8-block's default)
  mx,       // OCP MX: 2^(floor(log2 amax) - emax_elem) in E8M0
  nvfp4,    // NVFP4: an E4M3 block scale under an fp32 tensor scale
  mx_ceil,  // MX blocks with TE MXFP8BlockScaling's scale: E8M0 at or above amax / max_elem
};
// An MX scale (E8M0 per 1xN tile), whichever rule chooses it: mx or mx_ceil.
bool mx_scale(ScaleChoice s);

// How the scale is stored.
enum class ScaleFormat : std::uint8_t {
  fp32,   // binary32
  ue8m0,  // a power of two, 2^-127..2^127
  ue4m3,  // unsigned E4M3 block scales and an fp32 tensor scale (NVFP4)
};

// What a recipe does to one operand.
struct OperandRecipe {
  numeric::Format element = numeric::formats::e4m3;
  Granularity granularity = Granularity::tensor;
  std::size_t block = 0;  // N of a tile (1xN) or block (NxN); 0 for tensor
  ScaleChoice scale = ScaleChoice::current;
  ScaleFormat scale_format = ScaleFormat::fp32;
  numeric::Rounding rounding = numeric::Rounding::nearest_even;
  // x and dy: the 16x16 random Hadamard transform along K when the operand enters the
  // weight-gradient GEMM (NVFP4); never for w, and the same for x and dy (the product changes
  // otherwise).
  bool hadamard = false;
};
bool operator==(const OperandRecipe& a, const OperandRecipe& b);

// TE DelayedScaling's parameters (transformer_engine/common/recipe/__init__.py), with its defaults.
struct DelayedParams {
  std::size_t amax_history_len = 1024;
  AmaxAlgo amax_compute_algo = AmaxAlgo::max;
  int margin = 0;
  bool operator==(const DelayedParams&) const = default;
};

struct Recipe {
  std::string name;
  std::string base;  // the built-in it starts from (its own name for a built-in)
  std::string description;
  std::array<OperandRecipe, 3> operands{};  // by Role
  // The GEMM's accumulation promoted to fp32 every N products along K (DeepSeek-V3's N_C = 128);
  // 0: never.
  std::size_t promote_interval = 0;
  DelayedParams delayed;
  // The Hadamard transform's signs drawn from this seed (hadamard_signs); none: TE's fixed vector.
  std::optional<std::uint64_t> hadamard_seed;
  // The element formats `ampbench quantize --element` may pick (the MX recipes); empty: fixed.
  std::vector<numeric::Format> element_options;

  const OperandRecipe& operand(Role r) const { return operands[static_cast<std::size_t>(r)]; }
  OperandRecipe& operand(Role r) { return operands[static_cast<std::size_t>(r)]; }
};
// The same operands, promotion interval, delayed-scaling parameters and Hadamard seed (name, base,
// description and element_options aside: a user recipe inherits its base's element_options).
bool same_settings(const Recipe& a, const Recipe& b);

// fp8-delayed, fp8-current, fp8-block, mxfp8, mxfp6, mxfp4, nvfp4.
std::span<const Recipe> builtin_recipes();
const Recipe* find_recipe(std::string_view name);  // null when there is no built-in of that name
std::string builtin_recipe_names();                // "fp8-delayed, fp8-current, ..."

// Names as the TOML files and the command line write them.
std::string_view role_name(Role r);
std::optional<Role> role_from_name(std::string_view name);
std::string_view gemm_name(Gemm g);
std::optional<Gemm> gemm_from_name(std::string_view name);
std::string_view granularity_name(Granularity g);
std::string_view scale_choice_name(ScaleChoice s);
std::string_view scale_format_name(ScaleFormat s);
// The scale format a scale choice stores its scales in.
ScaleFormat scale_format_of(ScaleChoice s);
// The quantizer's rule (scaling.hpp) for a scale choice.
ScaleRule scale_rule_of(ScaleChoice s);

// Whether a role enters a GEMM (x: fprop, wgrad; w: fprop, dgrad; dy: dgrad, wgrad), and the GEMM
// a role is quantized for when none is named (x, w: fprop; dy: dgrad).
bool enters(Role r, Gemm g);
Gemm default_gemm(Role r);
// Whether the recipe transforms this operand: its `hadamard` and the weight-gradient GEMM.
bool applies_hadamard(const Recipe& recipe, Role r, Gemm g);

// A user recipe that cannot be read: what() is "SOURCE:LINE:COLUMN: message" (line and column
// when known, both 1-based) and names the key and what is wrong with it. User recipes are read as
// user policies are, and their errors are policy::PolicyError's kind (source, line, column).
class RecipeError : public policy::PolicyError {
 public:
  using policy::PolicyError::PolicyError;
};

// A user recipe in TOML (docs/scaling.md):
//   name = "my-nvfp4"          # required; not a built-in's name
//   base = "nvfp4"             # required: the built-in to start from
//   description = "..."        # optional
//   promote_interval = 0       # the GEMM's promotion interval along K (0: never)
//   hadamard_seed = 7          # the transform's signs from a seed (absent: TE's fixed vector)
//   amax_history_len = 1024    # delayed scaling: also amax_compute_algo ("max", "most_recent")
//   margin = 0                 #   and margin
//   [x]                        # [x], [w], [dy]: every key optional
//   element = "e2m1"           # an element format (formats, user:p=...)
//   granularity = "tile"       # tensor, tile (1xN along K) or block (NxN)
//   block = 16                 # N
//   scale = "nvfp4"            # delayed, current, pow2, mx, nvfp4
//   scale_format = "ue4m3"     # fp32, ue8m0, ue4m3: must be the one the scale is stored in
//   rounding = "rne"           # a rounding mode (rne, srp, ...)
//   hadamard = true            # x and dy only, both alike
// `source_name` names the text in messages.
Recipe parse_recipe(std::string_view text, std::string_view source_name);
Recipe load_recipe(const std::string& path);
// What --recipe takes: a built-in name, or a recipe file (a name ending in .toml or containing
// '/'). Throws RecipeError; for an unknown name its message lists the built-in recipes.
Recipe recipe_by_name_or_file(const std::string& name);
// The recipe as a TOML file with every key written out (parse_recipe reads it back to the same
// settings).
std::string to_toml(const Recipe& recipe);

}  // namespace ampbench::quant
