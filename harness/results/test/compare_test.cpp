// Comparing result records: regressions and improvements against the tolerance and the floor,
// status changes, added and missing cases, and documents that are not result records.
#include "harness/results/compare.hpp"

#include <gtest/gtest.h>

#include <string>

namespace ampbench::results {
namespace {

ResultFile result(const std::string& records) {
  return parse_result(nlohmann::json::parse(R"({"schema": "ampbench.result/1", "suite": "t",
                                                "records": )" +
                                            records + "}"),
                      "test.json");
}

TEST(Compare, DirectionsComeFromTheMetricsName) {
  EXPECT_EQ(direction_of("normwise_rel_error"), Direction::lower_is_better);
  EXPECT_EQ(direction_of("max_ulp"), Direction::lower_is_better);
  EXPECT_EQ(direction_of("mean_ulp"), Direction::lower_is_better);
  EXPECT_EQ(direction_of("bound_ratio"), Direction::lower_is_better);
  EXPECT_EQ(direction_of("amp-fp16.eval_loss_error"), Direction::lower_is_better);
  EXPECT_EQ(direction_of("fp16.weight_divergence"), Direction::lower_is_better);
  EXPECT_EQ(direction_of("fraction_correctly_rounded"), Direction::higher_is_better);
  EXPECT_EQ(direction_of("amp-bf16.eval_accuracy"), Direction::higher_is_better);
  EXPECT_EQ(direction_of("fp32.eval_loss"), Direction::unjudged);
  EXPECT_EQ(direction_of("amp-fp16.step_ms"), Direction::unjudged);
  EXPECT_EQ(direction_of("amp-fp16.vs_fp32"), Direction::unjudged);
}

// Two devices' results: the device comes from the environment (the GPU when one ran the cases,
// else the CPU), and the main metrics of the shared cases line up side by side.
TEST(Compare, TheArchitectureComparisonLinesUpTheMainMetrics) {
  const auto on = [](const std::string& gpu, const std::string& records) {
    return parse_result(nlohmann::json::parse(R"({"schema": "ampbench.result/1", "suite": "t",
        "environment": {"gpu": ")" + gpu + R"(", "cpu": "Test CPU"}, "records": )" +
                                              records + "}"),
                        "test.json");
  };
  const auto a100 = on("NVIDIA A100, compute capability 8.0", R"([
      {"key": "g", "status": "pass", "metrics": {"max_ulp": 3, "mean_ulp": 0.5}},
      {"key": "t", "status": "pass", "metrics": {"fp32.step_ms": 10, "fp32.eval_loss": 1}},
      {"key": "only-a", "status": "pass", "metrics": {"max_ulp": 1}}])");
  const auto h200 = on("NVIDIA H200, compute capability 9.0", R"([
      {"key": "t", "status": "pass", "metrics": {"fp32.step_ms": 4}},
      {"key": "g", "status": "pass", "metrics": {"max_ulp": 5, "mean_ulp": 0.7}}])");
  EXPECT_EQ(label_of(a100.device), "NVIDIA A100 (sm 8.0)");
  EXPECT_EQ(label_of(on("no CUDA device: cudaErrorNoDevice", "[]").device),
            "CPU emulation on Test CPU");
  EXPECT_EQ(label_of(on("not probed: this build has no CUDA backend", "[]").device),
            "CPU emulation on Test CPU");
  const auto rows = side_by_side(a100, h200);
  ASSERT_EQ(rows.size(), 2u);  // mean_ulp and eval_loss are not main metrics; only-a is alone
  EXPECT_EQ(rows[0].key, "g");
  EXPECT_EQ(rows[0].metric, "max_ulp");
  EXPECT_EQ(rows[0].base, 3);
  EXPECT_EQ(rows[0].current, 5);
  EXPECT_EQ(rows[1].metric, "fp32.step_ms");
  EXPECT_EQ(rows[1].current, 4);
}

TEST(Compare, AChangeForTheWorseBeyondTheToleranceIsARegression) {
  const auto base = result(R"([{"key": "a", "status": "pass",
      "metrics": {"normwise_rel_error": 1e-7, "fraction_correctly_rounded": 0.9, "max_ulp": 2}}])");
  const auto current = result(R"([{"key": "a", "status": "pass",
      "metrics": {"normwise_rel_error": 1.2e-7, "fraction_correctly_rounded": 0.7, "max_ulp": 1}}])");
  const Comparison c = compare(base, current);
  EXPECT_EQ(c.matched, 1u);
  ASSERT_EQ(c.changes.size(), 3u);
  EXPECT_EQ(c.changes[0].kind, ChangeKind::regression);
  EXPECT_EQ(c.changes[0].metric, "fraction_correctly_rounded");
  EXPECT_EQ(c.changes[1].kind, ChangeKind::improvement);
  EXPECT_EQ(c.changes[1].metric, "max_ulp");
  EXPECT_EQ(c.changes[2].kind, ChangeKind::regression);
  EXPECT_EQ(c.changes[2].metric, "normwise_rel_error");
  EXPECT_EQ(*c.changes[2].base, 1e-7);
  EXPECT_EQ(*c.changes[2].current, 1.2e-7);
  EXPECT_TRUE(c.gate_fails());
  // Swapped, the same changes are improvements.
  const Comparison back = compare(current, base);
  EXPECT_EQ(back.count(ChangeKind::improvement), 2u);
  EXPECT_EQ(back.count(ChangeKind::regression), 1u);
}

TEST(Compare, TheToleranceIsRelativeAndItsEdgeIsNotARegression) {
  const auto base = result(R"([{"key": "a", "status": "pass", "metrics": {"mean_ulp": 1.0}}])");
  const auto at_edge = result(R"([{"key": "a", "status": "pass", "metrics": {"mean_ulp": 1.25}}])");
  EXPECT_TRUE(compare(base, at_edge, {0.25, 1e-12}).changes.empty());
  const auto beyond =
      result(R"([{"key": "a", "status": "pass", "metrics": {"mean_ulp": 1.2500001}}])");
  EXPECT_EQ(compare(base, beyond, {0.25, 1e-12}).count(ChangeKind::regression), 1u);
  EXPECT_EQ(compare(base, beyond).count(ChangeKind::regression), 1u);  // default 10%
  EXPECT_TRUE(compare(base, beyond, {0.3, 1e-12}).changes.empty());
}

TEST(Compare, TheAbsoluteFloorKeepsTinyChangesFromZeroFromCounting) {
  const auto zero =
      result(R"([{"key": "a", "status": "pass", "metrics": {"normwise_rel_error": 0}}])");
  const auto tiny =
      result(R"([{"key": "a", "status": "pass", "metrics": {"normwise_rel_error": 1e-30}}])");
  const auto real =
      result(R"([{"key": "a", "status": "pass", "metrics": {"normwise_rel_error": 1e-9}}])");
  EXPECT_FALSE(compare(zero, tiny).gate_fails());
  EXPECT_TRUE(compare(zero, tiny).changes.empty());
  EXPECT_TRUE(compare(zero, real).gate_fails());
  EXPECT_FALSE(compare(zero, real, {0.1, 1e-8}).gate_fails());
}

// A judged metric the new record lacks is missing, as a case would be (a device's training run
// without a recipe it used to train, or a metric that became NaN or infinite, which a record
// leaves out); an unjudged one is not.
TEST(Compare, AJudgedMetricTheNewRecordLacksIsMissing) {
  const auto base = result(R"([{"key": "t", "status": "pass",
                               "metrics": {"eval_loss_error": 0.01, "nvfp4.eval_loss_error": 0.02,
                                           "seconds": 3}}])");
  const auto current =
      result(R"([{"key": "t", "status": "pass", "metrics": {"eval_loss_error": 0.01}}])");
  const Comparison c = compare(base, current);
  ASSERT_EQ(c.changes.size(), 1u);
  EXPECT_EQ(c.changes[0].kind, ChangeKind::missing);
  EXPECT_EQ(c.changes[0].metric, "nvfp4.eval_loss_error");
  EXPECT_EQ(c.changes[0].base, 0.02);
  EXPECT_FALSE(c.changes[0].current.has_value());
  EXPECT_TRUE(c.gate_fails());
  EXPECT_TRUE(compare(current, base).changes.empty());  // a metric gained is no change
}

TEST(Compare, StatusChangesAddedAndMissingCases) {
  const auto base = result(R"([{"key": "a", "status": "pass", "metrics": {}},
                              {"key": "b", "status": "fail", "metrics": {}},
                              {"key": "gone", "status": "pass", "metrics": {}}])");
  const auto current = result(R"([{"key": "a", "status": "fail", "metrics": {}},
                                 {"key": "b", "status": "pass", "metrics": {}},
                                 {"key": "new", "status": "pass", "metrics": {}}])");
  const Comparison c = compare(base, current);
  EXPECT_EQ(c.matched, 2u);
  EXPECT_EQ(c.count(ChangeKind::new_failure), 1u);
  EXPECT_EQ(c.count(ChangeKind::fixed), 1u);
  EXPECT_EQ(c.count(ChangeKind::missing), 1u);
  EXPECT_EQ(c.count(ChangeKind::added), 1u);
  EXPECT_TRUE(c.gate_fails());
  // Only an added case and a fixed one: the gate passes.
  const Comparison mild =
      compare(result(R"([{"key": "b", "status": "fail", "metrics": {}}])"), current);
  EXPECT_EQ(mild.count(ChangeKind::fixed), 1u);
  EXPECT_EQ(mild.count(ChangeKind::added), 2u);
  EXPECT_FALSE(mild.gate_fails());
}

TEST(Compare, UnjudgedMetricsAndMetricsOnlyTheNewRecordHasAreNotRegressions) {
  const auto base =
      result(R"([{"key": "t", "status": "pass", "metrics": {"fp32.eval_loss": 0.3}}])");
  const auto current = result(R"([{"key": "t", "status": "pass",
      "metrics": {"fp32.eval_loss": 0.9, "bound_ratio": 0.5}}])");
  EXPECT_TRUE(compare(base, current).changes.empty());
}

// A fingerprint parameter that changed is named with both values: on the same device a regression
// that fails the gate, between two devices a difference that does not. The status change it brings
// is reported as for any kind; a parameter only one record has is no change.
TEST(Compare, AChangedFingerprintFeatureIsARegressionOnTheSameDeviceOnly) {
  const auto on = [](const std::string& gpu, const std::string& features) {
    return parse_result(nlohmann::json::parse(R"({"schema": "ampbench.result/1", "suite": "t",
        "environment": {"gpu": ")" + gpu + R"(", "cpu": "Test CPU"}, "records": [
        {"key": "fingerprint/hopper-fp16/backend=cuda", "kind": "fingerprint", "status": "pass",
         "metrics": {}, "features": )" + features +
                                              R"(},
        {"key": "g", "status": "pass", "metrics": {"max_ulp": 3}}]})"),
                        "test.json");
  };
  const std::string h200 = "NVIDIA H200, compute capability 9.0";
  const auto base = on(h200, R"({"fraction_bits": "25", "fused_k": "16", "monotonic": "no"})");
  const auto changed = on(h200, R"({"fraction_bits": "24", "fused_k": "16"})");
  EXPECT_EQ(base.records[0].features.at("fraction_bits"), "25");
  const Comparison same = compare(base, changed);
  ASSERT_EQ(same.features.size(), 1u);
  EXPECT_EQ(same.features[0].key, "fingerprint/hopper-fp16/backend=cuda");
  EXPECT_EQ(same.features[0].feature, "fraction_bits");
  EXPECT_EQ(same.features[0].base, "25");
  EXPECT_EQ(same.features[0].current, "24");
  EXPECT_TRUE(same.features[0].regression);
  EXPECT_EQ(same.feature_regressions(), 1u);
  EXPECT_TRUE(same.changes.empty());  // no metric, no status change
  EXPECT_TRUE(same.gate_fails());
  EXPECT_FALSE(compare(base, base).gate_fails());

  const Comparison two = compare(base, on("NVIDIA H100, compute capability 9.0",
                                          R"({"fraction_bits": "24", "fused_k": "16"})"));
  ASSERT_EQ(two.features.size(), 1u);
  EXPECT_FALSE(two.features[0].regression);
  EXPECT_EQ(two.feature_regressions(), 0u);
  EXPECT_FALSE(two.gate_fails());

  // A record from before features were written: nothing to compare them with.
  const auto old = parse_result(nlohmann::json::parse(R"({"schema": "ampbench.result/1",
      "environment": {"gpu": ")" + h200 + R"(", "cpu": "Test CPU"}, "records": [
      {"key": "fingerprint/hopper-fp16/backend=cuda", "status": "pass", "metrics": {}}]})"),
                                "old.json");
  EXPECT_TRUE(old.records[0].features.empty());
  EXPECT_TRUE(compare(old, changed).features.empty());
}

TEST(Compare, ADocumentThatIsNotAResultRecordIsNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"[1]", "bad.json: not an ampbench.result/1 record: the document is not a JSON object"},
      {R"({"schema": "ampbench.audit/1", "cases": []})",
       "bad.json: not an ampbench.result/1 record: schema is \"ampbench.audit/1\""},
      {R"({"records": []})", "bad.json: not an ampbench.result/1 record: no schema member"},
      {R"({"schema": "ampbench.result/1"})",
       "bad.json: not an ampbench.result/1 record: records is not an array"},
      {R"({"schema": "ampbench.result/1", "records": [{"status": "pass", "metrics": {}}]})",
       "bad.json: not an ampbench.result/1 record: records[0].key is not a string"},
      {R"({"schema": "ampbench.result/1", "records": [{"key": "a", "status": "ok", "metrics": {}}]})",
       "bad.json: not an ampbench.result/1 record: records[0].status is not \"pass\" or \"fail\""},
      {R"({"schema": "ampbench.result/1", "records": [{"key": "a", "status": "pass"}]})",
       "bad.json: not an ampbench.result/1 record: records[0].metrics is not an object"},
      {R"({"schema": "ampbench.result/1", "records": [{"key": "a", "status": "pass",
          "metrics": {"max_ulp": "3"}}]})",
       "bad.json: not an ampbench.result/1 record: records[0].metrics.max_ulp is not a number"},
      {R"({"schema": "ampbench.result/1", "records": [{"key": "a", "status": "pass", "metrics": {}},
          {"key": "a", "status": "pass", "metrics": {}}]})",
       "bad.json: not an ampbench.result/1 record: records[1].key repeats a"},
      {R"({"schema": "ampbench.result/1", "records": [{"key": "a", "status": "pass",
          "metrics": {}, "features": ["fraction_bits"]}]})",
       "bad.json: not an ampbench.result/1 record: records[0].features is not an object"},
      {R"({"schema": "ampbench.result/1", "records": [{"key": "a", "status": "pass",
          "metrics": {}, "features": {"fraction_bits": 24}}]})",
       "bad.json: not an ampbench.result/1 record: records[0].features.fraction_bits is not a "
       "string"},
  };
  for (const auto& [text, message] : cases) {
    try {
      parse_result(nlohmann::json::parse(text), "bad.json");
      ADD_FAILURE() << "no error for " << text;
    } catch (const ResultError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
  EXPECT_THROW(load_result("/nonexistent/result.json"), ResultError);
}

// What a record says of its completeness is checked: only expected cases, and all of them when it
// says it is complete. A record without the members is of unknown completeness.
TEST(Compare, CompletenessIsReadAndChecked) {
  const auto parse = [](const std::string& members) {
    return parse_result(
        nlohmann::json::parse(R"({"schema": "ampbench.result/1", "records": [{"key": "a", )"
                              R"("status": "pass", "metrics": {}}])" +
                              members + "}"),
        "r.json");
  };
  EXPECT_FALSE(parse("").completeness);
  EXPECT_EQ(completeness_text(parse("").completeness),
            "completeness unknown (a record from before ampbench recorded which cases a run "
            "expects)");
  const auto partial =
      parse(R"(, "expected": {"cases": 2, "keys": ["a", "b"]}, "complete": false)");
  ASSERT_TRUE(partial.completeness);
  EXPECT_FALSE(partial.completeness->complete);
  EXPECT_EQ(partial.completeness->missing, std::vector<std::string>{"b"});
  EXPECT_EQ(completeness_text(partial.completeness), "PARTIAL: 1 of 2 cases ran, 1 missing: b");
  const auto complete = parse(R"(, "expected": {"keys": ["a"]}, "complete": true)");
  EXPECT_EQ(completeness_text(complete.completeness), "complete: 1 of 1 cases");
  const std::pair<const char*, const char*> bad[] = {
      {R"(, "expected": {"keys": ["a", "b"]}, "complete": true)",
       "r.json: not an ampbench.result/1 record: complete is true, but 1 expected case(s) have no "
       "record: b"},
      {R"(, "expected": {"keys": ["b"]}, "complete": false)",
       "r.json: not an ampbench.result/1 record: records[0].key a is not one of the expected "
       "cases"},
      {R"(, "complete": true)",
       "r.json: not an ampbench.result/1 record: complete without expected"},
      {R"(, "expected": {"keys": ["a"]}, "complete": 1)",
       "r.json: not an ampbench.result/1 record: complete is not true or false"},
      {R"(, "expected": {"keys": ["a", "a"]}, "complete": false)",
       "r.json: not an ampbench.result/1 record: expected.keys[1] repeats a"},
      {R"(, "expected": [], "complete": false)",
       "r.json: not an ampbench.result/1 record: expected is not an object with the array keys"},
  };
  for (const auto& [members, message] : bad) {
    try {
      parse(members);
      ADD_FAILURE() << "no error for " << members;
    } catch (const ResultError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
  EXPECT_EQ(key_list({"a", "b", "c"}, 2), "a, b and 1 more");
}

}  // namespace
}  // namespace ampbench::results
