// End-to-end tests of `ampbench audit --recipe`: the real binary's table and --json record on small
// shapes (the numbers themselves are the recipe audit's, tested in harness/audit/test), the choice
// of the architecture, and every kind of bad input, each with status 2 and a message naming it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli/test/run_ampbench.hpp"

namespace {

using ampbench::cli::test::ampbench;
using ampbench::cli::test::ampbench_with_record;
using ampbench::cli::test::Outcome;

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "audit_recipe_" + std::to_string(::getpid()) + "_" + name;
}

TEST(AuditRecipeCli, TableAndRecordOfEveryGemm) {
  const std::string path = temp("fp8.json");
  const Outcome run =
      ampbench("audit --recipe fp8-block,mxfp4,mxfp6 --shape 128x128x256 --json " + path);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("fp8-block  fprop  x w^T"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("hopper-e4m3"), std::string::npos) << run.out;
  // mxfp4 runs on Blackwell's block-scaled MMA; mxfp6 has no Tensor Core model: multiplied
  // exactly, and the table says why.
  EXPECT_NE(run.out.find("note: mxfp6: multiplied exactly (no Tensor Core takes e3m2 operands"),
            std::string::npos)
      << run.out;
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["schema"], "ampbench.audit-recipe/1");
  EXPECT_EQ(doc["complete"], true);
  EXPECT_EQ(doc["expected"], 3);
  ASSERT_EQ(doc["cases"].size(), 3u);
  const nlohmann::json& block = doc["cases"][0];
  EXPECT_EQ(block["recipe"], "fp8-block");
  EXPECT_EQ(block["shape"], "128x128x256");
  EXPECT_EQ(block["gemms"][0]["multiplied_on"], "hopper-e4m3");
  EXPECT_EQ(block["gemms"][0]["chunks"], 2);
  EXPECT_EQ(block["gemms"][1]["output"], nlohmann::json::array({128, 256}));
  EXPECT_EQ(doc["cases"][1]["gemms"][2]["multiplied_on"],
            "blackwell kind::mxf4 (e2m1, ue8m0 per 32)");
  EXPECT_EQ(doc["cases"][2]["gemms"][2]["multiplied_on"], "exact");
  std::remove(path.c_str());
}

TEST(AuditRecipeCli, PromotionIntervalAndGemmsAreChosen) {
  const std::string path = temp("promote.json");
  const Outcome run = ampbench(
      "audit --recipe fp8-current --shape 4x4x512 --gemm fprop --promote-interval 128 --json " +
      path);
  ASSERT_EQ(run.status, 0) << run.err;
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  ASSERT_EQ(doc["cases"][0]["gemms"].size(), 1u);
  EXPECT_EQ(doc["cases"][0]["gemms"][0]["promote_interval"], 128);
  EXPECT_EQ(doc["cases"][0]["gemms"][0]["chunks"], 4);
  std::remove(path.c_str());
}

// --op conv2d: the convolution's passes as the GEMMs they lower to, named in the record.
TEST(AuditRecipeCli, ConvolutionsRunAsTheirLoweredGemms) {
  const auto [run, text] = ampbench_with_record(
      "audit --recipe fp8-current,mxfp8 --op conv2d --shape 2x32x8x8:32x3x3,pad=1", "conv.json");
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("conv2d 2x32x8x8:32x3x3,pad=1 (x 2x32x8x8, w 32x32x3x3, dy 2x32x8x8; as "
                         "im2col GEMMs)"),
            std::string::npos)
      << run.out;
  for (const char* product :
       {"fprop  im2col(x) w^T ", "dgrad  dy w^T, lowered ", "wgrad  dy^T im2col(x) "}) {
    EXPECT_NE(run.out.find(product), std::string::npos) << product << "\n" << run.out;
  }
  const auto doc = nlohmann::json::parse(text);
  ASSERT_EQ(doc["cases"].size(), 2u);
  EXPECT_EQ(doc["cases"][1]["op"], "conv2d");
  EXPECT_EQ(doc["cases"][1]["shape"], "2x32x8x8:32x3x3,pad=1");
  EXPECT_EQ(doc["cases"][1]["gemms"][0]["k"], 288);
  EXPECT_EQ(doc["cases"][1]["gemms"][0]["operands"][0]["layout"], "im2col(x)");
}

// --op bmm: a batch of linear layers' GEMMs, each operand quantized over the batch.
TEST(AuditRecipeCli, BatchesRunEachMatrixsGemms) {
  const auto [run, text] =
      ampbench_with_record("audit --recipe nvfp4 --op bmm --shape 2x64x64x64", "bmm.json");
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("bmm 2x64x64x64 (x 2x64x64, w 2x64x64, dy 2x64x64; each operand "
                         "quantized over the batch)"),
            std::string::npos)
      << run.out;
  const auto doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["cases"][0]["op"], "bmm");
  EXPECT_EQ(doc["cases"][0]["shape"], "2x64x64x64");
  EXPECT_EQ(doc["cases"][0]["gemms"][0]["operands"][0]["events"]["elements"], 2 * 64 * 64);
}

TEST(AuditRecipeCli, BadInputIsNamed) {
  const struct {
    const char* args;
    const char* message;
  } cases[] = {
      {"--recipe fp8-block --policy fp16", "--policy does not go with --recipe"},
      {"--recipe fp8-block --mma hopper", "--mma does not go with --recipe"},
      {"--recipe fp8-block --backend all",
       "--backend: unknown backend 'all' (available: cpu, cuda)"},
      {"--recipe fp8-block --gemm-compute 32F", "--gemm-compute does not go with --recipe"},
      {"--recipe fp8-block --op gemm",
       "--op gemm: the audit under a recipe runs the three GEMMs (fprop, dgrad, wgrad) of linear, "
       "bmm or conv2d"},
      {"--recipe fp8-block --op conv2d --shape 2x3x8x8:128x3x3",
       "im2col(x) (72 x 27, K along the row): its 1x128 tiles do not divide K = 27"},
      {"--recipe fp8-block --op conv2d --shape 2x3x8x8", "--shape"},
      {"--recipe nosuch", "unknown recipe 'nosuch'"},
      {"--recipe fp8-block --shape 64x64x100", "its 1x128 tiles do not divide K = 100"},
      {"--recipe nvfp4 --shape 32x32x64", "takes K in steps of 64: K = 32 is not a multiple"},
      {"--recipe mxfp6 --arch blackwell", "no block-scaled Blackwell MMA is modelled for e3m2"},
      {"--recipe nvfp4 --arch hopper", "no Tensor Core MMA with e2m1 inputs"},
      {"--recipe fp8-block --arch pascal", "unknown architecture 'pascal'"},
      {"--recipe fp8-block --gemm fprop,bgrad", "--gemm: unknown GEMM 'bgrad'"},
      {"--op linear --arch hopper", "--arch goes with --recipe"},
      {"--op linear --promote-interval 32", "--promote-interval goes with --recipe"},
      {"--recipe fp8-block --shape 64x64", "--shape"},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench(std::string("audit ") + c.args);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << ": " << run.err;
    EXPECT_EQ(run.out, "") << c.args;
  }
}

// --backend cuda multiplies on the device's cuBLASLt: without a usable device (or in a build
// without CUDA) it is refused with exit 3 and the reason; with one, each GEMM's line is followed by
// its comparison with the model, or the recipe is refused (exit 2) where this device's cuBLASLt has
// no such GEMM.
TEST(AuditRecipeCli, BackendCudaRunsOnTheDeviceOrSaysWhyNot) {
  const Outcome run = ampbench("audit --recipe fp8-current --backend cuda --shape 64x64x128");
  if (run.status == 3) {  // no usable device, or a build without the CUDA backend
    EXPECT_TRUE(run.err.find("--backend cuda: no usable CUDA device") != std::string::npos ||
                run.err.find("--backend cuda: this build has no CUDA backend") != std::string::npos)
        << run.err;
    EXPECT_EQ(run.out, "");
    return;
  }
  if (run.status == 2) {
    EXPECT_NE(run.err.find("--backend cuda: fp8-current: the fprop GEMM"), std::string::npos)
        << run.err;
    return;
  }
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("outputs of 4096 differ from hopper-e4m3's"), std::string::npos)
      << run.out;
}

}  // namespace
