// Fuzz target: accuracy budgets in TOML (audit::parse_budgets, harness/audit/budgets.hpp). Bad
// input is an audit::BudgetError whose message starts with the source's name.
//
// Invariants of accepted budgets: each metric's name reads back as the same metric; each origin is
// SOURCE:LINE.
#include <string>
#include <string_view>
#include <vector>

#include "harness/audit/budgets.hpp"
#include "harness/fuzz/fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ampbench;
  constexpr std::string_view kName = "b.toml";
  std::vector<audit::Budget> budgets;
  if (!fuzz::accepts<audit::BudgetError>(
          kName, [&] { budgets = audit::parse_budgets(fuzz::text(data, size), kName); })) {
    return 0;
  }
  for (const auto& b : budgets) {
    fuzz::check(audit::metric_from_name(audit::metric_name(b.metric)) == b.metric,
                "a metric whose name does not read back");
    fuzz::check(b.origin.starts_with(std::string(kName) + ":"),
                "an origin that is not b.toml:LINE");
  }
  return 0;
}
