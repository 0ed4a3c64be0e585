// The HTML report on a hand-written result: its charts (how many, the points of a loss curve, the
// skipped step, the bound), the table with its failed row, escaping of hostile text, and that the
// page needs nothing from a network.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/results/report.hpp"
#include "harness/results/test/svg_scan.hpp"

namespace ampbench::results {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The <svg> elements of the page, in order.
std::vector<std::string> charts(const std::string& html) {
  std::vector<std::string> svgs;
  for (auto at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    svgs.push_back(html.substr(at, html.find("</svg>", at) - at));
  }
  return svgs;
}

using test::polyline_points;

nlohmann::json histogram(std::vector<int> counts) {
  nlohmann::json buckets = nlohmann::json::array();
  for (std::size_t k = 0; k < counts.size(); ++k) {
    const double hi = k == 0 ? 0 : static_cast<double>(1u << (k - 1));
    const double lo = k <= 1 ? hi : hi / 2 + 1;
    buckets.push_back({{"min", lo}, {"max", hi}, {"count", counts[k]}});
  }
  return buckets;
}

nlohmann::json audit(const std::string& shape, const std::string& policy, double error,
                     const std::string& status) {
  const std::string key = "audit/gemm/" + shape + "/" + policy + "/normal/seed=1";
  return {{"key", key},
          {"kind", "audit"},
          {"status", status},
          {"seconds", policy == "fp16" ? 2.0 : 1.0},
          {"breaches", status == "pass" ? nlohmann::json::array() : nlohmann::json{"too wrong"}},
          {"metrics", {{"normwise_rel_error", error}}},
          {"detail",
           {{"op", "gemm"},
            {"policy", policy},
            {"shape", shape},
            {"dist", "normal"},
            {"normwise_rel_error", error},
            {"bound_ratio", 0.25},
            {"ulp_histogram", histogram({10, 4, 0, 2})}}}};
}

// Five steps of a reference and two policies; amp-fp16 has a scaler and skips step 0; fp32's loss
// error is 0 at step 2, which its log axis cannot show.
nlohmann::json train() {
  nlohmann::json reference{{"policy", "reference"}, {"steps", nlohmann::json::array()}};
  nlohmann::json fp32{{"policy", "fp32"}, {"steps", nlohmann::json::array()}};
  nlohmann::json amp{{"policy", "amp-fp16"}, {"steps", nlohmann::json::array()}};
  for (int s = 0; s < 5; ++s) {
    const double loss = 2.0 - 0.25 * s;
    reference["steps"].push_back({{"step", s}, {"loss", loss}, {"skipped", false}});
    fp32["steps"].push_back(
        {{"step", s}, {"loss", loss}, {"skipped", false}, {"loss_rel_error", s == 2 ? 0.0 : 1e-7}});
    amp["steps"].push_back({{"step", s},
                            {"loss", loss * 1.001},
                            {"skipped", s == 0},
                            {"loss_rel_error", 1e-3},
                            {"scale", s == 0 ? 65536.0 : 32768.0}});
  }
  return {{"key", "train/mlp/steps=5/seed=1"},
          {"kind", "train"},
          {"status", "pass"},
          {"seconds", 5.0},
          {"breaches", nlohmann::json::array()},
          {"metrics", {{"fp32.eval_loss_error", 1e-7}}},
          {"detail",
           {{"config", {{"model", "mlp"}}},
            {"reference", reference},
            {"runs", nlohmann::json{fp32, amp}}}}};
}

ResultDocument html_sample() {
  nlohmann::json records{audit("8x8x16", "fp32", 1e-7, "pass"),
                         audit("8x8x32", "fp32", 2e-7, "pass"),
                         audit("8x8x16", "fp16", 1e-3, "fail"), train()};
  // A hostile key: markup in a key must reach the page as text.
  records[1]["key"] = "audit/<script>alert('x')</script>/\"&";
  return {"r.json",
          {{"schema", "ampbench.result/1"},
           {"suite", "quick<i>"},
           {"shard", "0/1"},
           {"environment", {{"ampbench_version", "0.1.0"}, {"cpu", "Test CPU"}}},
           {"records", records}}};
}

TEST(HtmlReport, HasAChartForEachViewOfTheRecords) {
  const std::vector<ResultDocument> results{html_sample()};
  const std::string html = html_report(results);
  const auto svgs = charts(html);
  // training: loss, loss error, scale; gemm: a histogram per shape (2), error against size, error
  // over the bound; the time.
  ASSERT_EQ(svgs.size(), 8u) << html;
  EXPECT_NE(svgs[0].find("mlp: training loss per step"), std::string::npos);
  EXPECT_EQ(polyline_points(svgs[0]), (std::vector<std::size_t>{5, 5, 5}));  // a step each
  // fp32's 0 at step 2 breaks its line in two and is named; amp-fp16's line is whole.
  EXPECT_EQ(polyline_points(svgs[1]), (std::vector<std::size_t>{2, 2, 5}));
  EXPECT_NE(svgs[1].find("fp32: 1 value 0 (not drawn on the log axis)"), std::string::npos);
  EXPECT_EQ(polyline_points(svgs[2]), (std::vector<std::size_t>{5}));  // only amp-fp16 scales
  EXPECT_EQ(count(svgs[2], "class=\"cross\""), 2u);  // the skipped step, and its legend entry
  EXPECT_NE(svgs[2].find(">2^16<"), std::string::npos);
  EXPECT_NE(svgs[3].find("gemm 8x8x16: ulp error of the outputs"), std::string::npos);
  EXPECT_EQ(count(svgs[3], "class=\"bar\""), 6u);  // fp32 and fp16: 3 non-empty buckets each
  EXPECT_NE(svgs[5].find("normwise error against problem size"), std::string::npos);
  EXPECT_EQ(polyline_points(svgs[5]), (std::vector<std::size_t>{2}));  // fp32 at K = 16 and 32
  EXPECT_EQ(count(svgs[6], "class=\"rule\""), 1u);                     // the bound
  EXPECT_NE(svgs[7].find("Time per policy"), std::string::npos);
}

// A recipe run draws its per-tensor scales, a line per layer and role, the first GEMM that
// quantizes each; a recipe with per-tile scales only draws amaxes; a policy's run draws neither.
TEST(HtmlReport, ARecipeRunDrawsItsScalesPerTensor) {
  nlohmann::json record = train();
  auto& runs = record["detail"]["runs"];
  nlohmann::json delayed{{"policy", "fp8-delayed"}, {"recipe_arch", "hopper"}, {"steps", {}}};
  nlohmann::json block{{"policy", "fp8-block"}, {"recipe_arch", "hopper"}, {"steps", {}}};
  for (int s = 0; s < 3; ++s) {
    const auto tensor = [&](const char* gemm, const char* role, nlohmann::json scale) {
      return nlohmann::json{{"parameter", "w1"}, {"gemm", gemm},   {"role", role},
                            {"amax", 2.0 + s},   {"scale", scale}, {"elements", 64}};
    };
    const double x_scale = s == 0 ? 1.0 : 448.0 / (1 + s);
    delayed["steps"].push_back({{"step", s},
                                {"loss", 1.0},
                                {"scaled",
                                 {tensor("fprop", "x", x_scale), tensor("fprop", "w", 64.0),
                                  tensor("wgrad", "x", 999.0), tensor("wgrad", "dy", 1024.0)}}});
    block["steps"].push_back(
        {{"step", s}, {"loss", 1.0}, {"scaled", {tensor("fprop", "x", nullptr)}}});
  }
  runs.push_back(delayed);
  runs.push_back(block);
  const std::string html =
      html_report(std::vector<ResultDocument>{{"r.json",
                                               {{"schema", "ampbench.result/1"},
                                                {"suite", "s"},
                                                {"shard", "0/1"},
                                                {"records", {record}}}}});
  const auto svgs = charts(html);
  std::vector<std::string> recipe;
  for (const auto& svg : svgs) {
    if (svg.find("per tensor") != std::string::npos) recipe.push_back(svg);
  }
  ASSERT_EQ(recipe.size(), 2u) << html;
  EXPECT_NE(recipe[0].find("mlp: scale per tensor, fp8-delayed (GEMMs on hopper)"),
            std::string::npos);
  // w1 x (fprop's, not wgrad's 999), w1 w, w1 dy: three steps each.
  EXPECT_EQ(polyline_points(recipe[0]), (std::vector<std::size_t>{3, 3, 3}));
  EXPECT_NE(recipe[1].find("mlp: amax per tensor, fp8-block (GEMMs on hopper)"), std::string::npos);
  EXPECT_EQ(polyline_points(recipe[1]), (std::vector<std::size_t>{3}));
}

// A --sensitivity ranking is a table per recipe under its training run: over one seed the shares
// alone, over several the mean and each seed's share; a run without one has no such table.
TEST(HtmlReport, ASensitivityRankingIsATablePerRecipe) {
  nlohmann::json record = train();
  const auto layer = [](const char* name, double removed, nlohmann::json by_seed) {
    return nlohmann::json{
        {"parameter", name},        {"run", std::string("nvfp4+bf16[") + name + "]"},
        {"mean_loss_error", 0.004}, {"eval_loss_error", nullptr},
        {"removed", removed},       {"removed_by_seed", std::move(by_seed)}};
  };
  record["detail"]["sensitivity"] = {
      {{"recipe", "nvfp4"},
       {"run", "nvfp4"},
       {"seeds", {1, 2, 3}},
       {"mean_loss_error", 0.0125},
       {"layers", {layer("w1", 0.48, {0.53, 0.41, 0.49}), layer("w2", -0.05, {0.1, -0.2, 0.05})}}},
      {{"recipe", "mxfp4"},
       {"run", "mxfp4"},
       {"seeds", {1}},
       {"mean_loss_error", 0.02},
       {"layers", {layer("w2", 0.3, {0.3})}}}};
  const auto html_of = [](const nlohmann::json& r) {
    return html_report(std::vector<ResultDocument>{
        {"r.json",
         {{"schema", "ampbench.result/1"}, {"suite", "s"}, {"shard", "0/1"}, {"records", {r}}}}});
  };
  const std::string html = html_of(record);
  EXPECT_EQ(count(html, "<table class=\"sensitivity\">"), 2u) << html;
  EXPECT_NE(html.find("nvfp4: layers kept in bf16 one at a time, ranked by the mean over the seeds "
                      "of the share of the recipe&#39;s loss error each removes (the mean over the "
                      "steps of the loss error; nvfp4 alone: 0.0125, the mean over seeds 1, 2, 3)"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<td class=\"key\">w1</td><td>nvfp4+bf16[w1]</td><td class=\"num\">+48%</td>"
                      "<td class=\"num\">+53% +41% +49%</td><td class=\"num\">0.004</td><td "
                      "class=\"num\">-</td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("+10% -20% +5%"), std::string::npos);
  // One seed: no per-seed column.
  EXPECT_NE(html.find("mxfp4: layers kept in bf16 one at a time, ranked by the share"),
            std::string::npos);
  EXPECT_NE(html.find("<td class=\"key\">w2</td><td>nvfp4+bf16[w2]</td><td class=\"num\">+30%</td>"
                      "<td class=\"num\">0.004</td>"),
            std::string::npos)
      << html;
  EXPECT_EQ(count(html_of(train()), "class=\"sensitivity\""), 0u);
}

TEST(HtmlReport, TableHighlightsFailuresAndTextIsEscaped) {
  const std::vector<ResultDocument> results{html_sample()};
  const std::string html = html_report(results);
  EXPECT_EQ(count(html, "<tr class=\"fail\">"), 1u);
  EXPECT_EQ(count(html, "<tr class=\"pass\">"), 3u);
  EXPECT_NE(html.find("<td>too wrong</td>"), std::string::npos);
  EXPECT_NE(html.find("<li><b>audit/gemm/8x8x16/fp16/normal/seed=1</b>: too wrong</li>"),
            std::string::npos);
  EXPECT_NE(html.find("4 case(s), 3 passed, 1 failed"), std::string::npos);
  EXPECT_NE(html.find("audit/&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;/&quot;&amp;"),
            std::string::npos);
  EXPECT_NE(html.find("Suite quick&lt;i&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<i>"), std::string::npos);
}

TEST(HtmlReport, NeedsNothingFromANetwork) {
  const std::vector<ResultDocument> results{html_sample()};
  const std::string html = html_report(results);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* reference : {"http", "//", "src=", "href=", "url(", "@import", "<link"}) {
    EXPECT_EQ(html.find(reference), std::string::npos) << reference;
  }
}

TEST(HtmlReport, SaysWhatARecordDoesNotCarry) {
  auto result = html_sample();
  nlohmann::json& runs = result.document["records"][3]["detail"]["runs"];
  runs.erase(1);                                      // fp32 only: no scaler
  result.document["records"][0]["detail"] = nullptr;  // a case that threw
  const std::vector<ResultDocument> results{result};
  const std::string html = html_report(results);
  EXPECT_NE(html.find("No policy of this run uses a loss scaler"), std::string::npos);
  EXPECT_NE(html.find("cases without a record"), std::string::npos);
}

}  // namespace
}  // namespace ampbench::results

namespace ampbench::results {
namespace {

// A profile run's record: the median step split by the phases' shares, the rest on top.
TEST(HtmlReport, AProfileRunIsAStackedBarPerPolicyByPhase) {
  const auto run = [](const char* policy, double step_ms, double forward, double backward) {
    return nlohmann::json{{"policy", policy},
                          {"step_ms", {{"median", step_ms}}},
                          {"phase_share", {{"forward", forward}, {"backward", backward}}}};
  };
  const nlohmann::json record{
      {"key", "profile/mlp/steps=3/warmup=1/seed=1"},
      {"kind", "profile"},
      {"status", "pass"},
      {"seconds", 1.0},
      {"breaches", nlohmann::json::array()},
      {"metrics", {{"fp32.step_ms", 10.0}}},
      {"detail",
       {{"schema", "ampbench.profile-run/1"},
        {"backend", "cpu"},
        {"model", "mlp"},
        {"runs", {run("fp32", 10.0, 0.4, 0.4), run("amp-fp16", 5.0, 0.5, 0.5)}}}}};
  const std::vector<ResultDocument> results{
      {"p.json",
       {{"schema", "ampbench.result/1"}, {"suite", "p"}, {"shard", "0/1"}, {"records", {record}}}}};
  const std::string html = html_report(results);
  const auto svgs = charts(html);
  ASSERT_EQ(svgs.size(), 2u) << html;  // the profile, the time of the cases
  const std::string& profile = svgs[0];
  EXPECT_NE(profile.find("Median step time per policy, by phase"), std::string::npos);
  for (const char* bar : {"forward · fp32: 4<", "backward · fp32: 4<", "rest · fp32: 2<",
                          "forward · amp-fp16: 2.5<", "rest · amp-fp16: 0<", "clip · fp32: 0<"}) {
    EXPECT_NE(profile.find(bar), std::string::npos) << bar;
  }
  EXPECT_NE(html.find("<h3>Profile: profile/mlp/steps=3/warmup=1/seed=1</h3>"), std::string::npos);
}

}  // namespace
}  // namespace ampbench::results
