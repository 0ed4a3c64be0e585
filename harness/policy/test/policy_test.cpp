// Tests of the precision policies. The autocast expectations are written from PyTorch's CUDA
// autocast lists (aten/src/ATen/autocast_mode.cpp, summarised in
// /work/shared/research/pytorch-amp.md), not from our own table.
#include "harness/policy/policy.hpp"

#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "harness/numeric/format.hpp"

namespace ampbench::policy {
namespace {

namespace formats = numeric::formats;
using numeric::Format;

bool same(const Format& a, const Format& b) {
  return numeric::same_format(a, b);
}

std::string label(const OpPrecision& p) {
  return format_label(p.input) + "/" + format_label(p.compute) + "/" + format_label(p.accumulate) +
         "/" + format_label(p.output) + (p.promote ? " promote" : "");
}

// ---- names -------------------------------------------------------------------------------------

TEST(PolicyNames, EveryCatalogOpMapsToItsClass) {
  struct Case {
    const char* op;
    OpClass c;
  };
  const Case cases[] = {
      {"gemm", OpClass::matmul},
      {"matmul", OpClass::matmul},
      {"linear", OpClass::matmul},
      {"bmm", OpClass::matmul},
      {"dot", OpClass::matmul},
      {"conv", OpClass::convolution},
      {"conv2d", OpClass::convolution},
      {"attention", OpClass::attention},
      {"sdpa", OpClass::attention},
      {"scaled_dot_product_attention", OpClass::attention},
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
      {"LAYER_NORM", OpClass::normalization},
      {"gelu_tanh", OpClass::activation},
      {"mm", OpClass::matmul},
      {"addcmul", OpClass::elementwise},
  };
  for (const Case& c : cases) {
    ASSERT_TRUE(op_class_of(c.op).has_value()) << c.op;
    EXPECT_EQ(*op_class_of(c.op), c.c) << c.op;
  }
  EXPECT_FALSE(op_class_of("frobnicate").has_value());
  EXPECT_FALSE(op_class_of("").has_value());
}

TEST(PolicyNames, NamesRoundTripAndClassesListTheirOps) {
  std::size_t total = 0;
  for (OpClass c : kOpClasses) {
    EXPECT_EQ(op_class_from_name(op_class_name(c)), c);
    for (Op op : ops_of(c)) {
      EXPECT_EQ(op_class(op), c) << op_name(op);
      EXPECT_EQ(op_from_name(op_name(op)), op) << op_name(op);
      ++total;
    }
  }
  EXPECT_EQ(total, kOpCount);
  EXPECT_EQ(ops_of(OpClass::matmul).size(), 5u);
  EXPECT_EQ(ops_of(OpClass::loss).size(), 1u);
  EXPECT_FALSE(op_class_from_name("gemm").has_value());
  EXPECT_EQ(op_class_names(),
            "matmul, convolution, attention, elementwise, activation, softmax, normalization, "
            "loss, reduction");
}

// ---- built-in policies -------------------------------------------------------------------------

TEST(BuiltinPolicies, NamesAndLookup) {
  EXPECT_EQ(builtin_policy_names(),
            "fp32, tf32, fp16, bf16, amp-fp16, amp-bf16, half-model, bf16-model");
  for (const Policy& p : builtin_policies()) {
    EXPECT_EQ(find_builtin(p.name), &p);
    EXPECT_FALSE(p.description.empty()) << p.name;
    for (OpClass c : kOpClasses) EXPECT_FALSE(p.precision(c).source.empty()) << p.name;
    std::set<Op> seen;
    for (const OpException& e : p.exceptions) EXPECT_TRUE(seen.insert(e.op).second) << p.name;
  }
  EXPECT_EQ(find_builtin("AMP-FP16"), find_builtin("amp-fp16"));
  EXPECT_EQ(find_builtin("amp"), nullptr);
}

TEST(BuiltinPolicies, Fp32IsFp32Everywhere) {
  const Policy& p = *find_builtin("fp32");
  for (std::size_t i = 0; i < kOpCount; ++i) {
    const OpPrecision& q = p.precision(static_cast<Op>(i));
    EXPECT_EQ(label(q), "fp32/fp32/fp32/fp32") << op_name(static_cast<Op>(i));
    EXPECT_EQ(q.mode, numeric::Rounding::nearest_even);
  }
}

TEST(BuiltinPolicies, Tf32RoundsTensorCoreInputsOnly) {
  const Policy& p = *find_builtin("tf32");
  for (Op op : {Op::gemm, Op::matmul, Op::linear, Op::bmm, Op::conv, Op::attention}) {
    EXPECT_EQ(label(p.precision(op)), "tf32/fp32/fp32/fp32") << op_name(op);
    EXPECT_EQ(p.precision(op).input_mode, numeric::Rounding::nearest_even);
  }
  EXPECT_EQ(label(p.precision(Op::dot)), "fp32/fp32/fp32/fp32");  // BLAS-1, no Tensor Cores
  for (Op op : {Op::add, Op::gelu, Op::softmax, Op::layer_norm, Op::cross_entropy, Op::sum}) {
    EXPECT_EQ(label(p.precision(op)), "fp32/fp32/fp32/fp32") << op_name(op);
  }
}

TEST(BuiltinPolicies, PureLowPrecisionAccumulatesInTheLowFormat) {
  for (const char* name : {"fp16", "bf16"}) {
    const Policy& p = *find_builtin(name);
    const std::string all = std::string(name) + "/" + name + "/" + name + "/" + name;
    for (std::size_t i = 0; i < kOpCount; ++i) {
      EXPECT_EQ(label(p.precision(static_cast<Op>(i))), all) << name;
    }
  }
}

// model.half() and model.bfloat16() without autocast: every op reads and writes the low format
// and computes and accumulates in fp32 (cuBLAS's compute type, cuDNN's math type, ATen's opmath),
// with no promote entries (no autocast: an op's inputs are already in the low format).
TEST(BuiltinPolicies, LowModelsKeepTensorsLowAndComputeInFp32) {
  for (const auto& [name, low] :
       {std::pair{"half-model", "fp16"}, std::pair{"bf16-model", "bf16"}}) {
    const Policy& p = *find_builtin(name);
    const std::string expected = std::string(low) + "/fp32/fp32/" + low;
    for (std::size_t i = 0; i < kOpCount; ++i) {
      const OpPrecision& q = p.precision(static_cast<Op>(i));
      EXPECT_EQ(label(q), expected) << name << " " << op_name(static_cast<Op>(i));
      EXPECT_FALSE(q.promote) << name << " " << op_name(static_cast<Op>(i));
      EXPECT_EQ(q.mode, numeric::Rounding::nearest_even);
    }
    EXPECT_TRUE(p.exceptions.empty()) << name;
    EXPECT_NE(p.precision(Op::gemm).source.find("CUBLAS_COMPUTE_32F"), std::string::npos);
    EXPECT_NE(p.precision(Op::softmax).source.find("opmath"), std::string::npos);
  }
}

// What CUDA autocast does to each op of the catalog, from its lists:
//   lower: lower_precision_fp list (conv*, addmm, mm, matmul, linear, bmm, baddbmm,
//          scaled_dot_product_attention)
//   fp32:  fp32 list (logsumexp, layer_norm, nll_loss...) and fp32_set_opt_dtype list (softmax,
//          log_softmax, sum, linalg_vector_norm): output float32
//   promote: promote list (dot, addcmul) or in no list (add, mul, relu, gelu, silu, mean,
//          batch_norm...): the dtype of the inputs, the widest when they differ
enum class Autocast { lower, fp32, promote };

struct Expectation {
  Op op;
  Autocast what;
  const char* why;
};

const Expectation kAutocast[] = {
    {Op::gemm, Autocast::lower, "mm, addmm: lower_precision_fp"},
    {Op::matmul, Autocast::lower, "matmul: lower_precision_fp"},
    {Op::linear, Autocast::lower, "linear: lower_precision_fp"},
    {Op::bmm, Autocast::lower, "bmm, baddbmm: lower_precision_fp"},
    {Op::dot, Autocast::promote, "dot: promote list"},
    {Op::conv, Autocast::lower, "conv1d/2d/3d, convolution: lower_precision_fp"},
    {Op::attention, Autocast::lower, "scaled_dot_product_attention: lower_precision_fp"},
    {Op::add, Autocast::promote, "add: in no list"},
    {Op::mul, Autocast::promote, "mul: in no list"},
    {Op::fma, Autocast::promote, "addcmul: promote list"},
    {Op::cast, Autocast::promote, "to/copy: in no list"},
    {Op::relu, Autocast::promote, "relu: in no list"},
    {Op::gelu, Autocast::promote, "gelu: in no list"},
    {Op::silu, Autocast::promote, "silu: in no list"},
    {Op::bias_activation, Autocast::promote, "add + activation: in no list"},
    {Op::softmax, Autocast::fp32, "softmax: fp32_set_opt_dtype"},
    {Op::log_softmax, Autocast::fp32, "log_softmax: fp32_set_opt_dtype"},
    {Op::logsumexp, Autocast::fp32, "logsumexp: fp32"},
    {Op::layer_norm, Autocast::fp32, "layer_norm: fp32"},
    // Not in pytorch-amp.md's list: added to the fp32 list in PyTorch 2.12 (pytorch#174824).
    {Op::rms_norm, Autocast::fp32, "rms_norm: fp32 since 2.12"},
    {Op::batch_norm, Autocast::promote, "batch_norm: in no list"},
    {Op::cross_entropy, Autocast::fp32,
     "cross_entropy: log_softmax (fp32_set_opt_dtype) + nll_loss (fp32)"},
    {Op::sum, Autocast::fp32, "sum: fp32_set_opt_dtype"},
    {Op::mean, Autocast::promote, "mean: in no list"},
    {Op::l2_norm, Autocast::fp32, "linalg_vector_norm: fp32_set_opt_dtype; norm: fp32"},
};

TEST(AutocastPolicies, EveryCatalogOpIsCovered) {
  std::set<Op> covered;
  for (const Expectation& e : kAutocast) covered.insert(e.op);
  EXPECT_EQ(covered.size(), kOpCount);
}

class AutocastPolicy : public ::testing::TestWithParam<const char*> {};

TEST_P(AutocastPolicy, ClassifiesEveryOpAsTheCudaAutocastListsDo) {
  const Policy& p = *find_builtin(GetParam());
  const Format low = std::string(GetParam()) == "amp-fp16" ? formats::fp16 : formats::bf16;
  for (const Expectation& e : kAutocast) {
    const OpPrecision& q = p.precision(e.op);
    SCOPED_TRACE(std::string(op_name(e.op)) + " (" + e.why + "): " + label(q));
    switch (e.what) {
      case Autocast::lower:
        // Inputs cast to the low dtype, result in the low dtype, fp32 accumulation.
        EXPECT_FALSE(q.promote);
        EXPECT_TRUE(same(q.input, low));
        EXPECT_TRUE(same(q.output, low));
        EXPECT_TRUE(same(q.accumulate, formats::fp32));
        EXPECT_TRUE(same(q.compute, formats::fp32));
        break;
      case Autocast::fp32:
        EXPECT_FALSE(q.promote);
        EXPECT_TRUE(same(q.input, formats::fp32));
        EXPECT_TRUE(same(q.compute, formats::fp32));
        EXPECT_TRUE(same(q.accumulate, formats::fp32));
        EXPECT_TRUE(same(q.output, formats::fp32));
        break;
      case Autocast::promote: {
        EXPECT_TRUE(q.promote);
        // Fed by the low-precision output of a matmul, it stays low; an fp32 input wins.
        const std::array<Format, 1> lows = {low};
        const std::array<Format, 2> mixed = {low, formats::fp32};
        EXPECT_TRUE(same(resolve(q, lows).output, low));
        EXPECT_TRUE(same(resolve(q, mixed).output, formats::fp32));
        EXPECT_TRUE(same(resolve(q, mixed).input, formats::fp32));
        // ATen computes half/bfloat16 in fp32 opmath and accumulates reductions in fp32.
        EXPECT_TRUE(same(q.compute, formats::fp32));
        EXPECT_TRUE(same(q.accumulate, formats::fp32));
        break;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Builtin, AutocastPolicy, ::testing::Values("amp-fp16", "amp-bf16"));

// ---- promote rule ------------------------------------------------------------------------------

TEST(Promote, WidestWins) {
  const auto w = [](std::initializer_list<Format> list) {
    return format_label(widest(std::vector<Format>(list)));
  };
  EXPECT_EQ(w({formats::fp16}), "fp16");
  EXPECT_EQ(w({formats::fp16, formats::fp32}), "fp32");
  EXPECT_EQ(w({formats::fp32, formats::bf16}), "fp32");
  EXPECT_EQ(w({formats::bf16, formats::bf16}), "bf16");
  EXPECT_EQ(w({formats::fp16, formats::fp64, formats::fp32}), "fp64");
  // Neither holds the other: the narrowest PyTorch dtype that holds both, as
  // torch.promote_types(float16, bfloat16) == float32 (not tf32, which is no dtype).
  EXPECT_EQ(w({formats::fp16, formats::bf16}), "fp32");
  EXPECT_EQ(w({formats::e4m3, formats::e5m2}), "fp16");
  EXPECT_EQ(w({formats::e4m3, formats::fp16}), "fp16");
  EXPECT_THROW(widest({}), std::invalid_argument);
}

TEST(Promote, ContainsComparesValueSets) {
  EXPECT_TRUE(contains(formats::fp32, formats::fp16));
  EXPECT_TRUE(contains(formats::fp32, formats::bf16));
  EXPECT_TRUE(contains(formats::tf32, formats::fp16));
  EXPECT_FALSE(contains(formats::fp16, formats::bf16));
  EXPECT_FALSE(contains(formats::bf16, formats::fp16));
  EXPECT_FALSE(contains(formats::e4m3, formats::e5m2));  // e5m2 has infinities, e4m3 does not
  Format no_subnormals = formats::fp16;
  no_subnormals.subnormals = false;
  EXPECT_FALSE(contains(no_subnormals, formats::fp16));
  EXPECT_TRUE(contains(formats::fp16, no_subnormals));
}

TEST(Promote, ResolveWidensComputeAndLeavesFixedEntriesAlone) {
  OpPrecision p;
  p.promote = true;
  p.input = p.output = formats::bf16;
  p.compute = p.accumulate = formats::fp32;
  const std::array<Format, 2> inputs = {formats::bf16, formats::fp64};
  const OpPrecision r = resolve(p, inputs);
  EXPECT_EQ(label(r), "fp64/fp64/fp64/fp64 promote");
  const OpPrecision fixed = find_builtin("amp-fp16")->precision(Op::gemm);
  const std::array<Format, 1> f32 = {formats::fp32};
  EXPECT_EQ(label(resolve(fixed, f32)), "fp16/fp32/fp32/fp16");  // autocast casts fp32 down
  EXPECT_EQ(label(resolve(p, {})), label(p));
}

// ---- user policies -----------------------------------------------------------------------------

TEST(UserPolicy, DefaultsToFp32AndOverridesNamedKeysOnly) {
  const Policy p = parse_policy(
      "name = \"mine\"\n"
      "[matmul]\n"
      "input = \"bf16\"\n"
      "output = \"bfloat16\"\n"
      "mode = \"rz\"\n"
      "input_mode = \"rna\"\n",
      "mine.toml");
  EXPECT_EQ(p.name, "mine");
  EXPECT_EQ(label(p.precision(OpClass::matmul)), "bf16/fp32/fp32/bf16");
  EXPECT_EQ(p.precision(OpClass::matmul).mode, numeric::Rounding::toward_zero);
  EXPECT_EQ(p.precision(OpClass::matmul).input_mode, numeric::Rounding::nearest_away);
  EXPECT_EQ(p.precision(OpClass::matmul).source, "mine.toml:2:1 [matmul]");
  EXPECT_EQ(label(p.precision(OpClass::softmax)), "fp32/fp32/fp32/fp32");
  EXPECT_TRUE(p.exceptions.empty());
}

TEST(UserPolicy, BaseIsInheritedAndClassTablesReachInheritedExceptions) {
  const Policy p = parse_policy(
      "name = \"amp-fp16-fp16-acc\"\n"
      "base = \"amp-fp16\"\n"
      "[matmul]\n"
      "accumulate = \"fp16\"\n"
      "[reduction]\n"
      "accumulate = \"fp16\"\n",
      "t.toml");
  const Policy& base = *find_builtin("amp-fp16");
  EXPECT_EQ(p.description, "");
  EXPECT_EQ(label(p.precision(Op::gemm)), "fp16/fp32/fp16/fp16");
  // dot is the promote exception of the matmul class: it keeps promote, gets the accumulator.
  EXPECT_EQ(label(p.precision(Op::dot)), "fp16/fp32/fp16/fp16 promote");
  EXPECT_EQ(label(p.precision(Op::mean)), "fp16/fp32/fp16/fp16 promote");
  EXPECT_EQ(label(p.precision(Op::sum)), "fp32/fp32/fp16/fp32");
  for (OpClass c : {OpClass::convolution, OpClass::attention, OpClass::elementwise,
                    OpClass::softmax, OpClass::normalization, OpClass::loss}) {
    EXPECT_TRUE(same_precision(p.precision(c), base.precision(c))) << op_class_name(c);
  }
  EXPECT_EQ(p.precision(Op::batch_norm).source, base.precision(Op::batch_norm).source);
}

TEST(UserPolicy, OpTablesMakeExceptions) {
  const Policy p = parse_policy(
      "name = \"x\"\n"
      "base = \"amp-bf16\"\n"
      "[ops.gelu]\n"
      "promote = false\n"
      "input = \"fp32\"\n"
      "output = \"fp32\"\n"
      "[ops.dot]\n"
      "compute = \"user:p=12,emin=-14,emax=15\"\n",
      "t.toml");
  EXPECT_EQ(label(p.precision(Op::gelu)), "fp32/fp32/fp32/fp32");
  EXPECT_EQ(label(p.precision(Op::relu)), "bf16/fp32/fp32/bf16 promote");
  EXPECT_EQ(label(p.precision(Op::dot)), "bf16/user:p=12,emin=-14,emax=15/fp32/bf16 promote");
}

TEST(UserPolicy, ExampleFileLoadsAsDocumented) {
  const Policy p = load_policy(AMPBENCH_EXAMPLE_POLICY);
  EXPECT_EQ(p.name, "amp-bf16-fp32-attention");
  EXPECT_EQ(p.description, "bf16 autocast with attention in fp32");
  EXPECT_EQ(label(p.precision(Op::attention)), "fp32/fp32/fp32/fp32");
  EXPECT_EQ(label(p.precision(Op::gemm)), "bf16/fp32/fp32/bf16");
  EXPECT_EQ(label(p.precision(Op::dot)), "bf16/fp32/fp32/fp32");
  EXPECT_EQ(label(p.precision(Op::sum)), "fp32/fp32/fp64/fp32");
  EXPECT_EQ(label(p.precision(Op::mean)), "bf16/fp32/fp64/bf16 promote");
  EXPECT_EQ(label(p.precision(Op::softmax)), "fp32/fp32/fp32/fp32");
}

// docs/policies.md shows the example: every setting of the file must appear there.
TEST(UserPolicy, ExampleFileIsTheOneInTheDocs) {
  std::ifstream doc_file(AMPBENCH_POLICY_DOC);
  std::stringstream doc;
  doc << doc_file.rdbuf();
  ASSERT_FALSE(doc.str().empty());
  std::ifstream example(AMPBENCH_EXAMPLE_POLICY);
  int settings = 0;
  for (std::string line; std::getline(example, line);) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_NE(doc.str().find("\n" + line + "\n"), std::string::npos) << line;
    ++settings;
  }
  EXPECT_EQ(settings, 12);
}

struct ErrorCase {
  const char* text;
  int line;
  int column;
  const char* message;
};

TEST(UserPolicy, EveryErrorNamesTheFileLineColumnKeyAndProblem) {
  const ErrorCase cases[] = {
      {"name = \"x\"\n[matmul\n", 2, 8, "not valid TOML"},
      {"name = \"x\"\nname = \"y\"\n", 2, 8, "cannot redefine existing string 'name'"},
      {"description = \"no name\"\n", 1, 1, "missing key 'name'"},
      {"name = 3\n", 1, 8, "key 'name': expected a string, got an integer"},
      {"name = \"\"\n", 1, 8, "key 'name': the policy name is empty"},
      {"name = \"amp-fp16\"\n", 1, 8, "'amp-fp16' is a built-in policy"},
      {"name = \"x\"\ndescription = true\n", 2, 15,
       "key 'description': expected a string, got a boolean"},
      {"name = \"x\"\nbase = \"amp\"\n", 2, 8,
       "key 'base': unknown policy 'amp' (built-in: fp32, tf32, fp16, bf16, amp-fp16, amp-bf16, "
       "half-model, bf16-model)"},
      {"name = \"x\"\ncolour = \"red\"\n", 2, 1,
       "unknown key 'colour' (expected name, description, base, ops, or an op class: matmul, "
       "convolution,"},
      {"name = \"x\"\n[matmult]\ninput = \"fp16\"\n", 2, 2, "unknown key 'matmult'"},
      {"name = \"x\"\nmatmul = \"fp16\"\n", 2, 10,
       "key 'matmul': expected a table ([matmul]), got a string"},
      {"name = \"x\"\n[matmul]\ninput = \"fp17\"\n", 3, 9,
       "key 'matmul.input': unknown format 'fp17' (known: fp64, fp32, tf32, bf16, fp16, e4m3, "
       "e5m2, e3m2, e2m3, e2m1, or user:p=P,emin=E,emax=E[,specials=S])"},
      {"name = \"x\"\n[matmul]\naccumulate = 32\n", 3, 14,
       "key 'matmul.accumulate': expected a string, got an integer"},
      {"name = \"x\"\n[softmax]\ncompute = \"user:p=60,emin=-3,emax=4\"\n", 3, 11,
       "key 'softmax.compute': format 'user:p=60,emin=-3,emax=4': precision 60 exceeds"},
      {"name = \"x\"\n[loss]\nmode = \"nearest\"\n", 3, 8,
       "key 'loss.mode': unknown rounding mode 'nearest' (known: rne, rna, rz, ru, rd, rto, sr, "
       "srp, sre)"},
      {"name = \"x\"\n[loss]\ninput_mode = 1.5\n", 3, 14,
       "key 'loss.input_mode': expected a string, got a floating-point number"},
      {"name = \"x\"\n[reduction]\npromote = \"yes\"\n", 3, 11,
       "key 'reduction.promote': expected true or false, got a string"},
      {"name = \"x\"\n[reduction]\nprecision = \"fp16\"\n", 3, 1,
       "unknown key 'reduction.precision' (expected input, compute, accumulate, output, mode, "
       "input_mode, promote)"},
      {"name = \"x\"\n[ops.gemmm]\ninput = \"fp16\"\n", 2, 6,
       "unknown op 'ops.gemmm' (known: gemm,"},
      {"name = \"x\"\n[ops]\ngemm = \"fp16\"\n", 3, 8,
       "key 'ops.gemm': expected a table ([ops.gemm]), got a string"},
      {"name = \"x\"\nops = 1\n", 2, 7, "key 'ops': expected a table of ops, got an integer"},
      {"name = \"x\"\n[ops.dot]\nouput = \"fp32\"\n", 3, 1, "unknown key 'ops.dot.ouput'"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      parse_policy(c.text, "bad.toml");
      ADD_FAILURE() << "no error";
    } catch (const PolicyError& e) {
      EXPECT_EQ(e.source(), "bad.toml");
      EXPECT_EQ(e.line(), c.line) << e.what();
      EXPECT_EQ(e.column(), c.column) << e.what();
      EXPECT_NE(e.message().find(c.message), std::string::npos) << e.what();
      const std::string prefix =
          "bad.toml:" + std::to_string(c.line) + ":" + std::to_string(c.column) + ": ";
      EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
    }
  }
}

TEST(UserPolicy, ADirectoryIsNotReadAsAnEmptyPolicy) {
  try {
    load_policy("/tmp");
    ADD_FAILURE() << "no error";
  } catch (const PolicyError& e) {
    EXPECT_EQ(std::string(e.what()), "/tmp: is a directory");
  }
}

TEST(UserPolicy, MissingFileNamesThePath) {
  try {
    load_policy("/nonexistent/policy.toml");
    ADD_FAILURE() << "no error";
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.line(), 0);
    EXPECT_EQ(std::string(e.what()),
              "/nonexistent/policy.toml: cannot open: No such file or directory");
  }
}

}  // namespace
}  // namespace ampbench::policy
