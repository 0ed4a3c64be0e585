// Fuzz target: user precision policies in TOML (policy::parse_policy, harness/policy/policy.hpp).
// Bad input is a policy::PolicyError whose message starts with the source's name.
//
// Invariants of an accepted policy: a name that is not empty and not a built-in's; every format
// valid and written back by format_label as a text that reads as the same format; at most one
// exception per op.
#include <set>
#include <string>
#include <string_view>

#include "harness/fuzz/fuzz.hpp"
#include "harness/numeric/options.hpp"
#include "harness/policy/policy.hpp"

namespace {

using namespace ampbench;

void check_format(const numeric::Format& f) {
  numeric::RoundingOptions options;
  options.format = f;
  fuzz::check(numeric::validate(options).ok(), "an invalid format");
  const std::string label = policy::format_label(f);
  const numeric::FormatSpec again = numeric::parse_format(label);
  fuzz::check(again.format && numeric::same_format(*again.format, f),
              "format_label " + label + " does not read back as the same format");
}

void check_precision(const policy::OpPrecision& p) {
  for (const auto* f : {&p.input, &p.compute, &p.accumulate, &p.output}) check_format(*f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::string_view kName = "p.toml";
  policy::Policy p;
  if (!fuzz::accepts<policy::PolicyError>(
          kName, [&] { p = policy::parse_policy(fuzz::text(data, size), kName); })) {
    return 0;
  }
  fuzz::check(!p.name.empty() && policy::find_builtin(p.name) == nullptr,
              "an empty or built-in name: " + p.name);
  for (const auto& c : p.classes) check_precision(c);
  std::set<policy::Op> ops;
  for (const auto& e : p.exceptions) {
    fuzz::check(ops.insert(e.op).second, "two exceptions for one op");
    check_precision(e.precision);
  }
  return 0;
}
