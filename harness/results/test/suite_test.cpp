// Suites: a valid one and its expansion, every error with its file, line and key, and shards.
#include "harness/results/suite.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <tuple>

namespace ampbench::results {
namespace {

Suite parse(const std::string& text) {
  return parse_suite(text, "suites/x.toml", "/nonexistent");
}

std::vector<std::string> keys(const std::vector<SuiteCase>& cases) {
  std::vector<std::string> k;
  for (const auto& c : cases) k.push_back(c.key);
  return k;
}

constexpr const char* kValid = R"(name = "tiny"
description = "two ops, two policies, one training run"
seed = 7
[[audit]]
ops = ["dot", "sum"]
shapes = ["16"]
policies = ["fp32"]
[[audit]]
ops = ["gemm"]
shapes = ["8x8x8", "4x4x4"]
policies = ["amp-fp16", "amp-bf16"]
dists = ["normal", "uniform"]
mma = "hopper"
samples = 3
[[train]]
model = "mlp"
policies = ["fp32", "amp-bf16"]
steps = 5
batch = 8
)";

TEST(Suite, ExpandsTheCrossProductInFileOrderWithStableKeys) {
  const Suite suite = parse(kValid);
  EXPECT_EQ(suite.name, "tiny");
  EXPECT_EQ(suite.seed, 7u);
  EXPECT_EQ(suite.tolerance, 0.1);  // the default
  EXPECT_EQ(parse("name = \"t\"\ntolerance = 0.25\n[[audit]]\nops = [\"dot\"]\n"
                  "policies = [\"fp32\"]\n")
                .tolerance,
            0.25);
  EXPECT_TRUE(suite.budgets_path.empty());
  const std::vector<std::string> expected{
      "audit/dot/16/fp32/normal/seed=7",
      "audit/sum/16/fp32/normal/seed=7",
      "audit/gemm/8x8x8/amp-fp16/normal/seed=7/mma=hopper/samples=3",
      "audit/gemm/8x8x8/amp-fp16/uniform/seed=7/mma=hopper/samples=3",
      "audit/gemm/8x8x8/amp-bf16/normal/seed=7/mma=hopper/samples=3",
      "audit/gemm/8x8x8/amp-bf16/uniform/seed=7/mma=hopper/samples=3",
      "audit/gemm/4x4x4/amp-fp16/normal/seed=7/mma=hopper/samples=3",
      "audit/gemm/4x4x4/amp-fp16/uniform/seed=7/mma=hopper/samples=3",
      "audit/gemm/4x4x4/amp-bf16/normal/seed=7/mma=hopper/samples=3",
      "audit/gemm/4x4x4/amp-bf16/uniform/seed=7/mma=hopper/samples=3",
      "train/mlp/steps=5/seed=7/batch=8",
  };
  EXPECT_EQ(keys(suite.cases), expected);
  const auto& gemm = std::get<audit::Case>(suite.cases[2].work);
  EXPECT_TRUE(gemm.mma.has_value());
  EXPECT_EQ(gemm.samples, 3u);
  const auto& run = std::get<train::TrainConfig>(suite.cases.back().work);
  EXPECT_EQ(run.policies.size(), 2u);
  EXPECT_EQ(run.steps, 5u);
  EXPECT_EQ(run.batch, 8u);
  EXPECT_EQ(run.seed, 7u);
}

TEST(Suite, DefaultsAreEachOpsShapeNormalInputsSeedOneAndTheModelsSteps) {
  const Suite suite = parse(R"(name = "d"
[[audit]]
ops = ["softmax"]
policies = ["bf16"]
[[train]]
model = "cnn"
policies = ["fp32"]
)");
  EXPECT_EQ(keys(suite.cases),
            (std::vector<std::string>{"audit/softmax/" +
                                          std::string(ops::find_op("softmax")->default_shape) +
                                          "/bf16/normal/seed=1",
                                      "train/cnn/steps=100/seed=1"}));
}

TEST(Suite, ProfileEntriesComeLastWithTheirWarmupInTheKey) {
  const Suite suite = parse(R"(name = "p"
[[profile]]
model = "cnn"
policies = ["fp32", "amp-fp16"]
batch = 16
[[profile]]
model = "mlp"
policies = ["amp-bf16"]
steps = 4
warmup = 0
[[train]]
model = "mlp"
policies = ["fp32"]
steps = 2
)");
  EXPECT_EQ(keys(suite.cases),
            (std::vector<std::string>{"train/mlp/steps=2/seed=1",
                                      "profile/cnn/steps=20/warmup=3/seed=1/batch=16",
                                      "profile/mlp/steps=4/warmup=0/seed=1"}));
  EXPECT_EQ(suite.cases[1].kind(), "profile");
  EXPECT_EQ(suite.cases[0].kind(), "train");
  const auto& cnn = std::get<ProfileConfig>(suite.cases[1].work);
  EXPECT_EQ(cnn.config.policies.size(), 2u);
  EXPECT_EQ(cnn.config.batch, 16u);
  EXPECT_EQ(cnn.warmup, 3u);
  EXPECT_EQ(std::get<ProfileConfig>(suite.cases[2].work).warmup, 0u);
}

// A fingerprint entry makes one case per preset, after the other kinds, with the preset's formats;
// an instruction other than auto is in the key, and the same preset under another instruction is
// another case.
TEST(Suite, FingerprintEntriesMakeOneCasePerPresetAfterTheOthers) {
  const Suite suite = parse(R"(name = "f"
[[fingerprint]]
presets = ["hopper-fp16", "ampere-bf16"]
[[fingerprint]]
presets = ["hopper-fp16"]
instruction = "wgmma"
[[profile]]
model = "mlp"
policies = ["fp32"]
steps = 2
)");
  EXPECT_EQ(keys(suite.cases),
            (std::vector<std::string>{"profile/mlp/steps=2/warmup=3/seed=1",
                                      "fingerprint/hopper-fp16", "fingerprint/ampere-bf16",
                                      "fingerprint/hopper-fp16/instruction=wgmma"}));
  EXPECT_EQ(suite.cases[1].kind(), "fingerprint");
  const auto& ampere = std::get<FingerprintCase>(suite.cases[2].work);
  EXPECT_STREQ(ampere.preset.name, "ampere-bf16");
  EXPECT_TRUE(numeric::same_format(ampere.preset.input, numeric::formats::bf16));
  EXPECT_EQ(ampere.instruction, "auto");
  EXPECT_EQ(std::get<FingerprintCase>(suite.cases[3].work).instruction, "wgmma");
}

// A recipe entry makes one case per recipe, shape and distribution, after the other kinds: on
// hopper where it has a model of the recipe's formats, else exactly, or on the arch named; the
// promotion interval, when given, is in the key; op = "conv2d" audits a convolution (its default
// shape the audit's).
TEST(Suite, RecipeEntriesMakeOneCasePerRecipeShapeAndDistribution) {
  const Suite suite = parse(R"(name = "r"
seed = 3
[[recipe]]
recipes = ["fp8-block", "mxfp4"]
shapes = ["128x128x256"]
dists = ["normal", "uniform"]
[[recipe]]
recipes = ["fp8-current"]
arch = "blackwell"
promote_interval = 64
[[recipe]]
recipes = ["nvfp4"]
op = "conv2d"
[[recipe]]
recipes = ["fp8-block"]
op = "conv2d"
shapes = ["8x128x4x4:128x1x1"]
[[recipe]]
recipes = ["mxfp8"]
op = "bmm"
[[fingerprint]]
presets = ["hopper-fp16"]
)");
  EXPECT_EQ(keys(suite.cases),
            (std::vector<std::string>{
                "fingerprint/hopper-fp16", "recipe/fp8-block/128x128x256/hopper/normal/seed=3",
                "recipe/fp8-block/128x128x256/hopper/uniform/seed=3",
                "recipe/mxfp4/128x128x256/blackwell/normal/seed=3",
                "recipe/mxfp4/128x128x256/blackwell/uniform/seed=3",
                "recipe/fp8-current/256x256x256/blackwell/normal/seed=3/promote=64",
                "recipe/nvfp4/conv2d/2x128x8x8:128x3x3,pad=1/blackwell/normal/seed=3",
                "recipe/fp8-block/conv2d/8x128x4x4:128x1x1/hopper/normal/seed=3",
                "recipe/mxfp8/bmm/4x128x128x128/blackwell/normal/seed=3"}));
  EXPECT_EQ(std::get<audit::RecipeCase>(suite.cases.back().work).batch,
            std::optional<std::size_t>(4));
  const auto& conv = std::get<audit::RecipeCase>(suite.cases[suite.cases.size() - 2].work);
  ASSERT_TRUE(conv.conv.has_value());
  EXPECT_EQ(std::tie(conv.conv->batch, conv.conv->channels, conv.conv->height, conv.conv->filters,
                     conv.conv->kernel_h),
            std::make_tuple(8u, 128u, 4u, 128u, 1u));
  EXPECT_FALSE(std::get<audit::RecipeCase>(suite.cases[5].work).conv.has_value());
  EXPECT_EQ(suite.cases[1].kind(), "recipe");
  const auto& last = std::get<audit::RecipeCase>(suite.cases[5].work);
  EXPECT_EQ(last.recipe.name, "fp8-current");
  EXPECT_EQ(last.arch, "blackwell");
  EXPECT_EQ(last.promote_interval, std::optional<std::size_t>(64));
  EXPECT_EQ(std::tie(last.m, last.n, last.k), std::make_tuple(256u, 256u, 256u));
  EXPECT_EQ(last.seed, 3u);
  EXPECT_FALSE(std::get<audit::RecipeCase>(suite.cases[1].work).promote_interval.has_value());
}

// A [[train]] entry's recipes train beside its policies, their GEMMs on `arch` or each recipe's
// default; keep_bf16 names linear and convolution layers.
TEST(Suite, TrainEntriesTakeRecipesAndTheirArchitecture) {
  const Suite suite = parse(R"(name = "t"
[[train]]
model = "mlp"
policies = ["amp-bf16"]
recipes = ["fp8-delayed", "mxfp6"]
arch = "exact"
steps = 4
[[train]]
model = "transformer"
policies = ["fp32"]
recipes = ["nvfp4"]
keep_bf16 = ["head.w"]
sensitivity = true
sensitivity_seeds = 3
steps = 4
[[train]]
model = "cnn"
policies = ["fp32"]
recipes = ["fp8-current"]
keep_bf16 = ["conv1.w", "conv2.w"]
steps = 4
)");
  ASSERT_EQ(suite.cases.size(), 3u);
  // A convolution's weight names a layer too.
  EXPECT_EQ(std::get<train::TrainConfig>(suite.cases[2].work).keep_bf16,
            (std::vector<std::string>{"conv1.w", "conv2.w"}));
  const auto& first = std::get<train::TrainConfig>(suite.cases[0].work);
  ASSERT_EQ(first.recipes.size(), 2u);
  EXPECT_EQ(first.recipes[1].name, "mxfp6");
  EXPECT_EQ(first.recipe_arch, "exact");
  const auto& second = std::get<train::TrainConfig>(suite.cases[1].work);
  ASSERT_EQ(second.recipes.size(), 1u);
  EXPECT_EQ(train::recipe_arch(second.recipes[0], second), "blackwell");
  EXPECT_EQ(second.keep_bf16, std::vector<std::string>{"head.w"});
  EXPECT_TRUE(second.sensitivity);
  EXPECT_EQ(second.sensitivity_seeds, 3u);
  EXPECT_FALSE(first.sensitivity);
  EXPECT_EQ(first.sensitivity_seeds, 1u);
  EXPECT_TRUE(first.keep_bf16.empty());
}

// Each case on each backend, case by case; another backend's keys name it, and what it cannot run
// is listed with the reason.
TEST(Suite, CasesOnSeveralBackendsKeepTheirOrderAndListWhatCannotRun) {
  const Suite suite = parse(kValid);
  const auto why_not = [](const SuiteCase& c,
                          const std::string& backend) -> std::optional<std::string> {
    if (backend == "cuda" && c.kind() != "audit") return "no training on the GPU";
    if (backend == "cuda" && c.key.starts_with("audit/sum")) return "no sum on the GPU";
    return std::nullopt;
  };
  const BackendCases on = on_backends(suite.cases, {"cpu", "cuda"}, why_not);
  ASSERT_EQ(on.cases.size(), 2 * suite.cases.size() - 2);
  EXPECT_EQ(on.cases[0].key, "audit/dot/16/fp32/normal/seed=7");
  EXPECT_EQ(on.cases[0].backend, "cpu");
  EXPECT_EQ(on.cases[1].key, "audit/dot/16/fp32/normal/seed=7/backend=cuda");
  EXPECT_EQ(on.cases[1].backend, "cuda");
  EXPECT_EQ(on.cases[2].key, "audit/sum/16/fp32/normal/seed=7");
  EXPECT_EQ(on.cases[3].key, "audit/gemm/8x8x8/amp-fp16/normal/seed=7/mma=hopper/samples=3");
  ASSERT_EQ(on.not_run.size(), 2u);
  EXPECT_EQ(on.not_run[0].first, "audit/sum/16/fp32/normal/seed=7/backend=cuda");
  EXPECT_EQ(on.not_run[0].second, "no sum on the GPU");
  EXPECT_EQ(on.not_run[1].first, "train/mlp/steps=5/seed=7/batch=8/backend=cuda");
  // The CPU alone is the suite itself.
  EXPECT_EQ(keys(on_backends(suite.cases, {"cpu"}, why_not).cases), keys(suite.cases));
}

// A narrowing takes parts out of a case on a backend: each is listed under the case's key there
// with its suffix, and the rest of the case runs; the CPU's case is left as it is.
TEST(Suite, ANarrowedCaseRunsWithoutWhatItLostAndListsIt) {
  const Suite suite = parse(kValid);
  const auto why_not = [](const SuiteCase&, const std::string&) -> std::optional<std::string> {
    return std::nullopt;
  };
  const Narrowing narrow = [](SuiteCase& c, const std::string& backend) {
    std::vector<std::pair<std::string, std::string>> out;
    if (backend == "cuda" && c.kind() == "train") {
      c.key += "/narrowed";
      out.emplace_back("part=x", "not on this device");
    }
    return out;
  };
  const BackendCases on = on_backends(suite.cases, {"cpu", "cuda"}, why_not, narrow);
  ASSERT_EQ(on.cases.size(), 2 * suite.cases.size());
  ASSERT_EQ(on.not_run.size(), 1u);
  EXPECT_EQ(on.not_run[0].first, "train/mlp/steps=5/seed=7/batch=8/backend=cuda/narrowed/part=x");
  EXPECT_EQ(on.not_run[0].second, "not on this device");
  const auto narrowed = std::count_if(on.cases.begin(), on.cases.end(), [](const SuiteCase& c) {
    return c.key.ends_with("/narrowed");
  });
  EXPECT_EQ(narrowed, 1);
  EXPECT_EQ(keys(on_backends(suite.cases, {"cpu"}, why_not, narrow).cases), keys(suite.cases));
}

TEST(Suite, ThePoliciesFilesAndTheBudgetsOfASuiteAreFoundNextToIt) {
  const Suite suite = parse_suite(R"(name = "p"
[[audit]]
ops = ["dot"]
policies = ["policies/example.toml"]
)",
                                  "suites/p.toml", AMPBENCH_SUITES_DIR);
  EXPECT_EQ(suite.budgets_path, std::string(AMPBENCH_SUITES_DIR) + "/budgets.toml");
  EXPECT_FALSE(suite.budgets.empty());
  ASSERT_EQ(suite.cases.size(), 1u);
  EXPECT_EQ(suite.cases[0].key, "audit/dot/4096/amp-bf16-fp32-attention/normal/seed=1");
}

// The shipped suites must keep parsing as ops, policies and models change.
TEST(Suite, TheShippedSuitesParse) {
  const Suite quick = load_suite(std::string(AMPBENCH_SUITES_DIR) + "/quick.toml");
  EXPECT_EQ(quick.name, "quick");
  EXPECT_EQ(quick.cases.size(), 27u);
  EXPECT_EQ(quick.cases.back().key,
            "recipe/nvfp4/conv2d/2x128x8x8:128x3x3,pad=1/blackwell/normal/seed=1");
  const Suite nightly = load_suite(std::string(AMPBENCH_SUITES_DIR) + "/nightly.toml");
  EXPECT_EQ(nightly.cases.size(), ops::catalog().size() * 6 + 3 + 3 * 7 + 2);
  EXPECT_EQ(nightly.cases.back().key,
            "recipe/fp8-current/64x64x4096/hopper/uniform:a=0,b=1/seed=1/promote=128");
  const Suite full = load_suite(std::string(AMPBENCH_SUITES_DIR) + "/audit-full.toml");
  EXPECT_EQ(full.cases.size(), ops::catalog().size() * 6 * 6 + 3 * 2 * (4 + 5 + 3 + 3 + 2 + 2));
}

struct BadSuite {
  const char* text;
  const char* message;
};

TEST(Suite, EveryErrorNamesTheFileTheLineAndTheKey) {
  const BadSuite cases[] = {
      {"name = \"x\"\n[[audit]]\nops = [\"gemmm\"]\npolicies = [\"fp32\"]\n",
       "suites/x.toml:3:8: [[audit]] ops: unknown op 'gemmm' (known: gemm"},
      {"name = \"x\"\n[[audit]]\nops = [\"gemm\"]\nshapes = [\"8x8\"]\npolicies = [\"fp32\"]\n",
       "suites/x.toml:4:11: [[audit]] shapes: gemm: "},
      {"name = \"x\"\n[[audit]]\nops = [\"gemm\"]\npolicies = [\"fp17\"]\n",
       "suites/x.toml:4:13: [[audit]] policies: "},
      {"name = \"x\"\n[[audit]]\nops = [\"gemm\"]\npolicies = [\"fp32\"]\ndists = [\"gauss\"]\n",
       "suites/x.toml:5:10: [[audit]] dists: "},
      {"name = \"x\"\n[[audit]]\nops = [\"gemm\"]\npolicies = [\"fp32\"]\nmma = \"pascal\"\n",
       "suites/x.toml:5:7: [[audit]] mma: "},
      {"name = \"x\"\n[[audit]]\nops = [\"gemm\"]\npolicies = [\"fp32\"]\nsamples = -1\n",
       "suites/x.toml:5:11: [[audit]] samples: must be an integer >= 0"},
      {"name = \"x\"\n[[audit]]\nops = [\"gemm\"]\npolicy = [\"fp32\"]\n",
       "suites/x.toml:4:10: [[audit]] policy: unknown key (known: ops, shapes, policies"},
      {"name = \"x\"\n[[audit]]\nops = [\"gemm\"]\n",
       "suites/x.toml:2:1: [[audit]]: missing key 'policies'"},
      {"name = \"x\"\n[[audit]]\nops = []\npolicies = [\"fp32\"]\n",
       "suites/x.toml:3:7: [[audit]] ops: must be a non-empty array of strings"},
      {"name = \"x\"\n[[train]]\nmodel = \"rnn\"\npolicies = [\"fp32\"]\n",
       "suites/x.toml:3:9: [[train]] model: unknown model 'rnn'"},
      {"name = \"x\"\n[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nsteps = 0\n",
       "suites/x.toml:5:9: [[train]] steps: must be an integer >= 1"},
      {"name = \"x\"\n[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nlr = 0.1\n",
       "suites/x.toml:5:6: [[train]] lr: unknown key"},
      {"name = \"x\"\n[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nrecipes = [\"fp9\"]\n",
       "suites/x.toml:5:12: [[train]] recipes: unknown recipe 'fp9'"},
      {"name = \"x\"\n[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nrecipes = "
       "[\"mxfp6\"]\narch = \"hopper\"\n",
       "suites/x.toml:6:8: [[train]] arch: mxfp6 on hopper: "},
      {"name = \"x\"\n[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\narch = \"hopper\"\n",
       "suites/x.toml:5:8: [[train]] arch: goes with recipes"},
      {"name = \"x\"\n[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nsensitivity = true\n",
       "suites/x.toml:5:15: [[train]] sensitivity: goes with recipes"},
      {"name = \"x\"\n[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nrecipes = "
       "[\"nvfp4\"]\nkeep_bf16 = [\"w3\"]\n",
       "suites/x.toml:6:14: [[train]] keep_bf16: 'w3' is not a linear or convolution layer of the "
       "mlp (its: w1, "
       "w2)"},
      {"name = \"x\"\n[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nrecipes = "
       "[\"nvfp4\"]\nsensitivity = 1\n",
       "suites/x.toml:6:15: [[train]] sensitivity: must be true or false"},
      {"name = \"x\"\n[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nrecipes = "
       "[\"nvfp4\"]\nkeep_bf16 = [\"w1\", \"w2\"]\nsensitivity = true\n",
       "suites/x.toml:7:15: [[train]] sensitivity: keep_bf16 keeps every linear and convolution "
       "layer of the mlp"},
      {"name = \"x\"\n[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nrecipes = "
       "[\"nvfp4\"]\nsensitivity_seeds = 2\n",
       "suites/x.toml:6:21: [[train]] sensitivity_seeds: goes with sensitivity = true"},
      {"name = \"x\"\n[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nrecipes = "
       "[\"nvfp4\"]\nsensitivity = true\nsensitivity_seeds = 0\n",
       "suites/x.toml:7:21: [[train]] sensitivity_seeds: must be an integer >= 1"},
      {"name = \"x\"\n[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nrecipes = "
       "[\"nvfp4\"]\nsensitivity = true\nsensitivity_seeds = 65\n",
       "suites/x.toml:7:21: [[train]] sensitivity_seeds: 65 is more than 64"},
      {"name = \"x\"\n[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nsensitivity_seeds = 2\n",
       "suites/x.toml:5:21: [[train]] sensitivity_seeds: goes with recipes"},
      {"name = \"x\"\ntolerance = -0.5\n",
       "suites/x.toml:2:13: tolerance: must be a finite number >= 0"},
      {"name = \"x\"\ntolerance = \"10%\"\n",
       "suites/x.toml:2:13: tolerance: must be a finite number >= 0"},
      {"name = \"x\"\n[[profile]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nwarmup = -1\n",
       "suites/x.toml:5:10: [[profile]] warmup: must be an integer >= 0"},
      {"name = \"x\"\n[[profile]]\nmodel = \"gpt\"\npolicies = [\"fp32\"]\n",
       "suites/x.toml:3:9: [[profile]] model: unknown model 'gpt'"},
      {"name = \"x\"\n[[profile]]\nmodel = \"mlp\"\n",
       "suites/x.toml:2:1: [[profile]]: missing key 'policies'"},
      {"name = \"x\"\n[[profile]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\ntrace = \"t.json\"\n",
       "suites/x.toml:5:9: [[profile]] trace: unknown key (known: model, policies, steps, warmup, "
       "batch)"},
      {"name = \"x\"\nseeds = 3\n", "suites/x.toml:2:9: seeds: unknown key"},
      {"name = \"x\"\nseed = \"one\"\n", "suites/x.toml:2:8: seed: must be an integer >= 0"},
      {"description = \"no name\"\n", "suites/x.toml:1:1: name: missing"},
      {"name = \"a/b\"\n", "suites/x.toml:1:8: name: must be a non-empty name"},
      {"name = \"x\"\nbudgets = \"nowhere.toml\"\n", "suites/x.toml:2:11: budgets: "},
      {"name = \"x\"\n",
       "suites/x.toml:1:1: the suite has no [[audit]], [[train]], [[profile]], [[fingerprint]] "
       "or [[recipe]] entries"},
      {"name = \"x\"\n[[recipe]]\nrecipes = [\"fp8-block\", \"fp9\"]\n",
       "suites/x.toml:3:25: [[recipe]] recipes: unknown recipe 'fp9' (known: fp8-delayed"},
      {"name = \"x\"\n[[recipe]]\nrecipes = [\"fp8-block\"]\nshapes = [\"64x64x100\"]\n",
       "suites/x.toml:4:11: [[recipe]]: fp8-block: the fprop GEMM's x (64 x 100, K along the row): "
       "its 1x128 tiles do not divide K = 100"},
      {"name = \"x\"\n[[recipe]]\nrecipes = [\"nvfp4\"]\narch = \"hopper\"\n",
       "suites/x.toml:4:8: [[recipe]]: nvfp4: hopper has no Tensor Core MMA with e2m1 inputs"},
      {"name = \"x\"\n[[recipe]]\nrecipes = [\"mxfp8\"]\narch = \"pascal\"\n",
       "suites/x.toml:4:8: [[recipe]]: unknown architecture 'pascal'"},
      {"name = \"x\"\n[[recipe]]\nrecipes = [\"mxfp8\"]\npromote_interval = -4\n",
       "suites/x.toml:4:20: [[recipe]] promote_interval: must be an integer >= 0"},
      {"name = \"x\"\n[[recipe]]\nrecipes = [\"mxfp8\"]\ngemms = [\"fprop\"]\n",
       "suites/x.toml:4:9: [[recipe]] gemms: unknown key (known: recipes, op, shapes, arch, "
       "promote_interval, dists)"},
      {"name = \"x\"\n[[recipe]]\nrecipes = [\"mxfp8\"]\nop = \"gemm\"\n",
       "suites/x.toml:4:6: [[recipe]] op: unknown op 'gemm' (linear, bmm, conv2d)"},
      {"name = \"x\"\n[[recipe]]\nrecipes = [\"fp8-block\"]\nop = \"conv2d\"\nshapes = "
       "[\"2x3x8x8:128x3x3\"]\n",
       "suites/x.toml:5:11: [[recipe]]: fp8-block: the fprop GEMM's im2col(x) (72 x 27, K along "
       "the "
       "row)"},
      {"name = \"x\"\n[[recipe]]\nshapes = [\"64x64x64\"]\n",
       "suites/x.toml:2:1: [[recipe]]: missing key 'recipes'"},
      {"name = \"x\"\n[[fingerprint]]\npresets = [\"hopper-fp16\", \"pascal-fp16\"]\n",
       "suites/x.toml:3:27: [[fingerprint]] presets: unknown preset 'pascal-fp16' (known: "
       "volta-fp16"},
      {"name = \"x\"\n[[fingerprint]]\npresets = [\"hopper-fp16\"]\ninstruction = \"hmma\"\n",
       "suites/x.toml:4:15: [[fingerprint]] instruction: unknown instruction 'hmma' (auto, mma, "
       "wgmma)"},
      {"name = \"x\"\n[[fingerprint]]\ninstruction = \"mma\"\n",
       "suites/x.toml:2:1: [[fingerprint]]: missing key 'presets'"},
      {"name = \"x\"\n[[fingerprint]]\npresets = [\"hopper-fp16\"]\nformat = \"fp16\"\n",
       "suites/x.toml:4:10: [[fingerprint]] format: unknown key (known: presets, instruction)"},
      {"name = \"x\"\n[[fingerprint]]\npresets = [\"ada-fp16\", \"ada-fp16\"]\n",
       "suites/x.toml:3:24: [[fingerprint]] presets: 'ada-fp16' appears twice"},
      {"name = \"x\"\n[[fingerprint]]\npresets = [\"ada-fp16\"]\n[[fingerprint]]\n"
       "presets = [\"turing-fp16\", \"ada-fp16\"]\ninstruction = \"auto\"\n",
       "suites/x.toml:5:27: [[fingerprint]] presets: 'ada-fp16' is fingerprinted by an earlier "
       "entry "
       "too (the case fingerprint/ada-fp16)"},
      {"name = \"x\"\n[[fingerprint]]\npresets = 3\n",
       "suites/x.toml:3:11: [[fingerprint]] presets: must be a non-empty array of strings"},
      {"name = \"x\"\naudit = 3\n", "suites/x.toml:2:9: audit: must be an array of tables"},
      {"name = \"x\"\n[[audit]\n", "suites/x.toml:2:9: "},
      {"name = \"x\"\n[[audit]]\nops = [\"dot\"]\npolicies = [\"fp32\", \"fp32\"]\n",
       "suites/x.toml:4:21: [[audit]] policies: 'fp32' appears twice"},
      {"name = \"x\"\n[[audit]]\nops = [\"dot\"]\npolicies = [\"fp32\"]\n"
       "[[audit]]\nops = [\"dot\"]\npolicies = [\"fp32\"]\n",
       "suites/x.toml: the case audit/dot/"},
  };
  for (const auto& c : cases) {
    try {
      parse(c.text);
      ADD_FAILURE() << "no error for:\n" << c.text;
    } catch (const SuiteError& e) {
      EXPECT_TRUE(std::string(e.what()).starts_with(c.message))
          << "got:      " << e.what() << "\nexpected: " << c.message;
    }
  }
}

// A few lines of lists could make millions of cases, each holding its policy: the count is
// checked before any case is made (found by fuzzing, docs/fuzzing.md).
TEST(Suite, AnEntryThatWouldMakeTooManyCasesIsRefusedBeforeExpanding) {
  std::string shapes;
  for (int n = 1; n <= 400; ++n) shapes += (n == 1 ? "\"" : ", \"") + std::to_string(n) + "\"";
  std::string dists;
  for (int v = 1; v <= 42; ++v) {
    dists += (v == 1 ? "\"" : ", \"") + ("constant:value=" + std::to_string(v)) + "\"";
  }
  const std::string text = "name = \"x\"\n[[audit]]\nops = [\"dot\"]\nshapes = [" + shapes +
                           "]\npolicies = [\"fp32\", \"tf32\", \"fp16\", \"bf16\", "
                           "\"amp-fp16\", \"amp-bf16\"]\ndists = [" +
                           dists + "]\n";
  try {
    parse(text);
    FAIL();
  } catch (const SuiteError& e) {
    EXPECT_EQ(std::string(e.what()),
              "suites/x.toml:2:1: [[audit]]: 1 ops x 400 shapes x 6 policies x 42 dists would make "
              "the suite more than 100000 cases; split it");
  }
}

TEST(Suite, AMissingFileIsNamed) {
  try {
    load_suite("/nonexistent/suite.toml");
    FAIL();
  } catch (const SuiteError& e) {
    EXPECT_EQ(std::string(e.what()),
              "/nonexistent/suite.toml: cannot open: No such file or directory");
  }
  // A directory is not read as an empty suite.
  try {
    load_suite("/tmp");
    FAIL();
  } catch (const SuiteError& e) {
    EXPECT_EQ(std::string(e.what()), "/tmp: is a directory");
  }
}

// Everything a suite reads is listed, so that a run can refuse to write over it; its budgets
// cannot be switched off (a directory), and a budget for a policy the suite does not know is an
// error.
TEST(Suite, ListsItsFilesAndChecksItsBudgets) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ampbench-suite-files-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "sub");
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  write("p.toml", "name = \"mine\"\nbase = \"amp-fp16\"\n");
  write("b.toml",
        "[[budget]]\nop = \"add\"\npolicy = \"mine\"\nmetric = \"max_ulp\"\nlimit = "
        "1\nsource = \"x\"\n");
  const std::string suite =
      write("s.toml",
            "name = \"s\"\nbudgets = \"b.toml\"\n[[audit]]\nops = [\"add\"]\npolicies "
            "= [\"p.toml\", \"fp32\"]\n");
  const Suite s = load_suite(suite);
  EXPECT_EQ(s.files, (std::vector<std::string>{suite, (dir / "b.toml").string(),
                                               (dir / "p.toml").string()}));
  // The same budget without the policy file in the suite: a budget that would never apply.
  write("t.toml",
        "name = \"t\"\nbudgets = \"b.toml\"\n[[audit]]\nops = [\"add\"]\npolicies = "
        "[\"fp32\"]\n");
  try {
    load_suite((dir / "t.toml").string());
    ADD_FAILURE() << "a budget for no policy of the suite accepted";
  } catch (const SuiteError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with((dir / "t.toml").string() +
                                                  ": budgets: " + (dir / "b.toml").string() +
                                                  ":1:1: policy 'mine' is no policy of this run"))
        << e.what();
  }
  write("d.toml",
        "name = \"d\"\nbudgets = \"sub\"\n[[audit]]\nops = [\"add\"]\npolicies = "
        "[\"fp32\"]\n");
  try {
    load_suite((dir / "d.toml").string());
    ADD_FAILURE() << "a directory read as budgets";
  } catch (const SuiteError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "d.toml").string() + ":2:11: budgets: " +
                                         (dir / "sub").string() + ": is a directory");
  }
  std::filesystem::remove_all(dir);
}

TEST(Shard, ParsesIOverNAndRejectsTheRest) {
  EXPECT_EQ(parse_shard("2/5").index, 2u);
  EXPECT_EQ(parse_shard("2/5").count, 5u);
  EXPECT_EQ(to_string(parse_shard("0/1")), "0/1");
  for (const char* bad : {"", "1", "1/", "/2", "2/2", "0/0", "a/b", "-1/2", "1/2/3", " 0/1"}) {
    EXPECT_THROW(parse_shard(bad), std::invalid_argument) << bad;
  }
}

TEST(Shard, TheShardsAreDisjointAndTogetherTheWholeSuite) {
  const Suite suite = parse(R"(name = "s"
[[audit]]
ops = ["dot", "sum", "mean", "l2_norm"]
shapes = ["8"]
policies = ["fp32", "fp16", "bf16"]
)");
  ASSERT_EQ(suite.cases.size(), 12u);
  for (std::size_t count = 1; count <= 13; ++count) {
    std::multiset<std::string> all;
    for (std::size_t index = 0; index < count; ++index) {
      const auto part = select_shard(suite.cases, Shard{index, count});
      for (std::size_t i = 0; i < part.size(); ++i) {
        // Deterministic: the shard takes the cases at index, index + count, ...
        EXPECT_EQ(part[i].key, suite.cases[index + i * count].key);
        all.insert(part[i].key);
      }
    }
    const auto whole = keys(suite.cases);
    EXPECT_EQ(all, std::multiset<std::string>(whole.begin(), whole.end())) << count;
  }
}

}  // namespace
}  // namespace ampbench::results
