// ampbench compare: two result records (ampbench.result/1) case by case, with the rule of
// harness/results/compare.hpp. Exit 1 on a regression, a new failure or a missing case.
#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <ostream>
#include <string>

#include "harness/cli/commands.hpp"
#include "harness/results/compare.hpp"

namespace ampbench::cli {
namespace {

constexpr const char* kCommand = "ampbench compare";

std::string number(const std::optional<double>& v) {
  return v ? fmt::format("{:.6g}", *v) : std::string("-");
}

}  // namespace

int run_compare(const CompareArgs& args, std::ostream& out, std::ostream& err) {
  if (args.tolerance && (!(*args.tolerance >= 0) || !std::isfinite(*args.tolerance))) {
    err << fmt::format("{}: --tolerance: {} is not a finite value >= 0\n", kCommand,
                       *args.tolerance);
    return kExitUsage;
  }
  if (!(args.floor >= 0) || !std::isfinite(args.floor)) {
    err << fmt::format("{}: --floor: {} is not a finite value >= 0\n", kCommand, args.floor);
    return kExitUsage;
  }
  results::ResultFile base;
  results::ResultFile current;
  try {
    base = results::load_result(args.base);
    current = results::load_result(args.current);
  } catch (const results::ResultError& e) {
    err << fmt::format("{}: {}\n", kCommand, e.what());
    return kExitUsage;
  }
  const double tolerance = args.tolerance.value_or(base.tolerance.value_or(0.1));
  const char* tolerance_source = args.tolerance   ? ""
                                 : base.tolerance ? " (the baseline suite's)"
                                                  : " (the default)";
  const results::Comparison comparison = results::compare(base, current, {tolerance, args.floor});

  out << fmt::format("base {} (suite {}), new {} (suite {}); tolerance {:g}{}, floor {:g}\n",
                     args.base, base.suite, args.current, current.suite, tolerance,
                     tolerance_source, args.floor);
  // A record that is partial, or does not say: its missing cases are what the gate then reports.
  for (const auto& [which, file] : {std::pair{"base", &base}, std::pair{"new", &current}}) {
    if (!file->completeness || !file->completeness->complete) {
      out << fmt::format("{}: {}\n", which, results::completeness_text(file->completeness));
    }
  }
  if (!comparison.changes.empty()) {
    out << fmt::format("\n{:<13}{:<28}{:>14}{:>14}  {}\n", "change", "metric", "base", "new",
                       "case");
    for (const auto& c : comparison.changes) {
      out << fmt::format("{:<13}{:<28}{:>14}{:>14}  {}\n", results::to_string(c.kind),
                         c.metric.empty() ? "-" : c.metric, number(c.base), number(c.current),
                         c.key);
    }
  }
  // A fingerprint parameter is a value in words: a change of it is named, not measured.
  if (!comparison.features.empty()) {
    out << fmt::format("\n{:<13}{:<28}{:>14}{:>14}  {}\n", "feature", "parameter", "base", "new",
                       "case");
    for (const auto& f : comparison.features) {
      out << fmt::format("{:<13}{:<28}{:>14}{:>14}  {}\n", f.regression ? "regression" : "differs",
                         f.feature, f.base, f.current, f.key);
    }
  }
  // Two devices: what each computed, case by case, whatever the gate says.
  const std::string base_device = results::label_of(base.device);
  const std::string new_device = results::label_of(current.device);
  const bool two_devices = base.device.kind != "unknown" && current.device.kind != "unknown" &&
                           base_device != new_device;
  if (args.side_by_side || two_devices) {
    out << fmt::format("\n{}: base on {}, new on {}\n",
                       two_devices ? "architecture comparison" : "side by side", base_device,
                       new_device);
    out << fmt::format("{:<28}{:>14}{:>14}{:>10}  {}\n", "metric", "base", "new", "new/base",
                       "case");
    for (const auto& row : results::side_by_side(base, current)) {
      const std::string ratio =
          row.base != 0 ? fmt::format("{:.3g}", row.current / row.base) : std::string("-");
      out << fmt::format("{:<28}{:>14.6g}{:>14.6g}{:>10}  {}\n", row.metric, row.base, row.current,
                         ratio, row.key);
    }
  }
  using results::ChangeKind;
  const std::size_t feature_differences =
      comparison.features.size() - comparison.feature_regressions();
  out << fmt::format(
      "\n{} case(s) matched: {} regression(s), {} new failure(s), {} missing, {} improvement(s), "
      "{} fixed, {} added{}{}. {}\n",
      comparison.matched, comparison.count(ChangeKind::regression),
      comparison.count(ChangeKind::new_failure), comparison.count(ChangeKind::missing),
      comparison.count(ChangeKind::improvement), comparison.count(ChangeKind::fixed),
      comparison.count(ChangeKind::added),
      comparison.feature_regressions() == 0
          ? ""
          : fmt::format(", {} fingerprint feature regression(s) (same device)",
                        comparison.feature_regressions()),
      feature_differences == 0
          ? ""
          : fmt::format(", {} fingerprint feature(s) differing between the devices",
                        feature_differences),
      comparison.gate_fails() ? "FAIL" : "PASS");
  return comparison.gate_fails() ? kExitFail : kExitOk;
}

}  // namespace ampbench::cli
