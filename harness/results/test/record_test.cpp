// The result record: an audit case and a failing case as records, their metrics, the environment.
#include "harness/results/record.hpp"

#include <gtest/gtest.h>

#include <string>

namespace ampbench::results {
namespace {

TEST(Record, AnAuditCaseBecomesARecordWithItsMetricsAndDetail) {
  const Suite suite = parse_suite(R"(name = "r"
[[audit]]
ops = ["dot"]
shapes = ["64"]
policies = ["fp16"]
)",
                                  "r.toml", "/nonexistent");
  const Record record = run_case(suite.cases[0], suite.budgets);
  EXPECT_EQ(record.key, "audit/dot/64/fp16/normal/seed=1");
  EXPECT_EQ(record.kind, "audit");
  EXPECT_TRUE(record.pass);
  EXPECT_EQ(record.detail["op"], "dot");
  EXPECT_EQ(record.metrics.at("max_ulp"), record.detail["max_ulp"].get<double>());
  EXPECT_EQ(record.metrics.at("mismatches"), 0);
  EXPECT_TRUE(record.metrics.contains("normwise_rel_error"));
  const auto j = to_json(record);
  EXPECT_EQ(j["status"], "pass");
  EXPECT_EQ(j["metrics"]["max_ulp"], record.metrics.at("max_ulp"));
  const Expected expected{{record.key, "k2"}, {"k0", record.key, "k2", "k3", "k4", "k5"}};
  const auto document =
      result_document("r", Shard{1, 3}, Environment{}, nlohmann::json::array({j}), expected, false);
  EXPECT_EQ(document["schema"], "ampbench.result/1");
  EXPECT_EQ(document["shard"], "1/3");
  EXPECT_EQ(document["records"][0]["key"], record.key);
  // Which cases it should hold, that it does not hold them all yet, and which it lacks.
  EXPECT_EQ(document["expected"]["cases"], 2);
  EXPECT_EQ(document["expected"]["keys"], nlohmann::json::array({record.key, "k2"}));
  EXPECT_EQ(document["expected"]["suite_keys"].size(), 6u);
  EXPECT_EQ(document["complete"], false);
  EXPECT_EQ(document["missing"], nlohmann::json::array({"k2"}));
  const auto whole = result_document("r", Shard{}, Environment{}, nlohmann::json::array({j}),
                                     Expected{{record.key}, {}}, true);
  EXPECT_EQ(whole["complete"], true);
  EXPECT_FALSE(whole.contains("missing"));
  EXPECT_FALSE(whole["expected"].contains("suite_keys"));
}

TEST(Record, ABudgetBreachFailsTheRecordAndIsListed) {
  const Suite suite = parse_suite(
      "name = \"r\"\n[[audit]]\nops = [\"dot\"]\nshapes = [\"64\"]\n"
      "policies = [\"fp16\"]\n",
      "r.toml", "/nonexistent");
  const std::vector<audit::Budget> impossible{
      {"dot", "*", audit::Metric::fraction_correctly_rounded, 2.0, "impossible", "test:1"}};
  const Record record = run_case(suite.cases[0], impossible);
  EXPECT_FALSE(record.pass);
  ASSERT_EQ(record.breaches.size(), 1u);
  EXPECT_NE(record.breaches[0].find("fraction_correctly_rounded"), std::string::npos);
}

TEST(Record, TrainingMetricsArePerPolicyAndRelativeToTheReference) {
  train::TrainResult result;
  result.reference.eval_loss = 0.5;
  result.reference.eval_accuracy = 0.8;
  train::RunResult run;
  run.policy = "amp-fp16";
  run.eval_loss = 0.55;
  run.eval_accuracy = 0.75;
  run.weight_divergence = {1e-4, 3e-4};
  run.skipped_steps = {0};
  train::StepRecord step;
  step.loss_error = 0.02;
  run.steps = {step, step};
  run.steps[1].loss_error = 0.04;
  result.runs.push_back(run);
  const auto m = train_metrics(result);
  EXPECT_NEAR(m.at("amp-fp16.eval_loss_error"), 0.1, 1e-15);
  EXPECT_EQ(m.at("amp-fp16.max_loss_error"), 0.04);
  EXPECT_EQ(m.at("amp-fp16.weight_divergence"), 3e-4);
  EXPECT_EQ(m.at("amp-fp16.skipped_steps"), 1);
  EXPECT_EQ(m.at("amp-fp16.eval_accuracy"), 0.75);
  EXPECT_EQ(m.at("reference.eval_loss"), 0.5);
}

// On the CPU a fingerprint case probes the preset's own model: every parameter matches, and the
// record keeps each inferred parameter as words beside no metrics.
TEST(Record, AFingerprintCaseKeepsItsInferredParametersAsFeatures) {
  const Suite suite = parse_suite("name = \"f\"\n[[fingerprint]]\npresets = [\"ampere-fp16\"]\n",
                                  "f.toml", "/nonexistent");
  const Record record = run_case(suite.cases[0], suite.budgets);
  EXPECT_EQ(record.key, "fingerprint/ampere-fp16");
  EXPECT_EQ(record.kind, "fingerprint");
  EXPECT_TRUE(record.pass) << (record.breaches.empty() ? "" : record.breaches[0]);
  EXPECT_TRUE(record.metrics.empty());
  EXPECT_EQ(record.detail["schema"], "ampbench.fingerprint/1");
  EXPECT_EQ(record.detail["preset"], "ampere-fp16");
  ASSERT_EQ(record.features.size(), record.detail["parameters"].size());
  for (const auto& row : record.detail["parameters"]) {
    EXPECT_EQ(record.features.at(row["parameter"].get<std::string>()), row["inferred"]);
  }
  EXPECT_EQ(record.features.at("fraction_bits"), "24");
  EXPECT_EQ(record.features.at("fused_k"), "8");
  EXPECT_EQ(to_json(record)["features"]["fraction_bits"], "24");
}

// Another backend's executor answers through the runners: here Hopper's model standing in for a
// device asked to be an Ampere. Its differences fail the case, one breach per parameter, and what
// ran is kept.
TEST(Record, AFingerprintThatDiffersFromThePresetFailsWithEachParameterABreach) {
  const Suite suite = parse_suite("name = \"f\"\n[[fingerprint]]\npresets = [\"ampere-fp16\"]\n",
                                  "f.toml", "/nonexistent");
  SuiteCase on_gpu = suite.cases[0];
  on_gpu.backend = "cuda";
  BackendRunners runners;
  runners.fingerprint = [](const FingerprintCase& c, nlohmann::json* ran) {
    EXPECT_STREQ(c.preset.name, "ampere-fp16");
    (*ran)["device"] = "stand-in";
    return std::make_unique<fingerprint::ModelExecutor>(*numeric::mma_model_named("hopper-fp16"));
  };
  const Record record = run_case(on_gpu, suite.budgets, runners);
  EXPECT_FALSE(record.pass);
  EXPECT_EQ(record.detail["ran"]["device"], "stand-in");
  EXPECT_EQ(record.features.at("fraction_bits"), "25");
  EXPECT_EQ(record.features.at("fused_k"), "16");
  ASSERT_FALSE(record.breaches.empty());
  EXPECT_EQ(record.breaches[0], "fraction_bits: inferred 25, the preset ampere-fp16 has 24");
  // A device that says its architecture is judged against that architecture's preset for the
  // case's formats: Hopper's model is a Hopper, and passes.
  runners.fingerprint = [](const FingerprintCase&, nlohmann::json* ran) {
    (*ran)["architecture"] = "hopper";
    return std::make_unique<fingerprint::ModelExecutor>(*numeric::mma_model_named("hopper-fp16"));
  };
  const Record own = run_case(on_gpu, suite.budgets, runners);
  EXPECT_TRUE(own.pass) << (own.breaches.empty() ? "" : own.breaches[0]);
  EXPECT_EQ(own.detail["preset"], "hopper-fp16");
  EXPECT_EQ(own.features.at("fraction_bits"), "25");
  // Without a runner for it, a case for another backend is a failed record that says so.
  const Record none = run_case(on_gpu, suite.budgets);
  EXPECT_FALSE(none.pass);
  EXPECT_EQ(none.kind, "fingerprint");
  EXPECT_EQ(none.breaches.at(0), "error: no cuda backend for this case");
}

// A recipe case: each GEMM's errors as judged metrics (names ending in _error), the events
// reported, the audit's record as the detail; never on another backend.
TEST(Record, ARecipeCaseKeepsEachGemmsErrors) {
  const Suite suite =
      parse_suite("name = \"r\"\n[[recipe]]\nrecipes = [\"mxfp8\"]\nshapes = [\"32x32x64\"]\n",
                  "r.toml", "/nonexistent");
  const Record record = run_case(suite.cases[0], suite.budgets);
  EXPECT_EQ(record.key, "recipe/mxfp8/32x32x64/blackwell/normal/seed=1");
  EXPECT_EQ(record.kind, "recipe");
  EXPECT_TRUE(record.pass) << (record.breaches.empty() ? "" : record.breaches[0]);
  for (const char* gemm : {"fprop", "dgrad", "wgrad"}) {
    const std::string g(gemm);
    EXPECT_GT(record.metrics.at(g + ".total_error"), 0) << g;
    EXPECT_EQ(
        record.metrics.at(g + ".total_error"),
        record.detail["gemms"][g == "fprop"   ? 0
                               : g == "dgrad" ? 1
                                              : 2]["total"]["max_normwise"]
            .get<double>());
    EXPECT_LE(record.metrics.at(g + ".accumulation_error"),
              record.metrics.at(g + ".quantization_error"));
    EXPECT_EQ(record.metrics.at(g + ".nonfinite"), 0);
  }
  EXPECT_EQ(record.detail["recipe"], "mxfp8");
  SuiteCase on_gpu = suite.cases[0];
  on_gpu.backend = "cuda";
  const Record refused = run_case(on_gpu, suite.budgets, BackendRunners{});
  EXPECT_FALSE(refused.pass);
  EXPECT_EQ(refused.kind, "recipe");
  ASSERT_EQ(refused.breaches.size(), 1u);
  EXPECT_EQ(refused.breaches[0], "error: no cuda backend for this case");
}

TEST(Environment, TheCpuIsTheFirstModelNameOfProcCpuinfo) {
  EXPECT_EQ(cpu_model("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) "
                      "CPU @ 2.20GHz\nmodel name\t: other\n"),
            "Intel(R) Xeon(R) CPU @ 2.20GHz");
  EXPECT_EQ(cpu_model("processor : 0\n"), "unknown");
  const std::string now = utc_now();
  ASSERT_EQ(now.size(), 24u) << now;
  EXPECT_EQ(now[10], 'T');
  EXPECT_EQ(now[19], '.');
  EXPECT_EQ(now.back(), 'Z');
  EXPECT_EQ(to_json(Environment{})["cores"], 0);
}

}  // namespace
}  // namespace ampbench::results
