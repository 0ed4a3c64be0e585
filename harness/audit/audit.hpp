// The per-op precision audit: one case is an op at a shape, its inputs drawn from a distribution
// with a seed, run under a precision policy on a backend, judged against its correctly rounded
// reference and the budgets. A case is a plain value; so is its result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/audit/budgets.hpp"
#include "harness/backends/cpu/emulate.hpp"
#include "harness/inputs/tensor_file.hpp"
#include "harness/metrics/metrics.hpp"
#include "harness/numeric/mma.hpp"
#include "harness/ops/catalog.hpp"
#include "harness/policy/policy.hpp"

namespace ampbench::audit {

struct Case {
  const ops::OpInfo* op = nullptr;
  ops::Shape shape;
  policy::Policy policy;
  std::string distribution = "normal";  // of the data operands (harness/inputs)
  std::uint64_t seed = 1;
  std::size_t samples = 0;  // reference positions: 0 for all
  backends::cpu::Summation summation = backends::cpu::Summation::sequential;
  // A Tensor Core model for gemm and dot, replacing the policy's accumulation (the policy's input
  // and output formats stay); ignored by the other ops.
  std::optional<numeric::MmaModel> mma;
};

// What generating one operand did.
struct OperandRecord {
  std::string name;
  std::string source;  // the distribution with every parameter, to replay it
  std::uint64_t seed;
  std::uint64_t changed = 0;  // by rounding to the input format
  std::uint64_t flushed = 0;
  std::uint64_t overflowed = 0;
};

struct CaseResult {
  std::string op;
  std::string policy;
  std::string backend = "cpu";
  std::string shape;
  std::string distribution;
  std::uint64_t seed;
  policy::OpPrecision precision;  // what the policy gave this op
  std::string mma;                // the Tensor Core model's name, when one ran the op
  std::vector<OperandRecord> operands;
  std::size_t outputs = 0;     // elements of the output
  std::size_t references = 0;  // of which the reference was computed (the sample)
  metrics::ErrorSummary summary;
  std::vector<Breach> breaches;
  bool pass() const { return breaches.empty(); }
};

// The operands of a case: data operands from the case's distribution, parameters (gamma, beta,
// bias) from fixed ones (gamma normal(1, 1/4), beta and bias normal(0, 1)), indices uniform; each
// rounded to the policy's input format for the op, each from its own seed
// (inputs::operand_seed(seed, k)).
struct Generated {
  ops::Inputs inputs;
  std::vector<OperandRecord> records;
};
Generated generate_operands(const Case& c, const policy::OpPrecision& precision);

// What a policy gives an op (a backward op: its forward op's precision; the cast: fp32 to the
// format the policy's gemm reads), and the CPU backend's arithmetic for it.
policy::OpPrecision precision_of(const policy::Policy& p, const ops::OpInfo& op);
backends::cpu::Arithmetic arithmetic_of(const policy::OpPrecision& precision);

// Why a case cannot run on the CPU backend (see backends::cpu::why_not_emulable), or nothing; a
// Tensor Core model rounds gemm, bmm and dot itself, so those ops on a model always can. For the
// command line to report before any work starts.
std::optional<std::string> why_not_runnable(const ops::OpInfo& op, const policy::Policy& p,
                                            bool on_mma);

CaseResult run_case(const Case& c, const std::vector<Budget>& budgets);

// A kernel audited from outside the CPU backend (a user's kernel, a GPU op): ops::Kernel.
using Kernel = ops::Kernel;

// Runs `kernel` on the case's operands and judges its output as run_case judges the CPU
// backend's: against the correctly rounded reference (at the case's sample of positions), the
// a-priori bound for the policy's formats where the op has one (sequential summation's, which
// holds for any order of the additions), and the budgets. No rounding events are counted; the
// record's backend is `backend`. std::invalid_argument when the output has the wrong length.
CaseResult run_kernel_case(const Case& c, const Kernel& kernel, std::string backend,
                           const std::vector<Budget>& budgets);

// The Tensor Core model `--mma NAME` means under a policy: the preset of that name, or the
// architecture's preset for the input format the policy gives gemm. std::invalid_argument says
// why there is none (listing the architectures and presets).
numeric::MmaModel mma_for(const std::string& name, const policy::Policy& p);

// The format an operand is held in under `precision` (ops::conversion): the input format, or the
// output format (linear's bias) or the accumulation format (gemm's C); binary32 for a parameter
// a promote entry keeps in its own format (batch norm's weight and bias under autocast).
numeric::Format held_format(const ops::Operand& operand, const policy::OpPrecision& precision);

// The operands of `op` given by name, as `ampbench eval` takes them: `read` gives every tensor
// converted with a conversion (the policy's input format and mode; for an operand held in another
// format, held_format, also that format; under a stochastic mode, operand k with the stream
// conversion_stream(operand_seed(0, k))). Checks names, shapes and class indices, and gives the
// shape they make; throws ops::OpError (or what `read` throws) saying what is wrong. `rounded`
// counts the values that rounding to their format changed.
using TensorReader =
    std::function<std::map<std::string, inputs::Loaded>(const inputs::Conversion& conversion)>;
struct OperandSet {
  ops::Inputs inputs;
  ops::Shape shape;
  std::uint64_t rounded = 0;
};
OperandSet read_operands(const ops::OpInfo& op, const policy::OpPrecision& precision,
                         const TensorReader& read);

// The record of a case as the audit's --json writes it.
nlohmann::json to_json(const CaseResult& r);

}  // namespace ampbench::audit
