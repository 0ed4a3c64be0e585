#include "harness/audit/budgets.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>

#include "harness/io/files.hpp"
#include "harness/ops/catalog.hpp"
#include "harness/policy/policy.hpp"

namespace ampbench::audit {
namespace {

constexpr std::pair<Metric, std::string_view> kMetricNames[] = {
    {Metric::max_ulp, "max_ulp"},
    {Metric::mean_ulp, "mean_ulp"},
    {Metric::normwise_rel_error, "normwise_rel_error"},
    {Metric::componentwise_rel_error, "componentwise_rel_error"},
    {Metric::bound_ratio, "bound_ratio"},
    {Metric::fraction_correctly_rounded, "fraction_correctly_rounded"},
    {Metric::mismatches, "mismatches"},
};

std::string where(std::string_view source, const toml::source_region& region) {
  return fmt::format("{}:{}:{}", source, region.begin.line, region.begin.column);
}

std::uint64_t mismatch_total(const metrics::MismatchCounts& m) {
  // Agreements (both NaN, both infinite of one sign) are not mismatches.
  return m.nan_vs_number + m.number_vs_nan + m.inf_vs_finite + m.finite_vs_inf + m.opposite_inf +
         m.not_in_format;
}

bool applies(const std::string& pattern, std::string_view name) {
  return pattern == "*" || pattern == name;
}

}  // namespace

std::string_view metric_name(Metric m) {
  for (const auto& [metric, name] : kMetricNames) {
    if (metric == m) return name;
  }
  return "?";
}

std::optional<Metric> metric_from_name(std::string_view name) {
  for (const auto& [metric, n] : kMetricNames) {
    if (n == name) return metric;
  }
  return std::nullopt;
}

std::string metric_names() {
  std::string s;
  for (const auto& [metric, name] : kMetricNames)
    s += fmt::format("{}{}", s.empty() ? "" : ", ", name);
  return s;
}

bool is_lower_limit(Metric m) {
  return m == Metric::fraction_correctly_rounded;
}

std::vector<Budget> parse_budgets(std::string_view text, std::string_view source_name) {
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    throw BudgetError(fmt::format("{}: {}", where(source_name, e.source()), e.description()));
  }
  std::vector<Budget> budgets;
  for (const auto& [key, node] : root) {
    if (key.str() != "budget") {
      throw BudgetError(fmt::format("{}: unknown key '{}' (expected [[budget]] tables)",
                                    where(source_name, node.source()), key.str()));
    }
  }
  const toml::array* list = root["budget"].as_array();
  if (root.contains("budget") && list == nullptr) {
    throw BudgetError(fmt::format("{}: 'budget' must be an array of tables ([[budget]])",
                                  where(source_name, root["budget"].node()->source())));
  }
  if (list == nullptr) return budgets;
  for (const auto& element : *list) {
    const toml::table* t = element.as_table();
    const std::string at = where(source_name, element.source());
    if (t == nullptr) throw BudgetError(fmt::format("{}: a budget must be a table", at));
    for (const auto& [key, node] : *t) {
      const std::string_view k = key.str();
      if (k != "op" && k != "policy" && k != "metric" && k != "limit" && k != "source" &&
          k != "backend") {
        throw BudgetError(fmt::format(
            "{}: unknown key '{}' (expected op, policy, metric, limit, source, backend)",
            where(source_name, node.source()), k));
      }
    }
    const auto text_of = [&](const char* key) {
      const auto v = (*t)[key].value<std::string>();
      if (!v) throw BudgetError(fmt::format("{}: '{}' is required and must be a string", at, key));
      return *v;
    };
    Budget b;
    b.op = text_of("op");
    // A misspelt op would never apply: the gate would be off without a word.
    if (b.op != "*" && ops::find_op(b.op) == nullptr) {
      throw BudgetError(fmt::format("{}: op '{}' is no op of the catalog (known: {}; or \"*\")",
                                    where(source_name, (*t)["op"].node()->source()), b.op,
                                    ops::op_names()));
    }
    b.policy = text_of("policy");
    const std::string metric = text_of("metric");
    const auto m = metric_from_name(metric);
    if (!m) {
      throw BudgetError(
          fmt::format("{}: unknown metric '{}' (known: {})", at, metric, metric_names()));
    }
    b.metric = *m;
    const auto limit = (*t)["limit"].value<double>();
    if (!limit) throw BudgetError(fmt::format("{}: 'limit' is required and must be a number", at));
    // A NaN limit is never broken, and it would also take the built-in rule for its metric away.
    const std::string limit_at = where(source_name, (*t)["limit"].node()->source());
    if (!std::isfinite(*limit)) {
      throw BudgetError(fmt::format("{}: limit {} is not a finite number", limit_at, *limit));
    }
    if (b.metric == Metric::fraction_correctly_rounded && !(*limit >= 0 && *limit <= 1)) {
      throw BudgetError(fmt::format("{}: limit {} of fraction_correctly_rounded is outside [0, 1]",
                                    limit_at, *limit));
    }
    b.limit = *limit;
    b.source = text_of("source");
    if (t->contains("backend")) {
      b.backend = text_of("backend");
      // A misspelt backend would never apply: the budget would be off without a word.
      if (b.backend != "*" && b.backend != "cpu" && b.backend != "cuda") {
        throw BudgetError(fmt::format("{}: backend '{}' is none of cpu, cuda (or \"*\")",
                                      where(source_name, (*t)["backend"].node()->source()),
                                      b.backend));
      }
    }
    b.origin = at;
    budgets.push_back(std::move(b));
  }
  return budgets;
}

std::vector<Budget> load_budgets(const std::string& path) {
  std::string text;
  try {
    text = io::read_file(path);
  } catch (const io::FileError& e) {
    throw BudgetError(e.what());
  }
  return parse_budgets(text, path);
}

void check_policies(const std::vector<Budget>& budgets,
                    const std::vector<std::string>& run_policies) {
  for (const auto& b : budgets) {
    if (b.policy == "*" || policy::find_builtin(b.policy) != nullptr ||
        std::find(run_policies.begin(), run_policies.end(), b.policy) != run_policies.end()) {
      continue;
    }
    std::string others;
    for (const auto& name : run_policies) {
      if (policy::find_builtin(name) == nullptr &&
          others.find("'" + name + "'") == std::string::npos) {
        others += fmt::format(", '{}'", name);
      }
    }
    throw BudgetError(fmt::format(
        "{}: policy '{}' is no policy of this run (built-in: {}{}; or \"*\"; a policy of your "
        "own is known by its name when the run uses it)",
        b.origin, b.policy, policy::builtin_policy_names(), others));
  }
}

std::optional<double> metric_value(const metrics::ErrorSummary& s, Metric m) {
  switch (m) {
    case Metric::max_ulp:
      return s.max_ulp ? std::optional<double>(static_cast<double>(*s.max_ulp)) : std::nullopt;
    case Metric::mean_ulp: return s.mean_ulp;
    case Metric::normwise_rel_error: return s.normwise_rel_error;
    case Metric::componentwise_rel_error: return s.max_rel_error;
    case Metric::bound_ratio: return s.bound_ratio;
    case Metric::fraction_correctly_rounded: return s.fraction_correctly_rounded;
    case Metric::mismatches: return static_cast<double>(mismatch_total(s.mismatches));
  }
  return std::nullopt;
}

std::vector<Breach> check(const std::vector<Budget>& budgets, std::string_view op,
                          std::string_view policy, std::string_view backend,
                          const metrics::ErrorSummary& summary) {
  const auto matches = [&](const Budget& b) {
    return applies(b.op, op) && applies(b.policy, policy) && applies(b.backend, backend);
  };
  // The metrics that have a budget naming this backend: theirs replace the others'.
  std::vector<Metric> own;
  for (const auto& b : budgets) {
    if (b.backend != "*" && matches(b)) own.push_back(b.metric);
  }
  std::vector<Budget> applicable;
  for (const auto& b : budgets) {
    const bool replaced =
        b.backend == "*" && std::find(own.begin(), own.end(), b.metric) != own.end();
    if (matches(b) && !replaced) applicable.push_back(b);
  }
  const auto has = [&](Metric m) {
    for (const auto& b : applicable) {
      if (b.metric == m) return true;
    }
    return false;
  };
  if (!has(Metric::bound_ratio)) {
    applicable.push_back({"*", "*", Metric::bound_ratio, 1.0,
                          "a rigorous a-priori bound (ratio above 1: the bound was broken)",
                          "built in"});
  }
  if (!has(Metric::mismatches)) {
    applicable.push_back({"*", "*", Metric::mismatches, 0.0,
                          "NaN/Inf disagreements and values outside the format are failures",
                          "built in"});
  }
  std::vector<Breach> breaches;
  for (const auto& b : applicable) {
    const auto value = metric_value(summary, b.metric);
    if (!value) continue;  // e.g. no bound for this op
    const bool broken = is_lower_limit(b.metric) ? *value < b.limit : *value > b.limit;
    if (!broken) continue;
    breaches.push_back(
        {b, *value,
         fmt::format("{} {}: {} {:.6g} {} {:.6g} ({}; {})", op, policy, metric_name(b.metric),
                     *value, is_lower_limit(b.metric) ? "<" : ">", b.limit, b.source, b.origin)});
  }
  return breaches;
}

}  // namespace ampbench::audit
