// Precision policies: for every op a policy names, the formats its inputs are rounded to, its
// arithmetic is done in, its sums are accumulated in and its result is stored in. The built-in
// policies model pure fp32 / tf32 / fp16 / bf16 execution and PyTorch's CUDA autocast
// (docs/policies.md gives every entry with its source); users write their own in TOML.
#pragma once

#include <array>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::policy {

// The classes of the op catalog. A policy gives one precision per class, plus exceptions for
// single ops whose treatment differs from their class (autocast decides per op, not per class).
enum class OpClass : std::uint8_t {
  matmul,         // gemm, matmul, linear, bmm, dot
  convolution,    // conv
  attention,      // scaled-dot-product attention
  elementwise,    // add, mul, fma, cast
  activation,     // relu, gelu, silu, bias+activation
  softmax,        // softmax, log_softmax, logsumexp
  normalization,  // layer_norm, rms_norm, batch_norm
  loss,           // cross_entropy
  reduction,      // sum, mean, l2 norm
};
inline constexpr std::size_t kOpClassCount = 9;
inline constexpr std::array<OpClass, kOpClassCount> kOpClasses = {
    OpClass::matmul,        OpClass::convolution, OpClass::attention,
    OpClass::elementwise,   OpClass::activation,  OpClass::softmax,
    OpClass::normalization, OpClass::loss,        OpClass::reduction};

// The op names a policy gives precisions to: its vocabulary. Each op of the catalog (harness/ops)
// takes its precision from one of them (OpInfo::precision_op).
enum class Op : std::uint8_t {
  gemm,
  matmul,
  linear,
  bmm,
  dot,        // matmul
  conv,       // convolution
  attention,  // attention
  add,
  mul,
  fma,
  cast,  // elementwise
  relu,
  gelu,
  silu,
  bias_activation,  // activation
  softmax,
  log_softmax,
  logsumexp,  // softmax
  layer_norm,
  rms_norm,
  batch_norm,     // normalization
  cross_entropy,  // loss
  sum,
  mean,
  l2_norm,  // reduction
};
inline constexpr std::size_t kOpCount = 25;

// Command-line names: op classes "matmul", "convolution", ...; ops "gemm", "layer_norm", ... with a
// few aliases on input ("conv2d", "sdpa", "scaled_dot_product_attention", "norm", ...). Lookups
// are case-insensitive.
std::string_view op_class_name(OpClass c);
std::optional<OpClass> op_class_from_name(std::string_view name);
std::string_view op_name(Op op);
std::optional<Op> op_from_name(std::string_view name);
OpClass op_class(Op op);
// The class of an op given by name ("gemm" -> matmul, "log_softmax" -> softmax); empty when the
// name is not in the catalog.
std::optional<OpClass> op_class_of(std::string_view op_name);
std::span<const Op> ops_of(OpClass c);  // the catalog's ops of a class, in catalog order
std::string op_class_names();           // "matmul, convolution, ..." for messages
std::string op_names();                 // "gemm, matmul, ..." for messages

// How one op is carried out. Every value it reads is rounded to `input` (with `input_mode`);
// products and elementwise arithmetic are done in `compute`; running sums (dot products,
// reductions, statistics) are kept in `accumulate`; the result is rounded to `output` (with
// `mode`, as is every rounding inside the op).
//
// `promote`: the op has no fixed precision and runs in the format of its data inputs, as ops
// outside autocast's lists do (and autocast's own promote list does): with several inputs the
// widest wins (`widest`). `input` and `output` then hold what the op runs in when it is fed by
// the policy's low-precision ops (fp16 under amp-fp16); `resolve` gives the real formats for
// given inputs. Parameters such as a norm's weight or running statistics are not data inputs.
struct OpPrecision {
  numeric::Format input = numeric::formats::fp32;
  numeric::Format compute = numeric::formats::fp32;
  numeric::Format accumulate = numeric::formats::fp32;
  numeric::Format output = numeric::formats::fp32;
  numeric::Rounding mode = numeric::Rounding::nearest_even;
  numeric::Rounding input_mode = numeric::Rounding::nearest_even;
  bool promote = false;
  std::string source;  // where the entry comes from (a PyTorch source file, or the user's file)
};

// Same formats, modes and promote flag (the source is not compared).
bool same_precision(const OpPrecision& a, const OpPrecision& b);

// A single op whose precision differs from its class's.
struct OpException {
  Op op;
  OpPrecision precision;
};

struct Policy {
  std::string name;
  std::string description;
  std::array<OpPrecision, kOpClassCount> classes;  // indexed by OpClass
  std::vector<OpException> exceptions;             // at most one per op

  const OpPrecision& precision(OpClass c) const;
  // The op's exception when it has one, else its class's precision.
  const OpPrecision& precision(Op op) const;
  OpPrecision& precision(OpClass c);
};

// Whether every value of `b` is a value of `a` (infinities included).
bool contains(const numeric::Format& a, const numeric::Format& b);
// The widest of `inputs` (which must not be empty): the one that contains all the others. When
// none does (fp16 with bf16), the narrowest of fp16, bf16, fp32, fp64 that contains them all
// (fp32), as torch.promote_types does.
numeric::Format widest(std::span<const numeric::Format> inputs);
// The precision an op runs in given the formats of its data inputs: unchanged for a fixed entry;
// for a promote entry, input and output become widest(inputs), and compute and accumulate are
// widened to it when narrower.
OpPrecision resolve(const OpPrecision& precision, std::span<const numeric::Format> inputs);

// The built-in policies: fp32, tf32, fp16, bf16, amp-fp16, amp-bf16.
std::span<const Policy> builtin_policies();
const Policy* find_builtin(std::string_view name);  // null when there is none of that name
std::string builtin_policy_names();                 // "fp32, tf32, ..." for messages

// A format as written in a policy: its built-in name, or user:p=P,emin=E,emax=E.
std::string format_label(const numeric::Format& f);

// As `ampbench policies --json` writes them: an op's formats, modes, promote flag and source; a
// policy's name, description, classes and single ops (docs/policies.md).
nlohmann::json to_json(const OpPrecision& p);
nlohmann::json to_json(const Policy& p);

// A user policy that cannot be read. what() is "SOURCE:LINE:COLUMN: message" (line and column
// when known, both 1-based) and names the key and what is wrong with it.
class PolicyError : public std::runtime_error {
 public:
  PolicyError(std::string source, int line, int column, const std::string& message);
  const std::string& source() const { return source_; }
  int line() const { return line_; }      // 0 when unknown
  int column() const { return column_; }  // 0 when unknown
  const std::string& message() const { return message_; }

 private:
  std::string source_;
  int line_;
  int column_;
  std::string message_;
};

// A user policy in TOML (docs/policies.md):
//   name = "my-policy"            # required; not a built-in name
//   description = "..."           # optional
//   base = "amp-fp16"             # optional built-in to start from (default fp32)
//   [matmul]                      # a table per op class; every key optional
//   input = "bf16"                # input, compute, accumulate, output: format names
//   mode = "rne"                  # mode, input_mode: rounding mode names
//   promote = false
//   [ops.dot]                     # the same keys for a single op
// A class table applies its keys to the class and to every inherited exception of that class;
// [ops.X] tables are applied afterwards. `source_name` names the text in messages.
Policy parse_policy(std::string_view text, std::string_view source_name);
Policy load_policy(const std::string& path);

// What the command line's --policy takes: a built-in name, or a user policy file (a name ending in
// .toml or containing '/'). Throws PolicyError; for an unknown name its message lists the
// built-in policies.
Policy policy_by_name_or_file(const std::string& name);

}  // namespace ampbench::policy
