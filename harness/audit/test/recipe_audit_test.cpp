// The audit under a recipe (recipe_audit.hpp): closed forms on constant inputs (fp8-current's
// quantization error is |(448 fl32(1/448))^2 - 1|, MX's is zero), the a-priori bound of exact
// accumulation (half an ulp of binary32), Hopper's FP8 accumulation with and without promotion,
// the shapes each GEMM reads, a convolution's passes (a 1x1 one is linear, number for number), a
// batch's (one matrix is linear; the operands are quantized over the batch), and the refusals,
// each naming what is wrong.
#include "harness/audit/recipe_audit.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "harness/inputs/distributions.hpp"
#include "harness/ops/catalog.hpp"
#include "harness/quant/recipe_gemm.hpp"

namespace ampbench::audit {
namespace {

RecipeCase case_of(const char* recipe, std::size_t m, std::size_t n, std::size_t k,
                   const char* arch, const char* dist = "normal") {
  RecipeCase c;
  c.recipe = *quant::find_recipe(recipe);
  c.m = m;
  c.n = n;
  c.k = k;
  c.arch = arch;
  c.distribution = dist;
  return c;
}

TEST(RecipeAudit, Fp8CurrentOnOnesLosesWhatItsDecodeScaleLoses) {
  const RecipeCaseResult r = run_recipe_case(case_of("fp8-current", 4, 8, 64, "exact", "constant"));
  ASSERT_EQ(r.gemms.size(), 3u);
  // Every element is 448, its decode scale fl32(1/448): each product dequantizes to
  // (448 d)^2 instead of 1, whatever the GEMM.
  const double d = static_cast<float>(1.0 / 448);
  const double expected = std::abs(448 * d * 448 * d - 1);
  ASSERT_GT(expected, 0);
  for (const RecipeGemmResult& g : r.gemms) {
    SCOPED_TRACE(std::string(quant::gemm_name(g.gemm)));
    EXPECT_NEAR(g.quantization.max_normwise, expected, expected * 1e-9);
    EXPECT_NEAR(g.quantization.mean_normwise, expected, expected * 1e-9);
    // A is x in fprop (e4m3: 448 / 1), dy in the gradients' GEMMs (e5m2: 57344 / 1); both
    // decode scales lose the same: 57344 = 448 * 2^7.
    EXPECT_EQ(g.a.scale, g.gemm == quant::Gemm::fprop ? 448.0 : 57344.0);
    EXPECT_EQ(g.multiplied_on, "exact");
  }
  EXPECT_TRUE(r.pass());
}

TEST(RecipeAudit, Fp8DelayedInSteadyStateScalesAsCurrent) {
  const RecipeCaseResult r = run_recipe_case(case_of("fp8-delayed", 4, 8, 64, "exact", "constant"));
  // HYBRID: dy in e5m2, whose largest value is 57344.
  EXPECT_EQ(r.gemms.at(0).a.scale, 448.0);
  EXPECT_EQ(r.gemms.at(1).a.element, "e5m2");
  EXPECT_EQ(r.gemms.at(1).a.scale, 57344.0);
}

TEST(RecipeAudit, MxOnOnesIsExact) {
  for (const char* arch : {"exact", "hopper", "blackwell"}) {
    const RecipeCaseResult r = run_recipe_case(case_of("mxfp8", 32, 32, 64, arch, "constant"));
    for (const RecipeGemmResult& g : r.gemms) {
      SCOPED_TRACE(std::string(arch) + " " + std::string(quant::gemm_name(g.gemm)));
      EXPECT_EQ(g.quantization.max_normwise, 0.0);
      EXPECT_EQ(g.total.max_normwise, 0.0);
    }
  }
}

// Exact accumulation rounds the exact product of the dequantized operands once to binary32: each
// output is within 2^-24 of it, relative; a dequantized normal element exceeds its input by at
// most e4m3's half ulp (2^-4, relative) and a subnormal one by half its spacing (absolute, tiny
// against sum |a b| here): |error| / sum |a b| <= 2^-24 ((1 + 2^-4)^2 + that) <= 2^-24 * 1.25.
TEST(RecipeAudit, ExactAccumulationIsWithinHalfAnUlp) {
  for (const char* recipe : {"fp8-current", "fp8-block", "mxfp8"}) {
    const RecipeCaseResult r = run_recipe_case(case_of(recipe, 128, 128, 256, "exact"));
    for (const RecipeGemmResult& g : r.gemms) {
      SCOPED_TRACE(std::string(recipe) + " " + std::string(quant::gemm_name(g.gemm)));
      EXPECT_LE(g.accumulation.max_normwise, std::ldexp(1.25, -24));
      EXPECT_GT(g.quantization.max_normwise, 0.0);
      EXPECT_LT(g.quantization.frobenius, 0.1);
    }
  }
}

TEST(RecipeAudit, PromotionIntervalDecidesHoppersLongK) {
  RecipeCase c = case_of("fp8-current", 1, 1, 32768, "hopper", "constant");
  c.gemms = {quant::Gemm::fprop};
  c.promote_interval = 0;
  const RecipeCaseResult never = run_recipe_case(c);
  c.promote_interval = 128;
  const RecipeCaseResult every128 = run_recipe_case(c);
  EXPECT_EQ(never.gemms.at(0).chunks, 1u);
  EXPECT_EQ(every128.gemms.at(0).chunks, 256u);
  // Without promotion the e8m13 accumulator stops taking products once it is 2^17 times larger
  // than one: most of the 32768 are lost. Promoted, only the scales' rounding remains.
  EXPECT_GT(never.gemms.at(0).total.max_normwise, 0.3);
  EXPECT_LT(every128.gemms.at(0).total.max_normwise, 1e-5);
  // The quantization is the same either way.
  EXPECT_EQ(never.gemms.at(0).quantization.max_normwise,
            every128.gemms.at(0).quantization.max_normwise);
}

TEST(RecipeAudit, EachGemmReadsItsOperandsWithKAlongTheRow) {
  const RecipeCaseResult r = run_recipe_case(case_of("fp8-block", 128, 256, 384, "hopper"));
  ASSERT_EQ(r.gemms.size(), 3u);
  const auto& f = r.gemms[0];
  const auto& d = r.gemms[1];
  const auto& w = r.gemms[2];
  EXPECT_EQ(std::tie(f.rows, f.cols, f.k), std::make_tuple(128u, 256u, 384u));
  EXPECT_EQ(std::tie(d.rows, d.cols, d.k), std::make_tuple(128u, 384u, 256u));
  EXPECT_EQ(std::tie(w.rows, w.cols, w.k), std::make_tuple(256u, 384u, 128u));
  EXPECT_EQ(d.b.layout, "w^T");
  EXPECT_EQ(w.a.layout, "dy^T");
  EXPECT_EQ(w.b.layout, "x^T");
  EXPECT_EQ(f.b.tiles, "128x128");
  EXPECT_EQ(f.a.tiles, "1x128");
  EXPECT_EQ(f.multiplied_on, "hopper-e4m3");
  EXPECT_EQ(f.chunks, 3u);
}

RecipeCase conv_of(const char* recipe, const char* shape, const char* arch) {
  RecipeCase c = case_of(recipe, 0, 0, 0, arch);
  c.conv = ops::convolution::geometry(ops::convolution::parse("conv2d", shape));
  return c;
}

// A convolution's passes read the lowered operands: fprop im2col(x) (N OH OW x C R S) and the
// filters, dgrad the lowered dy (N H W x O R S) and the lowered filters, wgrad dy^T and im2col^T.
TEST(RecipeAudit, AConvolutionsPassesReadTheLoweredOperands) {
  const RecipeCaseResult r =
      run_recipe_case(conv_of("mxfp8", "2x32x8x8:64x3x3,pad=1,stride=2", "blackwell"));
  EXPECT_EQ(r.op, "conv2d");
  EXPECT_EQ(r.shape, "2x32x8x8:64x3x3,stride=2,pad=1");
  ASSERT_EQ(r.gemms.size(), 3u);
  const auto& f = r.gemms[0];
  const auto& d = r.gemms[1];
  const auto& w = r.gemms[2];
  EXPECT_EQ(std::tie(f.rows, f.cols, f.k), std::make_tuple(32u, 64u, 288u));  // 2 x 4 x 4 pixels
  EXPECT_EQ(std::tie(d.rows, d.cols, d.k), std::make_tuple(128u, 32u, 576u));
  EXPECT_EQ(std::tie(w.rows, w.cols, w.k), std::make_tuple(64u, 288u, 32u));
  EXPECT_EQ(f.a.layout, "im2col(x)");
  EXPECT_EQ(d.a.layout, "dy lowered");
  EXPECT_EQ(w.b.layout, "im2col(x)^T");
  EXPECT_EQ(f.a.events.elements, 32u * 288);
  EXPECT_EQ(d.a.events.elements, 128u * 576);
  EXPECT_EQ(w.b.events.elements, 288u * 32);
  EXPECT_TRUE(r.pass());
  EXPECT_GT(f.quantization.max_normwise, 0.0);
}

// A 1x1 convolution of 1x1 images is a linear layer (x N x C, w O x C, dy N x O, generated from
// the same streams): every figure of its three GEMMs is the linear case's.
TEST(RecipeAudit, AOneByOneConvolutionIsLinear) {
  for (const char* recipe : {"fp8-delayed", "nvfp4"}) {
    const RecipeCaseResult conv = run_recipe_case(conv_of(recipe, "64x128x1x1:32x1x1", "exact"));
    const RecipeCaseResult linear = run_recipe_case(case_of(recipe, 64, 32, 128, "exact"));
    ASSERT_EQ(conv.gemms.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      SCOPED_TRACE(std::string(recipe) + " " + std::string(quant::gemm_name(conv.gemms[i].gemm)));
      const RecipeGemmResult& c = conv.gemms[i];
      const RecipeGemmResult& l = linear.gemms[i];
      EXPECT_EQ(std::tie(c.rows, c.cols, c.k), std::tie(l.rows, l.cols, l.k));
      EXPECT_EQ(c.total.max_normwise, l.total.max_normwise);
      EXPECT_EQ(c.total.frobenius, l.total.frobenius);
      EXPECT_EQ(c.quantization.mean_normwise, l.quantization.mean_normwise);
      EXPECT_EQ(c.a.events.flushed + c.b.events.flushed, l.a.events.flushed + l.b.events.flushed);
      EXPECT_EQ(c.a.scale, l.a.scale);
      EXPECT_GT(c.total.max_normwise, 0.0);
    }
  }
}

RecipeCase bmm_of(const char* recipe, const char* shape, const char* arch) {
  RecipeCase c = case_of(recipe, 0, 0, 0, arch);
  set_shape(c, "bmm", ops::parse_shape(*ops::find_op("bmm"), shape));
  return c;
}

// A batch of one matrix is linear, figure for figure.
TEST(RecipeAudit, ABatchOfOneIsLinear) {
  for (const char* recipe : {"fp8-current", "fp8-block", "nvfp4"}) {
    const RecipeCaseResult bmm = run_recipe_case(bmm_of(recipe, "1x128x128x128", "exact"));
    const RecipeCaseResult linear = run_recipe_case(case_of(recipe, 128, 128, 128, "exact"));
    EXPECT_EQ(bmm.op, "bmm");
    EXPECT_EQ(bmm.shape, "1x128x128x128");
    ASSERT_EQ(bmm.gemms.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      SCOPED_TRACE(std::string(recipe) + " " + std::string(quant::gemm_name(bmm.gemms[i].gemm)));
      EXPECT_EQ(bmm.gemms[i].total.max_normwise, linear.gemms[i].total.max_normwise);
      EXPECT_EQ(bmm.gemms[i].total.frobenius, linear.gemms[i].total.frobenius);
      EXPECT_EQ(bmm.gemms[i].accumulation.mean_normwise,
                linear.gemms[i].accumulation.mean_normwise);
    }
  }
}

// Each operand is quantized once over the batch: fp8-current's per-tensor scale is
// fl32(448 / amax) of the whole stacked x, regenerated here from the same stream; the events
// count every matrix's elements; each matrix's products pair its own rows.
TEST(RecipeAudit, ABatchsOperandsAreQuantizedAsOneTensor) {
  const RecipeCaseResult r = run_recipe_case(bmm_of("fp8-current", "3x32x16x64", "hopper"));
  ASSERT_EQ(r.gemms.size(), 3u);
  const RecipeGemmResult& f = r.gemms[0];
  EXPECT_EQ(std::tie(f.rows, f.cols, f.k), std::make_tuple(32u, 16u, 64u));
  EXPECT_EQ(f.a.events.elements, 3u * 32 * 64);
  EXPECT_EQ(r.gemms[2].b.events.elements, 3u * 64 * 32);
  const std::size_t shape[] = {3 * 32, 64};
  const inputs::Generated x =
      inputs::generate("normal", shape, numeric::formats::fp32, inputs::operand_seed(1, 0));
  const std::vector<float> xf(x.tensor.data.begin(), x.tensor.data.end());
  EXPECT_EQ(f.a.scale, static_cast<double>(quant::current_scale(quant::amax(xf), 448, false)));
  EXPECT_TRUE(r.pass());
  // Products of the wrong matrices' rows would be errors of order one, not of e4m3's 2^-4.
  for (const RecipeGemmResult& g : r.gemms) EXPECT_LT(g.total.max_normwise, 0.1);
}

// A device (audit::RecipeDevice) stands in here for cuBLASLt: it returns the model's product with
// one output of each matrix moved by a binary32 ulp. The audit judges the device's product, counts
// the outputs where it differs from the model, says what ran, and calls it once per matrix of a
// batch with fast accumulation exactly when the case never promotes.
TEST(RecipeAudit, ADevicesProductIsJudgedAndComparedWithTheModel) {
  for (const std::size_t promote : {std::size_t{0}, std::size_t{128}}) {
    RecipeCase c = bmm_of("fp8-block", "2x128x128x128", "hopper");
    c.promote_interval = promote;
    const auto mma = quant::recipe_mma("hopper", c.recipe, quant::Gemm::fprop);
    ASSERT_TRUE(mma.mma.has_value());
    std::size_t calls = 0;
    const RecipeDevice device = [&](const quant::Recipe& recipe, quant::Gemm gemm,
                                    const quant::Quantized& a, const quant::Quantized& b,
                                    bool fast_accum, nlohmann::json* ran) {
      EXPECT_EQ(recipe.name, "fp8-block");
      EXPECT_EQ(gemm, quant::Gemm::fprop);
      EXPECT_EQ(a.rows, 128u);  // one matrix of the batch
      EXPECT_EQ(fast_accum, promote == 0);
      ++calls;
      (*ran)["library"] = "stand-in";
      (*ran)["call"] = calls;
      const quant::RecipeMma m = *quant::recipe_mma("hopper", c.recipe, quant::Gemm::fprop).mma;
      std::vector<double> p = quant::recipe_product(a, b, m, promote);
      p[5] = std::nextafter(static_cast<float>(p[5]), std::numeric_limits<float>::infinity());
      return p;
    };
    c.gemms = {quant::Gemm::fprop};
    const RecipeCaseResult on_device = run_recipe_case(c, device);
    const RecipeCaseResult on_model = run_recipe_case(c);
    EXPECT_EQ(calls, 2u);
    const RecipeGemmResult& g = on_device.gemms.at(0);
    EXPECT_EQ(g.multiplied_on, "stand-in");
    ASSERT_TRUE(g.vs_model.has_value());
    EXPECT_EQ(g.vs_model->model, mma.mma->name);
    EXPECT_EQ(g.vs_model->differing, 2u);
    EXPECT_EQ(g.vs_model->outputs, 2u * 128 * 128);
    EXPECT_GT(g.vs_model->max_normwise, 0);
    EXPECT_LT(g.vs_model->max_normwise, 1e-6);
    EXPECT_EQ(g.device.size(), 2u);
    EXPECT_EQ(g.device[1]["call"], 2);
    EXPECT_NE(g.total.max_normwise, 0);
    EXPECT_EQ(g.quantization.max_normwise, on_model.gemms[0].quantization.max_normwise);
    EXPECT_FALSE(on_model.gemms[0].vs_model.has_value());
    const nlohmann::json record = to_json(on_device);
    EXPECT_EQ(record["gemms"][0]["vs_model"]["differing"], 2);
    EXPECT_EQ(record["gemms"][0]["multiplied_on"], "stand-in");
    EXPECT_FALSE(to_json(on_model)["gemms"][0].contains("vs_model"));
  }
}

TEST(RecipeAudit, RefusalsNameWhatIsWrong) {
  const auto why = [](const RecipeCase& c) { return why_not_runnable(c).value_or("runnable"); };
  EXPECT_NE(why(case_of("fp8-block", 128, 128, 100, "hopper")).find("K = 100"), std::string::npos);
  // mxfp8's x^T in wgrad is tiled along m = 48.
  const std::string wgrad = why(case_of("mxfp8", 48, 64, 64, "exact"));
  EXPECT_NE(wgrad.find("wgrad"), std::string::npos) << wgrad;
  EXPECT_NE(wgrad.find("K = 48"), std::string::npos) << wgrad;
  EXPECT_NE(why(case_of("nvfp4", 32, 32, 32, "hopper")).find("e2m1"), std::string::npos);
  EXPECT_NE(why(case_of("fp8-current", 4, 4, 4, "pascal")).find("unknown architecture"),
            std::string::npos);
  EXPECT_NE(why(case_of("fp8-current", 0, 4, 4, "exact")).find("zero"), std::string::npos);
  EXPECT_EQ(why(case_of("nvfp4", 32, 32, 32, "exact")), "runnable");
  // Blackwell's kind::mxf4nvf4 takes K in steps of 64: dgrad's K = n = 32 is refused before any
  // work, not failed while computing.
  const std::string step = why(case_of("nvfp4", 64, 32, 64, "blackwell"));
  EXPECT_NE(step.find("the dgrad GEMM on blackwell kind::mxf4nvf4 (e2m1, ue4m3 per 16) takes K in "
                      "steps of 64: K = 32"),
            std::string::npos)
      << step;
  // A convolution's K is C R S for fprop: 3 x 3 x 3 = 27, which 1x128 tiles do not divide.
  const std::string im2col = why(conv_of("fp8-block", "2x3x8x8:128x3x3", "hopper"));
  EXPECT_NE(im2col.find("im2col(x)"), std::string::npos) << im2col;
  EXPECT_NE(im2col.find("K = 27"), std::string::npos) << im2col;
  EXPECT_NE(why(conv_of("fp8-current", "2x4x8x8:4x3x3,groups=2", "hopper")).find("grouped"),
            std::string::npos);
  // A stride-2 convolution whose fprop lowers to 9.4M elements, its dgrad (the lowered dy: 16 x 128
  // x 128 rows of 64 x 3 x 3) to 151M, beyond 2^27.
  const std::string big =
      why(conv_of("fp8-current", "16x16x128x128:64x3x3,stride=2,pad=1", "exact"));
  EXPECT_NE(big.find("the dgrad GEMM's lowered operands hold"), std::string::npos) << big;
  EXPECT_THROW(run_recipe_case(case_of("fp8-block", 128, 128, 100, "hopper")),
               std::invalid_argument);
}

TEST(RecipeAudit, RecordNamesEveryPart) {
  const nlohmann::json j = to_json(run_recipe_case(case_of("nvfp4", 32, 32, 32, "exact")));
  EXPECT_EQ(j["recipe"], "nvfp4");
  EXPECT_EQ(j["status"], "PASS");
  ASSERT_EQ(j["gemms"].size(), 3u);
  EXPECT_EQ(j["gemms"][2]["gemm"], "wgrad");
  EXPECT_EQ(j["gemms"][2]["operands"][0]["hadamard"], true);
  EXPECT_EQ(j["gemms"][0]["operands"][0]["hadamard"], false);
  for (const char* part : {"total", "quantization", "accumulation"}) {
    EXPECT_TRUE(j["gemms"][0][part].contains("max_normwise")) << part;
  }
}

}  // namespace
}  // namespace ampbench::audit
