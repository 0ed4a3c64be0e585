// The report writers on a hand-written result: golden Markdown, and JUnit XML checked element by
// element (counts, the failure of a failed record, escaping).
#include "harness/results/report.hpp"

#include <fmt/format.h>
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
                   "reference.eval_loss": 1.0}}],
    "expected": {"cases": 2, "keys": ["audit/gemm/8x8x8/fp16/normal/seed=1",
                                      "train/mlp/steps=20/seed=1"]},
    "complete": true})")};
}

// The sample as a run that stopped after its first case.
ResultDocument partial() {
  ResultDocument r = sample();
  r.document["records"].erase(1);
  r.document["complete"] = false;
  return r;
}

TEST(Report, APartialRecordSaysSoAndNamesWhatIsMissing) {
  const std::vector<ResultDocument> results{partial()};
  const std::string markdown = markdown_report(results);
  EXPECT_NE(markdown.find("## Suite quick (shard 0/1) — PARTIAL RUN — r.json\n"), std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("**PARTIAL: 1 of 2 cases ran, 1 missing: train/mlp/steps=20/seed=1**"),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("1 case(s), 0 failed, 1 not run (the run stopped before them)."),
            std::string::npos)
      << markdown;
  const std::string xml = junit_report(results);
  EXPECT_NE(xml.find("<testsuites tests=\"2\" failures=\"0\" errors=\"1\">"), std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testcase classname=\"ampbench.train\" name=\"train/mlp/steps=20/seed=1\" "
                     "time=\"0\">\n      <error message=\"not run: the run stopped before this "
                     "case (a partial record)\"/>\n    </testcase>"),
            std::string::npos)
      << xml;
  const std::string html = html_report(results);
  EXPECT_NE(html.find("Suite quick · shard 0/1 · PARTIAL RUN</h2>"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"badge fail\">PARTIAL</span>"), std::string::npos);
  // A record from before the members: said to be of unknown completeness, nothing invented.
  ResultDocument old = sample();
  old.document.erase("expected");
  old.document.erase("complete");
  const std::vector<ResultDocument> olds{old};
  EXPECT_NE(markdown_report(olds).find("completeness unknown (a record from before ampbench "
                                       "recorded which cases a run expects)"),
            std::string::npos);
  EXPECT_NE(junit_report(olds).find("errors=\"0\""), std::string::npos);
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

// A training run's --sensitivity ranking: a section per recipe after the table, with each seed's
// share when it is over several.
TEST(Report, MarkdownHasATrainingRunsSensitivityRankings) {
  ResultDocument r = sample();
  r.document["records"][1]["detail"] = nlohmann::json::parse(R"({
    "sensitivity": [
      {"recipe": "nvfp4", "run": "nvfp4", "seeds": [1, 2], "mean_loss_error": 0.0125,
       "layers": [{"parameter": "w1", "run": "nvfp4+bf16[w1]", "mean_loss_error": 0.004,
                   "eval_loss_error": null, "removed": 0.48, "removed_by_seed": [0.53, 0.43]}]},
      {"recipe": "mx|fp4", "run": "mx|fp4", "seeds": [1], "mean_loss_error": 0.02,
       "layers": [{"parameter": "w2", "run": "mx|fp4+bf16[w2]", "mean_loss_error": 0.014,
                   "eval_loss_error": 0.01, "removed": -0.3, "removed_by_seed": [-0.3]}]}]})");
  const std::string markdown = markdown_report(std::vector<ResultDocument>{r});
  EXPECT_NE(
      markdown.find(
          "\n2 case(s), 1 failed.\n\n### Sensitivity train/mlp/steps=20/seed=1: nvfp4\n\n"
          "nvfp4: layers kept in bf16 one at a time, ranked by the mean over the seeds of the "
          "share "
          "of the recipe's loss error each removes (the mean over the steps of the loss error; "
          "nvfp4 alone: 0.0125, the mean over seeds 1, 2).\n\n"
          "| layer | run | removed | at each seed | mean loss error | eval loss error |\n"
          "|---|---|---|---|---|---|\n"
          "| w1 | nvfp4+bf16[w1] | +48% | +53% +43% | 0.004 | - |\n\n"
          "### Sensitivity train/mlp/steps=20/seed=1: mx\\|fp4\n\n"),
      std::string::npos)
      << markdown;
  EXPECT_NE(
      markdown.find("| layer | run | removed | mean loss error | eval loss error |\n"
                    "|---|---|---|---|---|\n| w2 | mx\\|fp4+bf16[w2] | -30% | 0.014 | 0.01 |"),
      std::string::npos)
      << markdown;
  // The sample's records hold none: no such section.
  EXPECT_EQ(markdown_report(std::vector<ResultDocument>{sample()}).find("### Sensitivity"),
            std::string::npos);
}

// A record of both backends (train --backend all) ranks on each: a section per recipe and
// backend, its runs named RUN@BACKEND as `train` prints them. A record of one backend names none.
TEST(Report, MarkdownNamesEachBackendsRankingOfARunOnBoth) {
  ResultDocument r = sample();
  const auto detail = [](const char* backend) {
    nlohmann::json d = nlohmann::json::parse(R"({
      "sensitivity": [
        {"recipe": "nvfp4", "run": "nvfp4", "backend": "cpu", "seeds": [1],
         "mean_loss_error": 0.0125,
         "layers": [{"parameter": "w1", "run": "nvfp4+bf16[w1]", "mean_loss_error": 0.004,
                     "eval_loss_error": 0.01, "removed": 0.48, "removed_by_seed": [0.48]}]},
        {"recipe": "nvfp4", "run": "nvfp4", "backend": "cuda", "seeds": [1],
         "mean_loss_error": 0.02,
         "layers": [{"parameter": "w1", "run": "nvfp4+bf16[w1]", "mean_loss_error": 0.014,
                     "eval_loss_error": 0.01, "removed": 0.3, "removed_by_seed": [0.3]}]}]})");
    d["backend"] = backend;
    return d;
  };
  r.document["records"][1]["detail"] = detail("all");
  const std::string markdown = markdown_report(std::vector<ResultDocument>{r});
  for (const char* backend : {"cpu", "cuda"}) {
    EXPECT_NE(markdown.find(fmt::format("### Sensitivity train/mlp/steps=20/seed=1: nvfp4 on {}\n\n"
                                        "nvfp4 on {}: layers kept in bf16",
                                        backend, backend)),
              std::string::npos)
        << markdown;
    EXPECT_NE(markdown.find(fmt::format("nvfp4@{} alone", backend)), std::string::npos) << markdown;
    EXPECT_NE(markdown.find(fmt::format("| w1 | nvfp4+bf16[w1]@{} |", backend)), std::string::npos)
        << markdown;
  }
  r.document["records"][1]["detail"] = detail("cuda");
  const std::string one = markdown_report(std::vector<ResultDocument>{r});
  EXPECT_EQ(one.find("@"), std::string::npos) << one;
  EXPECT_EQ(one.find(" on cuda"), std::string::npos) << one;
}

TEST(Report, JunitHasATestCasePerRecordAndEscapes) {
  const std::vector<ResultDocument> results{sample(), sample()};
  const std::string xml = junit_report(results);
  EXPECT_NE(xml.find("<testsuites tests=\"4\" failures=\"2\" errors=\"0\">"), std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testsuite name=\"quick\" tests=\"2\" failures=\"1\" errors=\"0\" "
                     "time=\"12.750\">"),
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
