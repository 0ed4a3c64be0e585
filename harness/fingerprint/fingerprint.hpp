// The Tensor Core fingerprint: the published feature-detection tests of matrix-multiply units,
// run through an executor (a GPU's matrix instructions, or a CPU model of them), with the
// parameters of the MMA model (harness/numeric/mma.hpp) inferred from the outputs alone.
//
// Each test builds probes d = c + sum_i a_i b_i, runs them in one batch, and matches the outputs
// against what each candidate value of its parameter predicts; the parameter is the candidate
// whose predictions match exactly, or unknown when none does (that is a finding too). Sources:
// Fasi, Higham, Mikaitis & Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ CS 7:e330
// (2021), and their programs (github.com/north-numerical-computing/
// tensor-cores-numerical-behavior); Khattak & Mikaitis, "Accurate models of NVIDIA Tensor Cores",
// arXiv 2512.07004 (2025) (products per fused step); Mikaitis, "Monotonicity of multi-term
// floating-point adders", IEEE TC 2024 (non-monotonicity of truncating adders). docs/fingerprint.md
// describes every test, its inputs and its inference.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/mma.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::fingerprint {

// One element of an MMA: d = c + sum_i a[i] * b[i]. a and b hold values of the executor's input
// format and have the same length (any length: the executor pads with zero products to whole
// instructions); c is a value of its accumulator format.
struct Probe {
  double c = 0.0;
  std::vector<double> a;
  std::vector<double> b;
};

// Runs probes on a matrix unit. Batched so that a GPU executor launches once per test.
class Executor {
 public:
  virtual ~Executor() = default;
  // For the report: "cpu model ampere-fp16", "NVIDIA H200 (sm_90), mma.sync.m16n8k16 ...".
  virtual std::string description() const = 0;
  virtual numeric::Format input() const = 0;
  virtual numeric::MmaAccumulator accumulator() const = 0;
  // k of the instruction that runs the probes: a probe of length k takes ceil(k / this)
  // instructions, chained through the accumulator as a GEMM's k-loop does.
  virtual int instruction_k() const = 0;
  // d of each probe, as a value of the accumulator format (an fp32 for the fp32 accumulator).
  virtual std::vector<double> run(std::span<const Probe> probes) = 0;
};

// The CPU executor: the probes through an MMA model (a preset, or any model that passes
// numeric::mma_model_error), with mma_dot over the probe padded to whole instructions.
class ModelExecutor final : public Executor {
 public:
  explicit ModelExecutor(const numeric::MmaModel& model);
  std::string description() const override;
  numeric::Format input() const override { return model_.input; }
  numeric::MmaAccumulator accumulator() const override { return model_.accumulator(); }
  int instruction_k() const override { return model_.instruction_k; }
  std::vector<double> run(std::span<const Probe> probes) override;

 private:
  numeric::MmaModel model_;
};

// The parameters the tests infer. Each is empty when no candidate explains the outputs, or when
// the test does not apply (its evidence says which).
struct Parameters {
  std::optional<bool> subnormal_inputs;   // subnormal A and B values are used (not flushed)
  std::optional<bool> subnormal_outputs;  // subnormal results are written (not flushed)
  std::optional<bool> exact_products;     // products enter the sum unrounded
  std::optional<int> fraction_bits;       // F: fraction bits kept when terms are aligned
  // Fraction bits of the output as observable (min(q, F + 2) for an output of q fraction bits: 23
  // fp32, 13 e8m13, 10 fp16).
  std::optional<int> output_bits;
  // How the output is rounded: toward_zero (truncation), nearest_even, upward or downward.
  std::optional<numeric::Rounding> output_rounding;
  std::optional<bool> normalise_once;  // the sum is normalised once, at the end (not per add)
  std::optional<int> fused_k;          // products per fused step (block size)
  // Whether the result never decreases when c increases, on the constructed cases (fp32
  // accumulator only: with an fp16 output the alignment losses are below its precision).
  std::optional<bool> monotonic;
  // Whether a nonzero sum that rounds to zero keeps its sign (c = +0 plus one negative product too
  // small for the output gives -0, as IEEE 754 rounding does) rather than giving +0 (MMA-Sim's
  // reference implementation). Empty where no product of the input format is both that small and
  // kept by the alignment (fp16 or fp8 inputs into fp32).
  std::optional<bool> zero_sign_kept;
};

// What a candidate value of a parameter predicts for the probes.
struct Hypothesis {
  std::string name;  // "F = 24", "truncation", "flushed"
  std::vector<double> expected;
};

// One test: its probes, the outputs, the hypotheses it weighed and the verdict. Outputs match a
// hypothesis as values (-0 equals +0), except in the zero-sign test, which compares signs too.
struct Evidence {
  std::string parameter;  // the key in Parameters: "fraction_bits", ...
  std::string test;       // what the test does, in words
  std::string source;     // the paper and test it follows
  std::vector<Probe> probes;
  std::vector<double> outputs;
  std::vector<Hypothesis> hypotheses;  // the match and, for sweeps, its neighbours
  std::string verdict;                 // the inferred value, or why there is none
};

struct Fingerprint {
  std::string executor;
  numeric::Format input;
  numeric::MmaAccumulator accumulator;
  Parameters parameters;
  std::vector<Evidence> evidence;  // one per test, in the order of Parameters
};

// Runs every test through the executor. Inference sees only the executor's outputs. Throws what
// the executor throws; std::invalid_argument for an input format the tests cannot probe (one
// whose values do not fit the scaled probes: every MMA input format fits).
Fingerprint take_fingerprint(Executor& executor);

// What a model predicts for each parameter: from its fields, and for monotonicity from its outputs
// on the same constructed cases (the property is not a field).
Parameters predicted_parameters(const numeric::MmaModel& model);

// One row of the comparison of a fingerprint with a preset.
struct Comparison {
  std::string parameter;  // the key in Parameters
  std::string inferred;   // the value in words; "unknown" when not inferred
  std::string preset;
  bool match;
};

// Every parameter, inferred against predicted; a parameter that the fingerprint could not infer
// is a mismatch unless the preset does not predict it either ("n/a" on both sides).
std::vector<Comparison> compare(const Parameters& inferred, const Parameters& predicted);
bool all_match(std::span<const Comparison> rows);

// The architecture of a compute capability, as numeric::mma_model names it ("volta" for 7.0 and
// 7.2, "turing" 7.5, "ampere" 8.0-8.7, "ada" 8.9, "hopper" 9.x, "blackwell" 10.x-12.x), or nullptr.
const char* mma_architecture(int major, int minor);

// Parameter values in words, for tables and JSON: "yes", "no", "24", "truncation", "unknown".
std::string describe(const std::optional<bool>& value);
std::string describe(const std::optional<int>& value);
std::string describe(const std::optional<numeric::Rounding>& value);

}  // namespace ampbench::fingerprint
