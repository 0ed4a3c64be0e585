// Accuracy budgets: per op and policy, a limit on one metric of the audit, with the source of the
// number (an a-priori bound, or a measured value with its margin). A case that breaks a budget
// fails with a message naming op, policy, metric, value and limit.
//
// File format (suites/budgets.toml): an array of tables
//   [[budget]]
//   op = "gemm"              # an op of the catalog, or "*" for every op
//   policy = "fp16"          # a policy name, or "*"
//   metric = "max_ulp"       # see Metric
//   limit = 16
//   source = "measured 4 ulps (2026-11-29, seed 1, 256x256x256), margin 4x"
//   backend = "cuda"         # optional: "cpu" or "cuda"; "*" (the default) for every backend
// For a case on a backend, the budgets naming that backend replace, metric by metric, those that
// name none: a device whose arithmetic differs from the CPU's has its own measured limits.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness/metrics/metrics.hpp"

namespace ampbench::audit {

enum class Metric {
  max_ulp,                     // at most
  mean_ulp,                    // at most
  normwise_rel_error,          // at most
  componentwise_rel_error,     // at most
  bound_ratio,                 // at most
  fraction_correctly_rounded,  // at least
  mismatches,                  // at most: NaN/Inf disagreements and values outside the format
};

std::string_view metric_name(Metric m);
std::optional<Metric> metric_from_name(std::string_view name);
std::string metric_names();     // for messages
bool is_lower_limit(Metric m);  // fraction_correctly_rounded: the value must be at least the limit

struct Budget {
  std::string op;      // "*" for any
  std::string policy;  // "*" for any
  Metric metric;
  double limit;
  std::string source;
  std::string origin;         // file:line:column of its [[budget]], for messages
  std::string backend = "*";  // "cpu", "cuda" or "*" for any
};

class BudgetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses budgets; errors name the file, the line, the column and what is wrong. Nothing that would
// switch a gate off silently is accepted: an op that is not in the catalog (or "*"), a limit that
// is not finite, a fraction_correctly_rounded limit outside [0, 1]. load_budgets reads the file
// through io::read_file (a directory is an error, not an empty file).
std::vector<Budget> parse_budgets(std::string_view text, std::string_view source_name);
std::vector<Budget> load_budgets(const std::string& path);
// Every budget's policy must be "*", a built-in policy or one of `run_policies` (the names of the
// policies the run uses): a budget for a policy that does not exist would never apply. Throws
// BudgetError at the budget's origin.
void check_policies(const std::vector<Budget>& budgets,
                    const std::vector<std::string>& run_policies);

// The value of a metric in a summary (empty when the summary has none, e.g. no bound).
std::optional<double> metric_value(const metrics::ErrorSummary& summary, Metric m);

// A budget a case broke.
struct Breach {
  Budget budget;
  double value;
  std::string message;  // "gemm fp16: max_ulp 37 > 16 (measured ..., suites/budgets.toml:12)"
};

// The budgets that apply to (op, policy) on `backend` and that the summary breaks: for each metric,
// those naming the backend where there are any, else those naming none ("*"; an empty `backend`
// takes only these). Beyond the file's budgets, two always apply: a bound ratio above 1 (a
// rigorous bound broken) and any NaN/Inf mismatch or value outside the format, unless a budget for
// that metric says otherwise.
std::vector<Breach> check(const std::vector<Budget>& budgets, std::string_view op,
                          std::string_view policy, std::string_view backend,
                          const metrics::ErrorSummary& summary);

}  // namespace ampbench::audit
