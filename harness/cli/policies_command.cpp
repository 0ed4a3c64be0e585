// ampbench policies: the precision of every op class under the built-in policies, or under one
// policy (built-in or a user's TOML file); docs/policies.md.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/numeric/options.hpp"
#include "harness/policy/policy.hpp"

namespace ampbench::cli {
namespace {

constexpr const char* kCommand = "ampbench policies";

void write_row(std::ostream& out, const std::string& what, const policy::OpPrecision& p) {
  out << fmt::format("  {:<24}{:<9}{:<7}{:<9}{:<12}{:<8}{:<11}{}\n", what,
                     p.promote ? "promote" : "fixed", policy::format_label(p.input),
                     policy::format_label(p.compute), policy::format_label(p.accumulate),
                     policy::format_label(p.output), numeric::rounding_name(p.input_mode),
                     numeric::rounding_name(p.mode));
}

void write_table(std::ostream& out, const policy::Policy& p) {
  out << p.name << (p.description.empty() ? "" : ": " + p.description) << '\n';
  out << fmt::format("  {:<24}{:<9}{:<7}{:<9}{:<12}{:<8}{:<11}{}\n", "op class / op", "inputs",
                     "input", "compute", "accumulate", "output", "input mode", "mode");
  for (policy::OpClass c : policy::kOpClasses) {
    write_row(out, std::string(policy::op_class_name(c)), p.precision(c));
    for (const policy::OpException& e : p.exceptions) {
      if (policy::op_class(e.op) == c) {
        write_row(out, fmt::format("  {} (op)", policy::op_name(e.op)), e.precision);
      }
    }
  }
}

}  // namespace

int run_policies(const PoliciesArgs& args, std::ostream& out, std::ostream& err) {
  std::vector<policy::Policy> chosen;
  if (args.policy.empty()) {
    const auto all = policy::builtin_policies();
    chosen.assign(all.begin(), all.end());
  } else {
    try {
      chosen.push_back(policy::policy_by_name_or_file(args.policy));
    } catch (const policy::PolicyError& e) {
      err << kCommand << ": --policy: " << e.what() << '\n';
      return kExitUsage;
    }
  }

  if (args.json) {
    if (!args.policy.empty()) {
      out << policy::to_json(chosen.front()).dump(2) << '\n';
    } else {
      nlohmann::json list = nlohmann::json::array();
      for (const policy::Policy& p : chosen) list.push_back(policy::to_json(p));
      out << list.dump(2) << '\n';
    }
    return kExitOk;
  }
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    if (i > 0) out << '\n';
    write_table(out, chosen[i]);
  }
  out << "\nfixed: the op runs in the formats shown. promote: it runs in the widest format of its "
         "data inputs;\nthe table shows the format it gets from the policy's low-precision ops. "
         "(op) rows are single ops\nthat differ from their class. 'ampbench policies --json' "
         "adds the source of every entry;\ndocs/policies.md explains them.\n";
  return kExitOk;
}

}  // namespace ampbench::cli
