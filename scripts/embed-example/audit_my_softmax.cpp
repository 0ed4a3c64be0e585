// Two binary32 softmax kernels of "your project", audited by ampbench the way it audits its own
// backends: the same operands, the correctly rounded reference, the metrics and the built-in
// checks. The textbook kernel overflows exp() for inputs near 100 and returns NaN; the kernel that
// subtracts the row maximum first does not. Exit status 0 when the audit tells them apart.
// `--backend cpu|cuda|all` is read with ampbench's backend registry, as its commands read it: the
// example has CPU kernels only, so cuda is refused (exit 3) and all runs the CPU alone.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <harness/audit/audit.hpp>
#include <harness/ops/catalog.hpp>
#include <harness/policy/policy.hpp>
#include <harness/runtime/backend.hpp>
#include <string_view>
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

int main(int argc, char** argv) {
  namespace ab = ampbench;
  if (argc != 1 && !(argc == 3 && std::string_view(argv[1]) == "--backend")) {
    std::fprintf(stderr, "usage: audit_my_softmax [--backend cpu|cuda|all]\n");
    return 2;
  }
  const ab::runtime::ParsedRequest parsed = ab::runtime::parse_request(argc == 3 ? argv[2] : "cpu");
  if (!parsed.request) {
    std::fprintf(stderr, "audit_my_softmax: %s\n", parsed.error.c_str());
    return 2;
  }
  ab::runtime::CudaStatus gpu;  // this project's GPU: it has none
  gpu.unavailable = "this example has no GPU kernels";
  const ab::runtime::Opening opening = ab::runtime::opening_for(*parsed.request, gpu);
  if (opening.refused()) {
    std::fprintf(stderr, "audit_my_softmax: %s\n", opening.refusal.c_str());
    return 3;
  }
  if (!opening.cpu_alone.empty()) {
    std::printf("cuda: unavailable, %s; the CPU kernels run alone\n", opening.cpu_alone.c_str());
  }
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
