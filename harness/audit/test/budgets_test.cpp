// Budgets: the file format and its error messages, and which budgets a summary breaks.
#include "harness/audit/budgets.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace ampbench::audit {
namespace {

std::string error_of(std::string_view text) {
  try {
    parse_budgets(text, "b.toml");
  } catch (const BudgetError& e) {
    return e.what();
  }
  return "(no error)";
}

// One [[budget]] table: the header, then op, policy, metric, limit (its fifth line) and source,
// then the backend where one is given.
std::string budget(std::string_view op, std::string_view metric, std::string_view limit,
                   std::string_view policy = "fp16", std::string_view source = "x",
                   std::string_view backend = "") {
  return fmt::format(
      "[[budget]]\nop = \"{}\"\npolicy = \"{}\"\nmetric = \"{}\"\nlimit = {}\nsource = \"{}\"\n{}",
      op, policy, metric, limit, source,
      backend.empty() ? std::string() : fmt::format("backend = \"{}\"\n", backend));
}

TEST(Budgets, Parse) {
  const auto budgets = parse_budgets(R"(
[[budget]]
op = "gemm"
policy = "fp16"
metric = "max_ulp"
limit = 16
source = "measured 4, margin 4x"

[[budget]]
op = "*"
policy = "amp-fp16"
metric = "fraction_correctly_rounded"
limit = 0.5
source = "measured 0.7"
)",
                                     "b.toml");
  ASSERT_EQ(budgets.size(), 2u);
  EXPECT_EQ(budgets[0].op, "gemm");
  EXPECT_EQ(budgets[0].metric, Metric::max_ulp);
  EXPECT_EQ(budgets[0].limit, 16.0);
  EXPECT_EQ(budgets[0].origin, "b.toml:2:1");
  EXPECT_EQ(budgets[1].metric, Metric::fraction_correctly_rounded);
}

TEST(Budgets, ErrorsNameFileLineAndProblem) {
  EXPECT_EQ(error_of("[[budget]]\nop = \"gemm\"\npolicy = \"fp16\"\nmetric = \"max_ulps\"\nlimit = "
                     "1\nsource = \"x\"\n"),
            "b.toml:1:1: unknown metric 'max_ulps' (known: max_ulp, mean_ulp, normwise_rel_error, "
            "componentwise_rel_error, bound_ratio, fraction_correctly_rounded, mismatches)");
  EXPECT_EQ(error_of("[[budget]]\nop = \"gemm\"\npolicy = \"fp16\"\nmetric = \"max_ulp\"\n"
                     "source = \"x\"\n"),
            "b.toml:1:1: 'limit' is required and must be a number");
  EXPECT_EQ(error_of("[[budget]]\nop = \"gemm\"\nlimits = 3\n"),
            "b.toml:3:10: unknown key 'limits' (expected op, policy, metric, limit, source, "
            "backend)");
  EXPECT_EQ(error_of("[[budget]]\nop = \"gemm\"\npolicy = \"tf32\"\nmetric = \"max_ulp\"\n"
                     "limit = 1\nsource = \"x\"\nbackend = \"gpu\"\n"),
            "b.toml:7:11: backend 'gpu' is none of cpu, cuda (or \"*\")");
  EXPECT_EQ(error_of("[budgets]\n"),
            "b.toml:1:1: unknown key 'budgets' (expected [[budget]] tables)");
  EXPECT_NE(error_of("[[budget]\n").find("b.toml:1:"), std::string::npos);
  EXPECT_THROW(load_budgets("/nonexistent/b.toml"), BudgetError);
}

// Nothing may switch a gate off without a word: a directory read as an empty file, a limit that
// is never broken (NaN) or cannot be (a fraction above 1), an op or a policy that does not exist.
TEST(Budgets, NothingSwitchesAGateOffSilently) {
  try {
    load_budgets("/tmp");
    ADD_FAILURE() << "a directory read as budgets";
  } catch (const BudgetError& e) {
    EXPECT_STREQ(e.what(), "/tmp: is a directory");
  }
  EXPECT_EQ(error_of(budget("gemm", "max_ulp", "nan")),
            "b.toml:5:9: limit nan is not a finite number");
  EXPECT_EQ(error_of(budget("gemm", "max_ulp", "-inf")),
            "b.toml:5:9: limit -inf is not a finite number");
  EXPECT_EQ(error_of(budget("gemm", "fraction_correctly_rounded", "1.5")),
            "b.toml:5:9: limit 1.5 of fraction_correctly_rounded is outside [0, 1]");
  EXPECT_EQ(error_of(budget("gemm", "fraction_correctly_rounded", "-0.1")),
            "b.toml:5:9: limit -0.1 of fraction_correctly_rounded is outside [0, 1]");
  EXPECT_EQ(error_of(budget("gemm", "fraction_correctly_rounded", "1")), "(no error)");
  const std::string misspelt = error_of(budget("gemmm", "max_ulp", "4"));
  EXPECT_TRUE(misspelt.starts_with("b.toml:2:6: op 'gemmm' is no op of the catalog (known: gemm, "))
      << misspelt;
  EXPECT_TRUE(misspelt.ends_with("; or \"*\")")) << misspelt;
  EXPECT_EQ(error_of(budget("*", "max_ulp", "4")), "(no error)");

  const auto budgets = parse_budgets(
      budget("gemm", "max_ulp", "4") + "\n" + budget("*", "max_ulp", "4", "amp-fp61"), "b.toml");
  ASSERT_EQ(budgets.size(), 2u);
  ASSERT_EQ(budgets[1].policy, "amp-fp61");
  try {
    check_policies(budgets, {"fp16", "mine"});
    ADD_FAILURE() << "a budget for no policy accepted";
  } catch (const BudgetError& e) {
    EXPECT_STREQ(e.what(),
                 "b.toml:8:1: policy 'amp-fp61' is no policy of this run (built-in: fp32, tf32, "
                 "fp16, bf16, amp-fp16, amp-bf16, half-model, bf16-model, 'mine'; or \"*\"; a "
                 "policy of your own is "
                 "known by its name when the run uses it)");
  }
  EXPECT_NO_THROW(check_policies(budgets, {"amp-fp61"}));
}

// A budget that one_ulp_off() breaks in every fp16 case (half its outputs correctly rounded), at
// the end of a test's budgets file.
constexpr const char* kFp16FractionBudget = R"(
[[budget]]
op = "*"
policy = "fp16"
metric = "fraction_correctly_rounded"
limit = 0.75
source = "measured"
)";

// A budget one_ulp_off() breaks in gemm's cases under every policy, at the start of a test's
// budgets file (on line 2).
std::string gemm_correctly_rounded() {
  return "\n" + budget("gemm", "max_ulp", "0", "*", "must be correctly rounded");
}

metrics::ErrorSummary one_ulp_off() {
  const std::vector<double> computed{1.0, 1.0 + 0x1p-10}, rounded{1.0, 1.0}, exact{1.0, 1.0};
  return metrics::summarize(numeric::formats::fp16, computed, rounded, exact);
}

TEST(Budgets, CheckFindsBreachesOfApplicableBudgetsOnly) {
  const auto budgets =
      parse_budgets(gemm_correctly_rounded() + "\n" +
                        budget("softmax", "max_ulp", "0", "fp16", "other op") + kFp16FractionBudget,
                    "b.toml");
  const auto breaches = check(budgets, "gemm", "fp16", "cpu", one_ulp_off());
  ASSERT_EQ(breaches.size(), 2u);
  EXPECT_EQ(breaches[0].message,
            "gemm fp16: max_ulp 1 > 0 (must be correctly rounded; b.toml:2:1)");
  EXPECT_EQ(breaches[1].message,
            "gemm fp16: fraction_correctly_rounded 0.5 < 0.75 (measured; b.toml:16:1)");
  EXPECT_TRUE(check(budgets, "gemm", "fp16", "cpu",
                    metrics::summarize(numeric::formats::fp16, std::vector<double>{1.0},
                                       std::vector<double>{1.0}, std::vector<double>{1.0}))
                  .empty());
}

// A budget naming a backend applies to that backend's cases alone, and there it replaces the
// budgets of the same metric that name none; the other metrics' budgets still apply.
TEST(Budgets, ABackendsOwnBudgetReplacesTheGeneralOneOfItsMetric) {
  const auto budgets =
      parse_budgets(gemm_correctly_rounded() + "\n" +
                        budget("gemm", "max_ulp", "1", "fp16", "measured on the device", "cuda") +
                        kFp16FractionBudget,
                    "b.toml");
  ASSERT_EQ(budgets[1].backend, "cuda");
  EXPECT_EQ(budgets[0].backend, "*");
  const auto on = [&](std::string_view backend) {
    std::vector<std::string> messages;
    for (const Breach& b : check(budgets, "gemm", "fp16", backend, one_ulp_off())) {
      messages.push_back(b.message);
    }
    return messages;
  };
  EXPECT_EQ(on("cpu"),
            (std::vector<std::string>{"gemm fp16: max_ulp 1 > 0 (must be correctly rounded; "
                                      "b.toml:2:1)",
                                      "gemm fp16: fraction_correctly_rounded 0.5 < 0.75 (measured; "
                                      "b.toml:17:1)"}));
  EXPECT_EQ(on("cuda"),
            (std::vector<std::string>{"gemm fp16: fraction_correctly_rounded 0.5 < 0.75 (measured; "
                                      "b.toml:17:1)"}));
  EXPECT_EQ(on(""), on("cpu"));  // no backend: the budgets naming none
}

TEST(Budgets, BrokenBoundsAndMismatchesAlwaysFail) {
  const std::vector<double> computed{1.0, std::numeric_limits<double>::infinity()};
  const std::vector<double> rounded{1.0 + 0x1p-10, 2.0}, exact{1.0 + 0x1p-10, 2.0};
  const std::vector<double> bounds{0x1p-12, 1.0};
  const auto summary =
      metrics::summarize(numeric::formats::fp16, computed, rounded, exact, {bounds, std::nullopt});
  const auto breaches = check({}, "dot", "fp16", "cpu", summary);
  ASSERT_EQ(breaches.size(), 2u);
  EXPECT_EQ(breaches[0].budget.metric, Metric::bound_ratio);
  EXPECT_EQ(breaches[0].value, 4.0);
  EXPECT_EQ(breaches[1].budget.metric, Metric::mismatches);
  EXPECT_EQ(breaches[1].value, 1.0);
}

}  // namespace
}  // namespace ampbench::audit
