#include "harness/policy/policy.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>  // Debian 12 libtomlplusplus-dev 3.3: toml.h, no toml.hpp

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <utility>

#include "harness/io/files.hpp"
#include "harness/numeric/options.hpp"

namespace ampbench::policy {
namespace {

using numeric::Format;
using numeric::Rounding;
namespace formats = numeric::formats;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

constexpr std::string_view kClassNames[kOpClassCount] = {
    "matmul",  "convolution",   "attention", "elementwise", "activation",
    "softmax", "normalization", "loss",      "reduction"};

struct OpInfo {
  std::string_view name;
  OpClass op_class;
};
constexpr OpInfo kOps[kOpCount] = {
    {"gemm", OpClass::matmul},
    {"matmul", OpClass::matmul},
    {"linear", OpClass::matmul},
    {"bmm", OpClass::matmul},
    {"dot", OpClass::matmul},
    {"conv", OpClass::convolution},
    {"attention", OpClass::attention},
    {"add", OpClass::elementwise},
    {"mul", OpClass::elementwise},
    {"fma", OpClass::elementwise},
    {"cast", OpClass::elementwise},
    {"relu", OpClass::activation},
    {"gelu", OpClass::activation},
    {"silu", OpClass::activation},
    {"bias_activation", OpClass::activation},
    {"softmax", OpClass::softmax},
    {"log_softmax", OpClass::softmax},
    {"logsumexp", OpClass::softmax},
    {"layer_norm", OpClass::normalization},
    {"rms_norm", OpClass::normalization},
    {"batch_norm", OpClass::normalization},
    {"cross_entropy", OpClass::loss},
    {"sum", OpClass::reduction},
    {"mean", OpClass::reduction},
    {"l2_norm", OpClass::reduction},
};

constexpr Op kAllOps[kOpCount] = {
    Op::gemm,       Op::matmul,        Op::linear,    Op::bmm,        Op::dot,
    Op::conv,       Op::attention,     Op::add,       Op::mul,        Op::fma,
    Op::cast,       Op::relu,          Op::gelu,      Op::silu,       Op::bias_activation,
    Op::softmax,    Op::log_softmax,   Op::logsumexp, Op::layer_norm, Op::rms_norm,
    Op::batch_norm, Op::cross_entropy, Op::sum,       Op::mean,       Op::l2_norm};

struct Alias {
  std::string_view name;
  Op op;
};
// Other spellings of catalog ops, mostly PyTorch's names.
constexpr Alias kOpAliases[] = {
    {"mm", Op::gemm},
    {"addmm", Op::gemm},
    {"baddbmm", Op::bmm},
    {"conv1d", Op::conv},
    {"conv2d", Op::conv},
    {"conv3d", Op::conv},
    {"convolution", Op::conv},
    {"sdpa", Op::attention},
    {"scaled_dot_product_attention", Op::attention},
    {"addcmul", Op::fma},
    {"gelu_tanh", Op::gelu},  // aten::gelu with approximate="tanh": the same op for autocast
    {"bias_act", Op::bias_activation},
    {"bias+activation", Op::bias_activation},
    {"cross_entropy_loss", Op::cross_entropy},
    {"norm", Op::l2_norm},
    {"linalg_vector_norm", Op::l2_norm},
};

template <std::size_t N>
std::string join(const std::string_view (&names)[N]) {
  std::string out;
  for (std::string_view n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// ---- built-in policies -------------------------------------------------------------------------

OpPrecision fixed(const Format& input, const Format& compute, const Format& accumulate,
                  const Format& output, std::string source) {
  OpPrecision p;
  p.input = input;
  p.compute = compute;
  p.accumulate = accumulate;
  p.output = output;
  p.source = std::move(source);
  return p;
}

OpPrecision promoted(const Format& nominal, const Format& compute, const Format& accumulate,
                     std::string source) {
  OpPrecision p = fixed(nominal, compute, accumulate, nominal, std::move(source));
  p.promote = true;
  return p;
}

Policy uniform(std::string name, std::string description, const Format& f, std::string source) {
  Policy p{std::move(name), std::move(description), {}, {}};
  for (OpPrecision& c : p.classes) c = fixed(f, f, f, f, source);
  return p;
}

Policy make_fp32() {
  return uniform("fp32", "Everything in binary32: the reference precision of training",
                 formats::fp32, "IEEE 754 binary32 throughout");
}

// TF32 as PyTorch enables it with torch.backends.cuda.matmul.allow_tf32 = True (default False
// since 1.12) and torch.backends.cudnn.allow_tf32 = True (the default): cuBLAS / cuDNN TF32 math
// converts the fp32 inputs of matmuls and convolutions to tf32 and accumulates in fp32. The
// conversion is round-to-nearest-even: cuBLASLt's 32F_FAST_TF32 on an H200 gave the hopper-tf32
// model's outputs on operands so rounded, bit for bit, and not on operands rounded with ties away
// or truncated (CudaBackendTest.Tf32ConversionOfFp32OperandsRoundsToNearestEven). MMA-Sim
// (microsoft/MMA-Sim) models a Tensor Core instruction fed raw fp32 bits, which ignores the low 13
// bits (truncation): a user policy with input_mode = "rz" gives that.
Policy make_tf32() {
  Policy p = uniform("tf32",
                     "fp32 with matmul, convolution and attention inputs rounded to tf32 (cuBLAS / "
                     "cuDNN TF32 math), fp32 accumulation and output",
                     formats::fp32, "IEEE 754 binary32 throughout");
  const std::string source =
      "cuBLAS/cuDNN TF32 math (torch.backends.cuda.matmul.allow_tf32, "
      "torch.backends.cudnn.allow_tf32): fp32 inputs converted to tf32, fp32 accumulation";
  for (OpClass c : {OpClass::matmul, OpClass::convolution, OpClass::attention}) {
    p.precision(c) = fixed(formats::tf32, formats::fp32, formats::fp32, formats::fp32, source);
  }
  // A dot product is a BLAS-1 call (cublasSdot), not a Tensor Core GEMM: TF32 does not apply.
  p.exceptions.push_back(
      {Op::dot, fixed(formats::fp32, formats::fp32, formats::fp32, formats::fp32,
                      "dot is a BLAS-1 reduction (cublasSdot), not a Tensor Core op: no TF32")});
  return p;
}

// "Pure" low precision: every rounding, accumulation included, in the low format. This is a
// worst case to compare against, not what model.half() does in PyTorch (cuBLAS keeps an fp32
// compute type, and ATen's elementwise and reduction kernels compute in fp32 "opmath"): that is
// the half-model and bf16-model policies (make_low_model).
Policy make_pure(const Format& f) {
  const std::string name = f.name;
  return uniform(name,
                 fmt::format("Everything in {0}, accumulation included: the worst case of a kernel "
                             "that never widens (not what PyTorch's model.half() does: see "
                             "half-model and bf16-model)",
                             name),
                 f, fmt::format("pure {}: inputs, arithmetic, accumulation and output", name));
}

// PyTorch CUDA autocast (torch.autocast("cuda", dtype=low)). The lists are those registered for
// the Autocast key in aten/src/ATen/autocast_mode.cpp (AT_FORALL_LOWER_PRECISION_FP,
// AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE, AT_FORALL_PROMOTE in autocast_mode.h in recent
// versions); ops in no list fall through and run in the dtype of their inputs.
Policy make_amp(const Format& low) {
  const std::string l = low.name;
  Policy p{"amp-" + l,
           fmt::format("PyTorch CUDA autocast with dtype {}: matmul, convolution and attention in "
                       "{} with fp32 accumulation; softmax, norms, losses and sums in fp32; other "
                       "ops in the dtype of their inputs",
                       l, l),
           {},
           {}};
  const Format& f32 = formats::fp32;
  const std::string kFile = "aten/src/ATen/autocast_mode.cpp";
  p.precision(OpClass::matmul) = fixed(
      low, f32, f32, low,
      fmt::format("autocast lower_precision_fp: mm, addmm, matmul, linear, bmm, baddbmm ({}); "
                  "cuBLAS compute type fp32",
                  kFile));
  p.precision(OpClass::convolution) =
      fixed(low, f32, f32, low,
            fmt::format("autocast lower_precision_fp: conv1d/2d/3d, convolution ({}); cuDNN math "
                        "type fp32 for half (aten/src/ATen/cudnn/Descriptors.h)",
                        kFile));
  p.precision(OpClass::attention) = fixed(
      low, f32, f32, low,
      fmt::format("autocast lower_precision_fp: scaled_dot_product_attention ({}); flash/memory-"
                  "efficient kernels keep the softmax statistics and sums in fp32",
                  kFile));
  p.precision(OpClass::elementwise) = promoted(
      low, f32, f32,
      fmt::format("add, mul, to: in no autocast list, run in their inputs' dtype (type promotion: "
                  "widest wins); addcmul (fma): autocast promote ({}); ATen computes half/bfloat16 "
                  "elementwise ops in fp32 opmath and rounds once",
                  kFile));
  p.precision(OpClass::activation) =
      promoted(low, f32, f32,
               "relu, gelu, silu in no autocast list: run in their inputs' dtype; ATen computes "
               "them in fp32 opmath");
  p.precision(OpClass::softmax) =
      fixed(f32, f32, f32, f32,
            fmt::format("autocast fp32_set_opt_dtype: softmax, log_softmax; fp32: logsumexp ({})",
                        kFile));
  p.precision(OpClass::normalization) =
      fixed(f32, f32, f32, f32,
            fmt::format("autocast fp32: layer_norm, native_layer_norm, group_norm; rms_norm since "
                        "PyTorch 2.12 (pytorch#174824) ({})",
                        kFile));
  p.precision(OpClass::loss) = fixed(
      f32, f32, f32, f32,
      fmt::format("cross_entropy decomposes into log_softmax (autocast fp32_set_opt_dtype) and "
                  "nll_loss (autocast fp32) ({})",
                  kFile));
  p.precision(OpClass::reduction) = fixed(
      f32, f32, f32, f32,
      fmt::format("autocast fp32_set_opt_dtype: sum, linalg_vector_norm; fp32_append_dtype: norm "
                  "({})",
                  kFile));
  p.exceptions.push_back(
      {Op::dot, promoted(low, f32, f32,
                         fmt::format("autocast promote: dot ({}); not lowered, runs in the widest "
                                     "input dtype",
                                     kFile))});
  p.exceptions.push_back(
      {Op::batch_norm,
       promoted(low, f32, f32,
                "batch_norm in no autocast list: runs in its input's dtype; cuDNN and ATen keep "
                "the mean/variance and the fp32 weight in fp32 and write the input's dtype")});
  p.exceptions.push_back(
      {Op::mean, promoted(low, f32, f32,
                          "mean in no autocast list: runs in its input's dtype; ATen's CUDA "
                          "reductions accumulate half/bfloat16 in fp32 (acc_type)")});
  return p;
}

// What PyTorch runs after model.half() or model.bfloat16(), without autocast: every tensor in the
// low format, but no kernel computes in it. cuBLAS multiplies half and bfloat16 with an fp32
// compute type, cuDNN convolves them with fp32 math, and ATen computes every other op in fp32
// (its opmath type; acc_type for reductions) and rounds the result once to the low format. The
// worst case that never widens is the pure policy beside it.
Policy make_low_model(const Format& low, std::string name, std::string_view method) {
  const std::string l = low.name;
  const std::string opmath = fmt::format(
      "model.{}(): {} tensors; ATen computes half and bfloat16 in fp32 opmath "
      "(at::opmath_type, aten/src/ATen/OpMathType.h; acc_type for reductions) and rounds the "
      "result once to {}",
      method, l, l);
  Policy p{std::move(name),
           fmt::format("PyTorch after model.{}() without autocast: tensors in {}; matmul, "
                       "convolution and attention accumulate in fp32, every other op computes in "
                       "fp32 and rounds once to {}",
                       method, l, l),
           {},
           {}};
  const Format& f32 = formats::fp32;
  for (OpClass c : kOpClasses) p.precision(c) = fixed(low, f32, f32, low, opmath);
  p.precision(OpClass::matmul) =
      fixed(low, f32, f32, low,
            fmt::format("model.{}(): cuBLAS compute type CUBLAS_COMPUTE_32F for half and bfloat16 "
                        "(at::cuda::blas::gemm; allow_fp16/bf16_reduced_precision_reduction only "
                        "loosen split-K reductions); dot: cublasDotEx with an fp32 execution type",
                        method));
  p.precision(OpClass::convolution) =
      fixed(low, f32, f32, low,
            fmt::format("model.{}(): cuDNN math type fp32 for half and bfloat16 "
                        "(aten/src/ATen/cudnn/Descriptors.h)",
                        method));
  p.precision(OpClass::attention) =
      fixed(low, f32, f32, low,
            fmt::format("model.{}(): scaled_dot_product_attention's flash and memory-efficient "
                        "kernels keep the softmax statistics and sums in fp32",
                        method));
  return p;
}

const std::vector<Policy>& builtins() {
  static const std::vector<Policy> all = {make_fp32(),
                                          make_tf32(),
                                          make_pure(formats::fp16),
                                          make_pure(formats::bf16),
                                          make_amp(formats::fp16),
                                          make_amp(formats::bf16),
                                          make_low_model(formats::fp16, "half-model", "half"),
                                          make_low_model(formats::bf16, "bf16-model", "bfloat16")};
  return all;
}

// ---- TOML --------------------------------------------------------------------------------------

class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(const toml::source_region& where, const std::string& message) const {
    throw PolicyError(source_, static_cast<int>(where.begin.line),
                      static_cast<int>(where.begin.column), message);
  }

  std::string string_value(const toml::node& node, const std::string& key) const {
    const auto* s = node.as_string();
    if (s == nullptr) {
      fail(node.source(),
           fmt::format("key '{}': expected a string, got {}", key, type_name(node.type())));
    }
    return s->get();
  }

  Format format_value(const toml::node& node, const std::string& key) const {
    const std::string text = string_value(node, key);
    const numeric::FormatSpec spec = numeric::parse_format(text);
    if (!spec.format) fail(node.source(), fmt::format("key '{}': {}", key, spec.error));
    numeric::RoundingOptions options;
    options.format = *spec.format;
    const numeric::Validation v = numeric::validate(options);
    if (!v.ok()) {
      fail(node.source(), fmt::format("key '{}': format '{}': {}", key, text, v.errors.front()));
    }
    return *spec.format;
  }

  Rounding mode_value(const toml::node& node, const std::string& key) const {
    const std::string text = string_value(node, key);
    const numeric::RoundingSpec mode = numeric::parse_rounding(text);
    if (!mode.mode) fail(node.source(), fmt::format("key '{}': {}", key, mode.error));
    return *mode.mode;
  }

  // Applies the keys of `table` (named `path` in messages) to every entry in `targets`.
  void apply(const toml::table& table, const std::string& path,
             std::span<OpPrecision* const> targets) const {
    for (const auto& [key, node] : table) {
      const std::string k(key.str());
      const std::string full = path + "." + k;
      if (k == "input" || k == "compute" || k == "accumulate" || k == "output") {
        const Format f = format_value(node, full);
        for (OpPrecision* t : targets) {
          (k == "input"        ? t->input
           : k == "compute"    ? t->compute
           : k == "accumulate" ? t->accumulate
                               : t->output) = f;
        }
      } else if (k == "mode" || k == "input_mode") {
        const Rounding m = mode_value(node, full);
        for (OpPrecision* t : targets) (k == "mode" ? t->mode : t->input_mode) = m;
      } else if (k == "promote") {
        const auto* b = node.as_boolean();
        if (b == nullptr) {
          fail(node.source(), fmt::format("key '{}': expected true or false, got {}", full,
                                          type_name(node.type())));
        }
        for (OpPrecision* t : targets) t->promote = b->get();
      } else {
        fail(key.source(), fmt::format("unknown key '{}' (expected input, compute, accumulate, "
                                       "output, mode, input_mode, promote)",
                                       full));
      }
    }
    const std::string where = fmt::format("{}:{}:{} [{}]", source_, table.source().begin.line,
                                          table.source().begin.column, path);
    for (OpPrecision* t : targets) t->source = where;
  }

  static std::string_view type_name(toml::node_type type) {
    switch (type) {
      case toml::node_type::string: return "a string";
      case toml::node_type::integer: return "an integer";
      case toml::node_type::floating_point: return "a floating-point number";
      case toml::node_type::boolean: return "a boolean";
      case toml::node_type::array: return "an array";
      case toml::node_type::table: return "a table";
      case toml::node_type::date:
      case toml::node_type::time:
      case toml::node_type::date_time: return "a date or time";
      case toml::node_type::none: break;
    }
    return "nothing";
  }

  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

Policy build(const toml::table& root, const Reader& r) {
  // name, description, base first: the tables apply on top of the base.
  Policy policy = builtins().front();
  policy.description.clear();
  bool have_name = false;
  for (const auto& [key, node] : root) {
    const std::string k(key.str());
    if (k == "name") {
      policy.name = r.string_value(node, k);
      if (policy.name.empty()) r.fail(node.source(), "key 'name': the policy name is empty");
      if (find_builtin(policy.name) != nullptr) {
        r.fail(node.source(),
               fmt::format("key 'name': '{}' is a built-in policy; give yours another name (use "
                           "base = \"{}\" to start from it)",
                           policy.name, policy.name));
      }
      have_name = true;
    } else if (k == "description") {
      policy.description = r.string_value(node, k);
    } else if (k == "base") {
      const std::string base = r.string_value(node, k);
      const Policy* b = find_builtin(base);
      if (b == nullptr) {
        r.fail(node.source(), fmt::format("key 'base': unknown policy '{}' (built-in: {})", base,
                                          builtin_policy_names()));
      }
      const std::string name = policy.name;
      const std::string description = policy.description;
      policy = *b;
      policy.name = name;
      policy.description = description;
    } else if (k == "ops") {
      if (!node.is_table()) {
        r.fail(node.source(), fmt::format("key 'ops': expected a table of ops, got {}",
                                          Reader::type_name(node.type())));
      }
    } else if (op_class_from_name(k)) {
      if (!node.is_table()) {
        r.fail(node.source(), fmt::format("key '{}': expected a table ([{}]), got {}", k, k,
                                          Reader::type_name(node.type())));
      }
    } else {
      r.fail(key.source(),
             fmt::format("unknown key '{}' (expected name, description, base, ops, or an op "
                         "class: {})",
                         k, op_class_names()));
    }
  }
  if (!have_name) r.fail(root.source(), "missing key 'name' (the policy's name)");

  // Class tables: the class and every inherited exception of that class.
  for (const auto& [key, node] : root) {
    const std::string k(key.str());
    const auto c = op_class_from_name(k);
    if (!c || k == "ops") continue;
    std::vector<OpPrecision*> targets = {&policy.precision(*c)};
    for (OpException& e : policy.exceptions) {
      if (op_class(e.op) == *c) targets.push_back(&e.precision);
    }
    r.apply(*node.as_table(), k, targets);
  }
  // Single ops.
  if (const auto* ops = root["ops"].as_table()) {
    for (const auto& [key, node] : *ops) {
      const std::string k(key.str());
      const auto op = op_from_name(k);
      if (!op) {
        r.fail(key.source(), fmt::format("unknown op 'ops.{}' (known: {})", k, op_names()));
      }
      if (!node.is_table()) {
        r.fail(node.source(), fmt::format("key 'ops.{}': expected a table ([ops.{}]), got {}", k, k,
                                          Reader::type_name(node.type())));
      }
      auto it = std::find_if(policy.exceptions.begin(), policy.exceptions.end(),
                             [&](const OpException& e) { return e.op == *op; });
      if (it == policy.exceptions.end()) {
        policy.exceptions.push_back({*op, policy.precision(op_class(*op))});
        it = policy.exceptions.end() - 1;
      }
      OpPrecision* target = &it->precision;
      r.apply(*node.as_table(), "ops." + k, std::span<OpPrecision* const>(&target, 1));
    }
  }
  return policy;
}

}  // namespace

// ---- names -------------------------------------------------------------------------------------

std::string_view op_class_name(OpClass c) {
  return kClassNames[static_cast<std::size_t>(c)];
}

std::optional<OpClass> op_class_from_name(std::string_view name) {
  const std::string key = lower(name);
  for (OpClass c : kOpClasses) {
    if (op_class_name(c) == key) return c;
  }
  return std::nullopt;
}

std::string_view op_name(Op op) {
  return kOps[static_cast<std::size_t>(op)].name;
}

std::optional<Op> op_from_name(std::string_view name) {
  const std::string key = lower(name);
  for (Op op : kAllOps) {
    if (op_name(op) == key) return op;
  }
  for (const Alias& a : kOpAliases) {
    if (a.name == key) return a.op;
  }
  return std::nullopt;
}

OpClass op_class(Op op) {
  return kOps[static_cast<std::size_t>(op)].op_class;
}

std::optional<OpClass> op_class_of(std::string_view name) {
  const auto op = op_from_name(name);
  if (!op) return std::nullopt;
  return op_class(*op);
}

std::span<const Op> ops_of(OpClass c) {
  // kAllOps is grouped by class, in class order.
  const auto* first = std::find_if(std::begin(kAllOps), std::end(kAllOps),
                                   [c](Op op) { return op_class(op) == c; });
  const auto* last =
      std::find_if(first, std::end(kAllOps), [c](Op op) { return op_class(op) != c; });
  return {first, static_cast<std::size_t>(last - first)};
}

std::string op_class_names() {
  return join(kClassNames);
}

std::string op_names() {
  std::string out;
  for (Op op : kAllOps) out += (out.empty() ? "" : ", ") + std::string(op_name(op));
  return out;
}

// ---- precisions --------------------------------------------------------------------------------

bool same_precision(const OpPrecision& a, const OpPrecision& b) {
  return numeric::same_format(a.input, b.input) && numeric::same_format(a.compute, b.compute) &&
         numeric::same_format(a.accumulate, b.accumulate) &&
         numeric::same_format(a.output, b.output) && a.mode == b.mode &&
         a.input_mode == b.input_mode && a.promote == b.promote;
}

const OpPrecision& Policy::precision(OpClass c) const {
  return classes[static_cast<std::size_t>(c)];
}

OpPrecision& Policy::precision(OpClass c) {
  return classes[static_cast<std::size_t>(c)];
}

const OpPrecision& Policy::precision(Op op) const {
  for (const OpException& e : exceptions) {
    if (e.op == op) return e.precision;
  }
  return precision(op_class(op));
}

bool contains(const Format& a, const Format& b) {
  return a.precision >= b.precision && a.emin <= b.emin && a.emax >= b.emax &&
         (a.subnormals || !b.subnormals) && (a.has_infinity() || !b.has_infinity()) &&
         (a.has_nan() || !b.has_nan());
}

Format widest(std::span<const Format> inputs) {
  if (inputs.empty()) throw std::invalid_argument("widest: no input formats");
  for (const Format& candidate : inputs) {
    if (std::all_of(inputs.begin(), inputs.end(),
                    [&](const Format& f) { return contains(candidate, f); })) {
      return candidate;
    }
  }
  // PyTorch's floating dtypes from narrow to wide (tf32 and fp8 are not promotion results).
  for (const Format& candidate : {formats::fp16, formats::bf16, formats::fp32, formats::fp64}) {
    if (std::all_of(inputs.begin(), inputs.end(),
                    [&](const Format& f) { return contains(candidate, f); })) {
      return candidate;
    }
  }
  return formats::fp64;
}

OpPrecision resolve(const OpPrecision& precision, std::span<const Format> inputs) {
  if (!precision.promote || inputs.empty()) return precision;
  OpPrecision r = precision;
  const Format w = widest(inputs);
  r.input = w;
  r.output = w;
  if (!contains(r.compute, w)) r.compute = widest(std::array{r.compute, w});
  if (!contains(r.accumulate, w)) r.accumulate = widest(std::array{r.accumulate, w});
  return r;
}

// ---- built-ins ---------------------------------------------------------------------------------

std::span<const Policy> builtin_policies() {
  return builtins();
}

const Policy* find_builtin(std::string_view name) {
  const std::string key = lower(name);
  for (const Policy& p : builtins()) {
    if (p.name == key) return &p;
  }
  return nullptr;
}

std::string builtin_policy_names() {
  std::string out;
  for (const Policy& p : builtins()) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

std::string format_label(const Format& f) {
  for (const Format& b : formats::builtin) {
    if (numeric::same_format(b, f)) return b.name;
  }
  return fmt::format("user:p={},emin={},emax={}{}", f.precision, f.emin, f.emax,
                     f.specials == numeric::SpecialEncoding::ieee
                         ? ""
                         : fmt::format(",specials={}", numeric::specials_name(f.specials)));
}

nlohmann::json to_json(const OpPrecision& p) {
  return {{"input", format_label(p.input)},
          {"compute", format_label(p.compute)},
          {"accumulate", format_label(p.accumulate)},
          {"output", format_label(p.output)},
          {"mode", std::string(numeric::rounding_name(p.mode))},
          {"input_mode", std::string(numeric::rounding_name(p.input_mode))},
          {"promote", p.promote},
          {"source", p.source}};
}

nlohmann::json to_json(const Policy& p) {
  nlohmann::json classes = nlohmann::json::object();
  for (OpClass c : kOpClasses) {
    classes[std::string(op_class_name(c))] = to_json(p.precision(c));
  }
  nlohmann::json ops = nlohmann::json::object();
  for (const OpException& e : p.exceptions) {
    nlohmann::json entry = to_json(e.precision);
    entry["class"] = std::string(op_class_name(op_class(e.op)));
    ops[std::string(op_name(e.op))] = entry;
  }
  return {{"name", p.name}, {"description", p.description}, {"classes", classes}, {"ops", ops}};
}

// ---- user policies -----------------------------------------------------------------------------

PolicyError::PolicyError(std::string source, int line, int column, const std::string& message)
    : std::runtime_error(line > 0 ? fmt::format("{}:{}:{}: {}", source, line, column, message)
                         : source.empty() ? message
                                          : fmt::format("{}: {}", source, message)),
      source_(std::move(source)),
      line_(line),
      column_(column),
      message_(message) {}

Policy parse_policy(std::string_view text, std::string_view source_name) {
  const Reader reader(source_name);
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    throw PolicyError(std::string(source_name), static_cast<int>(e.source().begin.line),
                      static_cast<int>(e.source().begin.column),
                      fmt::format("not valid TOML: {}", e.description()));
  }
  return build(root, reader);
}

Policy load_policy(const std::string& path) {
  std::string text;
  try {
    text = io::read_file(path);
  } catch (const io::FileError& e) {
    throw PolicyError(path, 0, 0, e.reason());
  }
  return parse_policy(text, path);
}

Policy policy_by_name_or_file(const std::string& name) {
  if (const Policy* builtin = find_builtin(name)) return *builtin;
  const std::string suffix = ".toml";
  const bool file = name.find('/') != std::string::npos ||
                    (name.size() >= suffix.size() &&
                     name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0);
  if (file) return load_policy(name);
  throw PolicyError("", 0, 0,
                    fmt::format("unknown policy '{}' (built-in: {}; or a FILE.toml)", name,
                                builtin_policy_names()));
}

}  // namespace ampbench::policy
