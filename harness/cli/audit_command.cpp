// ampbench audit: how wrong is op X under precision policy P, on inputs like these? Every case is
// checked against its correctly rounded reference and the budgets. Bad input is reported before
// any work starts; the --json file is rewritten (atomically) after every case, so the records of
// finished cases stay valid whatever happens to later ones.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "harness/audit/audit.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/json_file.hpp"
#include "harness/cli/policy_options.hpp"
#include "harness/cli/text.hpp"
#include "harness/inputs/distributions.hpp"

namespace ampbench::cli {
namespace {

constexpr const char* kCommand = "ampbench audit";
constexpr const char* kDefaultBudgets = "suites/budgets.toml";

std::string number(const std::optional<double>& v, const char* format = "{:.3g}") {
  return v ? fmt::format(fmt::runtime(format), *v) : std::string("-");
}

// The widths of the table's first and third columns: the longest op name and shape (convolutions
// with their options), and two blanks.
struct Widths {
  std::size_t op = 24;
  std::size_t shape = 16;
};

void write_row(std::ostream& out, const Widths& w, const audit::CaseResult& r) {
  const auto& s = r.summary;
  const auto& e = s.output_events;
  out << fmt::format(
      "{:<{}}{:<10}{:<{}}{:<9}{:>9}{:>10}{:>11}{:>9}{:>8}{:>8}{:>8}{:>6}  {}\n", r.op, w.op,
      r.policy, r.shape, w.shape, r.distribution, s.max_ulp ? fmt::format("{}", *s.max_ulp) : "-",
      number(s.mean_ulp), number(s.normwise_rel_error), number(s.bound_ratio),
      number(s.fraction_correctly_rounded
                 ? std::optional<double>(100 * *s.fraction_correctly_rounded)
                 : std::nullopt,
             "{:.1f}"),
      e[numeric::RoundingEvent::underflow] + e[numeric::RoundingEvent::flush_to_zero],
      e[numeric::RoundingEvent::overflow] + e[numeric::RoundingEvent::saturation],
      e[numeric::RoundingEvent::nan], r.pass() ? "PASS" : "FAIL");
}

// Writes the records so far, so that the file is always a complete JSON document.
bool write_records(const std::string& path, const nlohmann::json& records, std::ostream& err) {
  if (auto problem = write_json_file(
          path, nlohmann::json{{"schema", "ampbench.audit/1"}, {"cases", records}})) {
    err << fmt::format("{}: --json {}: {}\n", kCommand, path, *problem);
    return false;
  }
  return true;
}

}  // namespace

int run_audit(const AuditArgs& args, std::ostream& out, std::ostream& err) {
  // ---- everything is checked before any work starts -----------------------------------------
  if (args.op.empty() == !args.all) {
    err << kCommand << ": give exactly one of --op OP and --all\n";
    return kExitUsage;
  }
  if (args.backend != "cpu") {
    err << fmt::format("{}: --backend: unknown backend '{}' (available: cpu)\n", kCommand,
                       args.backend);
    return kExitUsage;
  }
  if (args.all && !args.shape.empty()) {
    err << kCommand << ": --shape goes with --op (--all uses each op's default shape)\n";
    return kExitUsage;
  }
  backends::cpu::Summation summation = backends::cpu::Summation::sequential;
  if (args.summation == "pairwise") {
    summation = backends::cpu::Summation::pairwise;
  } else if (args.summation != "sequential") {
    err << fmt::format("{}: --summation: unknown order '{}' (sequential, pairwise)\n", kCommand,
                       args.summation);
    return kExitUsage;
  }

  std::vector<const ops::OpInfo*> op_list;
  if (args.all) {
    for (const auto& op : ops::catalog()) op_list.push_back(&op);
  } else if (const ops::OpInfo* op = ops::find_op(args.op)) {
    op_list.push_back(op);
  } else {
    err << fmt::format("{}: --op: unknown op '{}' (known: {})\n", kCommand, args.op,
                       ops::op_names());
    return kExitUsage;
  }
  std::vector<ops::Shape> shapes;
  try {
    for (const auto* op : op_list) {
      shapes.push_back(ops::parse_shape(*op, args.shape.empty() ? op->default_shape : args.shape));
    }
  } catch (const ops::OpError& e) {
    err << fmt::format("{}: --shape: {}\n", kCommand, e.what());
    return kExitUsage;
  }

  const auto read = read_policies(
      kCommand,
      args.all && args.policies.empty()
          ? std::vector<std::string>{"fp32", "tf32", "fp16", "bf16", "amp-fp16", "amp-bf16"}
          : split_list(args.policies.empty() ? "fp32" : args.policies),
      err);
  if (!read) return kExitUsage;
  const std::vector<policy::Policy>& policies = *read;
  // The Tensor Core model of each policy (audit::mma_for).
  std::vector<std::optional<numeric::MmaModel>> models(policies.size());
  if (!args.mma.empty()) {
    for (std::size_t i = 0; i < policies.size(); ++i) {
      try {
        models[i] = audit::mma_for(args.mma, policies[i]);
      } catch (const std::invalid_argument& e) {
        err << fmt::format("{}: --mma {}\n", kCommand, e.what());
        return kExitUsage;
      }
    }
  }
  for (const auto* op : op_list) {
    for (std::size_t j = 0; j < policies.size(); ++j) {
      if (const auto problem = audit::why_not_runnable(*op, policies[j], models[j].has_value())) {
        err << fmt::format("{}: --policy: {}\n", kCommand, *problem);
        return kExitUsage;
      }
    }
  }
  try {
    inputs::parse_spec(args.dist);
  } catch (const inputs::SpecError& e) {
    err << fmt::format("{}: --dist: {}\n", kCommand, e.what());
    return kExitUsage;
  }

  std::vector<audit::Budget> budgets;
  std::string budgets_path = args.budgets;
  if (budgets_path.empty() && std::filesystem::exists(kDefaultBudgets))
    budgets_path = kDefaultBudgets;
  if (!budgets_path.empty() && budgets_path != "none") {
    try {
      budgets = audit::load_budgets(budgets_path);
    } catch (const audit::BudgetError& e) {
      err << fmt::format("{}: --budgets: {}\n", kCommand, e.what());
      return kExitUsage;
    }
  }
  if (!args.json.empty()) {
    if (auto problem = json_path_problem(args.json)) {
      err << fmt::format("{}: --json {}: {}\n", kCommand, args.json, *problem);
      return kExitUsage;
    }
  }

  // ---- the cases ------------------------------------------------------------------------------
  out << fmt::format("budgets: {}\n", budgets_path.empty() || budgets_path == "none"
                                          ? std::string("built-in only (bound ratio <= 1, no "
                                                        "NaN/Inf mismatches)")
                                          : budgets_path);
  if (!args.mma.empty()) {
    out << fmt::format(
        "mma: {} (gemm, bmm, dot, their gradients and the convolutions run on the Tensor Core "
        "model; no a-priori bound)\n",
        args.mma);
  }
  Widths widths;
  for (std::size_t i = 0; i < op_list.size(); ++i) {
    widths.op = std::max(widths.op, op_list[i]->name.size() + 2);
    widths.shape = std::max(widths.shape, ops::to_string(shapes[i]).size() + 2);
  }
  out << fmt::format("{:<{}}{:<10}{:<{}}{:<9}{:>9}{:>10}{:>11}{:>9}{:>8}{:>8}{:>8}{:>6}  {}\n",
                     "op", widths.op, "policy", "shape", widths.shape, "dist", "max_ulp",
                     "mean_ulp", "normwise", "bound", "CR%", "uflow", "oflow", "nan", "status");
  nlohmann::json records = nlohmann::json::array();
  std::vector<std::string> failures;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < op_list.size(); ++i) {
    for (std::size_t j = 0; j < policies.size(); ++j) {
      const auto& p = policies[j];
      audit::Case c{op_list[i], shapes[i],    p,         args.dist,
                    args.seed,  args.samples, summation, models[j]};
      audit::CaseResult result;
      try {
        result = audit::run_case(c, budgets);
      } catch (const std::exception& e) {
        out.flush();
        err << fmt::format("{}: {} under {}: {}\n", kCommand, op_list[i]->name, p.name, e.what());
        return kExitUsage;
      }
      write_row(out, widths, result);
      for (const auto& b : result.breaches) failures.push_back(b.message);
      records.push_back(audit::to_json(result));
      if (!args.json.empty() && !write_records(args.json, records, err)) return kExitUsage;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out << fmt::format("\n{} case(s) in {:.1f} s, {} failed.\n", records.size(), seconds,
                     std::count_if(records.begin(), records.end(),
                                   [](const auto& r) { return r["status"] == "FAIL"; }));
  for (const auto& f : failures) out << "FAIL " << f << '\n';
  out << "max_ulp/mean_ulp: ulps of the output format from the correctly rounded result; "
         "normwise: ||c - x|| / ||x||;\nbound: largest error / a-priori bound; CR%: outputs "
         "correctly rounded; uflow/oflow/nan: output rounding events.\n";
  return failures.empty() ? kExitOk : kExitFail;
}

}  // namespace ampbench::cli
