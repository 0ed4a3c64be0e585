#include "harness/ops/autocast.hpp"

namespace ampbench::ops {

Conversion conversion(const Operand& operand, const policy::OpPrecision& precision) {
  switch (operand.held_in) {
    case HeldIn::output: return {precision.output, precision.input_mode};
    case HeldIn::accumulation: return {precision.accumulate, precision.input_mode};
    case HeldIn::input_or_own:
      if (precision.promote) return {numeric::formats::fp32, precision.input_mode, true};
      break;
    case HeldIn::input: break;
  }
  return {precision.input, precision.input_mode};
}

Autocast::Autocast(const OpInfo& op, const policy::OpPrecision& precision)
    : op_(&op), precision_(precision) {
  for (const Operand& o : operand_roles(op)) conversions_.push_back(conversion(o, precision_));
}

}  // namespace ampbench::ops
