// The trainer under FP8 and microscaling recipes (recipe_ops.hpp): a linear layer's three GEMMs,
// and a convolution's three passes (against direct convolutions written here, not the lowering),
// against products computed here in binary64 from values every quantizer holds exactly (so that
// the oracle is the exact product, rounded as the layer's output and gradients are); the
// delayed-scaling scales a run records against TE's rule replayed from the amaxes it records;
// every built-in recipe trains; the errors.
#include "harness/train/recipe_ops.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "harness/numeric/rounding.hpp"
#include "harness/train/data.hpp"
#include "harness/train/trainer.hpp"
#include "harness/train/trainer_steps.hpp"

namespace ampbench::train {
namespace {

using numeric::Rounding;
namespace formats = numeric::formats;

// Multiples of 1/2 in [-4, 4]: values of e4m3 under any power-of-two scale fp8-block picks for
// them (at most 3 significant bits, and a tile's scale keeps its largest at or under 448).
std::vector<double> halves(std::size_t n, std::size_t salt) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * 7 + salt * 3) % 17) / 2 - 4;
  return v;
}

double bf16(double v) {
  return numeric::round_to(formats::bf16, Rounding::nearest_even, v).value;
}

struct Layer {
  static constexpr std::size_t rows = 3, in = 40, out = 5;  // K = 40: fp8-block pads it to 128
  std::vector<double> x = halves(rows * in, 1), w = halves(in * out, 2), b = halves(out, 3);
  std::vector<double> dy = halves(rows * out, 4);
  std::vector<float> wf{w.begin(), w.end()}, bf{b.begin(), b.end()};
};

TEST(RecipeOps, ForwardIsTheExactProductPlusBiasInBinary32ThenBf16) {
  const Layer l;
  RecipeOps ops(*quant::find_recipe("fp8-block"), "exact", 1);
  const auto w = ops.parameter(l.wf);
  const auto b = ops.parameter(l.bf);
  const auto y = ops.linear(ops.constant(l.x), w, b, l.rows, l.in, l.out);
  EXPECT_EQ(std::string_view(y.format.name), "bf16");
  ASSERT_EQ(y.values.size(), l.rows * l.out);
  for (std::size_t i = 0; i < l.rows; ++i) {
    for (std::size_t j = 0; j < l.out; ++j) {
      double exact = 0;  // small multiples of 1/4: exact in binary64 and binary32
      for (std::size_t k = 0; k < l.in; ++k) exact += l.x[i * l.in + k] * l.w[k * l.out + j];
      const float sum = static_cast<float>(exact) + static_cast<float>(l.b[j]);
      EXPECT_EQ(y.values[i * l.out + j], bf16(sum)) << "y[" << i << "][" << j << "]";
    }
  }
}

TEST(RecipeOps, GradientsAreTheExactProductsThroughBf16) {
  const Layer l;
  RecipeOps ops(*quant::find_recipe("fp8-block"), "exact", 1);
  const auto w = ops.parameter(l.wf);
  const auto b = ops.parameter(l.bf);
  const auto x = ops.constant(l.x);
  // dy as a bf16 gradient arrives (its values are bf16's).
  EmulatedTensor dy{l.dy, formats::bf16};
  const auto g = ops.linear_backward(x, w, b, dy, l.rows, l.in, l.out, true);
  ASSERT_EQ(g.dx.values.size(), l.rows * l.in);
  ASSERT_EQ(g.dw.values.size(), l.in * l.out);
  EXPECT_EQ(std::string_view(g.dx.format.name), "fp32");  // x's format
  for (std::size_t i = 0; i < l.rows; ++i) {
    for (std::size_t k = 0; k < l.in; ++k) {
      double exact = 0;
      for (std::size_t j = 0; j < l.out; ++j) exact += l.dy[i * l.out + j] * l.w[k * l.out + j];
      EXPECT_EQ(g.dx.values[i * l.in + k], bf16(exact)) << "dx[" << i << "][" << k << "]";
    }
  }
  for (std::size_t k = 0; k < l.in; ++k) {
    for (std::size_t j = 0; j < l.out; ++j) {
      double exact = 0;
      for (std::size_t i = 0; i < l.rows; ++i) exact += l.x[i * l.in + k] * l.dy[i * l.out + j];
      EXPECT_EQ(g.dw.values[k * l.out + j], bf16(exact)) << "dw[" << k << "][" << j << "]";
    }
  }
  // The step's records: fprop never ran; dgrad (dy, w) and wgrad (x, dy), each of its elements.
  const auto records = ops.finish_step();
  ASSERT_EQ(records.size(), 4u);
  for (const auto& r : records) {
    EXPECT_EQ(r.parameter, 0u);
    const std::size_t elements = r.role == quant::Role::x   ? l.rows * l.in
                                 : r.role == quant::Role::w ? l.in * l.out
                                                            : l.rows * l.out;
    EXPECT_EQ(r.elements, elements) << quant::role_name(r.role);
    EXPECT_EQ(r.saturated + r.flushed, 0u);
    EXPECT_FALSE(r.scale.has_value());  // fp8-block: per-tile scales
  }
  EXPECT_TRUE(ops.finish_step().empty());
}

// The quantization shows: the same layer under nvfp4 on its Blackwell model differs from the
// exact product (e2m1 holds none of 3.5, 2.5, ...).
TEST(RecipeOps, Nvfp4ChangesTheProduct) {
  const Layer l;
  RecipeOps exact(*quant::find_recipe("fp8-block"), "exact", 1);
  RecipeOps fp4(*quant::find_recipe("nvfp4"), "blackwell", 1);
  const auto run = [&](RecipeOps& ops) {
    const auto w = ops.parameter(l.wf);
    const auto b = ops.parameter(l.bf);
    return ops.linear(ops.constant(l.x), w, b, l.rows, l.in, l.out).values;
  };
  EXPECT_NE(run(exact), run(fp4));
}

// A layer kept in bf16 runs as amp-bf16 runs it, bit for bit, and scales nothing.
TEST(RecipeOps, AKeptLayerRunsAsAmpBf16) {
  const Layer l;
  RecipeOps kept(*quant::find_recipe("nvfp4"), "blackwell", 1, {0});
  EmulatedOps bf16(*policy::find_builtin("amp-bf16"));
  const auto run = [&](auto& ops) {
    const auto w = ops.parameter(l.wf);
    const auto b = ops.parameter(l.bf);
    const auto x = ops.constant(l.x);
    const auto y = ops.linear(x, w, b, l.rows, l.in, l.out);
    const auto g = ops.linear_backward(x, w, b, y, l.rows, l.in, l.out, true);
    return std::make_tuple(y.values, g.dx.values, g.dw.values, g.db.values);
  };
  EXPECT_EQ(run(kept), run(bf16));
  EXPECT_TRUE(kept.finish_step().empty());
}

// Stochastic rounding draws per layer, GEMM and role: keeping one layer in bf16 leaves another's
// quantization, and so its gradients, as they were (the sensitivity runs differ in that layer
// alone).
TEST(RecipeOps, KeepingALayerChangesNoOtherLayersDraws) {
  const Layer l;
  const auto second_layer_gradients = [&](std::vector<std::size_t> keep) {
    RecipeOps ops(*quant::find_recipe("nvfp4"), "blackwell", 7, std::move(keep));
    const auto w1 = ops.parameter(l.wf);
    const auto b1 = ops.parameter(l.bf);
    const auto w2 = ops.parameter(l.wf);
    const auto b2 = ops.parameter(l.bf);
    const auto x = ops.constant(l.x);
    const EmulatedTensor dy{l.dy, formats::bf16};
    (void)ops.linear_backward(x, w1, b1, dy, l.rows, l.in, l.out, true);
    const auto g = ops.linear_backward(x, w2, b2, dy, l.rows, l.in, l.out, true);
    return std::make_pair(g.dx.values, g.dw.values);
  };
  EXPECT_EQ(second_layer_gradients({}), second_layer_gradients({0}));
  // The draws are stochastic: another seed gives other gradients.
  RecipeOps other(*quant::find_recipe("nvfp4"), "blackwell", 8);
  const auto w = other.parameter(l.wf);
  const auto b = other.parameter(l.bf);
  const auto g = other.linear_backward(
      other.constant(l.x), w, b, EmulatedTensor{l.dy, formats::bf16}, l.rows, l.in, l.out, true);
  RecipeOps same(*quant::find_recipe("nvfp4"), "blackwell", 7);
  const auto w7 = same.parameter(l.wf);
  const auto b7 = same.parameter(l.bf);
  const auto g7 = same.linear_backward(
      same.constant(l.x), w7, b7, EmulatedTensor{l.dy, formats::bf16}, l.rows, l.in, l.out, true);
  EXPECT_NE(g.dw.values, g7.dw.values);
}

// A strided, padded convolution: N 2, C 3, 6 x 6 images, 4 filters of 3 x 3, stride 2, padding 1
// (outputs 3 x 3). Its K (27 forward, 36 for dx, 18 for dw) fp8-block pads to 128.
struct Conv {
  ops::convolution::Geometry g = [] {
    ops::convolution::Geometry geometry;
    geometry.batch = 2;
    geometry.channels = 3;
    geometry.height = geometry.width = 6;
    geometry.filters = 4;
    geometry.kernel_h = geometry.kernel_w = 3;
    geometry.stride_h = geometry.stride_w = 2;
    geometry.pad_h = geometry.pad_w = 1;
    return geometry;
  }();
  std::size_t oh = 3, ow = 3;
  std::vector<double> x = halves(2 * 3 * 6 * 6, 5), w = halves(4 * 3 * 3 * 3, 6);
  std::vector<double> dy = halves(2 * 4 * 3 * 3, 7);
  std::vector<float> wf{w.begin(), w.end()};

  double x_at(std::size_t n, std::size_t c, long h, long v) const {
    if (h < 0 || v < 0 || h >= 6 || v >= 6) return 0;
    return x[((n * 3 + c) * 6 + static_cast<std::size_t>(h)) * 6 + static_cast<std::size_t>(v)];
  }
  double w_at(std::size_t o, std::size_t c, std::size_t r, std::size_t s) const {
    return w[((o * 3 + c) * 3 + r) * 3 + s];
  }
  double dy_at(std::size_t n, std::size_t o, std::size_t i, std::size_t j) const {
    return dy[((n * 4 + o) * oh + i) * ow + j];
  }
  // The input row or column a tap reads: out * 2 - 1 + tap.
  static long at(std::size_t out, std::size_t tap) { return static_cast<long>(out * 2 + tap) - 1; }
};

TEST(RecipeOps, AConvolutionsPassesAreTheExactProductsThroughBf16) {
  const Conv c;
  RecipeOps ops(*quant::find_recipe("fp8-block"), "exact", 1);
  const auto w = ops.parameter(c.wf);
  const auto x = ops.constant(c.x);
  const auto y = ops.conv2d(x, w, c.g);
  EXPECT_EQ(std::string_view(y.format.name), "bf16");
  ASSERT_EQ(y.values.size(), 2u * 4 * 3 * 3);
  for (std::size_t n = 0; n < 2; ++n) {
    for (std::size_t o = 0; o < 4; ++o) {
      for (std::size_t i = 0; i < 3; ++i) {
        for (std::size_t j = 0; j < 3; ++j) {
          double exact = 0;
          for (std::size_t ch = 0; ch < 3; ++ch) {
            for (std::size_t r = 0; r < 3; ++r) {
              for (std::size_t s = 0; s < 3; ++s) {
                exact += c.x_at(n, ch, Conv::at(i, r), Conv::at(j, s)) * c.w_at(o, ch, r, s);
              }
            }
          }
          EXPECT_EQ(y.values[((n * 4 + o) * 3 + i) * 3 + j], bf16(exact))
              << "y[" << n << "][" << o << "][" << i << "][" << j << "]";
        }
      }
    }
  }

  const auto g = ops.conv2d_backward(x, w, EmulatedTensor{c.dy, formats::bf16}, c.g, true);
  ASSERT_EQ(g.dx.values.size(), c.x.size());
  ASSERT_EQ(g.dw.values.size(), c.w.size());
  EXPECT_EQ(std::string_view(g.dx.format.name), "fp32");  // x's format
  std::vector<double> dx(c.x.size(), 0.0), dw(c.w.size(), 0.0);
  for (std::size_t n = 0; n < 2; ++n) {
    for (std::size_t o = 0; o < 4; ++o) {
      for (std::size_t i = 0; i < 3; ++i) {
        for (std::size_t j = 0; j < 3; ++j) {
          for (std::size_t ch = 0; ch < 3; ++ch) {
            for (std::size_t r = 0; r < 3; ++r) {
              for (std::size_t s = 0; s < 3; ++s) {
                const long h = Conv::at(i, r), v = Conv::at(j, s);
                dw[((o * 3 + ch) * 3 + r) * 3 + s] += c.dy_at(n, o, i, j) * c.x_at(n, ch, h, v);
                if (h < 0 || v < 0 || h >= 6 || v >= 6) continue;
                dx[((n * 3 + ch) * 6 + static_cast<std::size_t>(h)) * 6 +
                   static_cast<std::size_t>(v)] += c.dy_at(n, o, i, j) * c.w_at(o, ch, r, s);
              }
            }
          }
        }
      }
    }
  }
  for (std::size_t l = 0; l < dx.size(); ++l) EXPECT_EQ(g.dx.values[l], bf16(dx[l])) << "dx " << l;
  for (std::size_t l = 0; l < dw.size(); ++l) EXPECT_EQ(g.dw.values[l], bf16(dw[l])) << "dw " << l;
  // fprop (x, w), dgrad (dy, w), wgrad (dy, x): the lowered operands' real elements.
  const auto records = ops.finish_step();
  ASSERT_EQ(records.size(), 6u);
  for (const auto& r : records) {
    EXPECT_EQ(r.parameter, 0u);
    const std::size_t elements =
        r.gemm == quant::Gemm::fprop   ? (r.role == quant::Role::x ? 18u * 27 : 4u * 27)
        : r.gemm == quant::Gemm::dgrad ? (r.role == quant::Role::dy ? 72u * 36 : 3u * 36)
                                       : (r.role == quant::Role::dy ? 4u * 18 : 27u * 18);
    EXPECT_EQ(r.elements, elements) << quant::gemm_name(r.gemm) << " " << quant::role_name(r.role);
  }
}

TEST(RecipeOps, AKeptConvolutionRunsAsAmpBf16) {
  const Conv c;
  RecipeOps kept(*quant::find_recipe("nvfp4"), "blackwell", 1, {0});
  EmulatedOps bf16(*policy::find_builtin("amp-bf16"));
  RecipeOps quantized(*quant::find_recipe("nvfp4"), "blackwell", 1);
  const auto run = [&](auto& ops) {
    const auto w = ops.parameter(c.wf);
    const auto x = ops.constant(c.x);
    const auto y = ops.conv2d(x, w, c.g);
    const auto g = ops.conv2d_backward(x, w, EmulatedTensor{c.dy, formats::bf16}, c.g, true);
    return std::make_tuple(y.values, g.dx.values, g.dw.values);
  };
  EXPECT_EQ(run(kept), run(bf16));
  EXPECT_TRUE(kept.finish_step().empty());
  EXPECT_NE(run(quantized), run(bf16));
  EXPECT_EQ(quantized.finish_step().size(), 6u);
}

TEST(RecipeOps, RefusesAGroupedConvolution) {
  Conv c;
  c.g.channels = 4;
  c.g.groups = 2;
  c.x = halves(2 * 4 * 6 * 6, 5);
  c.wf.assign(4 * 2 * 3 * 3, 0.5f);
  RecipeOps ops(*quant::find_recipe("fp8-current"), "hopper", 1);
  const auto w = ops.parameter(c.wf);
  try {
    (void)ops.conv2d(ops.constant(c.x), w, c.g);
    FAIL() << "a grouped convolution was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("grouped convolution (groups = 2)"), std::string::npos)
        << e.what();
  }
}

TEST(RecipeOps, WeightsMustBeParametersOfThePass) {
  const Layer l;
  RecipeOps ops(*quant::find_recipe("fp8-current"), "hopper", 1);
  const auto b = ops.parameter(l.bf);
  const auto not_a_parameter = ops.constant(l.w);
  EXPECT_THROW(ops.linear(ops.constant(l.x), not_a_parameter, b, l.rows, l.in, l.out),
               std::logic_error);
}

TEST(RecipeOps, RefusesAnArchitectureWithoutTheRecipesMma) {
  try {
    RecipeOps(*quant::find_recipe("mxfp6"), "hopper", 1);
    FAIL() << "mxfp6 on hopper was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("mxfp6 on hopper"), std::string::npos) << e.what();
  }
  EXPECT_THROW(RecipeOps(*quant::find_recipe("fp8-delayed"), "pascal", 1), std::invalid_argument);
  EXPECT_NO_THROW(RecipeOps(*quant::find_recipe("mxfp6"), "exact", 1));
}

// A device (RecipeGemmDevice, cuBLASLt on the GPU) stands in here: it multiplies on the same
// Blackwell model, so that only the path differs. Padding K to the model's instruction K leaves
// every element's stochastic draw where it was, and padding the rows to 16 adds rows of zeros:
// the device's run equals the model's bit for bit, results and records, and the device sees
// each GEMM once, padded as it asked.
TEST(RecipeOps, ADeviceGetsTheModelsOperandsPaddedAsItAsks) {
  const quant::Recipe recipe = *quant::find_recipe("nvfp4");
  std::vector<quant::RecipeMma> mma;
  std::size_t k_multiple = 1;
  for (const quant::Gemm g : {quant::Gemm::fprop, quant::Gemm::dgrad, quant::Gemm::wgrad}) {
    mma.push_back(*quant::recipe_mma("blackwell", recipe, g).mma);
    k_multiple = std::lcm(k_multiple, quant::instruction_k(mma.back()));
  }
  std::vector<std::tuple<quant::Gemm, std::size_t, std::size_t, std::size_t>> seen;
  RecipeGemmDevice device;
  device.name = "stand-in";
  device.rows_multiple = 16;
  device.k_multiple = k_multiple;
  device.multiply = [&](quant::Gemm g, const quant::Quantized& a, const quant::Quantized& b) {
    seen.emplace_back(g, a.rows, b.rows, a.cols);
    return quant::recipe_product(a, b, mma[static_cast<std::size_t>(g)], recipe.promote_interval);
  };
  const auto run = [&](auto&& ops) {
    const Layer l;
    const Conv c;
    const auto w = ops.parameter(l.wf);
    const auto b = ops.parameter(l.bf);
    const auto cw = ops.parameter(c.wf);
    const auto x = ops.constant(l.x);
    const auto y = ops.linear(x, w, b, l.rows, l.in, l.out);
    const auto g = ops.linear_backward(x, w, b, y, l.rows, l.in, l.out, true);
    const auto cx = ops.constant(c.x);
    const auto cy = ops.conv2d(cx, cw, c.g);
    const auto cg = ops.conv2d_backward(cx, cw, cy, c.g, true);
    std::vector<std::tuple<std::size_t, quant::Gemm, quant::Role, double, std::optional<double>,
                           std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t>>
        records;
    for (const auto& r : ops.finish_step()) {
      records.emplace_back(r.parameter, r.gemm, r.role, r.amax, r.scale, r.elements, r.saturated,
                           r.flushed, r.subnormal);
    }
    return std::make_tuple(y.values, g.dx.values, g.dw.values, g.db.values, cy.values, cg.dx.values,
                           cg.dw.values, records);
  };
  const auto on_model = run(RecipeOps(recipe, "blackwell", 7));
  const auto on_device = run(RecipeOps(recipe, device, 7));
  EXPECT_EQ(on_device, on_model);
  EXPECT_FALSE(std::get<7>(on_device).empty());
  // fprop, dgrad and wgrad of the linear layer, then of each convolution pass's GEMMs.
  ASSERT_GE(seen.size(), 6u);
  EXPECT_EQ(std::get<0>(seen[0]), quant::Gemm::fprop);
  EXPECT_EQ(std::get<0>(seen[1]), quant::Gemm::dgrad);
  EXPECT_EQ(std::get<0>(seen[2]), quant::Gemm::wgrad);
  for (const auto& [g, m, n, k] : seen) {
    EXPECT_EQ(m % 16, 0u) << quant::gemm_name(g);
    EXPECT_EQ(n % 16, 0u) << quant::gemm_name(g);
    EXPECT_EQ(k % k_multiple, 0u) << quant::gemm_name(g);
  }
  // The linear layer's fprop: 3 x 40 by 40 x 5 asked as 16 x 64 by 16 x 64 (K 40 to 64).
  EXPECT_EQ(seen[0], std::make_tuple(quant::Gemm::fprop, std::size_t{16}, std::size_t{16},
                                     std::lcm(std::size_t{64}, k_multiple)));
}

// A device whose product is not the padded shape's is a defect, not a result.
TEST(RecipeOps, ADevicesProductOfTheWrongSizeIsAnError) {
  const Layer l;
  RecipeGemmDevice device;
  device.name = "short";
  device.multiply = [](quant::Gemm, const quant::Quantized& a, const quant::Quantized&) {
    return std::vector<double>(a.rows);
  };
  RecipeOps ops(*quant::find_recipe("fp8-current"), device, 1);
  const auto w = ops.parameter(l.wf);
  const auto b = ops.parameter(l.bf);
  EXPECT_THROW(ops.linear(ops.constant(l.x), w, b, l.rows, l.in, l.out), std::logic_error);
  EXPECT_THROW(RecipeOps(*quant::find_recipe("fp8-current"), RecipeGemmDevice{}, 1),
               std::logic_error);
}

TrainConfig short_run(std::vector<std::string> recipes, std::size_t steps) {
  TrainConfig c;
  c.model = "mlp";
  c.policies = {*policy::find_builtin("amp-bf16")};
  for (const auto& r : recipes) c.recipes.push_back(*quant::find_recipe(r));
  c.steps = steps;
  c.batch = 32;
  c.reference_bits = 64;
  return c;
}

// TE's DelayedScaling, replayed from the run's own records: step 0 quantizes with scale 1; step t
// with fl32(fmt_max / amax) for the largest amax of steps 0..t-1 (the history of 1024 holds them
// all), one state per layer and role whichever GEMM the tensor enters.
TEST(RecipeTraining, DelayedScalesFollowTheAmaxHistory) {
  const Dataset data = make_clusters(5, 512);
  const TrainResult r = train(short_run({"fp8-delayed"}, 6), data, {});
  ASSERT_EQ(r.runs.size(), 2u);
  const RunResult& run = r.runs[1];
  EXPECT_EQ(run.policy, "fp8-delayed");
  EXPECT_EQ(run.recipe_arch, "hopper");
  std::map<std::pair<std::size_t, quant::Role>, float> history;  // largest amax so far
  std::size_t checked = 0;
  for (const StepRecord& step : run.steps) {
    ASSERT_EQ(step.scaled.size(), 10u) << "w1: fprop x, w, wgrad x, dy; w2: all six";
    std::map<std::pair<std::size_t, quant::Role>, float> seen;
    for (const ScaledTensorRecord& t : step.scaled) {
      const auto key = std::make_pair(t.parameter, t.role);
      const float fmt_max = t.role == quant::Role::dy ? 57344.0f : 448.0f;  // HYBRID: e5m2 dy
      const auto before = history.find(key);
      const float expected = before == history.end() ? 1.0f : fmt_max / before->second;
      ASSERT_TRUE(t.scale.has_value());
      EXPECT_EQ(*t.scale, static_cast<double>(expected))
          << "step " << step.step << " " << r.parameters[t.parameter] << " "
          << quant::gemm_name(t.gemm) << " " << quant::role_name(t.role);
      ++checked;
      seen[key] = std::max(seen[key], static_cast<float>(t.amax));
    }
    for (const auto& [key, amax] : seen) history[key] = std::max(history[key], amax);
  }
  EXPECT_EQ(checked, 60u);
}

TEST(RecipeTraining, EveryBuiltinRecipeTrainsAndIsNotAmpBf16) {
  const Dataset data = make_clusters(5, 512);
  std::vector<std::string> names;
  for (const quant::Recipe& recipe : quant::builtin_recipes()) names.push_back(recipe.name);
  const TrainResult r = train(short_run(names, 2), data, {});
  ASSERT_EQ(r.runs.size(), 1 + names.size());
  const RunResult& bf16_run = r.runs[0];
  for (std::size_t i = 0; i < names.size(); ++i) {
    const RunResult& run = r.runs[1 + i];
    SCOPED_TRACE(run.policy);
    EXPECT_EQ(run.policy, names[i]);
    EXPECT_EQ(run.gradient_format, "bf16");
    EXPECT_FALSE(run.scaler);
    EXPECT_FALSE(run.recipe_arch.empty());
    for (const StepRecord& step : run.steps) {
      EXPECT_TRUE(std::isfinite(step.loss));
      EXPECT_EQ(step.scaled.size(), 10u);
      for (const ScaledTensorRecord& t : step.scaled) EXPECT_GT(t.elements, 0u);
    }
    // Quantized forward passes change the loss of the second step (the first, on the same
    // weights, too).
    EXPECT_NE(run.steps[1].loss, bf16_run.steps[1].loss);
  }
}

TEST(RecipeTraining, TheLayersAreTheLinearAndConvolutionWeights) {
  EXPECT_EQ(gemm_layers("mlp"), (std::vector<std::string>{"w1", "w2"}));
  EXPECT_EQ(gemm_layers("cnn"), (std::vector<std::string>{"conv1.w", "conv2.w", "fc.w"}));
  EXPECT_EQ(gemm_layers("transformer"),
            (std::vector<std::string>{"embed.w", "q.w", "k.w", "v.w", "out.w", "mlp1.w", "mlp2.w",
                                      "head.w"}));
  EXPECT_THROW(gemm_layers("rnn"), std::invalid_argument);
}

// The CNN's convolutions are quantized like its classifier: per step, conv1's fprop and wgrad
// (its dx is not needed), conv2's and fc's three GEMMs, each of their two operands.
TEST(RecipeTraining, TheCnnsConvolutionsAreQuantized) {
  TrainConfig config = short_run({"fp8-current"}, 2);
  config.model = "cnn";
  config.batch = 8;
  const TrainResult r = train(config, default_dataset("cnn", 1), {});
  ASSERT_EQ(r.runs.size(), 2u);
  for (const StepRecord& step : r.runs[1].steps) {
    std::map<std::string, std::size_t> per_layer;
    for (const ScaledTensorRecord& t : step.scaled) {
      ++per_layer[r.parameters[t.parameter]];
      EXPECT_GT(t.elements, 0u);
      EXPECT_GT(t.amax, 0.0) << r.parameters[t.parameter];
    }
    EXPECT_EQ(per_layer,
              (std::map<std::string, std::size_t>{{"conv1.w", 4}, {"conv2.w", 6}, {"fc.w", 6}}));
  }
}

// --sensitivity: the recipe once more per linear layer, that layer in bf16 (no scaled tensor of
// it), ranked by the share of the recipe's mean loss error it removes, recomputed here from the
// runs' own step records.
TEST(RecipeTraining, SensitivityRanksTheLayersByTheLossErrorTheyRemove) {
  const Dataset data = make_clusters(5, 512);
  TrainConfig config = short_run({"nvfp4"}, 4);
  config.sensitivity = true;
  const TrainResult r = train(config, data, make_clusters(6, 64));
  ASSERT_EQ(r.runs.size(), 4u);
  EXPECT_EQ(r.runs[1].policy, "nvfp4");
  EXPECT_EQ(r.runs[2].policy, "nvfp4+bf16[w1]");
  EXPECT_EQ(r.runs[3].policy, "nvfp4+bf16[w2]");
  const auto mean_error = [](const RunResult& run) {
    double sum = 0;
    for (const StepRecord& s : run.steps) sum += *s.loss_error;
    return sum / static_cast<double>(run.steps.size());
  };
  for (std::size_t i = 2; i < 4; ++i) {
    EXPECT_EQ(r.runs[i].recipe, "nvfp4");
    ASSERT_EQ(r.runs[i].kept_bf16.size(), 1u);
    const std::size_t kept = i == 2 ? 0 : 4;  // w1, w2 in parameters() order
    for (const StepRecord& s : r.runs[i].steps) {
      for (const ScaledTensorRecord& t : s.scaled) EXPECT_NE(t.parameter, kept);
      EXPECT_FALSE(s.scaled.empty());
    }
  }
  ASSERT_EQ(r.sensitivity.size(), 1u);
  const RecipeSensitivity& s = r.sensitivity[0];
  EXPECT_EQ(s.run, "nvfp4");
  EXPECT_DOUBLE_EQ(s.mean_loss_error, mean_error(r.runs[1]));
  ASSERT_EQ(s.layers.size(), 2u);
  EXPECT_GE(s.layers[0].removed, s.layers[1].removed);
  for (const LayerSensitivity& l : s.layers) {
    const RunResult& run = r.runs[l.parameter == "w1" ? 2 : 3];
    EXPECT_EQ(l.run, run.policy);
    EXPECT_DOUBLE_EQ(l.mean_loss_error, mean_error(run));
    EXPECT_DOUBLE_EQ(l.removed, (s.mean_loss_error - l.mean_loss_error) / s.mean_loss_error);
  }
}

// --sensitivity-seeds: each seed's shares are those of a run at that seed alone, the ranking is
// by their mean, and the runs are the first seed's.
TEST(RecipeTraining, SensitivityOverSeedsAveragesTheRunsAtEachSeed) {
  const Dataset data = make_clusters(5, 512);
  const Dataset eval = make_clusters(6, 64);
  TrainConfig config = short_run({"nvfp4"}, 3);
  config.sensitivity = true;
  config.seed = 4;
  const TrainResult at4 = train(config, data, eval);
  config.seed = 5;
  const TrainResult at5 = train(config, data, eval);
  config.seed = 4;
  config.sensitivity_seeds = 2;
  EXPECT_EQ(training_steps(config), 6u);
  std::vector<std::size_t> ticks;
  const TrainResult both = train(config, data, eval, [&](std::size_t s) { ticks.push_back(s); });
  EXPECT_EQ(ticks, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5}));

  ASSERT_EQ(both.runs.size(), at4.runs.size());
  for (std::size_t i = 0; i < both.runs.size(); ++i) {
    EXPECT_EQ(both.runs[i].eval_loss, at4.runs[i].eval_loss) << both.runs[i].policy;
  }
  ASSERT_EQ(both.sensitivity.size(), 1u);
  const RecipeSensitivity& s = both.sensitivity[0];
  const RecipeSensitivity& s4 = at4.sensitivity[0];
  const RecipeSensitivity& s5 = at5.sensitivity[0];
  EXPECT_EQ(s.seeds, (std::vector<std::uint64_t>{4, 5}));
  EXPECT_EQ(s4.seeds, (std::vector<std::uint64_t>{4}));
  EXPECT_EQ(s.mean_loss_error_by_seed,
            (std::vector<double>{s4.mean_loss_error, s5.mean_loss_error}));
  EXPECT_DOUBLE_EQ(s.mean_loss_error, (s4.mean_loss_error + s5.mean_loss_error) / 2);
  ASSERT_EQ(s.layers.size(), 2u);
  EXPECT_GE(s.layers[0].removed, s.layers[1].removed);
  for (const LayerSensitivity& l : s.layers) {
    const auto at = [&](const RecipeSensitivity& one) {
      for (const LayerSensitivity& m : one.layers) {
        if (m.parameter == l.parameter) return m;
      }
      ADD_FAILURE() << l.parameter << " is not ranked at seed " << one.seeds[0];
      return LayerSensitivity{};
    };
    const LayerSensitivity l4 = at(s4), l5 = at(s5);
    EXPECT_EQ(l.removed_by_seed, (std::vector<double>{l4.removed, l5.removed})) << l.parameter;
    EXPECT_DOUBLE_EQ(l.removed, (l4.removed + l5.removed) / 2);
    EXPECT_DOUBLE_EQ(l.mean_loss_error, (l4.mean_loss_error + l5.mean_loss_error) / 2);
    EXPECT_DOUBLE_EQ(l.eval_loss_error, (l4.eval_loss_error + l5.eval_loss_error) / 2);
  }
  // The two seeds train differently: the repeat is not the first seed again.
  EXPECT_NE(s4.mean_loss_error, s5.mean_loss_error);
}

// A recipe run of `backend` keeping `kept`, its steps' loss errors `errors`, its eval loss `eval`.
RunResult recipe_run_of(const std::string& backend, std::vector<std::string> kept,
                        const std::vector<double>& errors, double eval) {
  RunResult r;
  r.recipe = "nvfp4";
  r.policy = kept.empty() ? "nvfp4" : "nvfp4+bf16[" + kept.back() + "]";
  r.backend = backend;
  r.kept_bf16 = std::move(kept);
  for (std::size_t i = 0; i < errors.size(); ++i) {
    StepRecord step;
    step.step = i;
    step.loss_error = errors[i];
    r.steps.push_back(step);
  }
  r.eval_loss = eval;
  return r;
}

// --sensitivity on both backends (--backend all): one ranking per backend, each from its own
// runs only. The two backends' numbers differ here, and rank the layers in opposite orders, so
// that a ranking that took the other backend's runs would show.
TEST(RecipeTraining, SensitivityRanksEachBackendFromItsOwnRuns) {
  TrainConfig config = short_run({"nvfp4"}, 2);
  config.seed = 9;
  RunResult bf16;
  bf16.policy = "amp-bf16";
  bf16.backend = "cpu";
  const std::vector<RunResult> runs = {
      bf16,
      recipe_run_of("cpu", {}, {0.2, 0.4}, 1.3),
      recipe_run_of("cuda", {}, {0.1, 0.3}, 1.2),
      recipe_run_of("cpu", {"w1"}, {0.1, 0.1}, 1.1),
      recipe_run_of("cpu", {"w2"}, {0.2, 0.2}, 1.15),
      recipe_run_of("cuda", {"w1"}, {0.2, 0.2}, 1.12),
      recipe_run_of("cuda", {"w2"}, {0.05, 0.05}, 1.05),
  };
  const std::vector<RecipeSensitivity> ranked = steps::rank_sensitivity(config, runs, 1.0);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].backend, "cpu");
  EXPECT_EQ(ranked[1].backend, "cuda");
  for (const RecipeSensitivity& s : ranked) {
    SCOPED_TRACE(s.backend);
    EXPECT_EQ(s.recipe, "nvfp4");
    EXPECT_EQ(s.run, "nvfp4");
    EXPECT_EQ(s.seeds, (std::vector<std::uint64_t>{9}));
    ASSERT_EQ(s.layers.size(), 2u);
  }
  // cpu: the recipe 0.3, w1 0.1 (removes 2/3), w2 0.2 (1/3); eval 1.3 against 1.0.
  EXPECT_DOUBLE_EQ(ranked[0].mean_loss_error, 0.3);
  EXPECT_DOUBLE_EQ(ranked[0].eval_loss_error, std::fabs(1.3 - 1.0));
  EXPECT_EQ(ranked[0].layers[0].parameter, "w1");
  EXPECT_DOUBLE_EQ(ranked[0].layers[0].removed, (0.3 - 0.1) / 0.3);
  EXPECT_EQ(ranked[0].layers[1].parameter, "w2");
  EXPECT_DOUBLE_EQ(ranked[0].layers[1].removed, (0.3 - 0.2) / 0.3);
  // cuda: the recipe 0.2, w2 0.05 (removes 3/4), w1 0.2 (none).
  EXPECT_DOUBLE_EQ(ranked[1].mean_loss_error, 0.2);
  EXPECT_EQ(ranked[1].layers[0].parameter, "w2");
  EXPECT_EQ(ranked[1].layers[0].run, "nvfp4+bf16[w2]");
  EXPECT_DOUBLE_EQ(ranked[1].layers[0].removed, (0.2 - 0.05) / 0.2);
  EXPECT_EQ(ranked[1].layers[1].parameter, "w1");
  EXPECT_DOUBLE_EQ(ranked[1].layers[1].removed, 0.0);
}

// Over several seeds on both backends, each backend's ranking takes the repeats' ranking of the
// same backend: a repeat's result lists the device's after the CPU's, with other numbers.
TEST(RecipeTraining, SensitivityOverSeedsKeepsTheBackendsApart) {
  TrainConfig config = short_run({"nvfp4"}, 2);
  config.sensitivity = true;
  config.sensitivity_seeds = 2;
  config.seed = 20;
  // Recipe error: seed + 10 on cpu, seed + 30 on cuda (over 100); w1 removes 0.1 / 0.3, w2 0.2 /
  // 0.4, plus a hundredth of the seed.
  const auto error = [](std::uint64_t seed, bool cuda) {
    return static_cast<double>(seed + (cuda ? 30 : 10)) / 100;
  };
  const auto removed = [](std::uint64_t seed, bool cuda, bool w2) {
    return (w2 ? (cuda ? 0.4 : 0.2) : (cuda ? 0.3 : 0.1)) + static_cast<double>(seed) / 100;
  };
  std::vector<std::uint64_t> seeds_run;
  const TrainOnce once = [&](const TrainConfig& c, const std::function<void(std::size_t)>&) {
    seeds_run.push_back(c.seed);
    TrainResult r;
    r.config = c;
    for (const bool cuda : {false, true}) {
      RecipeSensitivity s;
      s.recipe = "nvfp4";
      s.run = "nvfp4";
      s.backend = cuda ? "cuda" : "cpu";
      s.mean_loss_error = error(c.seed, cuda);
      s.eval_loss_error = 2 * error(c.seed, cuda);
      s.seeds = {c.seed};
      s.mean_loss_error_by_seed = {s.mean_loss_error};
      for (const bool w2 : {false, true}) {
        LayerSensitivity l;
        l.parameter = w2 ? "w2" : "w1";
        l.removed = removed(c.seed, cuda, w2);
        l.removed_by_seed = {l.removed};
        s.layers.push_back(l);
      }
      r.sensitivity.push_back(s);
    }
    return r;
  };
  const TrainResult both = train_over_seeds(config, {}, once);
  EXPECT_EQ(seeds_run, (std::vector<std::uint64_t>{20, 21}));
  ASSERT_EQ(both.sensitivity.size(), 2u);
  for (const bool cuda : {false, true}) {
    const RecipeSensitivity& s = both.sensitivity[cuda ? 1 : 0];
    SCOPED_TRACE(s.backend);
    EXPECT_EQ(s.backend, cuda ? "cuda" : "cpu");
    EXPECT_EQ(s.seeds, (std::vector<std::uint64_t>{20, 21}));
    EXPECT_EQ(s.mean_loss_error_by_seed, (std::vector<double>{error(20, cuda), error(21, cuda)}));
    EXPECT_DOUBLE_EQ(s.mean_loss_error, (error(20, cuda) + error(21, cuda)) / 2);
    ASSERT_EQ(s.layers.size(), 2u);
    EXPECT_EQ(s.layers[0].parameter, "w2");  // w2 removes more on both
    for (const LayerSensitivity& l : s.layers) {
      const bool w2 = l.parameter == "w2";
      EXPECT_EQ(l.removed_by_seed,
                (std::vector<double>{removed(20, cuda, w2), removed(21, cuda, w2)}))
          << l.parameter;
    }
  }
}

}  // namespace
}  // namespace ampbench::train
