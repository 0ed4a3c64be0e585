// Two binary32 softmax kernels of "your project", audited by ampbench the way it audits its own
// backends: the same operands, the correctly rounded reference, the metrics and the built-in
// checks. The textbook kernel overflows exp() for inputs near 100 and returns NaN; the kernel that
// subtracts the row maximum first does not. Exit status 0 when the audit tells them apart.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <harness/audit/audit.hpp>
#include <harness/ops/catalog.hpp>
#include <harness/policy/policy.hpp>
#include <vector>

namespace {

constexpr std::size_t kRows = 64;
constexpr std::size_t kColumns = 1024;

// The kernels under audit: rows of `x` in, rows of softmax(x) out, binary32 throughout.
template <bool SubtractMax>
std::vector<double> my_softmax(const ampbench::ops::Inputs& inputs) {
  const std::vector<double>& x = inputs.values.at(0);
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < kRows; ++r) {
    const double* row = &x[r * kColumns];
    float shift = 0.0f;
    if constexpr (SubtractMax) shift = static_cast<float>(*std::max_element(row, row + kColumns));
    float sum = 0.0f;
    for (std::size_t c = 0; c < kColumns; ++c) sum += std::exp(static_cast<float>(row[c]) - shift);
    for (std::size_t c = 0; c < kColumns; ++c) {
      y[r * kColumns + c] = std::exp(static_cast<float>(row[c]) - shift) / sum;
    }
  }
  return y;
}

}  // namespace

int main() {
  namespace ab = ampbench;
  ab::audit::Case c;
  c.op = ab::ops::find_op("softmax");
  c.shape = ab::ops::parse_shape(*c.op, "64x1024");
  c.policy = *ab::policy::find_builtin("fp32");
  c.distribution = "uniform:a=-100,b=100";
  c.seed = 7;

  bool told_apart = true;
  for (const auto& [name, kernel, should_pass] :
       {std::tuple{"textbook", ab::audit::Kernel(my_softmax<false>), false},
        std::tuple{"max-subtracted", ab::audit::Kernel(my_softmax<true>), true}}) {
    const ab::audit::CaseResult r = ab::audit::run_kernel_case(c, kernel, name, {});
    const auto& s = r.summary;
    std::printf(
        "%-15s %s %s %s: %s; compared %llu of %llu, max ulp %llu, NaN where a number is "
        "expected %llu\n",
        name, r.op.c_str(), r.shape.c_str(), r.policy.c_str(), r.pass() ? "PASS" : "FAIL",
        static_cast<unsigned long long>(s.compared), static_cast<unsigned long long>(s.count),
        static_cast<unsigned long long>(s.max_ulp.value_or(0)),
        static_cast<unsigned long long>(s.mismatches.nan_vs_number));
    for (const auto& breach : r.breaches) std::printf("  %s\n", breach.message.c_str());
    told_apart = told_apart && r.pass() == should_pass;
  }
  return told_apart ? 0 : 1;
}
