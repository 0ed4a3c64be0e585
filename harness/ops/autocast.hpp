// Autocast's type flow, written once: the format each operand of an op is held in under the op's
// resolved precision (its HeldIn, catalog.hpp), the rounding that takes it there, and the format a
// gradient goes back to. The audit generates and `eval` reads operands with it; the trainer's CPU
// and CUDA ops cast their tensors with it, operand by operand as the catalog op they run lists
// them.
#pragma once

#include <cstddef>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"
#include "harness/ops/catalog.hpp"
#include "harness/policy/policy.hpp"

namespace ampbench::ops {

// Where one operand goes: `format` in `mode` (the policy's input mode), or, when `kept`, nowhere:
// it stays in the format it has (a parameter of a promote entry, held_in input_or_own); for an
// operand that has none yet (one the audit generates), `format` is then binary32, the master
// weights' format.
struct Conversion {
  numeric::Format format;
  numeric::Rounding mode = numeric::Rounding::nearest_even;
  bool kept = false;
};
Conversion conversion(const Operand& operand, const policy::OpPrecision& precision);

// The conversions of every operand of one op under its resolved precision, in operands() order.
class Autocast {
 public:
  Autocast(const OpInfo& op, const policy::OpPrecision& precision);
  const OpInfo& op() const { return *op_; }
  const policy::OpPrecision& precision() const { return precision_; }
  // Operand k (catalog order).
  const Conversion& operand(std::size_t k) const { return conversions_.at(k); }
  // The op's result: its output format.
  const numeric::Format& result() const { return precision_.output; }
  // A gradient goes back to the format of the input it is the gradient of (as autograd stores
  // it), rounded in the op's mode.
  Conversion gradient(const numeric::Format& input) const { return {input, precision_.mode}; }

 private:
  const OpInfo* op_;
  policy::OpPrecision precision_;
  std::vector<Conversion> conversions_;
};

}  // namespace ampbench::ops
