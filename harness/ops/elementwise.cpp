// The elementwise family: add, mul, fma and cast. Each output is one exact value rounded once to
// the compute format (none for a cast) and once to the output's.
#include <cmath>

#include "harness/ops/definition.hpp"

namespace ampbench::ops {
namespace {
// The family's own names (a unity build compiles the families as one unit).
namespace elementwise_family {

using backends::cpu::Arithmetic;
using backends::cpu::Summation;

std::vector<Operand> elementwise_operands(const OpInfo& op, const Shape& shape) {
  const std::vector<std::size_t> rc{shape.sizes[0], shape.sizes[1]};
  if (op.op == Op::cast) return {{"x", rc}};
  if (op.op == Op::fma) return {{"x", rc}, {"y", rc}, {"z", rc}};
  return {{"x", rc}, {"y", rc}};
}

CpuRun elementwise_run(const OpInfo& op, const Shape&, const Arithmetic& arithmetic, Summation,
                       const Inputs& in) {
  namespace cpu = backends::cpu;
  CpuRun run;
  switch (op.op) {
    case Op::cast: run.output = cpu::cast(arithmetic, values(in, 0), run.events); break;
    case Op::fma:
      run.output = cpu::fma(arithmetic, values(in, 0), values(in, 1), values(in, 2), run.events);
      break;
    default:
      run.output =
          cpu::elementwise(arithmetic, op.op == Op::add ? cpu::Binary::add : cpu::Binary::mul,
                           values(in, 0), values(in, 1), run.events);
  }
  return run;
}

// The exact value at each position (an exact accumulator), rounded once to the output.
Reference elementwise_reference(const OpInfo& op, const Shape&, const Inputs& in,
                                const numeric::Format& output, numeric::Rounding mode,
                                Reference result, std::uint64_t seed) {
  reference::ExactAccumulator acc;
  for (std::size_t e = 0; e < result.positions.size(); ++e) {
    const std::size_t p = result.positions[e];
    acc.clear();
    if (op.op == Op::add) {
      acc.add(values(in, 0)[p]);
      acc.add(values(in, 1)[p]);
    } else if (op.op == Op::cast) {
      acc.add(values(in, 0)[p]);
    } else {
      acc.add_product(values(in, 0)[p], values(in, 1)[p]);
      if (op.op == Op::fma) acc.add(values(in, 2)[p]);
    }
    const reference::ExactValue v = acc.value();
    result.rounded[e] = v.round(output, mode, draw(mode, seed, p)).value;
    result.nearest[e] = v.to_double();
  }
  return result;
}

// The exact result in binary64: exactly for mul and cast; add and fma round once.
std::vector<double> elementwise_bounds(const OpInfo& op, const Shape&, const Arithmetic& arithmetic,
                                       Summation, const Inputs& in,
                                       std::span<const std::size_t> positions) {
  return one_rounding_bounds(arithmetic, op.op != Op::cast, positions, [&](std::size_t p) {
    const double x = values(in, 0)[p];
    return op.op == Op::cast  ? x
           : op.op == Op::add ? x + values(in, 1)[p]
           : op.op == Op::mul ? x * values(in, 1)[p]
                              : std::fma(x, values(in, 1)[p], values(in, 2)[p]);
  });
}

// Row by row in sampled runs, the op's `data` operands cut to the row.
constexpr Definition elementwise(OpInfo info, std::size_t data) {
  return {.info = info,
          .operands = elementwise_operands,
          .reference_kind = "exact",
          .run = elementwise_run,
          .sampling = rows_of(data),
          .reference = elementwise_reference,
          .bounds = elementwise_bounds};
}

constexpr Definition kElementwise[] = {
    elementwise({Op::add, "add", "elementwise", "RxC", "64x1024", "x + y", "one rounding (u)"}, 2),
    elementwise({Op::mul, "mul", "elementwise", "RxC", "64x1024", "x * y", "one rounding (u)"}, 2),
    elementwise({Op::fma, "fma", "elementwise", "RxC", "64x1024",
                 "x * y + z, rounded once to compute", "one rounding per format (u)"},
                3),
    elementwise({Op::cast, "cast", "elementwise", "RxC", "64x1024",
                 "x (fp32) rounded to the format the policy's gemm reads, as autocast, TF32 or "
                 ".half() convert",
                 "one rounding (u)"},
                1),
};

}  // namespace elementwise_family
}  // namespace

std::span<const Definition> elementwise_ops() {
  return elementwise_family::kElementwise;
}

}  // namespace ampbench::ops
