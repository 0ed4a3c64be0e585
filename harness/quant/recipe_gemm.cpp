// A recipe's GEMM: operands quantized per role, element codes multiplied on a Tensor Core model in
// chunks along K, the chunks scaled and added in binary32 (recipe_gemm.hpp).
#include "harness/quant/recipe_gemm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "harness/numeric/clones.hpp"
#include "harness/numeric/mma_block_scale.hpp"
#include "harness/quant/hadamard.hpp"

namespace ampbench::quant {

std::pair<Role, Role> gemm_roles(Gemm g) {
  switch (g) {
    case Gemm::fprop: return {Role::x, Role::w};
    case Gemm::dgrad: return {Role::dy, Role::w};
    case Gemm::wgrad: return {Role::dy, Role::x};
  }
  return {Role::x, Role::w};
}

Layout operand_layout(const OperandRecipe& o, std::size_t rows, std::size_t cols,
                      std::uint64_t seed) {
  Layout layout;
  layout.rows = rows;
  layout.cols = cols;
  switch (o.granularity) {
    case Granularity::tensor:
      layout.block_rows = rows;
      layout.block_cols = cols;
      break;
    case Granularity::tile:
      layout.block_rows = 1;
      layout.block_cols = o.block;
      break;
    case Granularity::block:
      layout.block_rows = o.block;
      layout.block_cols = o.block;
      break;
  }
  layout.mode = o.rounding;
  layout.seed = seed;
  return layout;
}

QuantizedOperand quantize_operand(const Recipe& recipe, Role role, Gemm gemm,
                                  std::span<const float> x, std::size_t rows, std::size_t cols,
                                  std::uint64_t seed, std::optional<float> delayed_scale) {
  const OperandRecipe& o = recipe.operand(role);
  QuantizedOperand out;
  out.role = role;
  out.transformed = applies_hadamard(recipe, role, gemm);
  out.input = out.transformed
                  ? hadamard_transform(x, rows, cols, hadamard_signs(recipe.hadamard_seed))
                  : std::vector<float>(x.begin(), x.end());
  const Layout layout = operand_layout(o, rows, cols, seed);
  switch (scale_rule_of(o.scale)) {
    case ScaleRule::fp32_given:
      if (!delayed_scale) {
        throw std::invalid_argument(fmt::format(
            "{}: the delayed-scaling operand {} needs its scale", recipe.name, role_name(role)));
      }
      out.q = quantize_with_scale(out.input, layout, o.element, *delayed_scale);
      break;
    case ScaleRule::fp32_amax:
      out.q = quantize_current(out.input, layout, o.element, o.scale == ScaleChoice::pow2);
      break;
    case ScaleRule::mx_e8m0:
      out.q = quantize_mx(out.input, layout, o.element,
                          o.scale == ScaleChoice::mx_ceil ? MxScale::round_up : MxScale::ocp);
      break;
    case ScaleRule::nvfp4: out.q = quantize_nvfp4(out.input, layout); break;
  }
  return out;
}

std::size_t instruction_k(const RecipeMma& mma) {
  switch (mma.product) {
    case ScaledProduct::promoted: return 1;
    case ScaledProduct::mxf8f6f4: return 32;
    case ScaledProduct::mxf4:
    case ScaledProduct::mxf4nvf4: return 64;
  }
  return 1;
}

namespace {

// The parameters a mixed-format MMA must share: all but the input format and the names.
bool same_arithmetic(const numeric::MmaModel& a, const numeric::MmaModel& b) {
  return a.instruction_k == b.instruction_k && a.fused_k == b.fused_k &&
         a.fraction_bits == b.fraction_bits && a.output == b.output &&
         a.subnormal_inputs == b.subnormal_inputs && a.subnormal_outputs == b.subnormal_outputs &&
         a.canonical_nan == b.canonical_nan;
}

// fl32(x * y), correctly rounded: the binary64 product rounded to odd (its error, from an FMA,
// sets the last bit when nonzero), then to binary32; rounding to odd in 53 bits and then to
// nearest in 24 is the correct rounding (Boldo and Melquiond, "Emulation of FMA and correctly
// rounded sums: proved algorithms using rounding to odd", IEEE TC 57(4), 2008).
float fl32_product(double x, double y) {
  double p = x * y;
  const double error = std::fma(x, y, -p);
  if (error != 0 && std::isfinite(p)) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &p, sizeof bits);
    if ((bits & 1) == 0) p = std::nextafter(p, error > 0 ? HUGE_VAL : -HUGE_VAL);
  }
  return static_cast<float>(p);
}

// One row of the promotion: acc_j = fmaf(fl32(da * db_j), partial_j, acc_j), the partials being
// binary32 values. Compiled for each x86-64 level (numeric/clones.hpp) so that fma and fmaf are
// instructions, not calls into libm.
AMPBENCH_CLONES_FLATTENED("arch=x86-64-v4", "arch=x86-64-v3", "default")
void promote_row(float* acc, const double* partial, const double* b_decode, double da,
                 std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) {
    acc[j] = std::fmaf(fl32_product(da, b_decode[j]), static_cast<float>(partial[j]), acc[j]);
  }
}

bool block_scaled(const OperandRecipe& o) {
  return mx_scale(o.scale) || o.scale == ScaleChoice::nvfp4;
}

bool fp8(const numeric::Format& f) {
  return numeric::same_format(f, numeric::formats::e4m3) ||
         numeric::same_format(f, numeric::formats::e5m2);
}

// Blackwell's block-scaled instructions (numeric/mma_block_scale.hpp) for two block-scaled
// operands.
MmaChoice blackwell_block_scaled(const Recipe& recipe, const OperandRecipe& a,
                                 const OperandRecipe& b) {
  const auto refuse = [&](const std::string& why) {
    return MmaChoice{std::nullopt,
                     fmt::format("{}: {}; --arch exact multiplies exactly, --arch hopper applies "
                                 "FP8 elements' scales in fp32 after each block",
                                 recipe.name, why)};
  };
  if (scale_format_of(a.scale) != scale_format_of(b.scale) || a.block != b.block ||
      !block_scaled(a) || !block_scaled(b)) {
    return refuse(
        "Blackwell's block-scaled MMAs take two operands scaled alike (MX or NVFP4, the "
        "same block)");
  }
  const numeric::MmaModel output = *numeric::mma_model("blackwell", numeric::formats::e4m3);
  const bool e2m1 = numeric::same_format(a.element, numeric::formats::e2m1) &&
                    numeric::same_format(b.element, numeric::formats::e2m1);
  if (mx_scale(a.scale) && a.block == 32 && fp8(a.element) && fp8(b.element)) {
    RecipeMma mma{*numeric::mma_model("blackwell", a.element), a.element, b.element,
                  fmt::format("blackwell kind::mxf8f6f4 ({} x {})", a.element.name, b.element.name),
                  ScaledProduct::mxf8f6f4};
    return {std::move(mma), {}};
  }
  if (mx_scale(a.scale) && a.block == 32 && e2m1) {
    return {RecipeMma{output, a.element, b.element, "blackwell kind::mxf4 (e2m1, ue8m0 per 32)",
                      ScaledProduct::mxf4},
            {}};
  }
  if (a.scale == ScaleChoice::nvfp4 && a.block == 16 && e2m1) {
    return {RecipeMma{output, a.element, b.element, "blackwell kind::mxf4nvf4 (e2m1, ue4m3 per 16)",
                      ScaledProduct::mxf4nvf4},
            {}};
  }
  return refuse(fmt::format(
      "no block-scaled Blackwell MMA is modelled for {} x {} elements in blocks of {} (modelled: "
      "kind::mxf8f6f4 with e4m3/e5m2 per 32, kind::mxf4 with e2m1 per 32, kind::mxf4nvf4 with "
      "e2m1 and UE4M3 per 16; MMA-Sim leaves FP6 unmodelled)",
      a.element.name, b.element.name, a.block));
}

// The group sums of kind::mxf4* for one row of A against every row of B: sums[g * n + j] is the sum
// of the 16 products of group g of row a with row j of B, B given transposed (bt, k x n). The
// products and sums of e2m1 values are exact in binary32 (multiples of 1/4 below 2^10), so the
// order, and the FMAs a compiler may contract them into, do not matter. Compiled for each x86-64
// level (numeric/clones.hpp): the columns go through the vector lanes.
AMPBENCH_CLONES_FLATTENED("arch=x86-64-v4", "arch=x86-64-v3", "default")
void mxf4_group_sums(const float* a, const float* bt, std::size_t n, std::size_t k, float* sums) {
  const std::size_t group = numeric::kMxf4Group;
  for (std::size_t g = 0; g < k / group; ++g) {
    float* out = sums + g * n;
    std::fill_n(out, n, 0.0f);
    for (std::size_t l = g * group; l < (g + 1) * group; ++l) {
      const float x = a[l];
      const float* row = bt + l * n;
      for (std::size_t j = 0; j < n; ++j) out[j] += x * row[j];
    }
  }
}

// The block-scaled product of recipe_product (see recipe_gemm.hpp).
std::vector<double> block_scaled_product(const Quantized& a, const Quantized& b,
                                         const RecipeMma& mma, std::size_t promote_interval) {
  const std::size_t m = a.rows, n = b.rows, k = a.cols;
  const std::size_t instruction = instruction_k(mma);
  if (k % instruction != 0) {
    throw std::invalid_argument(
        fmt::format("recipe GEMM: {} takes K in steps of {}: K = {} is not a multiple", mma.name,
                    instruction, k));
  }
  const std::size_t block = a.block_cols;
  const numeric::ScaleEncoding encoding = mma.product == ScaledProduct::mxf4nvf4
                                              ? numeric::ScaleEncoding::ue4m3
                                              : numeric::ScaleEncoding::ue8m0;
  const float alpha = mma.product == ScaledProduct::mxf4nvf4
                          ? fl32_product(a.global_decode, b.global_decode)
                          : 1.0f;
  // Every row's decoded block scales, block by block along K (a 2-D tile's scale in each of its
  // rows).
  const std::size_t blocks = k / block;
  const auto decoded = [&](const Quantized& q) {
    std::vector<numeric::BlockScale> scales(q.rows * blocks);
    const std::size_t tiles_per_row = k / q.block_cols;
    for (std::size_t row = 0; row < q.rows; ++row) {
      for (std::size_t s = 0; s < blocks; ++s) {
        const Tile& t = q.tiles[(row / q.block_rows) * tiles_per_row + s * block / q.block_cols];
        scales[row * blocks + s] =
            numeric::decode_block_scale(encoding, static_cast<std::uint8_t>(t.scale_bits));
      }
    }
    return scales;
  };
  const std::vector<numeric::BlockScale> a_scales = decoded(a), b_scales = decoded(b);
  // kind::mxf4*: B's e2m1 values transposed in binary32, for the group sums.
  const bool fp4 = mma.product != ScaledProduct::mxf8f6f4;
  std::vector<float> bt(fp4 ? k * n : 0);
  if (fp4) {
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t l = 0; l < k; ++l) bt[l * n + j] = static_cast<float>(b.values[j * k + l]);
    }
  }
  const std::size_t groups = k / numeric::kMxf4Group;
  const std::size_t per_instruction = instruction / numeric::kMxf4Group;
  std::vector<double> c(m * n);
  const auto rows = [&](std::size_t first, std::size_t end) {
    std::vector<float> a_row(fp4 ? k : 0);
    std::vector<float> sums(fp4 ? groups * n : 0);
    std::array<double, 4> group_sum{};
    for (std::size_t i = first; i < end; ++i) {
      const double* ar = a.values.data() + i * k;
      if (fp4) {
        std::copy_n(ar, k, a_row.begin());
        mxf4_group_sums(a_row.data(), bt.data(), n, k, sums.data());
      }
      const numeric::BlockScale* sa = a_scales.data() + i * blocks;
      for (std::size_t j = 0; j < n; ++j) {
        const double* br = b.values.data() + j * k;
        const numeric::BlockScale* sb = b_scales.data() + j * blocks;
        float total = 0.0f;
        double acc = 0.0;
        for (std::size_t k0 = 0; k0 < k; k0 += instruction) {
          if (!std::isinf(acc)) {
            const std::size_t s0 = k0 / block;
            if (fp4) {
              const std::size_t g0 = k0 / numeric::kMxf4Group;
              for (std::size_t g = 0; g < per_instruction; ++g) {
                group_sum[g] = sums[(g0 + g) * n + j];
              }
              acc = numeric::mma_mxf4_step_of_sums(mma.model, acc, group_sum.data(),
                                                   static_cast<int>(instruction), sa + s0, sb + s0,
                                                   static_cast<int>(block));
            } else {
              acc = numeric::mma_mxf8f6f4_step(mma.model, mma.a_format, mma.b_format, acc, ar + k0,
                                               br + k0, static_cast<int>(instruction), sa[s0],
                                               sb[s0]);
            }
          }
          const std::size_t done = k0 + instruction;
          if (promote_interval != 0 && done % promote_interval == 0 && done < k) {
            total += static_cast<float>(acc);  // binary32 addition, rounded once
            acc = 0.0;
          }
        }
        total += static_cast<float>(acc);
        c[i * n + j] = alpha == 1.0f ? total : alpha * total;
      }
    }
  };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t parts = std::min<std::size_t>(cores, std::max<std::size_t>(m, 1));
  {
    std::vector<std::jthread> pool;
    for (std::size_t t = 1; t < parts; ++t) {
      pool.emplace_back(rows, m * t / parts, m * (t + 1) / parts);
    }
    rows(0, m / parts);
  }
  return c;
}

}  // namespace

MmaChoice recipe_mma(std::string_view arch, const Recipe& recipe, Gemm gemm) {
  const auto [ra, rb] = gemm_roles(gemm);
  const OperandRecipe& a = recipe.operand(ra);
  const OperandRecipe& b = recipe.operand(rb);
  if (arch == "blackwell" && (block_scaled(a) || block_scaled(b)))
    return blackwell_block_scaled(recipe, a, b);
  const auto ma = numeric::mma_model(arch, a.element);
  const auto mb = numeric::mma_model(arch, b.element);
  if (!ma || !mb) {
    const numeric::Format& missing = !ma ? a.element : b.element;
    return {std::nullopt,
            fmt::format("{}: {} has no Tensor Core MMA with {} inputs (e4m3 and e5m2 have one on "
                        "ada, hopper and blackwell; the FP6 and FP4 formats have no model); --arch "
                        "exact multiplies exactly",
                        recipe.name, arch, missing.name)};
  }
  if (!same_arithmetic(*ma, *mb)) {
    return {std::nullopt, fmt::format("{}: {}'s {} and {} MMAs differ in more than their inputs: "
                                      "no mixed-format model",
                                      recipe.name, arch, a.element.name, b.element.name)};
  }
  RecipeMma mma{*ma, a.element, b.element,
                numeric::same_format(a.element, b.element)
                    ? std::string(ma->name)
                    : fmt::format("{} x {}", ma->name, mb->name)};
  return {std::move(mma), {}};
}

std::vector<std::size_t> chunk_ends(const Quantized& a, const Quantized& b,
                                    std::size_t promote_interval) {
  const std::size_t k = a.cols;
  std::vector<std::size_t> ends;
  for (std::size_t at = 1; at <= k; ++at) {
    const bool edge = at == k || at % a.block_cols == 0 || at % b.block_cols == 0 ||
                      (promote_interval != 0 && at % promote_interval == 0);
    if (edge) ends.push_back(at);
  }
  return ends;
}

std::vector<double> recipe_product(const Quantized& a, const Quantized& b, const RecipeMma& mma,
                                   std::size_t promote_interval) {
  if (a.cols != b.cols) {
    throw std::invalid_argument(
        fmt::format("recipe GEMM: A has k = {}, B has k = {}", a.cols, b.cols));
  }
  if (mma.product != ScaledProduct::promoted) {
    return block_scaled_product(a, b, mma, promote_interval);
  }
  const std::size_t m = a.rows, n = b.rows, k = a.cols;
  const std::size_t a_tiles_per_row = k / a.block_cols;
  const std::size_t b_tiles_per_row = k / b.block_cols;
  const std::vector<std::size_t> ends = chunk_ends(a, b, promote_interval);
  const std::size_t chunks = ends.size();
  const auto chunk_start = [&](std::size_t c) { return c == 0 ? 0 : ends[c - 1]; };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  // Runs work(first, end) over [0, count) on up to all cores, in contiguous blocks.
  const auto on_cores = [&](std::size_t count, const auto& work) {
    const std::size_t blocks = std::min<std::size_t>(cores, std::max<std::size_t>(count, 1));
    std::vector<std::jthread> pool;
    for (std::size_t t = 1; t < blocks; ++t) {
      pool.emplace_back([&, t] { work(count * t / blocks, count * (t + 1) / blocks); });
    }
    work(0, count / blocks);
  };
  // The chunks in groups of one per core, so that only a group's B operands are held at once.
  // For each group, each chunk's B (its element values as len x n columns, MmaMatrixProduct's B,
  // which it reads from b_chunks, and its tiles' decode scales) on a core of its own; then each
  // core's rows through the group's chunks in turn: the chunk's partial product on the Tensor
  // Core model from an accumulator of zero, then promoted into acc, chunk after chunk.
  std::vector<float> acc(m * n, 0.0f);
  for (std::size_t g0 = 0; g0 < chunks; g0 += cores) {
    const std::size_t group = std::min<std::size_t>(cores, chunks - g0);
    std::vector<std::vector<double>> b_chunks(group);
    std::vector<std::vector<double>> b_decodes(group, std::vector<double>(n));
    std::vector<std::optional<numeric::MmaMatrixProduct>> products(group);
    on_cores(group, [&](std::size_t first, std::size_t end) {
      for (std::size_t g = first; g < end; ++g) {
        const std::size_t k0 = chunk_start(g0 + g), len = ends[g0 + g] - k0;
        std::vector<double>& b_chunk = b_chunks[g];
        b_chunk.resize(len * n);
        for (std::size_t j = 0; j < n; ++j) {
          for (std::size_t l = 0; l < len; ++l) b_chunk[l * n + j] = b.values[j * k + k0 + l];
          b_decodes[g][j] =
              b.tiles[(j / b.block_rows) * b_tiles_per_row + k0 / b.block_cols].decode_scale;
        }
        products[g].emplace(mma.model, mma.a_format, mma.b_format, len, n, b_chunk);
      }
    });
    on_cores(m, [&](std::size_t first, std::size_t end) {
      const std::size_t rows = end - first;
      std::vector<double> a_chunk, partial(rows * n);
      for (std::size_t g = 0; g < group; ++g) {
        const std::size_t k0 = chunk_start(g0 + g), len = ends[g0 + g] - k0;
        a_chunk.resize(rows * len);
        for (std::size_t i = 0; i < rows; ++i) {
          std::copy_n(a.values.begin() + static_cast<std::ptrdiff_t>((first + i) * k + k0), len,
                      a_chunk.begin() + static_cast<std::ptrdiff_t>(i * len));
        }
        products[g]->multiply(a_chunk, {}, partial);
        for (std::size_t i = 0; i < rows; ++i) {
          const double da =
              a.tiles[((first + i) / a.block_rows) * a_tiles_per_row + k0 / a.block_cols]
                  .decode_scale;
          // The partial is a value of the accumulator format (binary32): exact as a float.
          promote_row(acc.data() + (first + i) * n, partial.data() + i * n, b_decodes[g].data(), da,
                      n);
        }
      }
    });
  }
  return {acc.begin(), acc.end()};
}

DefaultArch default_arch(const Recipe& recipe, const std::vector<Gemm>& gemms) {
  // Block-scaled recipes (MX, NVFP4) on Blackwell's block-scaled MMAs where they are modelled.
  const auto block_scaled = [&](Role role) {
    const ScaleChoice s = recipe.operand(role).scale;
    return mx_scale(s) || s == ScaleChoice::nvfp4;
  };
  if (block_scaled(Role::x) || block_scaled(Role::w) || block_scaled(Role::dy)) {
    bool on_blackwell = true;
    for (const Gemm g : gemms)
      on_blackwell = on_blackwell && recipe_mma("blackwell", recipe, g).mma;
    if (on_blackwell) return {"blackwell", {}};
  }
  for (const Gemm g : gemms) {
    if (!recipe_mma("hopper", recipe, g).mma) {
      const auto [ra, rb] = gemm_roles(g);
      const numeric::Format& a = recipe.operand(ra).element;
      const numeric::Format& b = recipe.operand(rb).element;
      const bool a_missing = !numeric::mma_model("hopper", a).has_value();
      return {"exact",
              fmt::format("{}: multiplied exactly (no Tensor Core takes {} operands; --arch "
                          "chooses a model)",
                          recipe.name, (a_missing ? a : b).name)};
    }
  }
  return {"hopper", {}};
}

}  // namespace ampbench::quant
