#include "harness/backends/cuda/scaled_gemm_plan.hpp"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "harness/quant/recipe_gemm.hpp"

namespace ampbench::backends::cuda {
namespace {

std::size_t round_up(std::size_t n, std::size_t m) {
  return (n + m - 1) / m * m;
}

bool is_fp32_tiles(ScaleMode m) {
  return m == ScaleMode::vec128_32f || m == ScaleMode::blk128x128_32f;
}

bool is_block_scaled(ScaleMode m) {
  return m == ScaleMode::vec32_ue8m0 || m == ScaleMode::vec16_ue4m3;
}

std::size_t entry_bytes(ScaleMode m) {
  return is_block_scaled(m) ? 1 : 4;
}

std::optional<ScaledElement> element_of(const numeric::Format& f) {
  if (std::string_view(f.name) == "e4m3") return ScaledElement::e4m3;
  if (std::string_view(f.name) == "e5m2") return ScaledElement::e5m2;
  if (std::string_view(f.name) == "e2m1") return ScaledElement::e2m1;
  return std::nullopt;
}

// The mode of an operand scaled by `rule` with `granularity` in tiles of block_rows x
// block_cols, or why none holds them. The granularity, not the tile's extent, says per tensor: a
// 128 x 128 tensor's one scale is SCALAR_32F, one 128 x 128 tile of fp8-block's BLK128x128_32F.
std::optional<ScaleMode> mode_of(quant::ScaleRule rule, quant::Granularity granularity,
                                 std::size_t block_rows, std::size_t block_cols,
                                 std::string& reason) {
  const bool tensor = granularity == quant::Granularity::tensor;
  const std::string tiles = tensor ? std::string("one scale for the tensor")
                                   : fmt::format("{}x{} tiles", block_rows, block_cols);
  switch (rule) {
    case quant::ScaleRule::fp32_given:
    case quant::ScaleRule::fp32_amax:
      if (tensor) return ScaleMode::scalar_32f;
      if (block_rows == 1 && block_cols == 128) return ScaleMode::vec128_32f;
      if (block_rows == 128 && block_cols == 128) return ScaleMode::blk128x128_32f;
      reason = fmt::format(
          "cuBLASLt's fp32 scales are per tensor or on 1x128 or 128x128 tiles, not {}", tiles);
      return std::nullopt;
    case quant::ScaleRule::mx_e8m0:
      if (!tensor && block_rows == 1 && block_cols == 32) return ScaleMode::vec32_ue8m0;
      reason = fmt::format("cuBLASLt's E8M0 block scales are on 1x32 blocks, not {}", tiles);
      return std::nullopt;
    case quant::ScaleRule::nvfp4:
      // A 16x16 weight tile's scale is every one of its rows' 1x16 block scale.
      if (!tensor && (block_rows == 1 || block_rows == 16) && block_cols == 16) {
        return ScaleMode::vec16_ue4m3;
      }
      reason = fmt::format("cuBLASLt's UE4M3 block scales are on 1x16 blocks, not {}", tiles);
      return std::nullopt;
  }
  throw std::logic_error("unknown scale rule");
}

struct ShapeChoice {
  std::optional<ScaledShape> shape;
  std::string reason;
};
ShapeChoice shape_of(const numeric::Format& element, quant::ScaleRule rule,
                     quant::Granularity granularity, std::size_t rows, std::size_t cols,
                     std::size_t block_rows, std::size_t block_cols) {
  ShapeChoice choice;
  const std::optional<ScaledElement> e = element_of(element);
  if (!e) {
    choice.reason =
        fmt::format("cuBLASLt has no {} element type (its scaled GEMMs take e4m3, e5m2 and e2m1)",
                    element.name);
    return choice;
  }
  const std::optional<ScaleMode> mode =
      mode_of(rule, granularity, block_rows, block_cols, choice.reason);
  if (!mode) return choice;
  // cuBLASLt's FP4 GEMMs are NVFP4's: UE4M3 scales per 16 (the cuBLAS documentation's FP4 table;
  // nvmath-python and PyTorch's scaled_mm offer no cuBLASLt MXFP4).
  if (*e == ScaledElement::e2m1 && *mode != ScaleMode::vec16_ue4m3) {
    choice.reason = fmt::format("cuBLASLt's FP4 GEMMs take UE4M3 scales per 16 (NVFP4), not {}",
                                scale_mode_name(*mode));
    return choice;
  }
  if (*e == ScaledElement::e2m1 && cols % 2 != 0) {
    choice.reason = fmt::format("an FP4 operand's K = {} is odd: two elements make a byte", cols);
    return choice;
  }
  choice.shape = ScaledShape{.element = *e, .mode = *mode, .rows = rows, .k = cols};
  return choice;
}

}  // namespace

std::string_view scaled_element_name(ScaledElement e) {
  switch (e) {
    case ScaledElement::e4m3: return "8F_E4M3";
    case ScaledElement::e5m2: return "8F_E5M2";
    case ScaledElement::e2m1: return "4F_E2M1";
  }
  throw std::logic_error("unknown scaled element");
}

std::string_view scale_mode_name(ScaleMode m) {
  switch (m) {
    case ScaleMode::scalar_32f: return "SCALAR_32F";
    case ScaleMode::vec128_32f: return "VEC128_32F";
    case ScaleMode::blk128x128_32f: return "BLK128x128_32F";
    case ScaleMode::vec32_ue8m0: return "VEC32_UE8M0";
    case ScaleMode::vec16_ue4m3: return "VEC16_UE4M3";
  }
  throw std::logic_error("unknown scale mode");
}

std::size_t scale_block(ScaleMode m, std::size_t k) {
  switch (m) {
    case ScaleMode::scalar_32f: return k;
    case ScaleMode::vec128_32f:
    case ScaleMode::blk128x128_32f: return 128;
    case ScaleMode::vec32_ue8m0: return 32;
    case ScaleMode::vec16_ue4m3: return 16;
  }
  throw std::logic_error("unknown scale mode");
}

namespace {

// The scale blocks of a row: L = ceil(k / block) (1 per tensor).
std::size_t blocks_along_k(ScaleMode m, std::size_t k) {
  const std::size_t block = std::max<std::size_t>(scale_block(m, k), 1);
  return (k + block - 1) / block;
}

}  // namespace

std::size_t scale_entries(ScaleMode m, std::size_t rows, std::size_t k) {
  const std::size_t blocks = blocks_along_k(m, k);
  switch (m) {
    case ScaleMode::scalar_32f: return 1;
    case ScaleMode::vec128_32f: return blocks * rows;
    case ScaleMode::blk128x128_32f: return round_up(blocks, 4) * ((rows + 127) / 128);
    case ScaleMode::vec32_ue8m0:
    case ScaleMode::vec16_ue4m3: return round_up(rows, 128) * round_up(blocks, 4);
  }
  throw std::logic_error("unknown scale mode");
}

std::size_t scale_index(ScaleMode m, std::size_t rows, std::size_t k, std::size_t r,
                        std::size_t b) {
  const std::size_t blocks = blocks_along_k(m, k);
  switch (m) {
    case ScaleMode::scalar_32f: return 0;
    case ScaleMode::vec128_32f: return b * rows + r;
    case ScaleMode::blk128x128_32f: return (r / 128) * round_up(blocks, 4) + b;
    case ScaleMode::vec32_ue8m0:
    case ScaleMode::vec16_ue4m3: {
      const std::size_t tile = (r / 128) * (round_up(blocks, 4) / 4) + b / 4;
      return tile * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + b % 4;
    }
  }
  throw std::logic_error("unknown scale mode");
}

OperandPacking pack_operand(const quant::Quantized& q, quant::Granularity granularity) {
  OperandPacking packing;
  if (q.rows == 0 || q.cols == 0 || q.tiles.empty() || q.bits.size() != q.rows * q.cols) {
    throw std::invalid_argument("pack_operand: an empty or inconsistent quantized tensor");
  }
  ShapeChoice choice =
      shape_of(q.element, q.rule, granularity, q.rows, q.cols, q.block_rows, q.block_cols);
  if (!choice.shape) {
    packing.reason = std::move(choice.reason);
    return packing;
  }
  ScaledOperand o;
  const ScaledShape& s = o.shape = *choice.shape;
  if (s.element == ScaledElement::e2m1) {
    o.codes.resize(q.bits.size() / 2);
    for (std::size_t i = 0; i < o.codes.size(); ++i) {
      o.codes[i] =
          static_cast<std::uint8_t>((q.bits[2 * i] & 0xF) | ((q.bits[2 * i + 1] & 0xF) << 4));
    }
  } else {
    o.codes.resize(q.bits.size());
    for (std::size_t i = 0; i < o.codes.size(); ++i) {
      o.codes[i] = static_cast<std::uint8_t>(q.bits[i] & 0xFF);
    }
  }
  o.scales.assign(scale_entries(s.mode, s.rows, s.k) * entry_bytes(s.mode), 0);
  const std::size_t tiles_per_row = q.cols / q.block_cols;
  const std::size_t block = scale_block(s.mode, s.k);
  const std::size_t blocks = s.k / block;  // every mode's block divides k: the tiles are it
  for (std::size_t r = 0; r < s.rows; ++r) {
    for (std::size_t b = 0; b < blocks; ++b) {
      const quant::Tile& t =
          q.tiles.at((r / q.block_rows) * tiles_per_row + b * block / q.block_cols);
      const std::size_t at = scale_index(s.mode, s.rows, s.k, r, b) * entry_bytes(s.mode);
      if (is_block_scaled(s.mode)) {
        o.scales[at] = static_cast<std::uint8_t>(t.scale_bits & 0xFF);
      } else {
        const auto decode = std::bit_cast<std::uint32_t>(static_cast<float>(t.decode_scale));
        for (std::size_t i = 0; i < 4; ++i) {
          o.scales[at + i] = static_cast<std::uint8_t>(decode >> (8 * i));
        }
      }
    }
  }
  if (q.rule == quant::ScaleRule::nvfp4) o.tensor_decode = static_cast<float>(q.global_decode);
  packing.operand = std::move(o);
  return packing;
}

std::optional<std::string> why_no_scaled_gemm(const ScaledShape& a, const ScaledShape& b, int cc,
                                              bool fast_accum) {
  const std::string sm = fmt::format("sm_{}", cc);
  if (a.k != b.k) return fmt::format("A's K = {} is not B's K = {}", a.k, b.k);
  const bool fp4 = a.element == ScaledElement::e2m1 || b.element == ScaledElement::e2m1;
  if (fp4 && a.element != b.element) {
    return std::string("cuBLASLt multiplies FP4 operands only by FP4 operands");
  }
  if (a.element == ScaledElement::e5m2 && b.element == ScaledElement::e5m2) {
    return std::string("cuBLASLt has no FP8 GEMM with both operands e5m2");
  }
  for (const auto& [name, size] :
       {std::pair{"m", a.rows}, std::pair{"n", b.rows}, std::pair{"k", a.k}}) {
    const std::size_t step = name == std::string_view("k") && fp4 ? 32 : 16;
    if (size == 0 || size % step != 0) {
      return fmt::format("a scaled GEMM's {} = {} is not a positive multiple of {}", name, size,
                         step);
    }
  }
  const bool alike = a.mode == b.mode || (is_fp32_tiles(a.mode) && is_fp32_tiles(b.mode));
  if (!alike) {
    return fmt::format("cuBLASLt scales both operands alike, not A {} and B {}",
                       scale_mode_name(a.mode), scale_mode_name(b.mode));
  }
  if (fp4 && (a.mode != ScaleMode::vec16_ue4m3 || b.mode != ScaleMode::vec16_ue4m3)) {
    return fmt::format("cuBLASLt's FP4 GEMMs take UE4M3 scales per 16 (NVFP4), not {}",
                       scale_mode_name(a.mode != ScaleMode::vec16_ue4m3 ? a.mode : b.mode));
  }
  if (cc < 89) return fmt::format("{} has no FP8 or FP4 Tensor Cores (sm_89 on)", sm);
  if (is_fp32_tiles(a.mode)) {
    if (cc != 90) {
      return fmt::format(
          "cuBLASLt's 1x128 and 128x128 fp32 block scales run on sm_90 alone, not {}", sm);
    }
    if (a.mode == ScaleMode::blk128x128_32f && b.mode == ScaleMode::blk128x128_32f) {
      return std::string("cuBLASLt does not scale both operands by 128x128 blocks");
    }
    if (fast_accum) {
      return std::string("cuBLASLt's 1x128 and 128x128 block scales take no fast accumulation");
    }
  }
  if (is_block_scaled(a.mode) && cc < 100) {
    return fmt::format("cuBLASLt's {} block scales need sm_100 or later, not {}",
                       scale_mode_name(a.mode), sm);
  }
  return std::nullopt;
}

std::optional<std::string> why_no_recipe_gemm(const quant::Recipe& recipe, quant::Gemm gemm,
                                              std::size_t rows, std::size_t cols, std::size_t k,
                                              int cc, bool fast_accum) {
  const auto [ra, rb] = quant::gemm_roles(gemm);
  std::array<ScaledShape, 2> shapes;
  for (const auto& [i, role, n] : {std::tuple{0, ra, rows}, std::tuple{1, rb, cols}}) {
    const quant::OperandRecipe& o = recipe.operand(role);
    const quant::Layout layout = quant::operand_layout(o, n, k, 0);
    ShapeChoice choice = shape_of(o.element, quant::scale_rule_of(o.scale), o.granularity, n, k,
                                  layout.block_rows, layout.block_cols);
    if (!choice.shape) {
      return fmt::format("{}: the {} GEMM's {}: {}", recipe.name, quant::gemm_name(gemm),
                         quant::role_name(role), choice.reason);
    }
    shapes[static_cast<std::size_t>(i)] = *choice.shape;
  }
  if (auto why = why_no_scaled_gemm(shapes[0], shapes[1], cc, fast_accum)) {
    return fmt::format("{}: the {} GEMM: {}", recipe.name, quant::gemm_name(gemm), *why);
  }
  return std::nullopt;
}

std::optional<std::string> why_no_recipe_training(const quant::Recipe& recipe, int cc) {
  std::size_t n = 256;
  for (const quant::Role role : {quant::Role::x, quant::Role::w, quant::Role::dy}) {
    if (recipe.operand(role).block > 0) n = std::lcm(n, recipe.operand(role).block);
  }
  for (const quant::Gemm g : {quant::Gemm::fprop, quant::Gemm::dgrad, quant::Gemm::wgrad}) {
    if (auto why = why_no_recipe_gemm(recipe, g, n, n, n, cc, recipe.promote_interval == 0)) {
      return why;
    }
  }
  return std::nullopt;
}

}  // namespace ampbench::backends::cuda
