// The report writers on a hand-written result: golden Markdown, and JUnit XML checked element by
// element (counts, the failure of a failed record, escaping).
#include "harness/results/report.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ampbench::results {
namespace {

ResultDocument sample() {
  return {"r.json", nlohmann::json::parse(R"({
    "schema": "ampbench.result/1", "suite": "quick", "shard": "0/1",
    "environment": {"ampbench_version": "0.1.0", "git_revision": "abc123", "compiler": "GNU 12",
                    "cpu": "Test CPU", "started": "2026-11-29T10:00:00Z",
                    "finished": "2026-11-29T10:01:00Z"},
    "records": [
      {"key": "audit/gemm/8x8x8/fp16/normal/seed=1", "kind": "audit", "status": "pass",
       "seconds": 0.25, "breaches": [],
       "metrics": {"normwise_rel_error": 0.00238, "max_ulp": 21114,
                   "fraction_correctly_rounded": 0.104}},
      {"key": "train/mlp/steps=20/seed=1", "kind": "train", "status": "fail", "seconds": 12.5,
       "breaches": ["fp16: eval loss +9% (budget 5%) <&>"],
       "metrics": {"fp16.eval_loss_error": 0.09, "fp16.eval_accuracy": 0.75,
                   "reference.eval_loss": 1.0}}]})")};
}

TEST(Report, MarkdownTableHasARowPerRecord) {
  const std::vector<ResultDocument> results{sample()};
  EXPECT_EQ(markdown_report(results),
            "## Suite quick (shard 0/1) — r.json\n\n"
            "ampbench 0.1.0 (abc123), GNU 12, Test CPU; 2026-11-29T10:00:00Z to "
            "2026-11-29T10:01:00Z\n\n"
            "| case | kind | status | main metrics | breaches |\n|---|---|---|---|---|\n"
            "| audit/gemm/8x8x8/fp16/normal/seed=1 | audit | PASS | normwise 0.00238, max ulp "
            "21114, CR 10.4% |  |\n"
            "| train/mlp/steps=20/seed=1 | train | **FAIL** | fp16.eval_accuracy 0.750, "
            "fp16.eval_loss_error 0.09 | fp16: eval loss +9% (budget 5%) <&> |\n"
            "\n2 case(s), 1 failed.\n\n");
}

TEST(Report, JunitHasATestCasePerRecordAndEscapes) {
  const std::vector<ResultDocument> results{sample(), sample()};
  const std::string xml = junit_report(results);
  EXPECT_NE(xml.find("<testsuites tests=\"4\" failures=\"2\">"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testsuite name=\"quick\" tests=\"2\" failures=\"1\" time=\"12.750\">"),
            std::string::npos);
  EXPECT_NE(xml.find("<testcase classname=\"ampbench.audit\" "
                     "name=\"audit/gemm/8x8x8/fp16/normal/seed=1\" time=\"0.250\"/>"),
            std::string::npos);
  EXPECT_NE(xml.find("<failure message=\"fp16: eval loss +9% (budget 5%) &lt;&amp;&gt;\">"),
            std::string::npos);
  EXPECT_EQ(xml.find("<&>"), std::string::npos);  // nothing unescaped
  std::size_t cases = 0;
  for (std::size_t at = xml.find("<testcase "); at != std::string::npos;
       at = xml.find("<testcase ", at + 1)) {
    ++cases;
  }
  EXPECT_EQ(cases, 4u);
}

}  // namespace
}  // namespace ampbench::results
